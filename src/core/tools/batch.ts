// Over 500 lines: every stage of one batch — gating, running, settling, resuming a decision and
// recovering after a death — reads in one file, as the transitions between them do.
import { describeStateError } from '../../contract/errors.ts';
import { INTERRUPTED_TOOL_RESULT } from '../context/truncation.ts';
import type { AgentEvent } from '../../contract/event.ts';
import type { JsonValue } from '../../contract/json.ts';
import type { ToolCallStatus } from '../../contract/lifecycle.ts';
import type { ToolCall } from '../../contract/message.ts';
import {
  decisionResult,
  outcomeOf,
  ToolResults,
  type SuspendTicket,
  type ToolCallResume,
  type ToolCallResumeMode,
  type ToolResult,
} from '../../contract/tool.ts';
import type { MergeStrategy } from '../state/state-key.ts';
import { mergeParallelCommands, type StateCommand } from '../state/state-command.ts';
import { unreachable } from '../../contract/never.ts';

/**
 * A tool batch as a state machine (seed 003's single pipeline): `advance(state, input)` returns the
 * next state, the commands to commit and the events to emit — in that order — and what the machine
 * needs next (a gate verdict, a tool's output, a commit to settle first, or nothing). It reads no
 * clock and runs nothing: the runtime's `ToolBatch` interprets the steps (it runs the phases and the
 * tools, stamps the commands and commits them).
 *
 * The pipeline: every call gated in model order (Block > Suspend > SetResult, else Allow → execute);
 * sequential mode executes each allowed call at once and stops at the first that suspends itself,
 * the parallel modes execute the allowed calls together once all are gated; a block interrupts the
 * calls after it. Settled calls are reported (`tool_call_done`) in model order at the end; a call
 * settled pending by a result asks for its AfterToolExecute phase then (`afterTool`), besides the
 * one every call has at publication with its final result; a suspended batch is resumed by
 * decisions, in model order, each answered by `tool_call_resumed`.
 *
 * A batch rebuilt after a crash is recovered by a plan (`recover`): the calls that may not run again
 * end `indeterminate`, then the batch goes on as a fresh one would, gating only the calls that never
 * left (`new`) and running the replayed ones (`running`) again without their gate.
 */

/** The result text of a call that did not run because one before it stopped the batch (the same text truncation gives a dangling call). */
export const INTERRUPTED = INTERRUPTED_TOOL_RESULT;

export type ToolExecutionMode = 'sequential' | 'parallel_batch_approval' | 'parallel_streaming';

/**
 * One call of the batch, as the machine knows it: a new object at every change, always of one shape
 * (absent fields are `undefined`, made by `batchCall` alone), so that the code reading it stays fast.
 */
export interface BatchCall {
  readonly call: ToolCall;
  readonly status: ToolCallStatus;
  readonly resumeMode: ToolCallResumeMode;
  readonly result: ToolResult | undefined;
  /** The state writes the call staged: committed when the batch is published. */
  readonly command: StateCommand | undefined;
  readonly suspensionId: string | undefined;
  readonly suspensionReason: string | undefined;
  /** Whether `tool_call_done` went out for the current outcome. */
  readonly reported: boolean;
}

export function batchCall(
  call: ToolCall,
  status: ToolCallStatus,
  resumeMode: ToolCallResumeMode,
  result: ToolResult | undefined,
  command: StateCommand | undefined,
  suspensionId: string | undefined,
  suspensionReason: string | undefined,
  reported: boolean,
): BatchCall {
  return { call, status, resumeMode, result, command, suspensionId, suspensionReason, reported };
}

/** The verdict of a call's gate (BeforeToolExecute and its intercepts). */
export type Gate =
  | { readonly type: 'allow' }
  | { readonly type: 'block'; readonly reason: string }
  | { readonly type: 'suspend'; readonly ticket: SuspendTicket }
  | { readonly type: 'set_result'; readonly result: ToolResult };

/** What running a tool gave. */
export interface ToolOutcome {
  readonly result: ToolResult;
  readonly command: StateCommand | undefined;
}

/** The decision a resumed call runs with. */
export interface BatchResume {
  readonly decision: ToolCallResume;
  readonly mode: ToolCallResumeMode;
  /** The ticket the call suspended with (its own or its gate's). */
  readonly ticket: SuspendTicket | undefined;
}

