import { tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { aiSdkTool } from '../../src/app/ai-sdk-tool.ts';
import { Messages } from '../../src/contract/message.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { recordRun, type RecordingSetup } from '../../src/replay/recorder.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import type { Decision } from '../../src/runtime/run-loop.ts';
import { echoTool } from '../support/runtime.ts';

/**
 * A tool's question at the gate (`Tool.askBefore`, the AI SDK's `needsApproval`) is a port: its
 * answer is recorded (`ask`), and a replay answers from the record — so a run that asked replays
 * without the app's code, and an edited, missing or extra ask record is reported.
 */

const deploy = aiSdkTool(
  'deploy',
  tool({
    description: 'Deploy',
    inputSchema: z.object({ target: z.string() }),
    needsApproval: async ({ target }) => target === 'prod',
    execute: async ({ target }) => ({ deployed: target }),
  }),
);

const SCRIPT: readonly ScriptStep[] = [
  {
    tool_calls: [
      { id: 'c1', name: 'deploy', arguments: { target: 'prod' } },
      { id: 'c2', name: 'deploy', arguments: { target: 'staging' } },
      { id: 'c3', name: 'echo', arguments: { text: 'x' } },
    ],
  },
  { text: 'done' },
];

const approve = (ids: readonly string[]): Decision[] => ids.map((id) => ({ targetId: id, decision: { decision_id: 'd', action: 'resume', updated_at: 0 } }));

function setup(): RecordingSetup {
  return {
    agent: { id: 'a', model: 'm', system_prompt: 'be brief' },
    models: { m: { provider: 'p', model_name: 'pm' } },
    providers: { p: new ScriptedLlm(SCRIPT) },
    tools: [deploy, echoTool],
    env: { env: deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, tick: 0 } },
    request: { messages: [Messages.user('ship it')] },
    decide: approve,
  };
}

const lines = (t: string): string[] => t.trimEnd().split('\n');
const asks = (t: string): Record<string, unknown>[] =>
  lines(t)
    .filter((l) => l.startsWith('{"type":"ask"'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
/** The transcript with its `n`th ask line replaced (undefined: removed). */
const withAsk = (t: string, n: number, replace: (r: Record<string, unknown>) => Record<string, unknown> | undefined): string => {
  const all = lines(t);
  const at = all.map((l, i) => (l.startsWith('{"type":"ask"') ? i : -1)).filter((i) => i >= 0)[n] as number;
  const next = replace(JSON.parse(all[at] as string) as Record<string, unknown>);
  return `${[...all.slice(0, at), ...(next === undefined ? [] : [JSON.stringify(next)]), ...all.slice(at + 1)].join('\n')}\n`;
};

describe('ask records: a tool asking for approval at the gate, recorded and replayed', () => {
  it('each first run of a call that asks is recorded with its answer (a ticket, or null), in model order, and the run replays identical without the app', async () => {
    const { transcript, result } = await recordRun(setup());
    expect(result.termination).toEqual({ type: 'natural_end' });
    expect(asks(transcript).map((r) => [r['call_id'], (r['ticket'] as { suspension?: { id: string } } | null)?.suspension?.id ?? null])).toEqual([
      ['c1', 'perm_c1'],
      ['c2', null],
    ]);
    const report = await replayTranscript(transcript);
    expect(report.divergence).toBeUndefined();
    expect(report.identical).toBe(true);
  });

  it("an ask record edited (the answer, the arguments), removed or added is reported at the record's line", async () => {
    const { transcript } = await recordRun(setup());
    const lineOf = (text: string, n: number): number =>
      lines(text)
        .map((l, i) => (l.startsWith('{"type":"ask"') ? i + 1 : -1))
        .filter((i) => i > 0)[n] as number;
    // c2 let run, edited to ask: it suspends where the recording ran it.
    const asked = withAsk(transcript, 1, (r) => ({ ...r, ticket: (asks(transcript)[0] as { ticket: unknown }).ticket }));
    expect(await replayTranscript(asked)).toMatchObject({ identical: false });
    // c1's question, with other arguments: named at its line.
    const args = withAsk(transcript, 0, (r) => ({ ...r, arguments: { target: 'dev' } }));
    expect(await replayTranscript(args)).toMatchObject({
      identical: false,
      divergence: { port: 'tool', message: 'tool call deploy [c1] is asked about with other arguments than recorded', line: lineOf(transcript, 0) },
    });
    // c2's question removed: the replay asks, the transcript has no answer.
    const removed = withAsk(transcript, 1, () => undefined);
    expect(await replayTranscript(removed)).toMatchObject({
      identical: false,
      divergence: { port: 'tool', message: 'tool call deploy [c2] was asked about at the gate, the transcript has no ask record for it' },
    });
    // A question no call made: reported, not skipped.
    const all = lines(transcript);
    const extra = `${[...all.slice(0, -1), JSON.stringify({ type: 'ask', call_id: 'c9', name: 'deploy', arguments: { target: 'x' }, ticket: null }), ...all.slice(-1)].join('\n')}\n`;
    expect(await replayTranscript(extra)).toMatchObject({
      identical: false,
      divergence: {
        port: 'transcript',
        line: all.length,
        message: `line ${all.length}: 1 recorded question(s) at the gate were never asked (an ask record no call made)`,
      },
    });
    // An answer that is neither a ticket nor null nor a throw is no record.
    const neither = withAsk(transcript, 1, (r) => {
      const { ticket: _t, ...rest } = r;
      return rest;
    });
    expect(await replayTranscript(neither)).toMatchObject({ identical: false });
  });

  it('a question that threw is recorded as thrown, and replays the same failed call', async () => {
    const failing = aiSdkTool(
      'deploy',
      tool({
        description: 'Deploy',
        inputSchema: z.object({ target: z.string() }),
        needsApproval: () => {
          throw new Error('approval service down');
        },
        execute: async ({ target }) => ({ deployed: target }),
      }),
    );
    const { transcript } = await recordRun({ ...setup(), tools: [failing, echoTool] });
    expect(asks(transcript).map((r) => [r['call_id'], r['thrown']])).toEqual([
      ['c1', 'approval service down'],
      ['c2', 'approval service down'],
    ]);
    const report = await replayTranscript(transcript);
    expect(report.divergence).toBeUndefined();
    expect(report.identical).toBe(true);
  });

  it("a delegate's sub-run asking inside a recorded call is not the run's traffic: no ask record of it, and the run replays identical", async () => {
    const { transcript } = await recordRun({
      ...setup(),
      agent: { id: 'a', model: 'm', system_prompt: 'x', delegates: ['sub'] },
      delegates: [{ id: 'sub', model: 'ms', description: 'sub agent' }],
      models: { m: { provider: 'p', model_name: 'pm' }, ms: { provider: 'ps', model_name: 'psm' } },
      providers: {
        p: new ScriptedLlm([{ tool_calls: [{ id: 'p1', name: 'agent_run_sub', arguments: { prompt: 'go' } }] }, { text: 'done' }]),
        ps: new ScriptedLlm([{ tool_calls: [{ id: 'c1', name: 'deploy', arguments: { target: 'staging' } }] }, { text: 'sub done' }]),
      },
      tools: [deploy],
    });
    expect(asks(transcript)).toEqual([]);
    const report = await replayTranscript(transcript);
    expect(report.divergence).toBeUndefined();
    expect(report.identical).toBe(true);
  });
});
