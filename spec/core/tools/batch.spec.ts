import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../../src/contract/event.ts';
import { isTerminalToolCallStatus } from '../../../src/contract/lifecycle.ts';
import type { ToolCall } from '../../../src/contract/message.ts';
import { ToolResults, type SuspendTicket, type ToolCallResume, type ToolResult } from '../../../src/contract/tool.ts';
import { StateCommand } from '../../../src/core/state/state-command.ts';
import { MutationBatch } from '../../../src/core/state/mutation-batch.ts';
import {
  advance,
  batchCall,
  INTERRUPTED,
  openBatch,
  restoredBatch,
  resumedProjection,
  suspendedOf,
  targetOf,
  type BatchCall,
  type BatchCommand,
  type BatchInput,
  type BatchNext,
  type BatchState,
  type BatchStep,
  type Gate,
  type RecoveredCall,
  type ToolExecutionMode,
  type ToolOutcome,
} from '../../../src/core/tools/batch.ts';
import { counterKey, registerKey } from '../../support/keys.ts';

const call = (id: string, name = 'echo'): ToolCall => ({ id, name, arguments: { id } });
const ok = (c: ToolCall): ToolOutcome => ({ result: ToolResults.success(c.name, c.id), command: undefined });
const ticket = (c: ToolCall, mode: SuspendTicket['resume_mode'] = 'replay_tool_call'): SuspendTicket => ({
  suspension: { id: `s-${c.id}`, action: 'confirm' },
  pending: { id: c.id, name: c.name, arguments: c.arguments },
  resume_mode: mode,
});
const decide = (action: ToolCallResume['action'], extra: Partial<ToolCallResume> = {}): ToolCallResume => ({
  decision_id: 'd',
  action,
  updated_at: 1,
  ...extra,
});

/** What an interpreter saw while driving the machine: every step's commands and events, and the requests it answered. */
interface Trace {
  readonly state: BatchState;
  readonly commands: BatchCommand[];
  readonly events: AgentEvent[];
  readonly asked: BatchNext[];
  /** The calls whose AfterToolExecute phase a step asked for, as `id:status of their result`. */
  readonly afterTool: string[];
}

/** Drives the machine from a step to `done`, answering gates and tools with `answer`. */
function drive(first: BatchStep, answer: (next: BatchNext, state: BatchState) => BatchInput): Trace {
  const trace: Trace = { state: first.state, commands: [], events: [], asked: [], afterTool: [] };
  let step = first;
  for (let guard = 0; guard < 10_000; guard++) {
    trace.commands.push(...step.commands);
    trace.events.push(...step.events);
    for (const i of step.afterTool ?? []) trace.afterTool.push(`${step.state.calls[i]!.call.id}:${step.state.calls[i]!.result?.status ?? 'none'}`);
    if (step.next.type === 'done') return { ...trace, state: step.state };
    if (step.next.type === 'invalid') throw new Error(step.next.reason);
    trace.asked.push(step.next);
    step = advance(step.state, step.next.type === 'commit' ? { type: 'committed' } : answer(step.next, step.state));
  }
  throw new Error('the batch did not finish within 10,000 steps');
}

const allowAll =
  (outcome: (c: ToolCall) => ToolOutcome = ok) =>
  (next: BatchNext, state: BatchState): BatchInput => {
    if (next.type === 'gate') return { type: 'gated', gate: { type: 'allow' } };
    if (next.type === 'execute') return { type: 'executed', outcome: outcome(state.calls[next.index]!.call) };
    if (next.type === 'execute_all')
      return { type: 'executed_all', outcomes: next.indices.map((i) => outcome(state.calls[i]!.call)), strategyOf: () => 'exclusive' };
    throw new Error(`unexpected ${next.type}`);
  };

const run = (calls: readonly ToolCall[], mode: ToolExecutionMode, answer: (next: BatchNext, state: BatchState) => BatchInput): Trace =>
  drive(advance(openBatch(calls, 'text', 'm1', mode).state, { type: 'run' }), answer);

const settledIds = (commands: readonly BatchCommand[]): string[] =>
  commands.flatMap((c) => (c.type === 'settled' ? [`${c.call.call.id}:${c.call.status}`] : []));
const doneIds = (events: readonly AgentEvent[]): string[] => events.flatMap((e) => (e.event_type === 'tool_call_done' ? [`${e.id}:${e.outcome}`] : []));