/** Where the machine is: what the input it waits for answers. */
export type BatchStage =
  | { readonly at: 'open' }
  | { readonly at: 'gate'; readonly index: number; readonly allowed: readonly number[] }
  | { readonly at: 'run'; readonly index: number }
  | { readonly at: 'gated'; readonly allowed: readonly number[] }
  | { readonly at: 'run_all'; readonly allowed: readonly number[] }
  | { readonly at: 'resume'; readonly index: number; readonly decisions: ReadonlyMap<string, ToolCallResume>; readonly silent: boolean }
  | { readonly at: 'resuming'; readonly index: number; readonly decisions: ReadonlyMap<string, ToolCallResume>; readonly silent: boolean }
  | { readonly at: 'resume_run'; readonly index: number; readonly decisions: ReadonlyMap<string, ToolCallResume>; readonly silent: boolean }
  | { readonly at: 'idle' };

/** The batch: one shape too (`at` makes every new one). */
export interface BatchState {
  readonly messageId: string;
  readonly text: string;
  readonly mode: ToolExecutionMode;
  readonly calls: readonly BatchCall[];
  readonly blockedReason: string | undefined;
  readonly stage: BatchStage;
}

/** The batch with its calls and stage replaced (and the reason a gate blocked it, once one did). */
const at = (s: BatchState, calls: readonly BatchCall[], stage: BatchStage, blockedReason = s.blockedReason): BatchState => ({
  messageId: s.messageId,
  text: s.text,
  mode: s.mode,
  calls,
  blockedReason,
  stage,
});

/**
 * What recovery does with one call of a batch rebuilt after a crash (see `recoverCall`):
 * - `dispatch`: the call is `new`, it never left: gated and run as in a fresh batch;
 * - `replay`: the call is `running`, it was dispatched and may run again: run again without its gate (it passed it);
 * - `indeterminate`: the call is `running` and may not run again: settled at once with `result`, status `indeterminate`;
 * - `settled`: the call is `running` and its outcome was stored before the crash (a parallel call that
 *   settled while others ran): settled at once with that result and the writes it staged, never run again.
 */
export type RecoveredCall =
  | { readonly type: 'dispatch' }
  | { readonly type: 'replay' }
  | { readonly type: 'indeterminate'; readonly result: ToolResult }
  | { readonly type: 'settled'; readonly result: ToolResult; readonly command?: StateCommand };

export type BatchInput =
  | { readonly type: 'run' }
  | { readonly type: 'gated'; readonly gate: Gate }
  | { readonly type: 'executed'; readonly outcome: ToolOutcome }
  | { readonly type: 'executed_all'; readonly outcomes: readonly ToolOutcome[]; readonly strategyOf: (key: string) => MergeStrategy }
  | { readonly type: 'committed' }
  | { readonly type: 'resume'; readonly decisions: ReadonlyMap<string, ToolCallResume>; readonly silent: boolean }
  /**
   * A batch rebuilt after a crash goes on, by call id. Every `new` or `running` call must have an
   * entry that fits its status; the others (terminal, suspended, resuming) keep their stored state.
   */
  | { readonly type: 'recover'; readonly plan: ReadonlyMap<string, RecoveredCall> };

/** A commit the interpreter makes, as data (it adds the time and the state keys). */
export type BatchCommand =
  /** The batch as requested, every call `new`; the previous batch's call states dropped. */
  | { readonly type: 'begin'; readonly calls: readonly BatchCall[] }
  /** A call's status alone (`running`, `resuming`), with the decision it resumes with. */
  | { readonly type: 'status'; readonly call: BatchCall; readonly resumeInput?: ToolCallResume }
  /** A call's settled status and its result, with the writes it staged (kept for publication). */
  | { readonly type: 'settled'; readonly call: BatchCall; readonly staged?: StateCommand; readonly resumeInput?: ToolCallResume };

