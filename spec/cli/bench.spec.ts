import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit.ts';
import { main } from '../../src/cli/main.ts';
import type { AgentBenchReport } from '../../src/testing/bench-agent.ts';
import { scenario } from '../../src/testing/bench-agent.ts';
import { repo } from '../support/serve-process.ts';

/**
 * `awaken bench` on the example of docs/bench.md (`examples/bench/`): a user's agent with its
 * plugins beside the fair floors. The figures are not checked (speed lives in bench/, never in a
 * timed test): what is checked is that every case ran the same N steps, the columns are there, and
 * the costliest hooks are the agent's plugins'.
 */

const bin = join(repo, 'src/cli/awaken.js');
const awaken = (args: string[]) => {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: repo, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
};
const EXAMPLE = [
  '--config',
  'examples/bench/awaken.yaml',
  '--agent',
  'weather',
  '--plugin',
  'examples/fuzz/visit-log.mjs',
  '--model',
  'scripted:examples/bench/weather-loop.yaml',
];

describe('awaken bench', () => {
  it('measures the agent and both floors at each N, with the allocation column and the plugin hooks by cost (--json for a trend file)', () => {
    const r = awaken(['bench', ...EXAMPLE, '--steps', '5,20', '--rounds', '2', '--json']);
    expect(r.code, r.err).toBe(EXIT.ok);
    const report = JSON.parse(r.out) as AgentBenchReport;
    expect(report.agent).toBe('weather');
    expect(report.rows.map((x) => [x.steps, x.name])).toEqual([
      [5, 'floor-bare'],
      [5, 'floor-phased'],
      [5, 'agent'],
      [20, 'floor-bare'],
      [20, 'floor-phased'],
      [20, 'agent'],
    ]);
    for (const row of report.rows) {
      expect(row.usPerStep).toBeGreaterThan(0);
      // Started with the flags it needs (it starts itself again with them): the allocation is measured.
      expect(row.bytesPerStep).toBeGreaterThan(0);
    }
    expect(report.rows.filter((x) => x.name === 'floor-phased').every((x) => x.ratioMedian === 1 && x.ratioMin === 1)).toBe(true);
    expect(report.hooks.map((h) => `${h.plugin} · ${h.phase}`).sort()).toEqual(['tool-gate · before_tool_execute', 'visit_log · after_tool_execute']);
    // The profile runs at the smallest N: four tool steps per run, so each hook's calls come in fours.
    expect(report.hooks.every((h) => h.calls > 0 && h.calls % 4 === 0 && h.share > 0 && h.share < 1)).toBe(true);
  });

  it('prints the table, the marginal cost and the hooks', () => {
    const r = awaken(['bench', ...EXAMPLE, '--steps', '5', '--rounds', '1']);
    expect(r.code, r.err).toBe(EXIT.ok);
    expect(r.out).toContain(
      'agent weather: 1 rounds, interleaved with the floors in one process\n\n| N | case | µs per step (median) | × floor-phased, median | × floor-phased, min | KiB allocated per step |',
    );
    expect(r.out).toMatch(/^\| 5 \| agent \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \|$/m);
    expect(r.out).toMatch(/^ +[\d.]+% {2}visit_log · after_tool_execute {2}\(\d+ calls, [\d.]+ µs each\)$/m);
    expect(r.err).toBe('awaken bench: N = 5 done\n');
  });

  it('makes N steps from the script: its tool steps repeated with fresh call ids, its text step last', () => {
    const plan = scenario(
      [
        [
          { type: 'tool_call_start', id: 'a', name: 'echo' },
          { type: 'tool_call_delta', id: 'a', args_delta: '{}' },
          { type: 'finish', stop_reason: 'ToolUse' },
        ],
        [
          { type: 'text_delta', delta: 'ok' },
          { type: 'finish', stop_reason: 'EndTurn' },
        ],
      ],
      3,
    );
    expect(plan.map((parts) => parts.map((p) => ('id' in p ? `${p.type}:${p.id}` : p.type)))).toEqual([
      ['tool_call_start:a-0', 'tool_call_delta:a-0', 'finish'],
      ['tool_call_start:a-1', 'tool_call_delta:a-1', 'finish'],
      ['text_delta', 'finish'],
    ]);
  });

  it('refuses what cannot be measured fairly: no scripted model, a script that waits for a decision, an unknown agent, bad numbers', async () => {
    const run = async (argv: string[]) => {
      let out = '';
      let err = '';
      const code = await main(['bench', ...argv], { out: (t) => (out += t), err: (t) => (err += t) }, () => Promise.resolve(''));
      return { code, out, err };
    };
    expect(await run(['--model', 'openai:gpt-4o'])).toMatchObject({
      code: EXIT.usage,
      err: 'awaken bench: --model scripted:FILE is required (a bench runs on a scripted model); see awaken bench --help\n',
    });
    expect((await run(['--model', 'scripted:x.yaml', '--steps', '10,many'])).err).toContain("--steps takes run lengths like 10,100,1000, not 'many'");
    expect((await run(['--model', 'scripted:examples/bench/weather-loop.yaml', '--agent', 'nobody'])).err).toBe(
      "awaken bench: no agent 'nobody' (agents: demo)\n",
    );
    const waits = join(mkdtempSync(join(tmpdir(), 'awaken-bench-')), 'confirm.yaml');
    writeFileSync(waits, '- tool_calls: [{ id: c, name: confirm_action, arguments: { action: go } }]\n- text: [ "done" ]\n');
    const r = await run(['--model', `scripted:${waits}`, '--steps', '3', '--rounds', '1']);
    expect(r.code).toBe(EXIT.data);
    expect(r.err).toMatch(
      /^awaken bench: the agent's run ended \{"type":"suspended"\} after 1 steps, not naturally after 3: a bench script must not suspend or stop early\n$/,
    );
  });
});
