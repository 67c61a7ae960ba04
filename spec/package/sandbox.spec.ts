import { spawn } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { besideProject, listeningUrl, packedProject } from '../support/packed-setup.ts';

/**
 * docs/sandbox.md from the installed package: its example app and script, copied from the page into
 * a project that has only the packed package, served by that package's own `awaken serve --app`, and
 * its call run in the sandbox with the result the page shows.
 */
const repo = resolve(import.meta.dirname, '../..');
const page = readFileSync(join(repo, 'docs/sandbox.md'), 'utf8');
/** A code block of the page whose first line is `<comment> name`. */
const block = (name: string): string => {
  const m = new RegExp(`\`\`\`\\w+\\n((?:\\/\\/|#) ${name.replaceAll('.', '\\.')}\\n[\\s\\S]*?)\`\`\``).exec(page);
  if (m === null) throw new Error(`the page has no block for ${name}`);
  return m[1] as string;
};

let project = '';
beforeAll(async () => {
  project = besideProject(await packedProject(), 'sandbox');
  // A sandboxed program is read as `nobody`: its folder must be readable by others.
  chmodSync(project, 0o755);
}, 900_000);

describe('the sandbox from the installed package', () => {
  it("serves the page's app with the installed awaken: its Python script runs in the sandbox and the run gets the result the page shows", async () => {
    writeFileSync(join(project, 'app.ts'), block('app.ts'));
    writeFileSync(join(project, 'word_count.py'), block('word_count.py'));
    const child = spawn(join(project, 'node_modules/.bin/awaken'), ['serve', '--app', 'app.ts', '--store', 'memory', '--port', '0'], {
      cwd: project,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' },
    });
    try {
      const url = await listeningUrl(child, 30_000);
      const res = await fetch(`${url}/v1/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ agentId: 'counter', threadId: 't-1', messages: [{ role: 'user', content: 'count' }] }),
      });
      const events = (await res.text())
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => JSON.parse(l.slice(6)) as { event_type: string; result?: unknown; delta?: string });
      expect(JSON.stringify(events.find((e) => e.event_type === 'tool_call_done')?.result)).toBe(/```json\n(.*)\n```/.exec(page)?.[1]);
      expect(events.filter((e) => e.event_type === 'text_delta').map((e) => e.delta)).toEqual(['Four words.']);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  }, 60_000);
});