export type BatchNext =
  | { readonly type: 'gate'; readonly index: number }
  /** Run one tool; the snapshot it sees is taken before this step's commands are committed. */
  | { readonly type: 'execute'; readonly index: number; readonly args: JsonValue; readonly resume?: BatchResume }
  /** Run these tools together on one snapshot, taken before this step's commands are committed. */
  | { readonly type: 'execute_all'; readonly indices: readonly number[] }
  /** Commit this step's commands, then come back with `committed` (what follows reads the committed state). */
  | { readonly type: 'commit' }
  | { readonly type: 'done' }
  /** The input does not fit the stage: a fault of the interpreter, as a value. */
  | { readonly type: 'invalid'; readonly reason: string };

export interface BatchStep {
  readonly state: BatchState;
  readonly commands: readonly BatchCommand[];
  readonly events: readonly AgentEvent[];
  readonly next: BatchNext;
  /**
   * Calls whose AfterToolExecute phase runs now, after the step's commands and events, with the
   * pending result they settled with: a call whose tool answered that it waits (or a gate set a
   * pending result for) is seen by the after-tool hooks when it suspends, not only once its final
   * result is published (0.6 runs AfterToolExecute at each completion, the pending one included).
   * A gate's suspend verdict gives no result to see: the tool never ran. Absent: none.
   */
  readonly afterTool?: readonly number[];
}

const NONE: readonly never[] = Object.freeze([]);
const DONE: BatchNext = Object.freeze({ type: 'done' });
const COMMIT: BatchNext = Object.freeze({ type: 'commit' });
const IDLE: BatchStage = Object.freeze({ at: 'idle' });
const OPEN: BatchStage = Object.freeze({ at: 'open' });

/** A call as requested (named once: no closure per batch). */
const requested = (call: ToolCall): BatchCall => batchCall(call, 'new', 'replay_tool_call', undefined, undefined, undefined, undefined, false);

/** A batch of requested calls: the step commits it as requested (`begin`); `run` goes on. */
export function openBatch(calls: readonly ToolCall[], text: string, messageId: string, mode: ToolExecutionMode): BatchStep {
  const entries = calls.map(requested);
  const state: BatchState = { messageId, text, mode, calls: entries, blockedReason: undefined, stage: OPEN };
  return { state, commands: [{ type: 'begin', calls: entries }], events: NONE, next: DONE };
}

/** A batch rebuilt from its durable record (another process parked it, or a crash ended it): waits for `resume` or `recover`. */
export function restoredBatch(messageId: string, text: string, mode: ToolExecutionMode, calls: readonly BatchCall[]): BatchState {
  return { messageId, text, mode, calls, blockedReason: undefined, stage: IDLE };
}

export function advance(state: BatchState, input: BatchInput): BatchStep {
  const stage = state.stage;
  switch (input.type) {
    case 'run':
      return stage.at === 'open' ? gateFrom(state, state.calls, 0, NONE, NONE) : invalid(state, input);
    case 'gated':
      return stage.at === 'gate' ? gated(state, stage.index, stage.allowed, input.gate) : invalid(state, input);
    case 'executed':
      if (stage.at === 'run') return executed(state, stage.index, input.outcome);
      if (stage.at === 'resume_run') return settleResumed(state, stage, input.outcome);
      return invalid(state, input);
    case 'executed_all':
      return stage.at === 'run_all' ? executedAll(state, stage.allowed, input) : invalid(state, input);
    case 'committed':
      if (stage.at === 'gated') return endGating(state, stage.allowed);
      if (stage.at === 'resume') return resumeFrom(state, stage.index, stage.decisions, stage.silent);
      if (stage.at === 'resuming') return resuming(state, stage);
      return invalid(state, input);
    case 'resume':
      return stage.at === 'idle' ? resumeFrom(state, 0, input.decisions, input.silent) : invalid(state, input);
    case 'recover':
      return stage.at === 'idle' ? recover(state, input.plan) : invalid(state, input);
    default:
      return unreachable(input);
  }
}

// ---- queries -------------------------------------------------------------------------------------------

export const suspendedOf = (state: BatchState): readonly BatchCall[] => state.calls.filter((c) => c.status === 'suspended');

/** The suspended call a decision targets: by call id, else by suspension id. */
export function targetOf(state: BatchState, targetId: string): string | undefined {
  const byCall = state.calls.find((c) => c.call.id === targetId && c.status === 'suspended');
  if (byCall !== undefined) return byCall.call.id;
  return state.calls.find((c) => c.suspensionId === targetId && c.status === 'suspended')?.call.id;
}