describe('a tool batch as a state machine (seed 003)', () => {
  it('opens with the batch as requested, every call new, and asks for nothing until run', () => {
    const step = openBatch([call('a'), call('b')], 'hi', 'm1', 'sequential');
    expect(step.commands).toEqual([{ type: 'begin', calls: step.state.calls }]);
    expect(step.state.calls.map((c) => c.status)).toEqual(['new', 'new']);
    expect(step.next).toEqual({ type: 'done' });
    expect(advance(step.state, { type: 'run' }).next).toEqual({ type: 'gate', index: 0 });
  });

  it('sequential: gates and runs each call in model order (running before the tool), then reports every call once', () => {
    const t = run([call('a'), call('b')], 'sequential', allowAll());
    expect(t.asked.map((n) => `${n.type}${'index' in n ? n.index : ''}`)).toEqual(['gate0', 'execute0', 'gate1', 'execute1']);
    expect(t.commands.map((c) => `${c.type}:${c.type === 'begin' ? '' : `${c.call.call.id}:${c.call.status}`}`)).toEqual([
      'status:a:running',
      'settled:a:succeeded',
      'status:b:running',
      'settled:b:succeeded',
    ]);
    expect(doneIds(t.events)).toEqual(['a:succeeded', 'b:succeeded']);
    expect(t.state.calls.every((c) => c.reported)).toBe(true);
  });

  it('sequential: the first call that suspends itself stops the batch; the calls after it are interrupted', () => {
    const calls = [call('a'), call('b'), call('c')];
    const t = run(
      calls,
      'sequential',
      allowAll((c) => (c.id === 'a' ? { result: ToolResults.suspended(c.name, 'wait', ticket(c, 'use_decision_as_tool_result')), command: undefined } : ok(c))),
    );
    expect(settledIds(t.commands)).toEqual(['a:suspended', 'b:failed', 'c:failed']);
    expect(t.state.calls[1]?.result?.message).toBe(INTERRUPTED);
    expect(t.state.calls[0]).toMatchObject({ resumeMode: 'use_decision_as_tool_result', suspensionId: 's-a', suspensionReason: 'confirm' });
    expect(doneIds(t.events)).toEqual(['a:suspended', 'b:failed', 'c:failed']);
    expect(suspendedOf(t.state).map((c) => c.call.id)).toEqual(['a']);
  });

  it('a block rejects its call, interrupts the rest and names the reason; parallel calls allowed before it still run', () => {
    const calls = [call('a'), call('b'), call('c')];
    const gates: Gate[] = [{ type: 'allow' }, { type: 'block', reason: 'no' }];
    const t = run(calls, 'parallel_streaming', (next, state) => (next.type === 'gate' ? { type: 'gated', gate: gates[next.index]! } : allowAll()(next, state)));
    expect(t.state.blockedReason).toBe('no');
    expect(settledIds(t.commands)).toEqual(['b:failed', 'c:failed', 'a:succeeded']);
    expect(t.state.calls[1]?.result).toMatchObject({ message: 'no', metadata: { rejected: true } });
    expect(t.asked.at(-1)).toEqual({ type: 'execute_all', indices: [0] });
    expect(doneIds(t.events)).toEqual(['a:succeeded', 'b:failed', 'c:failed']);
  });

  it('a gate may suspend a call with its ticket or give its result; neither runs the tool', () => {
    const calls = [call('a'), call('b'), call('c')];
    const gates: Gate[] = [
      { type: 'suspend', ticket: ticket(calls[0]!, 'pass_decision_to_tool') },
      { type: 'set_result', result: ToolResults.success('echo', 'given') },
      { type: 'allow' },
    ];
    const t = run(calls, 'sequential', (next, state) => (next.type === 'gate' ? { type: 'gated', gate: gates[next.index]! } : allowAll()(next, state)));
    expect(settledIds(t.commands)).toEqual(['a:suspended', 'b:succeeded', 'c:succeeded']);
    expect(t.asked.filter((n) => n.type === 'execute')).toEqual([{ type: 'execute', index: 2, args: { id: 'c' } }]);
    expect(t.state.calls[0]).toMatchObject({ resumeMode: 'pass_decision_to_tool', suspensionId: 's-a' });
  });

  it("a call settled pending by a result — its tool's, or one a gate set — asks for its after-tool phase at once; a gate's suspension does not (no tool ran)", () => {
    const calls = [call('a'), call('b'), call('c'), call('d')];
    const pending = (c: ToolCall): ToolResult => ToolResults.suspended(c.name, 'wait', ticket(c));
    const gates: Gate[] = [
      { type: 'suspend', ticket: ticket(calls[0]!) },
      { type: 'set_result', result: pending(calls[1]!) },
      { type: 'allow' },
      { type: 'allow' },
    ];
    const answer = (next: BatchNext, state: BatchState): BatchInput =>
      next.type === 'gate'
        ? { type: 'gated', gate: gates[next.index]! }
        : allowAll((c) => (c.id === 'c' ? { result: pending(c), command: undefined } : ok(c)))(next, state);
    expect(run(calls, 'sequential', answer).afterTool).toEqual(['b:pending', 'c:pending']);
    expect(run(calls, 'parallel_streaming', answer).afterTool).toEqual(['b:pending', 'c:pending']);
    // Asked for after the step's commands and events: the sequential stop reports the call first.
    let s = advance(openBatch([call('x'), call('y')], '', 'm', 'sequential').state, { type: 'run' });
    s = advance(s.state, { type: 'gated', gate: { type: 'allow' } });
    s = advance(s.state, { type: 'executed', outcome: { result: pending(call('x')), command: undefined } });
    expect(s.afterTool).toEqual([0]);
    expect(s.events.map((e) => e.event_type)).toEqual(['tool_call_done', 'tool_call_done']);
    expect(s.next).toEqual({ type: 'done' });
  });

  it('parallel: every call is gated first, the allowed ones run together and settle in model order', () => {
    const calls = [call('a'), call('b'), call('c')];
    const t = run(calls, 'parallel_streaming', allowAll());
    expect(t.asked.map((n) => n.type)).toEqual(['gate', 'gate', 'gate', 'commit', 'execute_all']);
    expect(t.commands.map((c) => (c.type === 'begin' ? 'begin' : `${c.type}:${c.call.call.id}`))).toEqual([
      'status:a',
      'status:b',
      'status:c',
      'settled:a',
      'settled:b',
      'settled:c',
    ]);
  });

  it('parallel batch approval: a call whose staged writes conflict with an earlier one fails and keeps no writes', () => {
    const Reg = registerKey('t.reg');
    const Count = counterKey('t.count');
    const writes = (c: ToolCall): ToolOutcome => ({
      result: ToolResults.success(c.name, c.id),
      command: StateCommand.empty().update(Reg, c.id).update(Count, 1),
    });
    const strategyOf = (key: string): 'exclusive' | 'commutative' => (key === 't.count' ? 'commutative' : 'exclusive');
    for (const [mode, expected] of [
      ['parallel_batch_approval', ['a:succeeded', 'b:failed']],
      ['parallel_streaming', ['a:succeeded', 'b:succeeded']],
    ] as const) {
      const t = run([call('a'), call('b')], mode, (next, state) => {
        if (next.type === 'execute_all') return { type: 'executed_all', outcomes: next.indices.map((i) => writes(state.calls[i]!.call)), strategyOf };
        return allowAll()(next, state);
      });
      expect(settledIds(t.commands)).toEqual(expected);
      expect(t.state.calls[1]?.command === undefined).toBe(mode === 'parallel_batch_approval');
      const settledB = t.commands.find((c) => c.type === 'settled' && c.call.call.id === 'b');
      expect(settledB !== undefined && settledB.type === 'settled' && settledB.staged !== undefined).toBe(mode === 'parallel_streaming');
    }
  });

  it('refuses an input that does not fit the stage, as a value naming both', () => {
    const opened = openBatch([call('a')], '', 'm', 'sequential').state;
    expect(advance(opened, { type: 'committed' }).next).toEqual({ type: 'invalid', reason: "a tool batch at 'open' cannot take 'committed'" });
    expect(advance(opened, { type: 'gated', gate: { type: 'allow' } }).next.type).toBe('invalid');
    expect(advance(opened, { type: 'executed', outcome: ok(call('a')) }).next.type).toBe('invalid');
    expect(advance(opened, { type: 'resume', decisions: new Map(), silent: false }).next.type).toBe('invalid');
    expect(advance(opened, { type: 'executed_all', outcomes: [], strategyOf: () => 'exclusive' }).next.type).toBe('invalid');
    const gating = advance(opened, { type: 'run' }).state;
    expect(advance(gating, { type: 'run' }).next.type).toBe('invalid');
    expect(() => run([call('a')], 'parallel_streaming', (next, state) => (next.type === 'execute_all' ? { type: 'run' } : allowAll()(next, state)))).toThrow(
      "a tool batch at 'run_all' cannot take 'run'",
    );
    let s = advance(openBatch([call('a'), call('b')], '', 'm', 'parallel_streaming').state, { type: 'run' });
    for (const input of [{ type: 'gated', gate: { type: 'allow' } }, { type: 'gated', gate: { type: 'allow' } }, { type: 'committed' }] as const)
      s = advance(s.state, input);
    expect(s.next).toEqual({ type: 'execute_all', indices: [0, 1] });
    expect(advance(s.state, { type: 'executed_all', outcomes: [ok(call('a'))], strategyOf: () => 'exclusive' }).next.type).toBe('invalid');
  });

  it('never changes the state it is given: every step returns a new one', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<ToolExecutionMode>('sequential', 'parallel_streaming', 'parallel_batch_approval'),
        fc.array(fc.constantFrom('allow', 'block', 'suspend', 'set'), { minLength: 1, maxLength: 5 }),
        (mode, verdicts) => {
          const calls = verdicts.map((_, i) => call(`c${i}`));
          let step = advance(deepFreeze(openBatch(calls, '', 'm', mode).state), { type: 'run' });
          for (let guard = 0; guard < 100 && step.next.type !== 'done'; guard++) {
            const next = step.next;
            const input: BatchInput =
              next.type === 'gate'
                ? { type: 'gated', gate: gateOf(verdicts[next.index]!, calls[next.index]!) }
                : next.type === 'commit'
                  ? { type: 'committed' }
                  : allowAll()(next, step.state);
            step = advance(deepFreeze(step.state), input);
          }
          expect(step.next.type).toBe('done');
        },
      ),
    );
  });
});

