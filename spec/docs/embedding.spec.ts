import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repo } from './sessions.ts';

/**
 * docs/embedding.md is run here as written: each ```ts block (its first line a comment naming its
 * file) is written verbatim to a folder inside this package — so `awaken-ts`, `hono` and `express`
 * resolve as they do in an app that installed them, `awaken-ts` to its sources — and each file a
 * ```text block follows is run with Node (`PORT=0`: any free port); what it prints is compared whole
 * with that block. The files no output follows (the agents, the client) are run by the ones that
 * import them.
 */

const page = readFileSync(join(repo, 'docs/embedding.md'), 'utf8');
const run = promisify(execFile);

interface Block {
  readonly file: string;
  readonly code: string;
  /** What running it prints, when the page shows it. */
  readonly output?: string;
}

/** The page's files in order, each with the output block right after it. */
function blocksOf(markdown: string): Block[] {
  const fences = [...markdown.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1] as string, body: m[2] as string }));
  const blocks: Block[] = [];
  fences.forEach((f, i) => {
    if (f.lang === 'text') return;
    const file = /^\/\/ ([\w.-]+\.ts)\n/.exec(f.body)?.[1];
    if (f.lang !== 'ts' || file === undefined)
      throw new Error(`every code block is a \`\`\`ts file (its first line // NAME.ts) or its \`\`\`text output, not: ${f.body.split('\n')[0] ?? ''}`);
    const next = fences[i + 1];
    blocks.push({ file, code: f.body, ...(next?.lang === 'text' ? { output: next.body } : {}) });
  });
  return blocks;
}

const blocks = blocksOf(page);
let dir: string;
beforeAll(() => {
  mkdirSync(join(repo, 'test-artifacts'), { recursive: true });
  dir = mkdtempSync(join(repo, 'test-artifacts', 'embedding-'));
  for (const b of blocks) writeFileSync(join(dir, b.file), b.code);
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('docs/embedding.md', () => {
  it('has the agents, the client, and the Hono, Express and Fetch recipes, each with what it prints', () => {
    expect(blocks.map((b) => [b.file, b.output !== undefined])).toEqual([
      ['agents.ts', false],
      ['try.ts', false],
      ['hono.ts', true],
      ['express.ts', true],
      ['fetch.ts', true],
    ]);
  });

  it.each(blocks.filter((b) => b.output !== undefined).map((b) => [b.file, b.output as string]))(
    '%s prints what the page shows, whole',
    async (file, output) => {
      const { stdout, stderr } = await run(process.execPath, ['--conditions', 'awaken-source', '--import', 'tsx', join(dir, file)], {
        cwd: dir,
        env: { ...process.env, PORT: '0' },
        timeout: 60_000,
      });
      expect(stderr).toBe('');
      expect(stdout).toBe(output);
    },
  );
});