// ---- the run -------------------------------------------------------------------------------------------
//
// A transition never changes the state it is given: it copies the calls once (`state.calls.slice()`),
// changes its own copy, and returns a new state holding it.

/**
 * The gate of the first call still `new` from `from` on, or the end of gating; `commands` are what the
 * step before committed. Every call of a fresh batch is `new` here. In a recovered one, a `running`
 * call is a replay, run again without its gate (it passed it before the crash): at once in
 * sequential mode, with the allowed calls in the parallel modes; any other call has settled (or is
 * suspended, or resuming) and is passed over.
 */
function gateFrom(state: BatchState, calls: readonly BatchCall[], from: number, allowed: readonly number[], commands: readonly BatchCommand[]): BatchStep {
  for (; from < calls.length; from++) {
    const call = calls[from] as BatchCall;
    if (call.status === 'new')
      return { state: at(state, calls, { at: 'gate', index: from, allowed }), commands, events: NONE, next: { type: 'gate', index: from } };
    if (call.status !== 'running') continue;
    if (state.mode === 'sequential') return replayed(state, calls, from, commands);
    allowed = [...allowed, from];
  }
  return gatedAll(state, calls, allowed, commands, state.blockedReason);
}

/** A sequential replay run again, marked running anew (after `commands`): the durable mark of this attempt, stored before the tool is called. */
function replayed(state: BatchState, calls: readonly BatchCall[], index: number, commands: readonly BatchCommand[]): BatchStep {
  const call = calls[index] as BatchCall;
  return {
    state: at(state, calls, { at: 'run', index }),
    commands: [...commands, { type: 'status', call }],
    events: NONE,
    next: { type: 'execute', index, args: call.call.arguments },
  };
}

/**
 * Every call gated: with no allowed call left to run, the batch reports at once (after this step's
 * commands); otherwise they are committed first, and the parallel calls run on what they left.
 */
function gatedAll(
  state: BatchState,
  calls: readonly BatchCall[],
  allowed: readonly number[],
  commands: readonly BatchCommand[],
  blockedReason: string | undefined,
): BatchStep {
  if (allowed.length === 0) return report(state, calls, commands, blockedReason);
  return { state: at(state, calls, { at: 'gated', allowed }, blockedReason), commands, events: NONE, next: COMMIT };
}

function gated(state: BatchState, index: number, allowed: readonly number[], gate: Gate): BatchStep {
  const name = (state.calls[index] as BatchCall).call.name;
  if (gate.type === 'allow' && state.mode !== 'sequential') return gateFrom(state, state.calls, index + 1, [...allowed, index], NONE);
  const calls = state.calls.slice();
  switch (gate.type) {
    case 'block': {
      const commands = [settleIn(calls, index, { ...ToolResults.error(name, gate.reason), metadata: { rejected: true } }, undefined)];
      interruptIn(calls, index, commands);
      return gatedAll(state, calls, allowed, commands, gate.reason);
    }
    case 'suspend':
      return gateFrom(state, calls, index + 1, allowed, [
        settleIn(calls, index, ToolResults.suspended(name, `Tool '${name}' suspended: awaiting approval`, gate.ticket), undefined),
      ]);
    case 'set_result': {
      const step = gateFrom(state, calls, index + 1, allowed, [settleIn(calls, index, gate.result, undefined)]);
      return calls[index]?.status === 'suspended' ? withAfterTool(step, [index]) : step;
    }
    case 'allow': {
      const running = withStatus(calls[index] as BatchCall, 'running');
      calls[index] = running;
      return {
        state: at(state, calls, { at: 'run', index }),
        commands: [{ type: 'status', call: running }],
        events: NONE,
        next: { type: 'execute', index, args: running.call.arguments },
      };
    }
    default:
      return unreachable(gate);
  }
}

/** A sequential call's output: settled; the batch stops at the first call that suspends itself. */
function executed(state: BatchState, index: number, outcome: ToolOutcome): BatchStep {
  const calls = state.calls.slice();
  const commands = [settleIn(calls, index, outcome.result, outcome.command)];
  if (calls[index]?.status !== 'suspended') return gateFrom(state, calls, index + 1, NONE, commands);
  // Sequential stops at the first call that suspends itself (book: 工具执行模式 → Sequential).
  interruptIn(calls, index, commands);
  return withAfterTool(gatedAll(state, calls, NONE, commands, state.blockedReason), [index]);
}