function gateOf(verdict: string, c: ToolCall): Gate {
  if (verdict === 'block') return { type: 'block', reason: 'r' };
  if (verdict === 'suspend') return { type: 'suspend', ticket: ticket(c) };
  if (verdict === 'set') return { type: 'set_result', result: ToolResults.success(c.name, 'set') };
  return { type: 'allow' };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value) && !(value instanceof StateCommand) && !(value instanceof Map)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

describe('the pipeline over generated batches', () => {
  const verdict = fc.constantFrom('allow', 'block', 'suspend', 'set');
  const outcome = fc.constantFrom('ok', 'fail', 'suspend');
  const mode = fc.constantFrom<ToolExecutionMode>('sequential', 'parallel_streaming', 'parallel_batch_approval');

  it('property: every call settles exactly once and is reported exactly once, in model order; a block or a sequential self-suspension interrupts exactly the calls after it', () => {
    fc.assert(
      fc.property(mode, fc.array(fc.tuple(verdict, outcome), { minLength: 1, maxLength: 8 }), (m, plan) => {
        const calls = plan.map((_, i) => call(`c${i}`));
        const tool = (c: ToolCall): ToolOutcome => {
          const o = plan[Number(c.id.slice(1))]![1];
          if (o === 'fail') return { result: ToolResults.error(c.name, 'boom'), command: undefined };
          if (o === 'suspend') return { result: ToolResults.suspended(c.name, 'wait', ticket(c)), command: undefined };
          return ok(c);
        };
        const t = run(calls, m, (next, state) =>
          next.type === 'gate' ? { type: 'gated', gate: gateOf(plan[next.index]![0], calls[next.index]!) } : allowAll(tool)(next, state),
        );
        const settled = t.commands.filter((c) => c.type === 'settled').map((c) => (c.type === 'settled' ? c.call.call.id : ''));
        expect([...settled].sort()).toEqual(calls.map((c) => c.id).sort());
        expect(t.events.map((e) => (e.event_type === 'tool_call_done' ? e.id : ''))).toEqual(calls.map((c) => c.id));
        expect(t.state.calls.every((c) => isTerminalToolCallStatus(c.status) || c.status === 'suspended')).toBe(true);
        const blocked = plan.findIndex(([v]) => v === 'block');
        const selfSuspended = m === 'sequential' ? plan.findIndex(([v, o]) => v === 'allow' && o === 'suspend') : -1;
        const stops = [blocked, selfSuspended].filter((i) => i >= 0);
        const stop = stops.length === 0 ? -1 : Math.min(...stops);
        t.state.calls.forEach((c, i) => {
          expect(c.result?.message === INTERRUPTED).toBe(stop >= 0 && i > stop);
        });
        expect(t.state.blockedReason !== undefined).toBe(stop >= 0 && stop === blocked);
        // The after-tool hooks see a pending result exactly for the calls whose tool ran and answered it.
        const ran = (i: number): boolean => (m === 'sequential' ? stop < 0 || i <= stop : blocked < 0 || i < blocked);
        expect(t.afterTool).toEqual(plan.flatMap(([v, o], i) => (v === 'allow' && o === 'suspend' && ran(i) ? [`c${i}:pending`] : [])));
      }),
    );
  });
});

