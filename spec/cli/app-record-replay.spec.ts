import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit.ts';
import { cli } from '../support/cli.ts';
import { repo } from '../support/serve-process.ts';

/**
 * `awaken record -- run --app FILE` and `awaken replay --app FILE`: a run of an app's agent is
 * recorded with the app's file and version and its plugin's factory and config; replayed with the
 * app, the factory makes the plugin again and the run is identical. A transcript naming a plugin
 * the app (or, without --app, the catalog) does not have stops the replay with one line, exit 65.
 */
const APP = 'spec/cli/fixtures/apps/helper.ts';
const PLAIN = 'spec/cli/fixtures/apps/plain.ts';
const dir = mkdtempSync(join(tmpdir(), 'awaken-app-record-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The table `awaken replay` prints for one identical file of `events` events that ended naturally. */
const identical = (events: number, file: string): string =>
  `result     recorded  replayed  termination  file\nidentical  ${String(events).padEnd(8)}  ${String(events).padEnd(8)}  natural_end  ${file}\n\n1 identical, 0 differ\n`;
const eventsIn = (file: string): number =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{"type":"event"')).length;

const headerOf = (file: string): Record<string, unknown> => JSON.parse(readFileSync(file, 'utf8').split('\n')[0] as string) as Record<string, unknown>;

/** `awaken ARGV…` as a process in `cwd`. */
function awaken(argv: readonly string[], cwd: string): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), ...argv], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' },
    timeout: 60_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('awaken record -- run --app', () => {
  it("records the app's agent with its tool, its plugin's factory and config, and the app's file and version", async () => {
    const file = join(dir, 'helper.jsonl');
    const rec = await cli('record', '--out', file, '--', 'run', '--app', APP, 'say hi');
    const lines = readFileSync(file, 'utf8').split('\n').length - 1;
    expect(rec).toEqual({ code: EXIT.ok, err: '', out: `recorded ${lines} lines to ${file}: natural_end after 2 step(s)\n` });
    const header = headerOf(file);
    expect(header['format']).toBe('awaken-transcript/12');
    expect(header['plugins']).toEqual([{ id: 'counter', factory: 'counter', config: { step: 1 } }]);
    expect(header['app']).toEqual({ file: APP, version: expect.stringMatching(/^sha256:[0-9a-f]{12}$/) });
    expect((header['agent'] as { id: string }).id).toBe('helper');
    expect((header['tools'] as { id: string }[]).map((t) => t.id)).toEqual(['shout', 'delete_branch']);
    expect(header['models']).toEqual({
      default: { provider: 'script', model_name: 'scripted' },
      careful: { provider: 'careful', model_name: 'scripted' },
      greeter: { provider: 'greeting', model_name: 'scripted' },
    });
  });

  it('--agent and --decide: the approval of an AI SDK tool is recorded as a decision', async () => {
    const file = join(dir, 'careful.jsonl');
    expect(await cli('record', '--out', file, '--', 'run', '--app', APP, '--agent', 'careful', '--decide', 'approve', 'delete old')).toMatchObject({
      code: EXIT.ok,
      out: expect.stringMatching(/: natural_end after 2 step\(s\)\n$/),
    });
    const decisions = readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{"type":"decision"'));
    expect(decisions).toHaveLength(1);
    expect(await cli('replay', '--app', APP, file)).toMatchObject({ code: EXIT.ok, out: expect.stringContaining('1 identical, 0 differ') });
  });

  it("an agent that delegates to another of the app's: the delegate runs beside it with its plugin, and the run replays from its record", async () => {
    const app = 'spec/cli/fixtures/apps/delegating.ts';
    const file = join(dir, 'delegating.jsonl');
    expect(await cli('record', '--out', file, '--', 'run', '--app', app, 'go')).toMatchObject({
      code: EXIT.ok,
      err: '',
      out: expect.stringMatching(/: natural_end after 2 step\(s\)\n$/),
    });
    const delegated = readFileSync(file, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('{"type":"tool"') && l.includes('agent_run_greeter'));
    expect(delegated).toContain('"response":"Hello."');
    // The delegate's plugin ran beside the agent's: the header names it, to be made again on replay.
    expect(headerOf(file)['plugins']).toEqual([{ id: 'quiet', factory: 'quiet', config: { level: 1 } }]);
    expect(await cli('replay', '--app', app, file)).toEqual({ code: EXIT.ok, err: '', out: identical(eventsIn(file), file) });
  });

  it('--model beside --app is the same usage mistake as in awaken run', async () => {
    expect(await cli('record', '--out', join(dir, 'x.jsonl'), '--', 'run', '--app', APP, '--model', 'scripted:x.yaml', 'hi')).toEqual({
      code: EXIT.usage,
      out: '',
      err: "awaken record: --model sets the demo agent's model; with --app the app's models answer; see awaken record --help\n",
    });
  });
});

describe('awaken replay --app', () => {
  const recorded = join(dir, 'replayed.jsonl');
  const record = async (): Promise<void> => {
    expect((await cli('record', '--out', recorded, '--', 'run', '--app', APP, 'say hi')).code).toBe(EXIT.ok);
  };

  it('replays the run identically with the app: its factory makes the plugin again from the recorded config', async () => {
    await record();
    expect(await cli('replay', '--app', APP, recorded)).toEqual({ code: EXIT.ok, err: '', out: identical(eventsIn(recorded), recorded) });
  });

  it('a plugin the app does not have, or (without --app) the catalog does not have: one line naming the file and the plugin, exit 65, nothing replayed', async () => {
    await record();
    expect(await cli('replay', '--app', PLAIN, recorded)).toEqual({
      code: EXIT.data,
      out: '',
      err: `awaken replay: ${recorded}:1: plugin 'counter' (factory 'counter') is not in the app ${PLAIN}\n`,
    });
    expect(await cli('replay', recorded)).toEqual({
      code: EXIT.data,
      out: '',
      err: `awaken replay: ${recorded}:1: plugin 'counter' (factory 'counter') is not built in: replay it with --app ${APP} (the app it was recorded with)\n`,
    });
    // Without --app a transcript of the built-in demo agent replays as before.
    const demo = join(dir, 'demo.jsonl');
    await cli('record', '--out', demo, '--', 'run', '--model', 'scripted:fixtures/scripts/demo-weather.yaml', 'weather?');
    expect(await cli('replay', demo)).toMatchObject({ code: EXIT.ok, out: expect.stringContaining('1 identical, 0 differ') });
  });

  it("an app's stop policy: recorded by id, replayed with the app's; without the app, one line naming it, exit 65", async () => {
    const file = join(dir, 'plain.jsonl');
    expect((await cli('record', '--out', file, '--', 'run', '--app', PLAIN, 'hi')).code).toBe(EXIT.ok);
    expect(headerOf(file)['stop_policies']).toEqual(['patience']);
    expect(await cli('replay', '--app', PLAIN, file)).toEqual({ code: EXIT.ok, err: '', out: identical(eventsIn(file), file) });
    expect(await cli('replay', file)).toEqual({
      code: EXIT.data,
      out: '',
      err: `awaken replay: ${file}:1: custom stop policy 'patience' is not built in: replay it with --app ${PLAIN} (the app it was recorded with)\n`,
    });
  });

  it('an app that is not there: one line, exit 66; one that does not load: exit 65', async () => {
    await record();
    expect(await cli('replay', '--app', 'spec/cli/fixtures/apps/gone.ts', recorded)).toEqual({
      code: EXIT.noInput,
      out: '',
      err: 'awaken replay: cannot read spec/cli/fixtures/apps/gone.ts: no such file\n',
    });
    expect(await cli('replay', '--app', 'spec/cli/fixtures/apps/nothing.ts', recorded)).toEqual({
      code: EXIT.data,
      out: '',
      err: 'awaken replay: spec/cli/fixtures/apps/nothing.ts: exports no app (export default defineApp({ agents, tools, plugins, models, providers }))\n',
    });
  });

  it('as processes: recorded and replayed with a .ts app in a folder outside the repository', () => {
    const folder = mkdtempSync(join(tmpdir(), 'awaken-app-replay-'));
    try {
      writeFileSync(join(folder, 'package.json'), '{"type":"module"}\n');
      copyFileSync(join(repo, APP), join(folder, 'app.ts'));
      const rec = awaken(['record', '--out', 'run.jsonl', '--', 'run', '--app', 'app.ts', 'say hi'], folder);
      expect(rec).toEqual({
        code: EXIT.ok,
        err: '',
        out: `recorded ${readFileSync(join(folder, 'run.jsonl'), 'utf8').split('\n').length - 1} lines to run.jsonl: natural_end after 2 step(s)\n`,
      });
      expect(headerOf(join(folder, 'run.jsonl'))['app']).toEqual({ file: 'app.ts', version: expect.stringMatching(/^sha256:[0-9a-f]{12}$/) });
      const rep = awaken(['replay', '--app', 'app.ts', 'run.jsonl'], folder);
      expect(rep).toEqual({ code: EXIT.ok, err: '', out: identical(eventsIn(join(folder, 'run.jsonl')), 'run.jsonl') });
      // docs/cli.md shows the line a replay without the app prints.
      const documented = readFileSync(join(repo, 'docs/cli.md'), 'utf8')
        .split('\n')
        .find((l) => l.startsWith('awaken replay: run.jsonl:1: '));
      expect(awaken(['replay', 'run.jsonl'], folder)).toEqual({ code: EXIT.data, out: '', err: `${documented}\n` });
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