/** Every call gated and committed: the allowed calls of a parallel mode run together. */
function endGating(state: BatchState, allowed: readonly number[]): BatchStep {
  const calls = state.calls.slice();
  const commands: BatchCommand[] = [];
  for (const index of allowed) {
    const running = withStatus(calls[index] as BatchCall, 'running');
    calls[index] = running;
    commands.push({ type: 'status', call: running });
  }
  return { state: at(state, calls, { at: 'run_all', allowed }), commands, events: NONE, next: { type: 'execute_all', indices: allowed } };
}

/** The parallel calls' outputs, settled in model order; ParallelBatchApproval fails a call whose writes conflict with an earlier one's. */
function executedAll(state: BatchState, allowed: readonly number[], input: Extract<BatchInput, { type: 'executed_all' }>): BatchStep {
  if (input.outcomes.length !== allowed.length) return invalid(state, input);
  const calls = state.calls.slice();
  let merged: StateCommand | undefined;
  const commands: BatchCommand[] = [];
  for (let i = 0; i < allowed.length; i++) {
    const index = allowed[i] as number;
    let { result, command } = input.outcomes[i] as ToolOutcome;
    if (state.mode === 'parallel_batch_approval' && command !== undefined) {
      const joined = merged === undefined ? ({ ok: true, value: command } as const) : mergeParallelCommands(merged, command, input.strategyOf);
      if (joined.ok) merged = joined.value;
      else {
        result = ToolResults.error((calls[index] as BatchCall).call.name, describeStateError(joined.error));
        command = undefined;
      }
    }
    commands.push(settleIn(calls, index, result, command));
  }
  return withAfterTool(
    report(state, calls, commands, state.blockedReason),
    allowed.filter((i) => calls[i]?.status === 'suspended'),
  );
}

// ---- recovery after a crash -----------------------------------------------------------------------------

/**
 * A batch rebuilt after a crash, by its plan: the calls that may not run again are settled
 * `indeterminate` first, and those whose outcome was stored are settled with it, in model order; then the batch goes on from its start as a fresh one would
 * (see `gateFrom` for the calls that are not `new`) and ends with the usual report, which reports the
 * settled calls not yet reported, those settled before the crash included.
 */
function recover(state: BatchState, plan: ReadonlyMap<string, RecoveredCall>): BatchStep {
  const fault = planFault(state.calls, plan);
  if (fault !== undefined) return { state, commands: NONE, events: NONE, next: { type: 'invalid', reason: `recovery plan: ${fault}` } };
  let calls: BatchCall[] | undefined;
  let commands: BatchCommand[] | undefined;
  for (let i = 0; i < state.calls.length; i++) {
    const b = state.calls[i] as BatchCall;
    const entry = plan.get(b.call.id);
    if (entry?.type === 'settled') {
      calls ??= state.calls.slice();
      (commands ??= []).push(settleIn(calls, i, entry.result, entry.command));
      continue;
    }
    if (entry?.type !== 'indeterminate') continue;
    const call = batchCall(b.call, 'indeterminate', b.resumeMode, entry.result, b.command, b.suspensionId, b.suspensionReason, b.reported);
    (calls ??= state.calls.slice())[i] = call;
    (commands ??= []).push({ type: 'settled', call });
  }
  return gateFrom(state, calls ?? state.calls, 0, NONE, commands ?? NONE);
}

/** Why a plan does not fit its batch (naming the call), or `undefined` when it does. */
function planFault(calls: readonly BatchCall[], plan: ReadonlyMap<string, RecoveredCall>): string | undefined {
  for (const b of calls) {
    const entry = plan.get(b.call.id);
    const id = b.call.id;
    if (entry === undefined) {
      // A call that never left, or one dispatched, cannot be left as it is: it would never settle.
      if (b.status === 'new' || b.status === 'running') return `call '${id}' is ${b.status} and the plan has no entry for it`;
      continue;
    }
    const needs = entry.type === 'dispatch' ? 'new' : 'running';
    if (b.status !== needs) return `call '${id}' is ${b.status}, but '${entry.type}' is for a ${needs} call`;
  }
  for (const id of plan.keys()) if (!calls.some((b) => b.call.id === id)) return `call '${id}' is not in the batch`;
  return undefined;
}