describe('resuming a suspended batch', () => {
  const calls = [call('a'), call('b'), call('c'), call('d')];
  /** a: replay, b: the decision as result, c: the decision as arguments, d: cancelled. */
  const parked = (): BatchState => {
    const modes = ['replay_tool_call', 'use_decision_as_tool_result', 'pass_decision_to_tool', 'replay_tool_call'] as const;
    return run(
      calls,
      'parallel_streaming',
      allowAll((c) => ({ result: ToolResults.suspended(c.name, 'wait', ticket(c, modes[Number(c.id.charCodeAt(0) - 97)])), command: undefined })),
    ).state;
  };
  const decisions = new Map<string, ToolCallResume>([
    ['a', decide('resume')],
    ['b', decide('resume', { result: { ok: 1 } })],
    ['c', decide('resume', { result: { arg: 2 } })],
    ['d', decide('cancel', { reason: 'nope' })],
  ]);

  it('answers each decision in model order: replayed with its arguments, the decision as result, the decision as arguments, a cancel as a denial', () => {
    const t = drive(
      advance(parked(), { type: 'resume', decisions, silent: false }),
      allowAll((c) => ({ result: ToolResults.success(c.name, 'ran'), command: undefined })),
    );
    expect(t.asked.filter((n) => n.type === 'execute')).toEqual([
      // Each resumed call is told the ticket it suspended with.
      {
        type: 'execute',
        index: 0,
        args: { id: 'a' },
        resume: { decision: decisions.get('a'), mode: 'replay_tool_call', ticket: ticket(calls[0] as ToolCall, 'replay_tool_call') },
      },
      {
        type: 'execute',
        index: 2,
        args: { arg: 2 },
        resume: { decision: decisions.get('c'), mode: 'pass_decision_to_tool', ticket: ticket(calls[2] as ToolCall, 'pass_decision_to_tool') },
      },
    ]);
    expect(t.commands.map((c) => (c.type === 'begin' ? 'begin' : `${c.call.call.id}:${c.call.status}${c.resumeInput !== undefined ? '+input' : ''}`))).toEqual([
      'a:resuming+input',
      'a:running',
      'a:succeeded',
      'b:resuming+input',
      'b:succeeded',
      'c:resuming+input',
      'c:running',
      'c:succeeded',
      'd:cancelled+input',
    ]);
    expect(t.events).toEqual([
      { event_type: 'tool_call_resumed', target_id: 'a', result: 'ran' },
      { event_type: 'tool_call_resumed', target_id: 'b', result: { ok: 1 } },
      { event_type: 'tool_call_resumed', target_id: 'c', result: 'ran' },
      { event_type: 'tool_call_resumed', target_id: 'd', result: { approved: false, reason: 'nope' } },
    ]);
    expect(t.state.calls.map((c) => c.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'cancelled']);
    expect(t.state.calls[3]?.result?.message).toBe('Tool call cancelled: nope');
  });

  it('a call that suspends again is not answered but reported anew; a cancel without a reason or with a result says so', () => {
    const two = new Map<string, ToolCallResume>([
      ['a', decide('resume')],
      ['d', decide('cancel', { result: { mine: true } })],
      ['b', decide('cancel')],
    ]);
    const t = drive(
      advance(parked(), { type: 'resume', decisions: two, silent: false }),
      allowAll((c) => ({ result: ToolResults.suspended(c.name, 'again', ticket(c)), command: undefined })),
    );
    expect(t.events).toEqual([
      { event_type: 'tool_call_resumed', target_id: 'b', result: { approved: false } },
      { event_type: 'tool_call_resumed', target_id: 'd', result: { mine: true } },
      expect.objectContaining({ event_type: 'tool_call_done', id: 'a', outcome: 'suspended' }),
    ]);
    expect(t.state.calls[1]?.result?.message).toBe('Tool call cancelled: cancelled by decision');
    // The call that suspended again shows its new pending result to the after-tool hooks.
    expect(t.afterTool).toEqual(['a:pending']);
    expect(targetOf(t.state, 'a')).toBe('a');
    expect(targetOf(t.state, 's-c')).toBe('c');
    expect(targetOf(t.state, 'b')).toBeUndefined();
  });

  it('silent: the decisions are applied and nothing is emitted', () => {
    const t = drive(advance(parked(), { type: 'resume', decisions, silent: true }), allowAll());
    expect(t.events).toEqual([]);
    expect(t.state.calls.map((c) => c.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'cancelled']);
  });

  it('a batch restored from its record resumes like the one that parked', () => {
    const original = parked();
    const restored = restoredBatch(original.messageId, original.text, original.mode, original.calls);
    const a = drive(advance(restored, { type: 'resume', decisions, silent: false }), allowAll());
    const b = drive(advance({ ...original, stage: { at: 'idle' } }, { type: 'resume', decisions, silent: false }), allowAll());
    expect(a.events).toEqual(b.events);
    expect(a.commands).toEqual(b.commands);
  });
});

