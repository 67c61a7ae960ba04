import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { deserialiseEvent } from '../../src/contract/event.ts';
import { EXIT } from '../../src/cli/exit.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { cli } from '../support/cli.ts';
import { repo } from '../support/serve-process.ts';

/**
 * `awaken run --app FILE`: the app's agent (its first, or `--agent`) on the app's own models and
 * providers, with its tools and plugins — in process on the fixture apps of spec/cli/fixtures/apps,
 * and as a real process on a copy of one in a folder outside this repository (so `awaken-ts` can
 * only be the running CLI's own copy, and the `.ts` file loads without a build). A wrong app is one
 * line naming the file and the field.
 */
const APP = 'spec/cli/fixtures/apps/helper.ts';
const fixture = (name: string): string => `spec/cli/fixtures/apps/${name}`;
const folders: string[] = [];
afterAll(() => {
  for (const f of folders) rmSync(f, { recursive: true, force: true });
});

/** A folder outside the repository (`"type": "module"`) holding a copy of a fixture app as app.ts. */
function outside(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-app-run-'));
  folders.push(dir);
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
  copyFileSync(join(repo, fixture(name)), join(dir, 'app.ts'));
  return dir;
}

/** `awaken ARGV…` as a process in `cwd`. */
function awaken(argv: readonly string[], cwd: string = repo): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), ...argv], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' },
    timeout: 60_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const HELPER_PRETTY = [
  'run_start',
  'step',
  'tool_call_start',
  'tool_call_delta',
  'tool      shout({"text":"hi"}) [c1]',
  'inference_complete',
  'result    [c1] succeeded: {"shouted":"HI"}',
  'state_snapshot',
  'step_end',
  'step',
  'text      "Done: "',
  'text      "HI."',
  'inference_complete',
  'state_snapshot',
  'step_end',
  'state_snapshot',
  'finish    natural_end',
  '',
].join('\n');

