import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit.ts';
import type { GateReport } from '../../src/replay/gate.ts';
import { cli } from '../support/cli.ts';
import { repo } from '../support/serve-process.ts';

/**
 * `awaken replay DIR --baseline [--expect FILE]`: the runs an app recorded — three agents, one with
 * an approval — gated on the app as it was (all identical) and on its next version, whose plugin
 * counts twice and whose greeter has another prompt (the run with that plugin diverges in its
 * state, the greeter's in its prompt, the third not at all); a manifest that expects them makes the
 * gate pass; `--json` for CI; bad input refused with one line each and the exit code
 * docs/cli.md gives. Every output is compared whole.
 */

const APP = 'spec/cli/fixtures/apps/helper.ts';
const NEXT = 'spec/cli/fixtures/apps/helper-next.ts';
const dir = mkdtempSync(join(tmpdir(), 'awaken-baseline-'));
const runs = join(dir, 'runs');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

beforeAll(async () => {
  mkdirSync(runs);
  for (const argv of [
    ['--', 'run', '--app', APP, 'say hi'],
    ['--', 'run', '--app', APP, '--agent', 'careful', '--decide', 'approve', 'delete old'],
    ['--', 'run', '--app', APP, '--agent', 'greeter', 'hello'],
  ]) {
    const name = argv.includes('careful') ? 'careful' : argv.includes('greeter') ? 'greeter' : 'helper';
    const recorded = await cli('record', '--out', join(runs, `${name}.jsonl`), ...argv);
    expect(recorded.code).toBe(EXIT.ok);
  }
}, 60_000);

const progress = (...results: string[]): string =>
  results
    .map(
      (r, i) =>
        `[${i + 1}/${results.length}] ${r === 'identical' ? 'identical' : 'DIFFERS  '} ${join(runs, ['careful', 'greeter', 'helper'][i] as string)}.jsonl\n`,
    )
    .join('');

/** What the gate prints of the two runs helper-next.ts changes, with the reasons the manifest accepted them for, if it did. */
const nextVersion = (accepted?: { readonly prompt: string; readonly state: string }): string =>
  [
    'result     class   accepted  file',
    `identical  -       -         ${runs}/careful.jsonl`,
    `DIFFERS    prompt  ${accepted !== undefined ? 'yes' : 'no '}       ${runs}/greeter.jsonl`,
    `DIFFERS    state   ${accepted !== undefined ? 'yes' : 'no '}       ${runs}/helper.jsonl`,
    '',
    `prompt: 1 run, ${accepted !== undefined ? 1 : 0} accepted; the first, ${runs}/greeter.jsonl:11 (a llm record):`,
    '  llm (after event #1): request #1 no longer matches the recording: system prompt changed',
    ...(accepted !== undefined ? [`  accepted: ${accepted.prompt}`] : []),
    '',
    `state: 1 run, ${accepted !== undefined ? 1 : 0} accepted; the first, ${runs}/helper.jsonl:25 (an event record):`,
    '  first differing event: #7',
    '    - snapshot.extensions.counter.calls: 1',
    '    + snapshot.extensions.counter.calls: 2',
    ...(accepted !== undefined ? [`  accepted: ${accepted.state}`] : []),
    '',
    `3 runs: 1 identical, ${accepted !== undefined ? '2 accepted, 0 not accepted — passed' : '0 accepted, 2 not accepted — failed'}`,
    '',
  ].join('\n');

