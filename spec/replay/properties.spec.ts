import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { recordRun, type RecordingSetup } from '../../src/replay/recorder.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { script, scriptTools } from '../support/scripts.ts';

type Mode = 'sequential' | 'parallel_streaming' | 'parallel_batch_approval';

function setup(steps: readonly ScriptStep[], mode: Mode, cancelAfterEvent: number | undefined, tick: number): RecordingSetup {
  return {
    agent: { id: 'a', model: 'm', system_prompt: 'be brief', max_rounds: 8, sections: { tool_execution: { mode } } },
    models: { m: { provider: 'p', model_name: 'pm' } },
    providers: { p: new ScriptedLlm(steps) },
    tools: scriptTools,
    env: { env: deterministicEnv({ tick }), header: { kind: 'deterministic', start: 1_700_000_000_000, seed: 42, tick } },
    request: { messages: [Messages.user('go')] },
    ...(cancelAfterEvent !== undefined ? { cancelAfterEvent } : {}),
    // `susp` suspends again when re-run, so only two rounds are answered; then the run is cancelled.
    decide: (ids, round) =>
      round < 2
        ? ids.map((id) => ({ targetId: id, decision: { decision_id: `d-${id}`, action: 'resume' as const, result: { ok: true }, updated_at: 0 } }))
        : undefined,
  };
}

const mode = fc.constantFrom<Mode>('sequential', 'parallel_streaming', 'parallel_batch_approval');

describe('record → replay', () => {
  it('property: replaying a recording gives identical bytes, in every execution mode', async () => {
    await fc.assert(
      fc.asyncProperty(script, mode, fc.option(fc.integer({ min: 1, max: 30 }), { nil: undefined }), fc.constantFrom(0, 7), async (steps, m, cancel, tick) => {
        const { transcript } = await recordRun(setup(steps, m, cancel, tick));
        const report = await replayTranscript(transcript);
        expect(report.divergence).toBeUndefined();
        expect(report.firstDifference).toBeUndefined();
        expect(report.identical).toBe(true);
      }),
      { numRuns: 120 },
    );
  });

  it('property: flipping one byte of a recorded LLM response, tool result or Env draw makes replay fail and say where', async () => {
    const flips = script.chain((steps) => fc.tuple(fc.constant(steps), mode, fc.nat(), fc.nat(), fc.integer({ min: 1, max: 94 })));
    await fc.assert(
      fc.asyncProperty(flips, async ([steps, m, pickLine, pickChar, delta]) => {
        const { transcript } = await recordRun(setup(steps, m, undefined, 3));
        const lines = transcript.trimEnd().split('\n');
        // The value region of each record kind: LLM parts/error, a tool's result or error, an env value.
        const regions = lines.flatMap((line, i) => {
          const m1 = /^\{"type":"llm".*?("parts":.*)\}$/.exec(line);
          const m2 = /^\{"type":"tool".*?("(?:result|tool_error|thrown)":.*)\}$/.exec(line);
          const m3 = /^\{"type":"env","draw":"(?:now|id|random)".*?("value":.*)\}$/.exec(line);
          const m = m1 ?? m2 ?? m3;
          return m === null ? [] : [{ i, start: line.length - 1 - (m[1] as string).length, end: line.length - 1 }];
        });
        fc.pre(regions.length > 0);
        const r = regions[pickLine % regions.length] as { i: number; start: number; end: number };
        const line = lines[r.i] as string;
        const at = r.start + (pickChar % (r.end - r.start));
        const code = line.charCodeAt(at);
        const flipped = String.fromCharCode(32 + ((code - 32 + delta) % 95));
        fc.pre(flipped !== line[at]);
        lines[r.i] = line.slice(0, at) + flipped + line.slice(at + 1);
        const report = await replayTranscript(`${lines.join('\n')}\n`);
        expect(report.identical).toBe(false);
        // The report says where the replay left the recording: the first differing event, or the
        // event index at which a port found the recording unusable.
        expect(report.firstDifference !== undefined || report.divergence !== undefined).toBe(true);
        if (report.firstDifference === undefined) expect(report.divergence?.atEvent).toBeGreaterThanOrEqual(0);
      }),
      { numRuns: 150 },
    );
  });
});