// ---- resumption ----------------------------------------------------------------------------------------

type ResumeStage = Extract<BatchStage, { at: 'resume' | 'resuming' | 'resume_run' }>;

/** The next suspended call with a decision, from `from` on; at the end, the report (none when silent). */
function resumeFrom(state: BatchState, from: number, decisions: ReadonlyMap<string, ToolCallResume>, silent: boolean): BatchStep {
  for (let index = from; index < state.calls.length; index++) {
    const call = state.calls[index] as BatchCall;
    const decision = decisions.get(call.call.id);
    if (decision === undefined || call.status !== 'suspended') continue;
    const calls = state.calls.slice();
    if (decision.action === 'cancel') {
      const result = ToolResults.error(call.call.name, `Tool call cancelled: ${decision.reason ?? 'cancelled by decision'}`);
      const cancelled = batchCall(call.call, 'cancelled', call.resumeMode, result, call.command, call.suspensionId, call.suspensionReason, true);
      calls[index] = cancelled;
      // A cancel decision reads as a denial unless the decision carries its own result.
      const answer = decision.result ?? { approved: false, ...(decision.reason !== undefined ? { reason: decision.reason } : {}) };
      return {
        state: at(state, calls, { at: 'resume', index: index + 1, decisions, silent }),
        commands: [{ type: 'settled', call: cancelled, resumeInput: decision }],
        events: silent ? NONE : [{ event_type: 'tool_call_resumed', target_id: call.call.id, result: answer }],
        next: COMMIT,
      };
    }
    const resumingCall = withStatus(call, 'resuming');
    calls[index] = resumingCall;
    return {
      state: at(state, calls, { at: 'resuming', index, decisions, silent }),
      commands: [{ type: 'status', call: resumingCall, resumeInput: decision }],
      events: NONE,
      next: COMMIT,
    };
  }
  return silent ? { state: at(state, state.calls, IDLE), commands: NONE, events: NONE, next: DONE } : report(state, state.calls, NONE, state.blockedReason);
}

/** A call marked resuming: its decision is its result, or the tool runs again with it. */
function resuming(state: BatchState, stage: Extract<BatchStage, { at: 'resuming' }>): BatchStep {
  const call = state.calls[stage.index] as BatchCall;
  const decision = stage.decisions.get(call.call.id) as ToolCallResume;
  if (call.resumeMode === 'use_decision_as_tool_result')
    return settleResumed(state, stage, { result: decisionResult(call.call.name, decision.result), command: undefined });
  const args = call.resumeMode === 'pass_decision_to_tool' ? (decision.result ?? call.call.arguments) : call.call.arguments;
  const calls = state.calls.slice();
  const running = withStatus(call, 'running');
  calls[stage.index] = running;
  return {
    state: at(state, calls, { at: 'resume_run', index: stage.index, decisions: stage.decisions, silent: stage.silent }),
    commands: [{ type: 'status', call: running }],
    events: NONE,
    next: { type: 'execute', index: stage.index, args, resume: { decision, mode: call.resumeMode, ticket: call.result?.suspension } },
  };
}

/** A resumed call's outcome: answered with `tool_call_resumed`, unless it suspended again (then it is reported anew). */
function settleResumed(state: BatchState, stage: ResumeStage, outcome: ToolOutcome): BatchStep {
  const calls = state.calls.slice();
  const command = settleIn(calls, stage.index, outcome.result, outcome.command);
  const call = calls[stage.index] as BatchCall;
  const again = call.status === 'suspended';
  calls[stage.index] = withReported(call, !again);
  const events: readonly AgentEvent[] =
    again || stage.silent ? NONE : [{ event_type: 'tool_call_resumed', target_id: call.call.id, result: resumedProjection(outcome.result) }];
  return withAfterTool(
    {
      state: at(state, calls, { at: 'resume', index: stage.index + 1, decisions: stage.decisions, silent: stage.silent }),
      commands: [command],
      events,
      next: COMMIT,
    },
    again ? [stage.index] : NONE,
  );
}

