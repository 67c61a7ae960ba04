import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import type { EventSink } from '../../src/runtime/event-sink.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { harness, types } from '../support/runtime.ts';

const go = [Messages.user('go')];

/** A sink that records every event and fails on the `n`-th of type `type` (after recording it). */
function failingSink(type: AgentEvent['event_type'], n = 1): EventSink & { readonly events: AgentEvent[] } {
  const events: AgentEvent[] = [];
  let seen = 0;
  return {
    events,
    emit(event: AgentEvent): void {
      events.push(event);
      if (event.event_type === type && ++seen === n) throw new Error(`sink failed on ${type}`);
    },
  };
}

const finishOf = (events: readonly AgentEvent[]) =>
  events.filter((e) => e.event_type === 'run_finish').at(-1) as Extract<AgentEvent, { event_type: 'run_finish' }>;

describe('the run loop interprets the step machine (src/runtime/run-loop.ts)', () => {
  it("a sink failing inside a step: the step is closed, its end runs with the failure as the step's end, the run ends with it, one run_finish", async () => {
    const h = harness([{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'a' } }] }, { text: 'done' }]);
    const sink = failingSink('tool_call_ready');
    const r = await h.runtime.run({ messages: go }, sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'error', value: 'sink failed on tool_call_ready' });
    // The announced call is closed as interrupted, and the step's end runs in full.
    expect(types(sink.events).slice(types(sink.events).indexOf('tool_call_ready'))).toEqual([
      'tool_call_ready',
      'tool_call_done',
      'state_snapshot',
      'step_end',
      'state_snapshot',
      'run_finish',
    ]);
    expect(h.llm.requests).toHaveLength(1);
    expect(finishOf(sink.events).termination).toEqual({ type: 'error', value: 'sink failed on tool_call_ready' });
    expect(checkRunInvariants(sink.events)).toEqual([]);
  });

  it('a sink failing while a step ends: the end is attempted once more from its start, then the run ends with the failure', async () => {
    const h = harness([{ text: 'hello' }]);
    const sink = failingSink('step_end');
    const r = await h.runtime.run({ messages: go }, sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'error', value: 'sink failed on step_end' });
    const tail = types(sink.events).slice(types(sink.events).indexOf('inference_complete'));
    expect(tail).toEqual(['inference_complete', 'state_snapshot', 'step_end', 'state_snapshot', 'step_end', 'state_snapshot', 'run_finish']);
    expect(r.ok && r.value.response).toBe('hello');
  });

  it('a sink failing on step_start (before the step began): the run ends with the failure and no step is closed that never opened', async () => {
    const h = harness([{ text: 'never asked' }]);
    const sink = failingSink('step_start');
    const r = await h.runtime.run({ messages: go }, sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'error', value: 'sink failed on step_start' });
    expect(types(sink.events)).toEqual(['run_start', 'step_start', 'state_snapshot', 'run_finish']);
    expect(h.llm.requests).toHaveLength(0);
  });

  it('the first step starts once the run is registered: a hook of that step can cancel the run by its thread', async () => {
    const h = harness([{ text: 'never asked' }]);
    const events: AgentEvent[] = [];
    let cancelled: boolean | undefined;
    const sink: EventSink = {
      emit(event: AgentEvent): void {
        events.push(event);
        if (event.event_type === 'step_start') cancelled = h.runtime.cancel('t1');
      },
    };
    const r = await h.runtime.run({ threadId: 't1', messages: go }, sink);
    expect(cancelled).toBe(true);
    expect(r.ok && r.value.termination).toEqual({ type: 'cancelled' });
    expect(h.llm.requests).toHaveLength(0);
  });

  it('a run cancelled before its first step ends at the boundary: no step begins', async () => {
    const h = harness([{ text: 'never asked' }]);
    const controller = new AbortController();
    controller.abort();
    const r = await h.runtime.run({ messages: go }, h.sink, { signal: controller.signal });
    expect(r.ok && r.value.termination).toEqual({ type: 'cancelled' });
    expect(types(h.sink.events)).not.toContain('step_start');
    expect(h.llm.requests).toHaveLength(0);
  });

  it('a response cut by the output limit is continued with the same request inputs, its text kept, up to the limit', async () => {
    const h = harness(
      [
        { text: 'part one', stop_reason: 'MaxTokens' },
        { text: ' part two', stop_reason: 'MaxTokens' },
        { text: ' part three', stop_reason: 'MaxTokens' },
      ],
      { spec: { max_continuation_retries: 2 } },
    );
    const r = await h.runtime.run({ messages: go }, h.sink);
    expect(h.llm.requests).toHaveLength(3);
    expect(r.ok && r.value.steps).toBe(1);
    expect(r.ok && r.value.response).toBe(' part three');
    const last = h.llm.requests[2]?.messages.map((m) => m.role) ?? [];
    expect(last).toEqual(['system', 'user', 'assistant', 'user', 'assistant', 'user']);
  });
});