describe('resumedProjection (core-spec §4.8)', () => {
  it('projects each kind of result', () => {
    const r = (x: Partial<ToolResult>): ToolResult => ({ tool_name: 't', status: 'success', data: 1, message: null, ...x });
    expect(resumedProjection(r({}))).toBe(1);
    expect(resumedProjection(r({ metadata: {} }))).toBe(1);
    expect(resumedProjection(r({ metadata: { k: 2 } }))).toEqual({ data: 1, metadata: { k: 2 } });
    expect(resumedProjection(r({ status: 'error', message: 'bad' }))).toEqual({ error: 'bad' });
    expect(resumedProjection(r({ status: 'error', data: { code: 1 } }))).toEqual({ code: 1 });
    expect(resumedProjection(r({ status: 'pending' }))).toBeNull();
  });
});

describe('recovering a batch rebuilt after a crash', () => {
  type Stored = 'new' | 'running' | 'succeeded' | 'failed' | 'indeterminate' | 'suspended';
  const unknownOutcome = (c: ToolCall): ToolResult => ({ ...ToolResults.error(c.name, `outcome of ${c.id} unknown`), metadata: { indeterminate: true } });
  /** A call as the runtime rebuilds it for recovery: its stored status and result, not yet reported (unless said). */
  const stored = (c: ToolCall, status: Stored, reported = false): BatchCall => {
    switch (status) {
      case 'new':
      case 'running':
        return batchCall(c, status, 'replay_tool_call', undefined, undefined, undefined, undefined, reported);
      case 'succeeded':
        return batchCall(c, status, 'replay_tool_call', ToolResults.success(c.name, 'before'), undefined, undefined, undefined, reported);
      case 'failed':
        return batchCall(c, status, 'replay_tool_call', ToolResults.error(c.name, 'before'), undefined, undefined, undefined, reported);
      case 'indeterminate':
        return batchCall(c, status, 'replay_tool_call', unknownOutcome(c), undefined, undefined, undefined, reported);
      case 'suspended':
        return batchCall(c, status, 'replay_tool_call', ToolResults.suspended(c.name, 'wait', ticket(c)), undefined, `s-${c.id}`, 'confirm', reported);
      default:
        throw new Error(status satisfies never);
    }
  };
  const restore = (mode: ToolExecutionMode, calls: readonly BatchCall[]): BatchState => restoredBatch('m1', 'text', mode, calls);
  const recover = (state: BatchState, plan: ReadonlyMap<string, RecoveredCall>): BatchStep => advance(state, { type: 'recover', plan });
  const cmd = (c: BatchCommand): string => (c.type === 'begin' ? 'begin' : `${c.type}:${c.call.call.id}:${c.call.status}`);
  const done = (events: readonly AgentEvent[]): string[] =>
    events.map((e) => (e.event_type === 'tool_call_done' ? `${e.id}:${e.outcome}:${e.result.message ?? JSON.stringify(e.result.data)}` : e.event_type));

  const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map((id) => call(id)) as [ToolCall, ToolCall, ToolCall, ToolCall, ToolCall];
  /** a settled before the crash, b and c dispatched (b may not run again, c may), d never left, e suspended (its done went out). */
  const crashed = (mode: ToolExecutionMode): BatchState =>
    restore(mode, [stored(a, 'succeeded'), stored(b, 'running'), stored(c, 'running'), stored(d, 'new'), stored(e, 'suspended', true)]);
  const plan = new Map<string, RecoveredCall>([
    ['b', { type: 'indeterminate', result: unknownOutcome(b) }],
    ['c', { type: 'replay' }],
    ['d', { type: 'dispatch' }],
  ]);
  const ran = (x: ToolCall): ToolOutcome => ({ result: ToolResults.success(x.name, `ran ${x.id}`), command: undefined });

  it('sequential: settles the indeterminate call first, replays its call at its turn without a gate (marked running anew), gates the new one, then reports', () => {
    const first = recover(crashed('sequential'), plan);
    expect(first.commands.map(cmd)).toEqual(['settled:b:indeterminate', 'status:c:running']);
    expect(first.commands[0]).toEqual({ type: 'settled', call: first.state.calls[1] });
    expect(first.state.calls[1]?.result).toEqual(unknownOutcome(b));
    expect(first.events).toEqual([]);
    expect(first.next).toEqual({ type: 'execute', index: 2, args: { id: 'c' } });
    const t = drive(first, allowAll(ran));
    expect(t.asked).toEqual([
      { type: 'execute', index: 2, args: { id: 'c' } },
      { type: 'gate', index: 3 },
      { type: 'execute', index: 3, args: { id: 'd' } },
    ]);
    expect(t.commands.map(cmd)).toEqual(['settled:b:indeterminate', 'status:c:running', 'settled:c:succeeded', 'status:d:running', 'settled:d:succeeded']);
    // The call settled before the crash is reported now, once; the suspended one already was.
    expect(done(t.events)).toEqual(['a:succeeded:"before"', 'b:failed:outcome of b unknown', 'c:succeeded:"ran c"', 'd:succeeded:"ran d"']);
    expect(t.state.calls.map((x) => x.status)).toEqual(['succeeded', 'indeterminate', 'succeeded', 'succeeded', 'suspended']);
    expect(t.state.calls[0]?.result).toEqual(ToolResults.success('echo', 'before'));
    expect(t.state.stage).toEqual({ at: 'idle' });
  });

  it('parallel streaming: the replay joins the calls its gates allowed, all marked running and run together after the gates', () => {
    const first = recover(crashed('parallel_streaming'), plan);
    expect(first.commands.map(cmd)).toEqual(['settled:b:indeterminate']);
    expect(first.next).toEqual({ type: 'gate', index: 3 });
    const t = drive(first, allowAll(ran));
    expect(t.asked).toEqual([{ type: 'gate', index: 3 }, { type: 'commit' }, { type: 'execute_all', indices: [2, 3] }]);
    expect(t.commands.map(cmd)).toEqual(['settled:b:indeterminate', 'status:c:running', 'status:d:running', 'settled:c:succeeded', 'settled:d:succeeded']);
    expect(done(t.events)).toEqual(['a:succeeded:"before"', 'b:failed:outcome of b unknown', 'c:succeeded:"ran c"', 'd:succeeded:"ran d"']);
    expect(t.state.calls.map((x) => x.status)).toEqual(['succeeded', 'indeterminate', 'succeeded', 'succeeded', 'suspended']);
  });

  it('parallel: a call whose outcome was stored as it settled is settled with it (its staged writes kept), never run again nor unknown', () => {
    const staged = new StateCommand(new MutationBatch(undefined, [{ kind: 'update', key: 'x', update: 1 }]), [], []);
    const withStored = new Map<string, RecoveredCall>([...plan, ['b', { type: 'settled', result: ToolResults.success(b.name, 'stored b'), command: staged }]]);
    const first = recover(crashed('parallel_streaming'), withStored);
    expect(first.commands.map(cmd)).toEqual(['settled:b:succeeded']);
    expect(first.commands[0]).toEqual({ type: 'settled', call: first.state.calls[1], staged });
    const t = drive(first, allowAll(ran));
    expect(t.asked).toEqual([{ type: 'gate', index: 3 }, { type: 'commit' }, { type: 'execute_all', indices: [2, 3] }]);
    expect(done(t.events)).toEqual(['a:succeeded:"before"', 'b:succeeded:"stored b"', 'c:succeeded:"ran c"', 'd:succeeded:"ran d"']);
    expect(t.state.calls[1]?.command).toBe(staged);
    // A stored outcome is for a call that left: one that never did cannot have one.
    expect(recover(crashed('parallel_streaming'), new Map([...plan, ['d', { type: 'settled', result: ToolResults.success(d.name, 'x') }]])).next).toEqual({
      type: 'invalid',
      reason: "recovery plan: call 'd' is new, but 'settled' is for a running call",
    });
  });

  it('a batch with nothing left to run reports at once, after the indeterminate settlements', () => {
    for (const mode of ['sequential', 'parallel_streaming'] as const) {
      const step = recover(restore(mode, [stored(a, 'failed'), stored(b, 'running'), stored(c, 'indeterminate')]), new Map([['b', plan.get('b')!]]));
      expect(step.commands.map(cmd)).toEqual(['settled:b:indeterminate']);
      expect(done(step.events)).toEqual(['a:failed:before', 'b:failed:outcome of b unknown', `c:failed:outcome of c unknown`]);
      expect(step.next).toEqual({ type: 'done' });
    }
  });

  it('sequential: a block interrupts the new calls and the replays after it; a call settled before the crash keeps its result, a suspended one stays', () => {
    const calls = [stored(a, 'new'), stored(b, 'running'), stored(c, 'succeeded'), stored(d, 'new'), stored(e, 'suspended')];
    const t = drive(
      recover(
        restore('sequential', calls),
        new Map<string, RecoveredCall>([
          ['a', { type: 'dispatch' }],
          ['b', { type: 'replay' }],
          ['d', { type: 'dispatch' }],
        ]),
      ),
      (next, state) => (next.type === 'gate' ? { type: 'gated', gate: { type: 'block', reason: 'no' } } : allowAll()(next, state)),
    );
    expect(t.asked).toEqual([{ type: 'gate', index: 0 }]);
    expect(t.commands.map(cmd)).toEqual(['settled:a:failed', 'settled:b:failed', 'settled:d:failed']);
    expect(t.state.calls.map((x) => x.result?.message ?? x.result?.data)).toEqual(['no', INTERRUPTED, 'before', INTERRUPTED, 'wait']);
    expect(t.state.calls.map((x) => x.status)).toEqual(['failed', 'failed', 'succeeded', 'failed', 'suspended']);
    expect(t.state.blockedReason).toBe('no');
  });

  it('sequential: a replay that suspends itself stops the batch; only the calls not yet settled after it are interrupted', () => {
    const calls = [stored(a, 'running'), stored(b, 'failed'), stored(c, 'new')];
    const t = drive(
      recover(
        restore('sequential', calls),
        new Map<string, RecoveredCall>([
          ['a', { type: 'replay' }],
          ['c', { type: 'dispatch' }],
        ]),
      ),
      allowAll((x) => ({ result: ToolResults.suspended(x.name, 'wait', ticket(x)), command: undefined })),
    );
    expect(t.commands.map(cmd)).toEqual(['status:a:running', 'settled:a:suspended', 'settled:c:failed']);
    expect(t.afterTool).toEqual(['a:pending']);
    expect(t.state.calls[1]?.result).toEqual(ToolResults.error('echo', 'before'));
  });

  it('refuses a plan entry that does not fit its call, naming the call, and a recovery at any stage but idle', () => {
    const state = crashed('sequential');
    const refused = (entries: [string, RecoveredCall][]): BatchNext => recover(state, new Map([...plan, ...entries])).next;
    expect(refused([['d', { type: 'replay' }]])).toEqual({ type: 'invalid', reason: "recovery plan: call 'd' is new, but 'replay' is for a running call" });
    expect(refused([['d', { type: 'indeterminate', result: unknownOutcome(d) }]])).toEqual({
      type: 'invalid',
      reason: "recovery plan: call 'd' is new, but 'indeterminate' is for a running call",
    });
    expect(refused([['c', { type: 'dispatch' }]])).toEqual({ type: 'invalid', reason: "recovery plan: call 'c' is running, but 'dispatch' is for a new call" });
    expect(refused([['a', { type: 'replay' }]])).toEqual({
      type: 'invalid',
      reason: "recovery plan: call 'a' is succeeded, but 'replay' is for a running call",
    });
    expect(refused([['e', { type: 'indeterminate', result: unknownOutcome(e) }]])).toEqual({
      type: 'invalid',
      reason: "recovery plan: call 'e' is suspended, but 'indeterminate' is for a running call",
    });
    expect(refused([['zz', { type: 'dispatch' }]])).toEqual({ type: 'invalid', reason: "recovery plan: call 'zz' is not in the batch" });
    // A dispatched call left out of the plan would never settle: the plan must say what becomes of it.
    const withoutC = new Map(plan);
    withoutC.delete('c');
    expect(recover(state, withoutC).next).toEqual({ type: 'invalid', reason: "recovery plan: call 'c' is running and the plan has no entry for it" });
    const refusedStep = recover(state, new Map([...plan, ['zz', { type: 'dispatch' }]]));
    expect(refusedStep.state).toBe(state);
    expect(refusedStep.commands).toEqual([]);
    expect(recover(openBatch([a], '', 'm', 'sequential').state, new Map()).next).toEqual({
      type: 'invalid',
      reason: "a tool batch at 'open' cannot take 'recover'",
    });
    const gating = advance(openBatch([a], '', 'm', 'sequential').state, { type: 'run' }).state;
    expect(recover(gating, new Map([['a', { type: 'dispatch' }]])).next.type).toBe('invalid');
  });

  it('property: every call ends settled or suspended; only dispatched calls are gated; only dispatched and replayed calls run, once each; every settled call is reported once', () => {
    const status = fc.constantFrom<Stored>('new', 'running', 'succeeded', 'failed', 'indeterminate', 'suspended');
    const mode = fc.constantFrom<ToolExecutionMode>('sequential', 'parallel_streaming', 'parallel_batch_approval');
    fc.assert(
      fc.property(mode, fc.array(fc.tuple(status, fc.boolean(), fc.boolean()), { minLength: 1, maxLength: 8 }), (m, shape) => {
        const calls = shape.map((_, i) => call(`c${i}`));
        // A suspended call may have been reported before the crash; a running one is replayed or ends indeterminate.
        const restored = deepFreeze(
          restore(
            m,
            shape.map(([s, reported], i) => stored(calls[i]!, s, s === 'suspended' && reported)),
          ),
        );
        const planned = new Map<string, RecoveredCall>();
        shape.forEach(([s, , replay], i) => {
          const id = `c${i}`;
          if (s === 'new') planned.set(id, { type: 'dispatch' });
          if (s === 'running') planned.set(id, replay ? { type: 'replay' } : { type: 'indeterminate', result: unknownOutcome(calls[i]!) });
        });
        const t = drive(recover(restored, planned), allowAll(ran));
        const gated = t.asked.flatMap((n) => (n.type === 'gate' ? [n.index] : []));
        const executed = t.asked.flatMap((n) => (n.type === 'execute' ? [n.index] : n.type === 'execute_all' ? n.indices : []));
        const reports = (id: string): number => t.events.filter((ev) => ev.event_type === 'tool_call_done' && ev.id === id).length;
        const plannedAs = (i: number): string | undefined => planned.get(`c${i}`)?.type;
        const indices = shape.map((_, i) => i);
        // (a) every call ends terminal or suspended
        expect(t.state.calls.every((x) => isTerminalToolCallStatus(x.status) || x.status === 'suspended')).toBe(true);
        // (b) no call stored terminal is executed, and it keeps its result
        for (const i of indices)
          if (isTerminalToolCallStatus(restored.calls[i]!.status)) {
            expect(executed).not.toContain(i);
            expect(t.state.calls[i]!.result).toBe(restored.calls[i]!.result);
          }
        // (c) only calls planned `dispatch` are gated (each once); (d) only dispatched or replayed calls run, exactly once each
        expect(gated).toEqual(indices.filter((i) => plannedAs(i) === 'dispatch'));
        expect([...executed].sort((x, y) => x - y)).toEqual(indices.filter((i) => plannedAs(i) === 'dispatch' || plannedAs(i) === 'replay'));
        // (e) every settled call not suspended is reported exactly once; a suspended one once unless it already was
        for (const i of indices) {
          const end = t.state.calls[i]!;
          expect(reports(`c${i}`)).toBe(end.status === 'suspended' && restored.calls[i]!.reported ? 0 : 1);
          expect(end.reported).toBe(true);
        }
        // (f) indeterminate calls end so, with their given result
        for (const i of indices) {
          const entry = planned.get(`c${i}`);
          if (entry?.type === 'indeterminate') expect(t.state.calls[i]).toMatchObject({ status: 'indeterminate', result: entry.result });
        }
        expect(
          t.events.filter((ev) => ev.event_type === 'tool_call_done').map((ev) => (ev.event_type === 'tool_call_done' ? Number(ev.id.slice(1)) : -1)),
        ).toEqual(indices.filter((i) => reports(`c${i}`) === 1));
      }),
    );
  });
});