/** `tool_call_resumed.result` of a settled call (core-spec §4.8). */
export function resumedProjection(result: ToolResult): JsonValue {
  switch (result.status) {
    case 'success':
      return result.metadata !== undefined && Object.keys(result.metadata).length > 0 ? { data: result.data, metadata: result.metadata } : result.data;
    case 'error':
      return result.message !== null ? { error: result.message } : result.data;
    case 'pending':
      return null;
    default:
      return unreachable(result.status);
  }
}

// ---- one call, in a transition's own copy of the calls ---------------------------------------------------

const withStatus = (b: BatchCall, status: ToolCallStatus): BatchCall =>
  batchCall(b.call, status, b.resumeMode, b.result, b.command, b.suspensionId, b.suspensionReason, b.reported);

const withReported = (b: BatchCall, reported: boolean): BatchCall =>
  batchCall(b.call, b.status, b.resumeMode, b.result, b.command, b.suspensionId, b.suspensionReason, reported);

/** A call's outcome: its status and result (a suspension's ticket sets how it resumes); its writes stay staged. */
function settleIn(calls: BatchCall[], index: number, result: ToolResult, command: StateCommand | undefined): BatchCommand {
  const b = calls[index] as BatchCall;
  const outcome = outcomeOf(result);
  const ticket = outcome === 'suspended' ? result.suspension : undefined;
  const call =
    ticket === undefined
      ? batchCall(b.call, outcome, b.resumeMode, result, command ?? b.command, b.suspensionId, b.suspensionReason, b.reported)
      : batchCall(b.call, outcome, ticket.resume_mode, result, command ?? b.command, ticket.suspension.id, ticket.suspension.action, b.reported);
  calls[index] = call;
  return command === undefined ? { type: 'settled', call } : { type: 'settled', call, staged: command };
}

/**
 * Every call after `index` that has not settled fails as interrupted: in a fresh batch all of them
 * are `new`. In a recovered one, a call settled before the crash keeps its result, a suspended (or
 * resuming) call stays so, and a replay waiting for its turn (`running`) is interrupted too: its
 * attempt before the crash was cut short, and none is made now.
 */
function interruptIn(calls: BatchCall[], index: number, commands: BatchCommand[]): void {
  for (let i = index + 1; i < calls.length; i++) {
    const call = calls[i] as BatchCall;
    if (call.status === 'new' || call.status === 'running') commands.push(settleIn(calls, i, ToolResults.error(call.call.name, INTERRUPTED), undefined));
  }
}

/**
 * `tool_call_done` for every settled call not yet reported, in model order; the batch is then idle.
 * `calls` is the transition's own copy, or the state's own (copied here before a change).
 */
function report(state: BatchState, calls: readonly BatchCall[], commands: readonly BatchCommand[], blockedReason: string | undefined): BatchStep {
  // Made at the first event (a list of one: most batches report one call), grown from the second.
  let events: AgentEvent[] | undefined;
  let own: BatchCall[] | undefined = calls === state.calls ? undefined : (calls as BatchCall[]);
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i] as BatchCall;
    if (call.reported || call.result === undefined || call.status === 'resuming' || call.status === 'running') continue;
    own ??= calls.slice();
    own[i] = withReported(call, true);
    const event: AgentEvent = {
      event_type: 'tool_call_done',
      id: call.call.id,
      message_id: state.messageId,
      result: call.result,
      outcome: outcomeOf(call.result),
    };
    if (events === undefined) events = [event];
    else events.push(event);
  }
  return { state: at(state, own ?? calls, IDLE, blockedReason), commands, events: events ?? NONE, next: DONE };
}

/** `step`, with the after-tool phases of `indices` to run (none: the step itself). */
const withAfterTool = (step: BatchStep, indices: readonly number[]): BatchStep => (indices.length === 0 ? step : { ...step, afterTool: indices });

function invalid(state: BatchState, input: BatchInput): BatchStep {
  return { state, commands: NONE, events: NONE, next: { type: 'invalid', reason: `a tool batch at '${state.stage.at}' cannot take '${input.type}'` } };
}