describe('awaken run --app', () => {
  it("runs the app's first agent on the app's own model, with its tool and its plugin: the same bytes every time", async () => {
    const a = await cli('run', '--app', APP, 'say hi');
    const b = await cli('run', '--app', APP, '--agent', 'helper', '--format', 'jsonl', 'say hi');
    expect({ code: a.code, err: a.err }).toEqual({ code: EXIT.ok, err: '' });
    expect(b.out).toBe(a.out);
    const events = a.out.trimEnd().split('\n').map(deserialiseEvent);
    expect(checkRunInvariants(events)).toEqual([]);
    expect(events.find((e) => e.event_type === 'tool_call_done')).toMatchObject({ id: 'c1', result: { data: { shouted: 'HI' } } });
    // The plugin the agent names ran: its key counts the tool call.
    expect(a.out).toContain('"counter.calls"');
    expect(events.at(-1)).toMatchObject({ event_type: 'run_finish', result: { response: 'Done: HI.' } });
  });

  it('--format pretty prints the readable lines', async () => {
    expect(await cli('run', '--app', APP, '--format', 'pretty', 'say hi')).toEqual({ code: EXIT.ok, err: '', out: HELPER_PRETTY });
  });

  it('--decide does not wake a scheduled call: the run, which nothing here can wake, is left where it stopped', async () => {
    const r = await cli('run', '--app', fixture('scheduled.ts'), '--decide', 'approve', '--format', 'pretty', 'send the report');
    expect({ code: r.code, err: r.err }).toEqual({ code: EXIT.ok, err: '' });
    expect(r.out.split('\n').filter((l) => /^(result|resumed|finish)/.test(l))).toEqual([
      'result    [c1] suspended: scheduled: waits for a trigger',
      'finish    suspended',
    ]);
  });

  it("--agent runs another of the app's agents; --decide approves or denies its AI SDK tool's approval", async () => {
    expect(await cli('run', '--app', APP, '--agent', 'greeter', '--format', 'pretty', 'hello')).toEqual({
      code: EXIT.ok,
      err: '',
      out: [
        'run_start',
        'step',
        'text      "Hello from the greeter."',
        'inference_complete',
        'state_snapshot',
        'step_end',
        'state_snapshot',
        'finish    natural_end',
        '',
      ].join('\n'),
    });
    const asked = [
      'run_start',
      'step',
      'tool_call_start',
      'tool_call_delta',
      'tool      delete_branch({"branch":"old"}) [c1]',
      'inference_complete',
      "result    [c1] suspended: Tool 'delete_branch' suspended: awaiting approval",
      'state_snapshot',
      'step_end',
      'state_snapshot',
      'finish    suspended',
    ];
    const answered = (resumed: string): string =>
      [
        ...asked,
        'run_start',
        `resumed   [c1] ${resumed}`,
        'step',
        'text      "Deleted old."',
        'inference_complete',
        'state_snapshot',
        'step_end',
        'state_snapshot',
        'finish    natural_end',
        '',
      ].join('\n');
    expect(await cli('run', '--app', APP, '--agent', 'careful', '--format', 'pretty', 'delete old')).toEqual({
      code: EXIT.ok,
      err: '',
      out: `${asked.join('\n')}\n`,
    });
    // Approved, the tool runs (its output is the resumed call's result); denied, it does not.
    expect(await cli('run', '--app', APP, '--agent', 'careful', '--decide', 'approve', '--format', 'pretty', 'delete old')).toEqual({
      code: EXIT.ok,
      err: '',
      out: answered('{"deleted":"old"}'),
    });
    expect(await cli('run', '--app', APP, '--agent', 'careful', '--decide', 'deny', '--format', 'pretty', 'delete old')).toEqual({
      code: EXIT.ok,
      err: '',
      out: answered('{"approved":false,"reason":"denied"}'),
    });
  });

  it('refuses --model beside --app, an agent the app does not have, and a run with neither --model nor --app', async () => {
    expect(await cli('run', '--app', APP, '--model', 'scripted:fixtures/scripts/demo-weather.yaml', 'hi')).toEqual({
      code: EXIT.usage,
      out: '',
      err: "awaken run: --model sets the demo agent's model; with --app the app's models answer; see awaken run --help\n",
    });
    expect(await cli('run', '--app', APP, '--agent', 'ghost', 'hi')).toEqual({
      code: EXIT.usage,
      out: '',
      err: `awaken run: no agent 'ghost' in ${APP} (its agents: helper, careful, greeter)\n`,
    });
    expect(await cli('run', 'hi')).toEqual({
      code: EXIT.usage,
      out: '',
      err: 'awaken run: --model is required (scripted:FILE or transcript:FILE), or --app FILE; see awaken run --help\n',
    });
  });

  it('a wrong app is one line naming the file and the line or field, exit 65; a missing one exit 66', async () => {
    expect(await cli('run', '--app', fixture('throws.ts'), 'hi')).toEqual({
      code: EXIT.data,
      out: '',
      err: `awaken run: ${fixture('throws.ts')}:5: cannot load: AWAKEN_SPEC_UNSET_KEY is not set\n`,
    });
    expect(await cli('run', '--app', fixture('nothing.ts'), 'hi')).toEqual({
      code: EXIT.data,
      out: '',
      err: `awaken run: ${fixture('nothing.ts')}: exports no app (export default defineApp({ agents, tools, plugins, models, providers }))\n`,
    });
    expect(await cli('run', '--app', fixture('tool-twice.ts'), 'hi')).toEqual({
      code: EXIT.data,
      out: '',
      err: `awaken run: ${fixture('tool-twice.ts')}: tools[1]: tool 'shout' is named twice (tools[0])\n`,
    });
    expect(await cli('run', '--app', fixture('unknown-model.ts'), 'hi')).toEqual({
      code: EXIT.data,
      out: '',
      err: `awaken run: ${fixture('unknown-model.ts')}: agents[0].model: no model 'gpt-4o' (models: default)\n`,
    });
    expect(await cli('run', '--app', fixture('unknown-plugin.ts'), 'hi')).toEqual({
      code: EXIT.data,
      out: '',
      err: `awaken run: ${fixture('unknown-plugin.ts')}: agents[0].plugin_ids[0]: no plugin 'tally' (the app's: none; built in: tool-gate, finish-on, deferred-tools, permission, reminder, state_machine, agent_handoff, generative-ui, open-generative-ui, skills-discovery, skills-active-instructions, observability)\n`,
    });
    expect(await cli('run', '--app', fixture('gone.ts'), 'hi')).toEqual({
      code: EXIT.noInput,
      out: '',
      err: `awaken run: cannot read ${fixture('gone.ts')}: no such file\n`,
    });
  });

  it('as a process: a .ts app in a folder outside the repository, importing awaken-ts, ai and zod it does not have', () => {
    const dir = outside('helper.ts');
    expect(awaken(['run', '--app', 'app.ts', '--format', 'pretty', 'say hi'], dir)).toEqual({ code: EXIT.ok, err: '', out: HELPER_PRETTY });
  });

  it('docs/cli.md shows the lines a wrong app and a missing one print, as a process prints them', () => {
    const documented = readFileSync(join(repo, 'docs/cli.md'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('awaken run: app.ts') || l.startsWith('awaken run: cannot read app.ts'));
    const bad = outside('unknown-model.ts');
    const missing = mkdtempSync(join(tmpdir(), 'awaken-app-none-'));
    folders.push(missing);
    const wrong = awaken(['run', '--app', 'app.ts', 'hi'], bad);
    const none = awaken(['run', '--app', 'app.ts', 'hi'], missing);
    expect(documented).toHaveLength(2);
    expect(wrong).toEqual({ code: EXIT.data, out: '', err: `${documented[0]}\n` });
    expect(none).toEqual({ code: EXIT.noInput, out: '', err: `${documented[1]}\n` });
  });
});
