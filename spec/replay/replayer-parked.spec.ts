import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { decisionFor } from '../../src/contract/decision.ts';
import { Messages } from '../../src/contract/message.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { recordRun, type RecordingSetup } from '../../src/replay/recorder.ts';
import { replayTranscript, type ReplayReport } from '../../src/replay/replayer.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { approvalTool } from '../support/runtime.ts';

/**
 * The replayer gives a parked run its next recorded decision when `RunHandle.parked()` says the run
 * waits, not by looking again on every turn of the event loop: with `setImmediate` never firing, a
 * replay that decides still runs to its end, identical, and never asks for one.
 */

const corpus = join(import.meta.dirname, '../../fixtures/runs');
const withDecisions = readdirSync(corpus)
  .filter((f) => f.endsWith('.jsonl'))
  .sort()
  .filter((f) => readFileSync(join(corpus, f), 'utf8').includes('"type":"decision"'));

/** `setImmediate` replaced by one that counts its calls and never runs its callback. */
function stallSetImmediate(): { readonly calls: () => number } {
  const spy = vi.spyOn(globalThis, 'setImmediate').mockImplementation((() => ({ ref: () => undefined, unref: () => undefined, hasRef: () => false })) as never);
  return { calls: () => spy.mock.calls.length };
}

/** The report, or `hung` when the replay did not end within `ms` (a replay waiting on a stalled timer). */
const within = (p: Promise<ReplayReport>, ms = 3_000): Promise<ReplayReport | 'hung'> =>
  Promise.race([p, new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), ms))]);

afterEach(() => {
  vi.restoreAllMocks();
});

describe('replayTranscript waits on RunHandle.parked(), not on setImmediate', () => {
  it('the corpus has runs that park on a decision', () => {
    expect(withDecisions.length).toBeGreaterThanOrEqual(5);
  });

  it.each(withDecisions)('%s: each decision is delivered once the run parks; no setImmediate is asked for', async (file) => {
    const text = readFileSync(join(corpus, file), 'utf8');
    const stalled = stallSetImmediate();
    const report = await within(replayTranscript(text));
    expect(report).not.toBe('hung');
    expect((report as ReplayReport).divergence).toBeUndefined();
    expect((report as ReplayReport).identical).toBe(true);
    expect(stalled.calls()).toBe(0);
  });

  it('a decision that leaves calls waiting: the next one is delivered when the run parks again, with no event between', async () => {
    // Two calls wait and the run resumes only once both are decided; the recording answers both at
    // once, and its decision record is split in two at the same point of the stream: the first
    // decision wakes the run, which takes it and parks again without an event.
    const script: ScriptStep[] = [
      {
        tool_calls: [
          { id: 'c1', name: 'approve', arguments: { what: 'a' } },
          { id: 'c2', name: 'approve', arguments: { what: 'b' } },
        ],
      },
      { text: 'both done' },
    ];
    const setup: RecordingSetup = {
      agent: { id: 'a', model: 'm', system_prompt: 'be brief', sections: { tool_execution: { mode: 'parallel_batch_approval' } } },
      models: { m: { provider: 'p', model_name: 'pm' } },
      providers: { p: new ScriptedLlm(script) },
      tools: [approvalTool],
      env: { env: deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, seed: 42, tick: 0 } },
      request: { messages: [Messages.user('hi')] },
      decide: (suspended) => suspended.map((id) => decisionFor(id, 'resume', 0, { decisionId: `d-${id}` })),
    };
    const recorded = (await recordRun(setup)).transcript;
    const transcript = recorded
      .split('\n')
      .flatMap((line) => {
        if (!line.includes('"type":"decision"')) return [line];
        const record = JSON.parse(line) as { decisions: unknown[] };
        expect(record.decisions).toHaveLength(2);
        return record.decisions.map((d) => JSON.stringify({ ...record, decisions: [d] }));
      })
      .join('\n');
    expect(transcript.split('\n').filter((l) => l.includes('"type":"decision"'))).toHaveLength(2);
    // Recorded whole, the run replays identical: the split is what this replay adds.
    expect((await replayTranscript(recorded)).identical).toBe(true);

    const stalled = stallSetImmediate();
    const report = await within(replayTranscript(transcript));
    expect(report).not.toBe('hung');
    expect((report as ReplayReport).divergence).toBeUndefined();
    expect((report as ReplayReport).identical).toBe(true);
    expect((report as ReplayReport).termination).toEqual({ type: 'natural_end' });
    expect(stalled.calls()).toBe(0);
  });
});
