import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit.ts';
import type { AgentBenchReport } from '../../src/testing/bench-agent.ts';
import { cli } from '../support/cli.ts';
import { repo } from '../support/serve-process.ts';

/**
 * `awaken bench --app FILE`: an app's agent measured beside the fair floors, with the app's tools
 * (the script calls the app's `shout`) and the app's plugin (its hook is in the profile); with a
 * `--config` beside the app, the file's agents may name the app's models and plugins. The figures
 * are not checked (speed lives in bench/): what is, is which agent ran, with which tools and hooks.
 */
const APP = 'spec/cli/fixtures/apps/helper.ts';
const LOOP = 'scripted:spec/cli/fixtures/apps/shout-loop.yaml';
const dir = mkdtempSync(join(tmpdir(), 'awaken-app-bench-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const reportOf = (out: string): AgentBenchReport => JSON.parse(out) as AgentBenchReport;

describe('awaken bench --app', () => {
  it("measures the app's agent with the app's tool and plugin: the plugin's hook is profiled", async () => {
    const r = await cli('bench', '--app', APP, '--agent', 'helper', '--model', LOOP, '--steps', '3', '--rounds', '1', '--json');
    expect({ code: r.code, err: r.err }).toEqual({ code: EXIT.ok, err: 'awaken bench: N = 3 done\n' });
    const report = reportOf(r.out);
    expect(report.agent).toBe('helper');
    expect(report.rows.map((x) => [x.steps, x.name])).toEqual([
      [3, 'floor-bare'],
      [3, 'floor-phased'],
      [3, 'agent'],
    ]);
    // Two shout calls per run of 3 steps; the profile runs it many times, each call through the hook.
    expect(report.hooks.map((h) => `${h.plugin} · ${h.phase}`)).toEqual(['counter · after_tool_execute']);
    expect(report.hooks[0]?.calls).toBeGreaterThan(0);
    expect((report.hooks[0]?.calls ?? 1) % 2).toBe(0);
  });

  it("an agent the app does not have is one line naming the app's agents (its first is measured without --agent: below)", async () => {
    expect(await cli('bench', '--app', APP, '--agent', 'nobody', '--model', LOOP)).toEqual({
      code: EXIT.usage,
      out: '',
      err: `awaken bench: no agent 'nobody' in ${APP} (its agents: helper, careful, greeter)\n`,
    });
  });

  it("with --config: the file's agent runs on the app's model with the app's plugin; an id both define is refused, naming both", async () => {
    const config = 'spec/cli/fixtures/apps/awaken.yaml';
    const r = await cli('bench', '--app', APP, '--config', config, '--agent', 'second', '--model', LOOP, '--steps', '3', '--rounds', '1', '--json');
    expect({ code: r.code, err: r.err }).toEqual({ code: EXIT.ok, err: 'awaken bench: N = 3 done\n' });
    expect(reportOf(r.out).agent).toBe('second');
    expect(reportOf(r.out).hooks.map((h) => h.plugin)).toEqual(['counter']);
    const clash = join(dir, 'clash.yaml');
    writeFileSync(clash, 'agents:\n  - { id: helper, model: default }\n');
    expect(await cli('bench', '--app', APP, '--config', clash, '--model', LOOP)).toEqual({
      code: EXIT.data,
      out: '',
      err: `awaken bench: ${clash}: agents[0].id: 'helper' is also defined in ${APP} (agents[0])\n`,
    });
    const unknown = join(dir, 'unknown.yaml');
    writeFileSync(unknown, 'agents:\n  - { id: third, model: default, plugin_ids: [tally] }\n');
    expect(await cli('bench', '--app', APP, '--config', unknown, '--agent', 'third', '--model', LOOP)).toEqual({
      code: EXIT.data,
      out: '',
      err: `awaken bench: ${unknown}: agents[0].plugin_ids[0]: no plugin 'tally' (the app's: counter; load another with --plugin FILE)\n`,
    });
  });

  it('a wrong app: one line, exit 65; a missing one: exit 66', async () => {
    expect(await cli('bench', '--app', 'spec/cli/fixtures/apps/tool-twice.ts', '--model', LOOP)).toEqual({
      code: EXIT.data,
      out: '',
      err: "awaken bench: spec/cli/fixtures/apps/tool-twice.ts: tools[1]: tool 'shout' is named twice (tools[0])\n",
    });
    expect(await cli('bench', '--app', 'gone.ts', '--model', LOOP)).toEqual({
      code: EXIT.noInput,
      out: '',
      err: 'awaken bench: cannot read gone.ts: no such file\n',
    });
  });

  it('as a process: a .ts app in a folder outside the repository (the bench starts itself again with the flags it needs)', { timeout: 120_000 }, () => {
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    copyFileSync(join(repo, APP), join(dir, 'app.ts'));
    copyFileSync(join(repo, LOOP.slice('scripted:'.length)), join(dir, 'loop.yaml'));
    const r = spawnSync(
      process.execPath,
      [join(repo, 'src/cli/awaken.js'), 'bench', '--app', 'app.ts', '--model', 'scripted:loop.yaml', '--steps', '3', '--rounds', '1'],
      { cwd: dir, encoding: 'utf8', timeout: 120_000 },
    );
    // The figures vary from run to run: each number is N here.
    expect({ code: r.status, err: r.stderr, out: r.stdout.replace(/\d+(\.\d+)?/g, 'N') }).toEqual({
      code: EXIT.ok,
      err: 'awaken bench: N = 3 done\n',
      out: [
        'agent helper: N rounds, interleaved with the floors in one process',
        '',
        '| N | case | µs per step (median) | × floor-phased, median | × floor-phased, min | KiB allocated per step |',
        '|---|---|---|---|---|---|',
        '| N | floor-bare | N | N | N | N |',
        '| N | floor-phased | N | N | N | N |',
        '| N | agent | N | N | N | N |',
        '',
        "plugin hooks, by share of the agent's time (a separate, instrumented pass):",
        '    N%  counter · after_tool_execute  (N calls, N µs each)',
        '',
      ].join('\n'),
    });
  });
});