describe('awaken replay DIR --baseline', () => {
  it('on the app they were recorded with: every run identical, exit 0', async () => {
    expect(await cli('replay', runs, '--baseline', '--app', APP)).toEqual({
      code: EXIT.ok,
      err: progress('identical', 'identical', 'identical'),
      out: [
        'result     class  accepted  file',
        `identical  -      -         ${runs}/careful.jsonl`,
        `identical  -      -         ${runs}/greeter.jsonl`,
        `identical  -      -         ${runs}/helper.jsonl`,
        '',
        '3 runs: 3 identical, 0 accepted, 0 not accepted — passed',
        '',
      ].join('\n'),
    });
  });

  it("on the app's next version: the greeter's run diverges in its prompt, the changed plugin's in its state; not accepted, exit 1", async () => {
    expect(await cli('replay', runs, '--baseline', '--app', NEXT)).toEqual({
      code: EXIT.failed,
      err: progress('identical', 'DIFFERS', 'DIFFERS'),
      out: nextVersion(),
    });
  });

  it('without --baseline the same app replays its plugin but the recorded agents: the prompt change is not seen', async () => {
    const r = await cli('replay', '--app', NEXT, join(runs, 'greeter.jsonl'));
    expect(r.code).toBe(EXIT.ok);
  });

  it('with a manifest that expects it: accepted, and why; exit 0. --json gives the same as data', async () => {
    const manifest = join(dir, 'expected.yaml');
    writeFileSync(
      manifest,
      [
        'expected:',
        '  - runs: [helper.jsonl]',
        '    class: state',
        '    why: the counter counts each call twice',
        "  - runs: '*'",
        '    class: prompt',
        '    why: a warmer greeting',
        '',
      ].join('\n'),
    );
    expect(await cli('replay', runs, '--baseline', '--app', NEXT, '--expect', manifest)).toEqual({
      code: EXIT.ok,
      err: progress('identical', 'DIFFERS', 'DIFFERS'),
      out: nextVersion({ prompt: 'a warmer greeting', state: 'the counter counts each call twice' }),
    });
    const json = await cli('replay', runs, '--baseline', '--app', NEXT, '--expect', manifest, '--json');
    expect(json.code).toBe(EXIT.ok);
    const report = JSON.parse(json.out) as GateReport;
    expect(report.passed).toBe(true);
    expect(report.classes).toEqual([
      { class: 'prompt', runs: 1, accepted: 1, first: 'greeter.jsonl' },
      { class: 'state', runs: 1, accepted: 1, first: 'helper.jsonl' },
    ]);
    expect(report.runs.map((r) => [r.run, r.identical, r.class, r.accepted])).toEqual([
      ['careful.jsonl', true, undefined, undefined],
      ['greeter.jsonl', false, 'prompt', { expectation: 1, why: 'a warmer greeting' }],
      ['helper.jsonl', false, 'state', { expectation: 0, why: 'the counter counts each call twice' }],
    ]);
    expect(report.unmet).toEqual([]);
  });

  it('a manifest that expects another class accepts nothing, and says what happened instead', async () => {
    const manifest = join(dir, 'wrong.json');
    writeFileSync(manifest, JSON.stringify({ expected: [{ runs: ['helper.jsonl', 'careful.jsonl'], class: 'prompt', why: 'a new prompt' }] }));
    const r = await cli('replay', runs, '--baseline', '--app', NEXT, '--expect', manifest);
    expect(r.code).toBe(EXIT.failed);
    expect(r.out).toBe(
      nextVersion().replace(
        '\n3 runs:',
        `\nexpected prompt in ${runs}/helper.jsonl (expected[0]), but it diverged in state\n\nexpected prompt in ${runs}/careful.jsonl (expected[0]), but it replayed identical\n\n3 runs:`,
      ),
    );
  });

  it('without --baseline a folder stands for its transcripts, in order: the table of each', async () => {
    expect(await cli('replay', '--app', APP, `${runs}/`)).toEqual({
      code: EXIT.ok,
      err: progress('identical', 'identical', 'identical'),
      out: [
        'result     recorded  replayed  termination  file',
        ...['careful', 'greeter', 'helper'].map((name) => {
          const events = readFileSync(join(runs, `${name}.jsonl`), 'utf8').match(/^\{"type":"event"/gm)?.length ?? 0;
          return `identical  ${String(events).padEnd(8)}  ${String(events).padEnd(8)}  natural_end  ${runs}/${name}.jsonl`;
        }),
        '',
        '3 identical, 0 differ',
        '',
      ].join('\n'),
    });
  });

  describe('bad input: one line, the exit code docs/cli.md gives', () => {
    const empty = join(dir, 'empty');
    beforeAll(() => {
      mkdirSync(empty);
      writeFileSync(join(dir, 'ghost.yaml'), 'expected:\n  - runs: [helper.jsonl, ghost.jsonl]\n    class: state\n    why: x\n');
    });
    it.each([
      [
        'a manifest naming a run not in the folder',
        () => [runs, '--baseline', '--app', APP, '--expect', join(dir, 'ghost.yaml')],
        EXIT.data,
        () => `awaken replay: ${join(dir, 'ghost.yaml')}: expected[0].runs[1]: 'ghost.jsonl' is not a run in the folder replayed\n`,
      ],
      [
        'a manifest that is not there',
        () => [runs, '--baseline', '--app', APP, '--expect', join(dir, 'none.yaml')],
        EXIT.noInput,
        () => `awaken replay: cannot read ${join(dir, 'none.yaml')}: no such file\n`,
      ],
      [
        'a folder that is not there',
        () => [join(dir, 'none'), '--baseline'],
        EXIT.noInput,
        () => `awaken replay: cannot read ${join(dir, 'none')}: no such folder\n`,
      ],
      ['a folder with no transcript', () => [empty, '--baseline'], EXIT.noInput, () => `awaken replay: ${empty}: no transcript (*.jsonl) in it\n`],
      ['a folder with no transcript, without --baseline', () => [empty], EXIT.noInput, () => `awaken replay: ${empty}: no transcript (*.jsonl) in it\n`],
      [
        'a transcript where the folder goes',
        () => [join(runs, 'helper.jsonl'), '--baseline'],
        EXIT.usage,
        () => `awaken replay: ${join(runs, 'helper.jsonl')} is a file: --baseline replays the transcripts in a folder; see awaken replay --help\n`,
      ],
      [
        'two folders',
        () => [runs, empty, '--baseline'],
        EXIT.usage,
        () => 'awaken replay: --baseline replays one folder: give one DIR, not 2; see awaken replay --help\n',
      ],
      [
        '--expect without --baseline',
        () => [join(runs, 'helper.jsonl'), '--expect', join(dir, 'ghost.yaml')],
        EXIT.usage,
        () => 'awaken replay: --expect names what --baseline accepts: give --baseline too; see awaken replay --help\n',
      ],
      [
        '--format pretty',
        () => [runs, '--baseline', '--format', 'pretty'],
        EXIT.usage,
        () => 'awaken replay: --baseline prints a table or, with --json, JSON: not --format pretty; see awaken replay --help\n',
      ],
      [
        'a run whose plugin is not in the app (here: no --app)',
        () => [runs, '--baseline'],
        EXIT.data,
        () =>
          `awaken replay: ${runs}/helper.jsonl:1: plugin 'counter' (factory 'counter') is not built in: replay it with --app ${APP} (the app it was recorded with)\n`,
      ],
    ])('%s', async (_what, argv, code, err) => {
      expect(await cli('replay', ...argv())).toEqual({ code, out: '', err: err() });
    });

    it('a link in the folder that leads nowhere: one line, exit 66; a link to a folder is not followed (a link back up would list the runs again)', async () => {
      const linked = join(dir, 'linked');
      cpSync(runs, linked, { recursive: true });
      symlinkSync('.', join(linked, 'again'));
      expect((await cli('replay', linked, '--baseline', '--app', APP)).out).toContain('3 runs: 3 identical');
      symlinkSync(join(dir, 'nowhere.jsonl'), join(linked, 'gone.jsonl'));
      for (const argv of [
        [linked, '--baseline', '--app', APP],
        [linked, '--app', APP],
      ])
        expect(await cli('replay', ...argv)).toEqual({
          code: EXIT.noInput,
          out: '',
          err: `awaken replay: cannot read ${join(linked, 'gone.jsonl')}: no such file (a broken link?)\n`,
        });
    });

    it('the line docs/cli.md shows, as a process in a folder of its own', () => {
      const cwd = mkdtempSync(join(tmpdir(), 'awaken-baseline-doc-'));
      cpSync(runs, join(cwd, 'runs'), { recursive: true });
      writeFileSync(join(cwd, 'expected.yaml'), 'expected:\n  - runs: [friday.jsonl]\n    class: prompt\n    why: the new prompt\n');
      const r = spawnSync(
        process.execPath,
        [join(repo, 'src/cli/awaken.js'), 'replay', 'runs', '--baseline', '--app', join(repo, APP), '--expect', 'expected.yaml'],
        {
          cwd,
          encoding: 'utf8',
          timeout: 60_000,
        },
      );
      const shown = readFileSync(join(repo, 'docs/cli.md'), 'utf8')
        .split('\n')
        .find((l) => l.includes('is not a run in the folder replayed'));
      expect({ code: r.status, out: r.stdout, err: r.stderr }).toEqual({ code: EXIT.data, out: '', err: `${shown}\n` });
      rmSync(cwd, { recursive: true, force: true });
    });
  });
});
