import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../../src/contract/event.ts';
import { ToolResults } from '../../../src/contract/tool.ts';
import { CUT_BEFORE_OUTCOME, CUT_WHILE_WRITING, closersOf } from '../../../src/server/registry/closers.ts';
import { checkRunInvariants } from '../../../src/testing/index.ts';

/** What closes the step a run's dead process was cut off in, from the run's events alone. */

const RUN = { thread_id: 't1', run_id: 'r1' } as const;
const runStart: AgentEvent = { event_type: 'run_start', ...RUN };
const finish = (type: 'natural_end' | 'suspended' = 'natural_end'): AgentEvent => ({ event_type: 'run_finish', ...RUN, termination: { type } });
const failedCall = (id: string, name: string, message: string): AgentEvent => ({
  event_type: 'tool_call_done',
  id,
  message_id: '',
  result: ToolResults.error(name, message),
  outcome: 'failed',
});

/** A call of a step: its name, the pieces of its arguments, and how it ends. */
const callPlan = fc.record({
  name: fc.constantFrom('search', 'charge', 'lookup'),
  pieces: fc.array(fc.constantFrom('{"q":', '"a"', '}'), { maxLength: 3 }),
  ends: fc.constantFrom('succeeded', 'failed', 'invalid') as fc.Arbitrary<'succeeded' | 'failed' | 'invalid'>,
});

/** A step: what the model writes (text, reasoning, calls) in order, and whether it reports the inference. */
const stepPlan = fc.record({
  parts: fc.array(
    fc.oneof(fc.record({ text: fc.constantFrom('Hel', 'lo') }), fc.record({ reasoning: fc.constantFrom('hm', '…') }), fc.record({ call: callPlan })),
    {
      maxLength: 5,
    },
  ),
  reported: fc.boolean(),
});

/** A run: segments of steps (a segment but the last ends parked), and whether the last one ends. */
const runPlan = fc.record({
  segments: fc.array(fc.array(stepPlan, { maxLength: 3 }), { minLength: 1, maxLength: 3 }),
  ends: fc.boolean(),
});

type RunPlan = typeof runPlan extends fc.Arbitrary<infer T> ? T : never;

/** A well-formed stream of a run, as the run loop emits it: every call closed in its step, every step ended. */
function streamOf(plan: RunPlan): AgentEvent[] {
  const out: AgentEvent[] = [];
  let next = 0;
  plan.segments.forEach((steps, s) => {
    out.push(runStart);
    for (const step of steps) {
      out.push({ event_type: 'step_start', message_id: `m${next++}` });
      const calls: { id: string; name: string; ends: string }[] = [];
      for (const part of step.parts) {
        if ('text' in part) out.push({ event_type: 'text_delta', delta: part.text });
        else if ('reasoning' in part) out.push({ event_type: 'reasoning_delta', delta: part.reasoning });
        else {
          const id = `c${next++}`;
          out.push({ event_type: 'tool_call_start', id, name: part.call.name });
          for (const piece of part.call.pieces) out.push({ event_type: 'tool_call_delta', id, args_delta: piece });
          // A call whose arguments do not parse is closed at once, never ready.
          if (part.call.ends === 'invalid') out.push(failedCall(id, part.call.name, 'invalid arguments'));
          else {
            out.push({ event_type: 'tool_call_ready', id, name: part.call.name, arguments: {} });
            calls.push({ id, name: part.call.name, ends: part.call.ends });
          }
        }
      }
      if (step.reported) out.push({ event_type: 'inference_complete', model: 'm', duration_ms: 1 });
      for (const call of calls)
        out.push(
          call.ends === 'succeeded'
            ? { event_type: 'tool_call_done', id: call.id, message_id: 'tm', result: ToolResults.success(call.name, 1), outcome: 'succeeded' }
            : failedCall(call.id, call.name, 'boom'),
        );
      out.push({ event_type: 'step_end' });
    }
    if (s < plan.segments.length - 1) out.push(finish('suspended'));
  });
  if (plan.ends) out.push(finish());
  return out;
}

/** Every call announced in `events` is done exactly once, and nothing else is done. */
function doneOnce(events: readonly AgentEvent[]): string[] {
  const started = new Set<string>();
  const done = new Map<string, number>();
  for (const e of events) {
    if (e.event_type === 'tool_call_start') started.add(e.id);
    if (e.event_type === 'tool_call_done') done.set(e.id, (done.get(e.id) ?? 0) + 1);
  }
  const out: string[] = [];
  for (const id of started) if (done.get(id) !== 1) out.push(`${id} done ${done.get(id) ?? 0} times`);
  for (const id of done.keys()) if (!started.has(id)) out.push(`${id} done, never started`);
  return out;
}

