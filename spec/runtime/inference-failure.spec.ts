import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import type { StreamPart } from '../../src/contract/stream.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { InferenceFailure, type LlmExecutor } from '../../src/runtime/llm.ts';
import type { TappedInference } from '../../src/runtime/tap.ts';
import { INTERRUPTED } from '../../src/runtime/tool-batch.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { harness, types } from '../support/runtime.ts';

/**
 * An inference whose provider failed did not complete: it is reported by an `error` event when the
 * failure ends the run, never by `inference_complete`. The run still closes its step and ends with
 * its one `run_finish` (status done, status_reason `error:<what failed>`), which every encoder
 * suppresses after the `error` terminal.
 */

const go = [Messages.user('go')];
const finishOf = (events: readonly AgentEvent[]) =>
  events.filter((e) => e.event_type === 'run_finish').at(-1) as Extract<AgentEvent, { event_type: 'run_finish' }>;

/** A provider that streams `parts`, then fails with `failure`. */
const failingAfter = (parts: readonly StreamPart[], failure: InferenceFailure): LlmExecutor => ({
  name: 'failing',
  async *stream() {
    for (const p of parts) yield p;
    throw failure;
  },
});

describe('an inference whose provider failed', () => {
  it('ends the run with an error event in place of inference_complete, then the step and the run close', async () => {
    const h = harness([{ error: { code: 'timeout', message: 'no answer in time' } }]);
    const r = await h.runtime.run({ messages: go }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'error', value: 'timeout: no answer in time' });
    expect(types(h.sink.events)).toEqual(['run_start', 'step_start', 'error', 'state_snapshot', 'step_end', 'state_snapshot', 'run_finish']);
    expect(h.sink.events[2]).toEqual({ event_type: 'error', message: 'timeout: no answer in time', code: 'timeout' });
    expect(finishOf(h.sink.events).result).toEqual({ response: '', status: 'done', status_reason: 'error:timeout: no answer in time' });
    expect(checkRunInvariants(h.sink.events)).toEqual([]);
  });

  it('mid-stream: the text it streamed stays, the tool call it opened is closed as interrupted, then the error', async () => {
    const llm = failingAfter(
      [
        { type: 'text_delta', delta: 'Let me ' },
        { type: 'tool_call_start', id: 'c1', name: 'echo' },
        { type: 'tool_call_delta', id: 'c1', args_delta: '{"te' },
      ],
      new InferenceFailure({ code: 'provider', message: 'stream broke' }),
    );
    const inferences: TappedInference[] = [];
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('p', llm)
      .withModel('m', { provider: 'p', model_name: 'm' })
      .withPlugin('watch', { name: 'watch', register: () => undefined, tap: () => ({ inference: (i) => void inferences.push(i) }) })
      .withAgentSpec({ id: 'a', model: 'm', plugin_ids: ['watch'] })
      .build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    const sink = new VecEventSink();
    const r = await built.value.run({ messages: go }, sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'error', value: 'provider error: stream broke' });
    expect(types(sink.events)).toEqual([
      'run_start',
      'step_start',
      'text_delta',
      'tool_call_start',
      'tool_call_delta',
      'tool_call_done',
      'error',
      'state_snapshot',
      'step_end',
      'state_snapshot',
      'run_finish',
    ]);
    expect(sink.events[5]).toMatchObject({ id: 'c1', outcome: 'failed', result: { message: INTERRUPTED } });
    expect(sink.events[6]).toEqual({ event_type: 'error', message: 'provider error: stream broke', code: 'provider' });
    // A plugin watching the run is still told of the failed inference.
    expect(inferences.map((i) => i.error)).toEqual([{ code: 'provider', message: 'stream broke' }]);
    expect(checkRunInvariants(sink.events)).toEqual([]);
  });

  it('a failure a consecutive_errors policy tolerates is no error of the run: no error event, no inference_complete for it', async () => {
    const h = harness([{ error: 'overloaded' }, { text: 'answered' }], { spec: { stop_conditions: [{ type: 'consecutive_errors', max: 3 }] } });
    const r = await h.runtime.run({ messages: go }, h.sink);
    expect(r.ok && r.value).toMatchObject({ response: 'answered', termination: { type: 'natural_end' } });
    expect(types(h.sink.events)).toEqual([
      'run_start',
      'step_start',
      'state_snapshot',
      'step_end',
      'step_start',
      'text_delta',
      'inference_complete',
      'state_snapshot',
      'step_end',
      'state_snapshot',
      'run_finish',
    ]);
  });

  it('a run a policy stops after failures ends stopped, with no error event and no inference_complete for them', async () => {
    const h = harness([{ error: 'overloaded' }, { error: 'overloaded' }], { spec: { stop_conditions: [{ type: 'consecutive_errors', max: 2 }] } });
    const r = await h.runtime.run({ messages: go }, h.sink);
    expect(r.ok && r.value.termination).toMatchObject({ type: 'stopped', value: { code: 'consecutive_errors' } });
    expect(types(h.sink.events).filter((t) => t === 'error' || t === 'inference_complete')).toEqual([]);
  });
});
