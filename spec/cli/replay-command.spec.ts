import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit.ts';
import { cli } from '../support/cli.ts';
import { repo } from '../support/serve-process.ts';

/**
 * `awaken replay` of what is not a transcript: a file that is not there is missing input (66), one
 * that does not parse as a transcript is bad data (65) — one line each, as docs/cli.md says, never a
 * replay that "differs". And `--format pretty` shows the value a recorded line was edited to, however
 * far into a long line the edit is.
 */

const dir = mkdtempSync(join(tmpdir(), 'awaken-replay-input-'));
const jsonError = (text: string): string => {
  try {
    JSON.parse(text);
  } catch (e) {
    return (e as Error).message;
  }
  return '';
};

describe('awaken replay of a file that is no transcript', () => {
  it('a file that is not there: one line, exit 66 (docs/cli.md, as a process in the directory)', () => {
    const documented = readFileSync(join(repo, 'docs/cli.md'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('awaken replay: '));
    const r = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), 'replay', 'run.jsonl'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    expect({ code: r.status, out: r.stdout, err: r.stderr }).toEqual({ code: EXIT.noInput, out: '', err: `${documented}\n` });
  });

  it('one missing among several: the same line, nothing replayed', async () => {
    const missing = join(dir, 'gone.jsonl');
    expect(await cli('replay', join(repo, 'fixtures/runs/01-plain-answer.jsonl'), missing)).toEqual({
      code: EXIT.noInput,
      out: '',
      err: `awaken replay: cannot read ${missing}: no such file\n`,
    });
  });

  it.each([
    ['not JSON', 'not json\n', (f: string) => `awaken replay: ${f}:1: not a transcript: not JSON: ${jsonError('not json')}\n`],
    ['empty', '', (f: string) => `awaken replay: ${f}: not a transcript: the file is empty\n`],
    ['JSON that is no header', '{"hello":1}\n', (f: string) => `awaken replay: ${f}:1: not a transcript: the first line is no transcript header\n`],
  ])('%s: one line naming the file, exit 65', async (name, text, err) => {
    const file = join(dir, `${name.replace(/\W+/g, '-')}.jsonl`);
    writeFileSync(file, text);
    expect(await cli('replay', file)).toEqual({ code: EXIT.data, out: '', err: err(file) });
    expect(await cli('replay', '--format', 'pretty', file)).toEqual({ code: EXIT.data, out: '', err: err(file) });
  });
});

describe('awaken replay --format pretty', () => {
  it('a recorded line edited far into it: the recorded column shows the edited value, beside the line the replay made', async () => {
    const lines = readFileSync(join(repo, 'fixtures/runs/44-skills-activation.jsonl'), 'utf8').split('\n');
    const at = lines.findIndex((l) => l.startsWith('{"type":"event"') && l.includes('read its files with'));
    lines[at] = (lines[at] as string).replace('read its files with', 'read its EDITED files with');
    const file = join(dir, 'edited.jsonl');
    writeFileSync(file, lines.join('\n'));
    const r = await cli('replay', '--format', 'pretty', file);
    expect({ code: r.code, err: r.err }).toEqual({ code: EXIT.failed, err: '' });
    const row = r.out.split('\n').find((l) => l.includes(' | '));
    const now =
      '"content": "<available_skills>\\n- release-notes: Writes release notes from a change list\\n</available_skills>\\nActivate a skill with the `skill` tool when it fits the task; read its files with `load_skill_resource`."';
    // The recorded column (61 characters here) from a little before the edit: the edited value in view.
    expect(row).toBe(`  … the task; read its EDITED files with \`load_skill_resource\`… |             ${now}`);
  });
});