describe('closersOf', () => {
  it('closes a prefix of a well-formed run cut anywhere so that the run may end right after: every call done once, steps balanced; closed again, nothing', () => {
    fc.assert(
      fc.property(
        runPlan.chain((plan) => {
          const stream = streamOf(plan);
          return fc.tuple(fc.constant(stream), fc.integer({ min: 1, max: stream.length }));
        }),
        ([stream, cut]) => {
          const prefix = stream.slice(0, cut);
          const closers = closersOf(prefix);
          const closed = [...prefix, ...closers];
          // Nothing but failed calls, then the step's end; never the run's end.
          expect(closers.every((e, i) => (i === closers.length - 1 ? e.event_type === 'step_end' : e.event_type === 'tool_call_done'))).toBe(true);
          // No event after the closers is needed: the run may end at once.
          const ended = closed.at(-1)?.event_type === 'run_finish' ? closed : [...closed, finish()];
          expect(checkRunInvariants(ended)).toEqual([]);
          expect(doneOnce(closed)).toEqual([]);
          expect(closersOf(closed)).toEqual([]);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('closes nothing of a stream whose steps all ended, or whose run finished after the open step', () => {
    fc.assert(
      fc.property(runPlan, (plan) => {
        const stream = streamOf(plan);
        expect(closersOf(stream)).toEqual([]);
        const open = [...stream.filter((e) => e.event_type !== 'run_finish'), { event_type: 'step_start', message_id: 'x' } as AgentEvent];
        expect(closersOf([...open, finish()])).toEqual([]);
      }),
    );
  });

  it('closes a step cut mid-inference as the run loop does: the calls it started, in order, failed while being written, then the step end', () => {
    const prefix: AgentEvent[] = [
      runStart,
      { event_type: 'step_start', message_id: 'm1' },
      { event_type: 'reasoning_delta', delta: 'hm' },
      { event_type: 'text_delta', delta: 'Let me look' },
      { event_type: 'tool_call_start', id: 'c1', name: 'search' },
      { event_type: 'tool_call_delta', id: 'c1', args_delta: '{"q":"x"}' },
      { event_type: 'tool_call_ready', id: 'c1', name: 'search', arguments: { q: 'x' } },
      { event_type: 'tool_call_start', id: 'c2', name: 'charge' },
      { event_type: 'tool_call_delta', id: 'c2', args_delta: '{"amo' },
    ];
    expect(closersOf(prefix)).toEqual([
      {
        event_type: 'tool_call_done',
        id: 'c1',
        message_id: '',
        result: { tool_name: 'search', status: 'error', data: null, message: '[Tool call not executed: the server stopped while the model was writing it]' },
        outcome: 'failed',
      },
      {
        event_type: 'tool_call_done',
        id: 'c2',
        message_id: '',
        result: { tool_name: 'charge', status: 'error', data: null, message: '[Tool call not executed: the server stopped while the model was writing it]' },
        outcome: 'failed',
      },
      { event_type: 'step_end' },
    ]);
    expect(closersOf(prefix.slice(0, 4))).toEqual([{ event_type: 'step_end' }]);
    expect(CUT_WHILE_WRITING).toBe('[Tool call not executed: the server stopped while the model was writing it]');
  });

  it('closes a step cut in its tool batch with the calls not done yet, saying their outcome was not told', () => {
    const prefix: AgentEvent[] = [
      runStart,
      { event_type: 'step_start', message_id: 'm1' },
      { event_type: 'tool_call_start', id: 'c1', name: 'search' },
      { event_type: 'tool_call_ready', id: 'c1', name: 'search', arguments: {} },
      { event_type: 'tool_call_start', id: 'c2', name: 'lookup' },
      { event_type: 'tool_call_ready', id: 'c2', name: 'lookup', arguments: {} },
      { event_type: 'inference_complete', model: 'm', duration_ms: 3 },
      { event_type: 'tool_call_done', id: 'c1', message_id: 'tm', result: ToolResults.success('search', 1), outcome: 'succeeded' },
    ];
    expect(closersOf(prefix)).toEqual([failedCall('c2', 'lookup', CUT_BEFORE_OUTCOME), { event_type: 'step_end' }]);
    expect(CUT_BEFORE_OUTCOME).toBe('[Tool call not finished: the server stopped before its outcome was told]');
  });

  it('leaves to the run taken up the calls it tells the outcome of itself (its stored batch holds them)', () => {
    const prefix: AgentEvent[] = [
      runStart,
      { event_type: 'step_start', message_id: 'm1' },
      { event_type: 'tool_call_start', id: 'c1', name: 'search' },
      { event_type: 'tool_call_ready', id: 'c1', name: 'search', arguments: {} },
      { event_type: 'tool_call_start', id: 'c2', name: 'lookup' },
    ];
    expect(closersOf(prefix, new Set(['c1']))).toEqual([failedCall('c2', 'lookup', CUT_WHILE_WRITING), { event_type: 'step_end' }]);
    expect(closersOf(prefix, new Set(['c1', 'c2']))).toEqual([{ event_type: 'step_end' }]);
  });

  it('looks at the run as it stands since its last run_start: an earlier segment cut off is not closed again', () => {
    const earlier: AgentEvent[] = [runStart, { event_type: 'step_start', message_id: 'm1' }, { event_type: 'tool_call_start', id: 'c1', name: 'search' }];
    expect(closersOf([...earlier, runStart, { event_type: 'activity_snapshot', message_id: 'a', activity_type: 'run_resumed', content: {} }])).toEqual([]);
    expect(closersOf([])).toEqual([]);
  });

  it('closes the step a view begins inside (the ring let its start go): the calls it shows started, then the step end', () => {
    const view: AgentEvent[] = [
      { event_type: 'text_delta', delta: 'ok' },
      { event_type: 'tool_call_delta', id: 'c0', args_delta: '}' },
      { event_type: 'tool_call_start', id: 'c1', name: 'search' },
    ];
    expect(closersOf(view)).toEqual([failedCall('c1', 'search', CUT_WHILE_WRITING), { event_type: 'step_end' }]);
    // Placed once, it is not guessed again: after the step's end, nothing is open.
    expect(closersOf([...view, { event_type: 'step_end' }, { event_type: 'state_snapshot', snapshot: {} }])).toEqual([]);
    expect(closersOf([{ event_type: 'state_snapshot', snapshot: {} }, finish()])).toEqual([]);
  });
});
