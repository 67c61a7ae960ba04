import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { whyUnreadable } from '../../src/contract/unreadable.ts';
import { EXIT } from '../../src/cli/exit.ts';
import { cli } from '../support/cli.ts';

/**
 * A file a command cannot read is one line in the same words, whichever command it is: "cannot read
 * PATH: no such file" (not `ENOENT`, nor Node's sentence naming the path a second time), exit 66.
 */
const dir = mkdtempSync(join(tmpdir(), 'awaken-cannot-read-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const gone = (name: string): string => join(dir, 'nowhere', name);

describe('a file a command cannot read', () => {
  it.each([
    ['replay', ['replay', gone('run.jsonl')], `awaken replay: cannot read ${gone('run.jsonl')}: no such file\n`],
    ['inspect', ['inspect', gone('run.jsonl')], `awaken inspect: cannot read ${gone('run.jsonl')}: no such file\n`],
    ['judge', ['judge', '--protocol', 'ag-ui', gone('body.sse')], `awaken judge: cannot read ${gone('body.sse')}: no such file\n`],
    ['bench', ['bench', '--model', `scripted:${gone('s.yaml')}`], `awaken bench: cannot read ${gone('s.yaml')}: no such file\n`],
    ['fuzz', ['fuzz', '--plugin', gone('p.mjs')], `awaken fuzz: cannot read ${gone('p.mjs')}: no such file\n`],
    ['run', ['run', '--model', `scripted:${gone('s.yaml')}`, 'hi'], `awaken run: cannot read ${gone('s.yaml')}: no such file\n`],
    ['serve', ['serve', '--model', `scripted:${gone('s.yaml')}`], `awaken serve: cannot read ${gone('s.yaml')}: no such file\n`],
    ['serve --config', ['serve', '--config', gone('awaken.yaml')], `awaken serve: cannot read the config file ${gone('awaken.yaml')}: no such file\n`],
  ])('%s: one line, exit 66', async (_, argv, err) => {
    expect(await cli(...argv)).toEqual({ code: EXIT.noInput, out: '', err });
  });

  it('a folder where a file goes, and a path through a file, say so', async () => {
    expect(await cli('inspect', dir)).toEqual({ code: EXIT.noInput, out: '', err: `awaken inspect: cannot read ${dir}: a directory\n` });
    expect(await cli('fuzz', '--plugin', dir)).toEqual({ code: EXIT.noInput, out: '', err: `awaken fuzz: cannot read ${dir}: a directory\n` });
    const file = join(dir, 'notes.txt');
    writeFileSync(file, 'not a folder\n');
    expect(await cli('inspect', join(file, 'run.jsonl'))).toEqual({
      code: EXIT.noInput,
      out: '',
      err: `awaken inspect: cannot read ${join(file, 'run.jsonl')}: no such file\n`,
    });
  });

  it('each reason: missing, a directory, denied; anything else as its message', () => {
    const coded = (code: string): Error => Object.assign(new Error(`${code}: Node's own sentence`), { code });
    expect(['ENOENT', 'ENOTDIR', 'EISDIR', 'EACCES', 'EPERM', 'EMFILE'].map((c) => whyUnreadable(coded(c)))).toEqual([
      'no such file',
      'no such file',
      'a directory',
      'permission denied',
      'permission denied',
      "EMFILE: Node's own sentence",
    ]);
    expect(whyUnreadable(coded('ENOENT'), 'folder')).toBe('no such folder');
    expect(whyUnreadable('a string')).toBe('a string');
  });
});
