import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const repo = resolve(import.meta.dirname, '../..');

describe('docs/transcript-format.md: the census of structural edits', () => {
  it('prints what the page shows, whole: every edit of the corpus, and the few reported elsewhere', () => {
    const doc = readFileSync(join(repo, 'docs/transcript-format.md'), 'utf8');
    const block = /```console\n\$ npm run --silent replay:edits -- --structural\n([\s\S]*?)```/.exec(doc);
    expect(block, 'the page shows the command and its output').not.toBeNull();
    const out = execFileSync('npm', ['run', '--silent', 'replay:edits', '--', '--structural'], { cwd: repo, encoding: 'utf8', timeout: 300_000 });
    expect(out).toBe(block?.[1]);
  }, 320_000);
});
