// Over 500 lines: the batch's interpreter (commands, events, gates, tools, publication) and the tool
// call context it lends are one unit of the loop; the decisions are in src/core/tools/batch.ts.
import { TOOL_CALL_PROGRESS } from '../contract/progress.ts';
import type { RunTap } from './tap.ts';
import { z } from 'zod';
import { describeStateError } from '../contract/errors.ts';
import type { JsonValue } from '../contract/json.ts';
import { isTerminalToolCallStatus, type ToolCallStatus } from '../contract/lifecycle.ts';
import { ToolCallSchema, type Message, type ToolCall } from '../contract/message.ts';
import { outcomeOf, SuspendTicketSchema, ToolResultSchema, ToolResults, type SuspendTicket, type ToolCallResume, type ToolResult } from '../contract/tool.ts';
import type { Phase } from '../contract/phase.ts';
import { andThenUnlessHalted, failed, isHalt, type Halt, type Halting } from './halt.ts';
import { andThen, andThenOrElse, drive, eachInOrder } from './maybe-promise.ts';
import { unreachable } from '../contract/never.ts';
import type { PhaseRuntime } from './phase-runtime.ts';
import type { PhaseFields } from '../core/phase/plugin.ts';
import type { Snapshot } from '../core/state/snapshot.ts';
import type { PersistedState } from '../core/state/state-ops.ts';
import { MutationBatch, type MutationOp } from '../core/state/mutation-batch.ts';
import { StateCommand, type ScheduledAction, type TypedEffect } from '../core/state/state-command.ts';
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
  type BatchResume,
  type BatchNext,
  type BatchState,
  type BatchStep,
  type Gate,
  type ToolOutcome,
} from '../core/tools/batch.ts';
import { defineStateKey, type StateKey } from '../core/state/state-key.ts';
import { policyFor, retryUnavailable } from '../core/tools/recovery.ts';
import { recoveryPlan } from './loop/batch-recovery.ts';
import type { AgentEvent } from '../contract/event.ts';
import type { Env } from './env.ts';
import {
  INTERCEPT_PRECEDENCE,
  InterceptConflicts,
  ToolCallStates,
  ToolIntercepts,
  withEntry,
  type InterceptRecord,
  type ToolCallState,
  type ToolCallStateMap,
  type ToolIntercept,
} from './loop-keys.ts';
import type { ResolvedAgent } from './resolve.ts';
import { CANCELLATION, type RunSignal } from './run-signal.ts';
import {
  isDefaultRecoveryPolicy,
  NO_RECOVERY_POLICIES,
  ToolRecoveryPolicySchema,
  type RecoveryPolicies,
  type ToolRecoveryPolicy,
} from '../contract/tool-recovery.ts';
import { DELEGATION_CATEGORY } from './delegation.ts';
import {
  isToolOutput,
  isUnavailableBeforeDispatch,
  ToolFailure,
  type ProgressStatus,
  type ToolOutput,
  type ResumeContext,
  type ToolCallContext,
  type Tool,
} from './tool.ts';

const RESOLVED: Promise<void> = Promise.resolve();

/** An event delivered through the host, as a promise (for callers that always want one: tools, reports). */
export const emitted = (host: BatchHost, event: AgentEvent): Promise<void> => host.emit(event) ?? RESOLVED;

/** What the loop lends a tool batch. */
export interface BatchHost {
  readonly env: Env;
  readonly resolved: ResolvedAgent;
  readonly phase: PhaseRuntime;
  readonly threadId: string;
  readonly runId: string;
  /** The run's cancellation, read as a flag; a tool's context asks it for its `AbortSignal` only when read. */
  readonly cancellation: RunSignal;
  /** What the agent's plugins watch of the run: told of each tool call's start and outcome. */
  readonly tap: RunTap | undefined;
  /** Delivers an event; a promise only when the sink is asynchronous. */
  emit(event: AgentEvent): Promise<void> | undefined;
  /** Runs a phase with its fields (the host adds the run's); a halt on cancellation or a phase error. */
  runPhase<P extends Phase>(phase: P, fields: PhaseFields<P>): Halting;
  /** Submits a command; a halt if it cannot be committed. */
  submit(command: StateCommand): Halting;
  messages(): readonly Message[];
  /** Whether the run has a store: then each phase of a call is written to it before the batch goes on (seed 003's durable call phases). */
  readonly durable: boolean;
  /**
   * Writes the run's state to its store as it is now, drawing nothing from the `Env` (a replay of the
   * run reads the same clock); `amend` changes the state written (each scope's), not the run's own.
   */
  persist(amend?: (run: PersistedState) => PersistedState): Halting;
}

/**
 * A settled call's staged state writes, as data (they wait behind the publication barrier): kept in
 * the batch record so that a batch revived in another process publishes them too.
 */
export interface StagedCommand {
  readonly ops: readonly MutationOp[];
  readonly actions: readonly ScheduledAction[];
  readonly effects: readonly TypedEffect[];
}

/** The durable record of the batch in flight (seed 003): requested calls, settled results, staged writes. */
export interface ToolBatchRecord {
  readonly message_id: string;
  readonly text: string;
  readonly calls: readonly ToolCall[];
  readonly results: { readonly [callId: string]: ToolResult };
  readonly staged?: { readonly [callId: string]: StagedCommand };
  /**
   * The recovery policy each call was pinned to when the batch was created (seed 003), for the
   * calls whose policy is not the default one: a later change of the agent's config does not
   * change what may be done with a call already made.
   */
  readonly recovery?: { readonly [callId: string]: ToolRecoveryPolicy };
  /**
   * Outcomes of parallel calls stored as each settled, while others still ran (only in the store:
   * the run's own state never holds them). A call `running` with an outcome here settled before its
   * process died: recovery settles it with that outcome instead of running it again or calling it unknown.
   */
  readonly outcomes?: { readonly [callId: string]: StoredOutcome };
}

/** A parallel call's outcome as stored when it settled: its result and the writes it staged. */
export interface StoredOutcome {
  readonly result: ToolResult;
  readonly staged?: StagedCommand;
}

type ToolBatchUpdate =
  | { readonly op: 'begin'; readonly record: ToolBatchRecord }
  | { readonly op: 'result'; readonly call_id: string; readonly result: ToolResult; readonly staged?: StagedCommand }
  | { readonly op: 'clear' };

const StagedCommandSchema = z.object({
  ops: z.array(
    z.union([z.object({ kind: z.literal('update'), key: z.string(), update: z.unknown() }), z.object({ kind: z.literal('clear'), key: z.string() })]),
  ),
  actions: z.array(z.object({ phase: z.string(), key: z.string(), payload: z.unknown() })),
  effects: z.array(z.object({ key: z.string(), payload: z.unknown() })),
});

/** The results of a batch just begun (shared: a record's values are never written to). */
const NO_RESULTS: ToolBatchRecord['results'] = Object.freeze({});

export const ToolBatchKey = defineStateKey<ToolBatchRecord | null, ToolBatchUpdate>({
  key: '__runtime.tool_batch',
  init: () => null,
  apply: (s, u) => {
    if (u.op === 'begin') return u.record;
    if (u.op === 'clear' || s === null) return null;
    // Built field by field in the record's own order (a spread would be slower, and the same value).
    // The first result of a batch opened here: a record of one, without copying the empty one.
    const results = withEntry(s.results === NO_RESULTS ? undefined : s.results, u.call_id, u.result);
    const staged = u.staged === undefined ? s.staged : withEntry(s.staged, u.call_id, u.staged);
    const next: Writable<ToolBatchRecord> =
      staged === undefined
        ? { message_id: s.message_id, text: s.text, calls: s.calls, results }
        : { message_id: s.message_id, text: s.text, calls: s.calls, results, staged };
    if (s.recovery !== undefined) next.recovery = s.recovery;
    return next;
  },
  codec: z
    .object({
      message_id: z.string(),
      text: z.string(),
      calls: z.array(ToolCallSchema),
      results: z.record(z.string(), ToolResultSchema),
      staged: z.record(z.string(), StagedCommandSchema).optional(),
      recovery: z.record(z.string(), ToolRecoveryPolicySchema).optional(),
      outcomes: z.record(z.string(), z.object({ result: ToolResultSchema, staged: StagedCommandSchema.optional() })).optional(),
    })
    .nullable() as z.ZodType<ToolBatchRecord | null>,
});

/** The policies a new batch pins its calls to: those that are not the default, by call id; `undefined` when every call has the default. */
function pinnedPolicies(policies: RecoveryPolicies, calls: readonly ToolCall[]): { readonly [callId: string]: ToolRecoveryPolicy } | undefined {
  if (policies === NO_RECOVERY_POLICIES) return undefined;
  let pins: { [callId: string]: ToolRecoveryPolicy } | undefined;
  for (const call of calls) {
    const policy = policyFor(policies, call.name);
    if (!isDefaultRecoveryPolicy(policy)) (pins ??= Object.create(null) as { [callId: string]: ToolRecoveryPolicy })[call.id] = policy;
  }
  return pins;
}

/** A command's writes as data (undefined when it writes nothing). */
function stagedOf(command: StateCommand | undefined): StagedCommand | undefined {
  if (command === undefined || (command.patch.isEmpty() && command.scheduledActions.length === 0 && command.effects.length === 0)) return undefined;
  return { ops: [...command.patch.ops], actions: [...command.scheduledActions], effects: [...command.effects] };
}

/** The command staged writes stand for. */
function commandOf(staged: StagedCommand): StateCommand {
  return new StateCommand(new MutationBatch(undefined, [...staged.ops]), [...staged.actions], [...staged.effects]);
}

/** A scope's state as written with the batch record carrying `outcomes` (no batch record in it: as it is). */
function withStoredOutcomes(run: PersistedState, outcomes: { readonly [callId: string]: StoredOutcome }): PersistedState {
  const record = run.extensions[ToolBatchKey.key];
  if (record === null || typeof record !== 'object' || Array.isArray(record)) return run;
  return { revision: run.revision, extensions: { ...run.extensions, [ToolBatchKey.key]: { ...record, outcomes: outcomes as unknown as JsonValue } } };
}

/** The outcomes a stored batch record holds, as recovery settles them. */
function storedOutcomes(record: ToolBatchRecord): ReadonlyMap<string, { readonly result: ToolResult; readonly command?: StateCommand }> | undefined {
  if (record.outcomes === undefined) return undefined;
  const map = new Map<string, { readonly result: ToolResult; readonly command?: StateCommand }>();
  for (const id of Object.keys(record.outcomes)) {
    const o = record.outcomes[id] as StoredOutcome;
    map.set(id, o.staged === undefined ? { result: o.result } : { result: o.result, command: commandOf(o.staged) });
  }
  return map;
}

/**
 * An intercept's place in `INTERCEPT_PRECEDENCE` (lower wins). A `set_result` whose result is an
 * error marked `metadata.rejected` is what a refusal settles to, and ranks as one: plugins that
 * build that result themselves (the state machine's deny) keep the refusal's precedence.
 */
function rankOf(i: ToolIntercept): number {
  if (i.type !== 'set_result') return INTERCEPT_PRECEDENCE.indexOf(i.type);
  const r = i.result as { status?: unknown; metadata?: { rejected?: unknown } } | null;
  return INTERCEPT_PRECEDENCE.indexOf(r !== null && typeof r === 'object' && r.status === 'error' && r.metadata?.rejected === true ? 'refuse' : 'set_result');
}

/** The result of a refused call: an error with the reason, marked `metadata.rejected` (as a blocked call's). */
export const refusedResult = (toolName: string, reason: string): ToolResult => ({ ...ToolResults.error(toolName, reason), metadata: { rejected: true } });

export { INTERRUPTED, resumedProjection };

/** The text the model sees for a result: its message, else the compact JSON of its data. */
export const toolMessageText = (result: ToolResult): string => result.message ?? JSON.stringify(result.data);

const COMMITTED: BatchInput = Object.freeze({ type: 'committed' });
const RUN: BatchInput = Object.freeze({ type: 'run' });
const CLEAR_STATES = Object.freeze({ op: 'clear' as const });

/** A state command of these ops alone. */
const commandOfOps = (ops: readonly MutationOp[]): StateCommand => StateCommand.fromOps(ops);

/** A step that asks for no after-tool phase. */
const NO_CALLS: readonly number[] = Object.freeze([]);

/**
 * What the batch's machine is driven through: the batch itself at its next step (`#step`), or the
 * end (`undefined`: done; a halt). The batch, not the step, so that the turn is a method named once
 * rather than a closure made per batch.
 */
type Driven = ToolBatch | Halt | undefined;

const isOver = (driven: Driven): boolean => driven === undefined || isHalt(driven);

/**
 * One batch of tool calls, interpreted: the pure machine of `src/core/tools/batch.ts` decides (which
 * call is gated or run next, how each settles, what is reported), and this class does what each step
 * asks — it commits the step's commands (stamped with the clock, as state-key updates), emits its
 * events, then runs the BeforeToolExecute phase of a call, a tool, or the parallel tools, and feeds
 * the outcome back. While everything on the way answers at once, no promise is made.
 */
export class ToolBatch {
  readonly #host: BatchHost;
  readonly #calls: readonly ToolCall[];
  #state: BatchState;
  /** The step that opened the batch (its `begin` command), until `begin()` commits it. */
  #opened: BatchStep | undefined;
  /** The step the machine is at while it is driven: what the next turn does. */
  #step: BatchStep | undefined;
  /** The recovery policies the batch pinned its calls to (the default ones left out). */
  #pins: { readonly [callId: string]: ToolRecoveryPolicy } | undefined;
  /** The dispatch each call run again after a recovery is at (absent: the first). */
  #attempts: ReadonlyMap<string, number> | undefined;

  private constructor(host: BatchHost, calls: readonly ToolCall[], state: BatchState, opened: BatchStep | undefined) {
    this.#host = host;
    this.#calls = calls;
    this.#state = state;
    this.#opened = opened;
    this.#step = undefined;
    this.#pins = undefined;
    this.#attempts = undefined;
  }

  /** A batch of the calls one inference requested. */
  static open(host: BatchHost, calls: readonly ToolCall[], text: string, messageId: string): ToolBatch {
    const opened = openBatch(calls, text, messageId, modeOf(host, calls));
    return new ToolBatch(host, calls, opened.state, opened);
  }

  /**
   * The batch a parked run waits on, rebuilt from the committed state (its durable record and the
   * tool-call states) in another process: settled calls keep their results and staged writes, and
   * count as reported (their `tool_call_done` went out before the run parked). `undefined` when the
   * state holds no batch with a suspended call.
   */
  static restore(host: BatchHost): ToolBatch | undefined {
    const snapshot = host.phase.store.snapshot();
    const record = snapshot.get(ToolBatchKey);
    if (record === undefined || record === null) return undefined;
    const calls = ToolBatch.#callsOf(record, snapshot.get(ToolCallStates) ?? {}, true);
    if (calls === undefined) return undefined;
    const batch = new ToolBatch(host, record.calls, restoredBatch(record.message_id, record.text, host.resolved.toolExecution.mode, calls), undefined);
    batch.#pins = record.recovery;
    return batch.suspendedIds().length > 0 ? batch : undefined;
  }

  /** The calls of a stored batch as the machine knows them (`reported`: their `tool_call_done` went out); `undefined` when one has no stored state. */
  static #callsOf(record: ToolBatchRecord, states: ToolCallStateMap, reported: boolean): BatchCall[] | undefined {
    const calls: BatchCall[] = [];
    for (const call of record.calls) {
      const state = Object.hasOwn(states, call.id) ? states[call.id] : undefined;
      if (state === undefined) return undefined;
      const result = Object.hasOwn(record.results, call.id) ? record.results[call.id] : undefined;
      const staged = record.staged !== undefined && Object.hasOwn(record.staged, call.id) ? record.staged[call.id] : undefined;
      calls.push(
        batchCall(
          call,
          state.status,
          state.resume_mode,
          result,
          staged === undefined ? undefined : commandOf(staged),
          state.suspension_id,
          state.suspension_reason,
          reported,
        ),
      );
    }
    return calls;
  }

  /**
   * The batch a run was in when its process died, rebuilt from what the store holds of it (seed
   * 003's durable call phases) and set to go on: a call still `new` never left and is gated and run
   * as it would have been; a call marked `running` left, and is run again only where its tool's
   * recovery capability and the policy pinned into the batch both allow it (up to the policy's
   * `max_attempts`), else it ends `indeterminate` with a result that tells the model so; a settled
   * call keeps its result. Every settled call is reported once more (its `tool_call_done` may never
   * have gone out). A reason instead when the stored batch cannot go on.
   */
  static recovered(host: BatchHost): ToolBatch | string {
    const snapshot = host.phase.store.snapshot();
    const record = snapshot.get(ToolBatchKey);
    if (record === undefined || record === null) return 'the store holds no tool batch for it';
    const states = snapshot.get(ToolCallStates) ?? {};
    const calls = ToolBatch.#callsOf(record, states, false);
    if (calls === undefined) return 'a call of its tool batch has no stored state';
    const planned = recoveryPlan(calls, states, host.resolved.tools, record.recovery, storedOutcomes(record));
    if (typeof planned === 'string') return planned;
    const restored = restoredBatch(record.message_id, record.text, host.resolved.toolExecution.mode, calls);
    const batch = new ToolBatch(host, record.calls, restored, advance(restored, { type: 'recover', plan: planned.plan }));
    batch.#pins = record.recovery;
    batch.#attempts = planned.attempts.size === 0 ? undefined : planned.attempts;
    return batch;
  }

  /** The suspended calls, in model order, with the tickets they suspended with. */
  suspendedCalls(): { readonly call: ToolCall; readonly messageId: string; readonly ticket: SuspendTicket | undefined }[] {
    return suspendedOf(this.#state).map((c) => ({ call: c.call, messageId: this.#state.messageId, ticket: c.result?.suspension }));
  }

  get calls(): readonly ToolCall[] {
    return this.#calls;
  }

  /** Why a gate blocked the batch (the run ends `blocked`), if one did. */
  get blockedReason(): string | undefined {
    return this.#state.blockedReason;
  }

  statuses(): ToolCallStatus[] {
    return this.#state.calls.map(statusOf);
  }

  suspendedIds(): string[] {
    return suspendedOf(this.#state).map((c) => c.call.id);
  }

  /** Finds the suspended call a decision targets: by call id, else by suspension id. */
  targetOf(targetId: string): string | undefined {
    return targetOf(this.#state, targetId);
  }

  allTerminal(): boolean {
    return this.#state.calls.every((c) => isTerminalToolCallStatus(c.status));
  }

  /**
   * Commits the batch as requested, before any gate or executor runs. The tool-call states of the
   * previous batch are dropped in the same commit (they are all terminal by now).
   */
  begin(): Halting {
    const opened = this.#opened;
    this.#opened = undefined;
    return opened === undefined ? undefined : this.#drive(opened);
  }

  /** Gates and executes every call in the configured mode, then reports the settled calls. */
  run(): Halting {
    return this.#drive(advance(this.#state, RUN));
  }

  /** Applies decisions to suspended calls, in model order, and emits `tool_call_resumed` for each (nothing when `silent`). */
  resume(decisions: ReadonlyMap<string, ToolCallResume>, options: { readonly silent?: boolean } = {}): Halting {
    return this.#drive(advance(this.#state, { type: 'resume', decisions, silent: options.silent === true }));
  }

  /**
   * Publishes the batch once every call is terminal: each call's staged state is committed and its
   * AfterToolExecute phase runs with its final result, in model order; then the assistant message
   * and the tool messages join the history. Returns the messages to append, or the halt that stopped
   * the publication. (A call that suspended itself had that phase run with its pending result too,
   * when it suspended.)
   */
  publish(newId: () => string): Message[] | Halt | Promise<Message[] | Halt> {
    const committed = this.#commitStaged();
    return committed === undefined ? this.#messagesOf(newId) : andThen(committed, ToolBatch.#messagesUnlessHalted, this, newId);
  }

  static #messagesUnlessHalted(halt: Halt | undefined, batch: ToolBatch, newId: () => string): Message[] | Halt {
    return halt ?? batch.#messagesOf(newId);
  }

  // ---- the interpreter ----------------------------------------------------------------------------------

  /**
   * Does what a step asks, and what the steps after it ask, until the machine is done: the commands
   * are committed and the events emitted in order, then the next input is made (a gate, a tool run).
   * A tool sees the state as it was before the step that marks it running was committed.
   */
  #drive(first: BatchStep): Halting {
    this.#step = first;
    return drive<Driven>(this, ToolBatch.#turnOf, isOver) as Halting;
  }

  static #turnOf(driven: Driven): Driven | Promise<Driven> {
    return (driven as ToolBatch).#turn();
  }

  /** One step of the machine: its commands and events, then the input that answers what it asks, advanced to the next step. */
  #turn(): Driven | Promise<Driven> {
    const step = this.#step as BatchStep;
    this.#state = step.state;
    const next = step.next;
    const snapshot = next.type === 'execute' ? this.#preview() : next.type === 'execute_all' ? this.#host.phase.store.snapshot() : undefined;
    if (isHalt(snapshot)) return snapshot;
    const applied = this.#apply(step);
    // `undefined` is a step applied at once: no closure for what follows.
    if (applied !== undefined) return this.#proceedAfter(applied, next, snapshot);
    return this.#proceed(next, snapshot);
  }

  /**
   * `#proceed` once `applied` went on. Apart from `#turn`, so that the closure it needs is made
   * here when a step waits, not prepared at every turn.
   */
  #proceedAfter(applied: Halting, next: BatchNext, snapshot: Snapshot | undefined): Driven | Promise<Driven> {
    return andThenUnlessHalted(applied, () => this.#proceed(next, snapshot));
  }

  /** The step after `next` is answered: `undefined` when the machine is done, a halt when a gate halted. */
  #proceed(next: BatchNext, snapshot: Snapshot | undefined): Driven | Promise<Driven> {
    return andThen(this.#perform(next, snapshot), ToolBatch.#advanced, this);
  }

  static #advanced(input: BatchInput | Halt | undefined, batch: ToolBatch): Driven {
    if (input === undefined || isHalt(input)) return input;
    batch.#step = advance(batch.#state, input);
    return batch;
  }

  /**
   * A step's commands, then its events, then the AfterToolExecute phases it asks for (calls that
   * settled pending), in that order; a promise only when a commit, the sink or a hook is asynchronous.
   */
  #apply(step: BatchStep): Halting {
    const submitted = eachInOrder(step.commands, ToolBatch.#submitOne, 0, this);
    // A durable run stores what a step committed before anything follows it: the batch as requested
    // before any gate or tool, a call marked running before its tool is called, its outcome once settled.
    if (step.commands.length > 0 && this.#host.durable) return andThen(submitted, ToolBatch.#persistUnlessHalted, this, step);
    if (submitted !== undefined) return andThen(submitted, ToolBatch.#emitUnlessHalted, this, step);
    return this.#emitAll(step);
  }

  static #persistUnlessHalted(halt: Halt | undefined, batch: ToolBatch, step: BatchStep): Halting {
    if (halt !== undefined) return halt;
    return andThen(batch.#host.persist(), ToolBatch.#emitUnlessHalted, batch, step);
  }

  #emitAll(step: BatchStep): Halting {
    const emitting = eachInOrder(step.events, ToolBatch.#emitOne, 0, this);
    if (emitting !== undefined) return andThen(emitting, ToolBatch.#afterAllUnlessHalted, this, step);
    return this.#afterAll(step);
  }

  #afterAll(step: BatchStep): Halting {
    return eachInOrder(step.afterTool ?? NO_CALLS, ToolBatch.#afterOne, 0, this);
  }

  // What follows a part that may wait, named once: a hot method that made a closure for it would
  // prepare that closure's context at every call, waiting or not.

  static #emitUnlessHalted(halt: Halt | undefined, batch: ToolBatch, step: BatchStep): Halting {
    return halt ?? batch.#emitAll(step);
  }

  static #afterAllUnlessHalted(halt: Halt | undefined, batch: ToolBatch, step: BatchStep): Halting {
    return halt ?? batch.#afterAll(step);
  }

  static #afterToolUnlessHalted(halt: Halt | undefined, batch: ToolBatch, call: BatchCall): Halting {
    return halt ?? batch.#afterToolPhase(call);
  }

  static #interceptedUnlessHalted(halt: Halt | undefined, batch: ToolBatch, call: ToolCall): Gate | Halt | Promise<Gate | Halt> {
    return halt ?? batch.#intercepted(call);
  }

  static #submitOne(command: BatchCommand, _: number, batch: ToolBatch): Halting {
    return batch.#host.submit(batch.#commandOf(command));
  }

  /** An event delivered; the sink's promise, when it has one, settles to `undefined`: go on. */
  static #emitOne(event: AgentEvent, _: number, batch: ToolBatch): Halting {
    return andThen(batch.#host.emit(event), wentOn);
  }

  static #afterOne(index: number, _: number, batch: ToolBatch): Halting {
    return batch.#afterToolPhase(batch.#state.calls[index] as BatchCall);
  }

  /** The input that answers what the machine needs next; `undefined` when it is done; a halt when a gate's phase or commit halted. */
  #perform(next: BatchNext, snapshot: Snapshot | undefined): BatchInput | Halt | Promise<BatchInput | Halt> | undefined {
    switch (next.type) {
      case 'done':
        return undefined;
      case 'commit':
        return COMMITTED;
      case 'invalid':
        return failed(`tool batch: ${next.reason}`);
      case 'gate':
        return andThen(this.#gate((this.#state.calls[next.index] as BatchCall).call), gatedOrHalt);
      case 'execute':
        return andThen(this.#invoke((this.#state.calls[next.index] as BatchCall).call, next.args, snapshot as Snapshot, next.resume), executedInput);
      case 'execute_all':
        return this.#performAll(next.indices, snapshot as Snapshot);
      default:
        return unreachable(next, 'batch step');
    }
  }

  /** The parallel calls run together on one snapshot (their closures made here, not at every `#perform`). */
  #performAll(indices: readonly number[], snapshot: Snapshot): Promise<BatchInput | Halt> {
    const calls = this.#state.calls;
    const outcomes = indices.map((i) => this.#invoke((calls[i] as BatchCall).call, (calls[i] as BatchCall).call.arguments, snapshot, undefined));
    const all = this.#host.durable && indices.length > 1 ? this.#storedAsSettled(indices, outcomes) : Promise.all(outcomes);
    return all.then((settled): BatchInput | Halt =>
      isHalt(settled) ? settled : { type: 'executed_all', outcomes: settled, strategyOf: this.#host.phase.store.strategyOf },
    );
  }

  /**
   * The parallel calls' outcomes, each stored as its call settles while others still run (seed 003:
   * a call's outcome is its own durable write), one write at a time, so that a death meanwhile leaves
   * it settled, not unknown. The calls that answered at once are stored together once the others have
   * started, if any still run; a call that settles last is stored with the rest by the batch's settle
   * step, which follows at once (so a batch of calls that all answer at once writes nothing more).
   * Stored only where that step keeps an outcome as it is: a terminal one, and under
   * ParallelBatchApproval one without state writes (writes that conflict with an earlier call's fail
   * the call). Resolves once every call settled and every write returned.
   */
  #storedAsSettled(indices: readonly number[], outcomes: readonly (ToolOutcome | Promise<ToolOutcome>)[]): Promise<readonly ToolOutcome[] | Halt> {
    let stored: { readonly [callId: string]: StoredOutcome } | undefined;
    let writes: Promise<Halt | undefined> = Promise.resolve(undefined);
    const approving = this.#state.mode === 'parallel_batch_approval';
    const keep = (k: number, outcome: ToolOutcome): void => {
      if (outcomeOf(outcome.result) === 'suspended' || (approving && outcome.command !== undefined)) return;
      const id = (this.#state.calls[indices[k] as number] as BatchCall).call.id;
      const staged = stagedOf(outcome.command);
      stored = withEntry(stored, id, staged === undefined ? { result: outcome.result } : { result: outcome.result, staged });
    };
    const write = (): void => {
      const now = stored;
      if (now === undefined) return;
      writes = writes.then((halt) => halt ?? this.#host.persist((run) => withStoredOutcomes(run, now)));
      // Handled here too: a refused write fails the batch once every call settled, never as an unhandled rejection meanwhile.
      writes.catch(() => undefined);
    };
    let running = outcomes.length;
    let started = false;
    const settling = outcomes.map((o, k) =>
      andThen(o, (outcome: ToolOutcome): ToolOutcome => {
        running--;
        keep(k, outcome);
        if (started && running > 0) write();
        return outcome;
      }),
    );
    // Every call has started: those that answered at once are kept by now.
    started = true;
    if (running > 0) write();
    return Promise.all(settling).then((all) => writes.then((halt) => halt ?? all));
  }

  /**
   * A command of the machine as a state command: tool-call states stamped with the clock, the batch
   * record. Its ops are built as one list of their own size (a push would reserve room for seventeen).
   */
  #commandOf(command: BatchCommand): StateCommand {
    switch (command.type) {
      case 'begin': {
        const calls = command.calls;
        const clear: MutationOp = { kind: 'update', key: ToolCallStates.key, update: CLEAR_STATES };
        const pins = pinnedPolicies(this.#host.resolved.toolExecution.recovery, this.#calls);
        this.#pins = pins;
        const record: ToolBatchRecord =
          pins === undefined
            ? { message_id: this.#state.messageId, text: this.#state.text, calls: this.#calls, results: NO_RESULTS }
            : { message_id: this.#state.messageId, text: this.#state.text, calls: this.#calls, results: NO_RESULTS, recovery: pins };
        const begin: MutationOp = { kind: 'update', key: ToolBatchKey.key, update: { op: 'begin', record } };
        if (calls.length === 1) return commandOfOps([clear, begin, this.#putOp(calls[0] as BatchCall, undefined)]);
        const ops: MutationOp[] = [clear, begin];
        for (let i = 0; i < calls.length; i++) ops.push(this.#putOp(calls[i] as BatchCall, undefined));
        return commandOfOps(ops);
      }
      case 'status':
        return commandOfOps([this.#putOp(command.call, command.resumeInput)]);
      case 'settled': {
        const { call, staged } = command;
        const result = call.result as ToolResult;
        const data = stagedOf(staged);
        const update: ToolBatchUpdate =
          data === undefined ? { op: 'result', call_id: call.call.id, result } : { op: 'result', call_id: call.call.id, result, staged: data };
        return commandOfOps([this.#putOp(call, command.resumeInput), { kind: 'update', key: ToolBatchKey.key, update }]);
      }
      default:
        return unreachable(command, 'batch command');
    }
  }

  /** The write of a call's tool-call state. */
  #putOp(call: BatchCall, resumeInput: ToolCallResume | undefined): MutationOp {
    return { kind: 'update', key: ToolCallStates.key, update: { op: 'put', state: this.#stateOf(call, resumeInput) } };
  }

  /** Call by call, in model order: its staged writes, then its AfterToolExecute phase (a promise only if one of them is asynchronous). */
  #commitStaged(): Halting {
    return eachInOrder(this.#state.calls, ToolBatch.#publishOne, 0, this);
  }

  static #publishOne(call: BatchCall, _: number, batch: ToolBatch): Halting {
    const submitted = call.command === undefined ? undefined : batch.#host.submit(call.command);
    if (submitted !== undefined) return andThen(submitted, ToolBatch.#afterToolUnlessHalted, batch, call);
    return batch.#afterToolPhase(call);
  }

  #afterToolPhase(call: BatchCall): Halting {
    return this.#host.runPhase('after_tool_execute', { toolCall: call.call, toolResult: call.result, messages: this.#host.messages() });
  }

  /** The assistant message with the calls, then one tool message per call, in model order. */
  #messagesOf(newId: () => string): Message[] {
    const { messageId, text, calls } = this.#state;
    const assistant: Message = {
      id: messageId,
      role: 'assistant',
      content: text === '' ? [] : [{ type: 'text', text }],
      tool_calls: this.#calls.map(copyOf),
    };
    // A batch of one call (most are) gets a list of its size: a push would reserve room for seventeen.
    if (calls.length === 1) return [assistant, toolMessage(calls[0] as BatchCall, newId())];
    const messages: Message[] = [assistant];
    for (const call of calls) messages.push(toolMessage(call, newId()));
    return messages;
  }

  #stateOf(call: BatchCall, resumeInput?: ToolCallResume): ToolCallState {
    const state: Writable<ToolCallState> = {
      call_id: call.call.id,
      tool_name: call.call.name,
      arguments: call.call.arguments,
      status: call.status,
      updated_at: this.#host.env.clock.now(),
      resume_mode: call.resumeMode,
    };
    // Added when set, in this order (no spreads: three times per call).
    if (call.suspensionId !== undefined) state.suspension_id = call.suspensionId;
    if (call.suspensionReason !== undefined) state.suspension_reason = call.suspensionReason;
    if (resumeInput !== undefined) state.resume_input = resumeInput;
    const attempt = this.#attempts?.get(call.call.id);
    if (attempt !== undefined) state.attempt = attempt;
    return state;
  }

  /** BeforeToolExecute for one call, then its intercepts by priority (same priority: first wins). */
  #gate(call: ToolCall): Gate | Halt | Promise<Gate | Halt> {
    const ran = this.#host.runPhase('before_tool_execute', { toolCall: call, messages: this.#host.messages() });
    const verdict = ran === undefined ? this.#intercepted(call) : andThen(ran, ToolBatch.#interceptedUnlessHalted, this, call);
    const tool = this.#host.resolved.tools.get(call.name);
    if (tool?.askBefore === undefined) return verdict;
    return andThen(verdict, askedUnlessDecided, tool, call);
  }

  /** The gate's verdict from the intercepts recorded for the call. */
  #intercepted(call: ToolCall): Gate | Halt | Promise<Gate | Halt> {
    const recorded = this.#host.phase.store.snapshot().get(ToolIntercepts);
    if (recorded === undefined || recorded.length === 0) return ALLOW;
    const records: InterceptRecord[] = [];
    for (const r of recorded) if (r.call_id === call.id) records.push(r);
    if (records.length === 0) return ALLOW;
    let winner: InterceptRecord | undefined;
    const conflicts: InterceptRecord[] = [];
    for (const record of records) {
      if (winner === undefined || rankOf(record.intercept) < rankOf(winner.intercept)) winner = record;
      else if (rankOf(record.intercept) === rankOf(winner.intercept)) conflicts.push(record);
    }
    const cmd = StateCommand.empty().update(ToolIntercepts, { op: 'clear', call_id: call.id });
    for (const c of conflicts) cmd.update(InterceptConflicts, c);
    const verdict = gateOf((winner as InterceptRecord).intercept, call);
    const submitted = this.#host.submit(cmd);
    return submitted === undefined ? verdict : andThen(submitted, verdictUnlessHalted, verdict);
  }

  /** Committed state plus the staged writes of every settled call before the barrier (a halt if they cannot be applied). */
  #preview(): Snapshot | Halt {
    const calls = this.#state.calls;
    let staged: MutationBatch[] | undefined;
    for (let i = 0; i < calls.length; i++) {
      const command = (calls[i] as BatchCall).command;
      if (command !== undefined) (staged ??= []).push(command.patch);
    }
    // Nothing staged: the preview is the committed state itself.
    if (staged === undefined) return this.#host.phase.store.snapshot();
    const preview = this.#host.phase.store.preview(staged);
    return preview.ok ? preview.value : failed(describeStateError(preview.error));
  }

  /** Runs the tool; its outcome now when it answers synchronously. A throw or rejection fails the call. */
  #invoke(call: ToolCall, args: JsonValue, snapshot: Snapshot, resume: BatchResume | undefined): ToolOutcome | Promise<ToolOutcome> {
    const tool = this.#host.resolved.tools.get(call.name);
    if (tool === undefined) return { result: ToolResults.error(call.name, `tool '${call.name}' not found`), command: undefined };
    const ctx = new CallContext(this.#host, call, snapshot, resume, tool, args, policyFor(this.#pins, call.id), this.#attempts?.get(call.id) ?? 1);
    const tap = this.#host.tap;
    if (tap !== undefined) {
      tap.toolStarted?.(call);
      return andThen(runTool(ctx), settled, tap, call);
    }
    return runTool(ctx);
  }
}

/** The tool's outcome: now when it answers synchronously. A throw or rejection fails the call. */
function runTool(ctx: CallContext): ToolOutcome | Promise<ToolOutcome> {
  try {
    ctx.tool.validateArgs?.(ctx.args);
    return andThenOrElse(ctx.tool.execute(ctx.args, ctx), invoked, failedCall, ctx);
  } catch (e) {
    return failedCall(e, ctx);
  }
}

function settled(outcome: ToolOutcome, tap: RunTap, call: ToolCall): ToolOutcome {
  tap.toolSettled?.(call, outcome.result);
  return outcome;
}

type Writable<T> = { -readonly [K in keyof T]: T[K] };

const verdictUnlessHalted = (halt: Halt | undefined, verdict: Gate): Gate | Halt => halt ?? verdict;

/** A call's tool message, with its result as the model sees it. */
const toolMessage = (call: BatchCall, id: string): Message => ({
  id,
  role: 'tool',
  content: [{ type: 'text', text: toolMessageText(call.result as ToolResult) }],
  tool_call_id: call.call.id,
});

const statusOf = (c: BatchCall): ToolCallStatus => c.status;
const copyOf = (c: ToolCall): ToolCall => ({ ...c });

/**
 * The mode a batch runs in: the agent's, except that a batch of delegations alone runs its sub-runs
 * side by side (seed 003: the one exception to model order; book: 并行委托).
 */
function modeOf(host: BatchHost, calls: readonly ToolCall[]): BatchState['mode'] {
  const mode = host.resolved.toolExecution.mode;
  if (mode !== 'sequential' || calls.length < 2) return mode;
  return allDelegations(host, calls) ? 'parallel_streaming' : mode;
}

/** Apart from `modeOf`, so that its closure is made only for a batch of several calls. */
const allDelegations = (host: BatchHost, calls: readonly ToolCall[]): boolean =>
  calls.every((c) => host.resolved.tools.get(c.name)?.descriptor.category === DELEGATION_CATEGORY);

const invoked = (out: ToolResult | ToolOutput): ToolOutcome =>
  isToolOutput(out) ? { result: out.result, command: out.command } : { result: out, command: undefined };

/** What an event's delivery settles to: the batch goes on, whatever the sink's promise held. */
const wentOn = (): undefined => undefined;

/** What the plugins allowed, the tool may still ask to be approved first (`Tool.askBefore`). */
const askedUnlessDecided = (gate: Gate | Halt, tool: Tool, call: ToolCall): Gate | Halt | Promise<Gate> =>
  isHalt(gate) || gate.type !== 'allow' ? gate : askedOf(tool, call);

const executedInput = (outcome: ToolOutcome): BatchInput => ({ type: 'executed', outcome });

/** The gate's verdict from a tool's own question (`Tool.askBefore`): suspend with its ticket, allow, or fail the call where it threw. */
function askedOf(tool: Tool, call: ToolCall): Gate | Promise<Gate> {
  const verdict = (ticket: SuspendTicket | undefined): Gate => (ticket === undefined ? ALLOW : { type: 'suspend', ticket });
  const failed = (e: unknown): Gate => ({ type: 'set_result', result: ToolResults.error(call.name, e instanceof Error ? e.message : String(e)) });
  try {
    const asked = (tool.askBefore as NonNullable<Tool['askBefore']>)(call.arguments, { id: call.id, name: call.name });
    return andThenOrElse(asked, verdict, failed);
  } catch (e) {
    return failed(e);
  }
}

const GATED_ALLOW: BatchInput = Object.freeze({ type: 'gated', gate: Object.freeze({ type: 'allow' }) });
const ALLOW: Gate = (GATED_ALLOW as Extract<BatchInput, { type: 'gated' }>).gate;
const gatedOrHalt = (gate: Gate | Halt): BatchInput | Halt => (isHalt(gate) ? gate : gate === ALLOW ? GATED_ALLOW : { type: 'gated', gate });

/**
 * A call that failed. One whose tool proved it never left is tried again while its recovery policy
 * has attempts left and the run goes on (nothing happened outside, so it cannot run twice).
 */
function failedCall(e: unknown, ctx: CallContext): ToolOutcome | Promise<ToolOutcome> {
  if (isUnavailableBeforeDispatch(e) && ctx.retried()) return runTool(ctx);
  if (e instanceof ToolFailure) return { result: ToolResults.error(ctx.toolName, e.message), command: undefined };
  return { result: ToolResults.error(ctx.toolName, `Internal error: ${e instanceof Error ? e.message : String(e)}`), command: undefined };
}

/** The verdict of the winning intercept (an invalid ticket or result blocks the call). */
function gateOf(w: ToolIntercept, call: ToolCall): Gate {
  switch (w.type) {
    case 'block':
      return { type: 'block', reason: w.reason };
    case 'refuse':
      return { type: 'set_result', result: refusedResult(call.name, w.reason) };
    case 'suspend': {
      const ticket = SuspendTicketSchema.safeParse(w.ticket);
      return ticket.success ? { type: 'suspend', ticket: ticket.data } : { type: 'block', reason: `invalid suspend ticket: ${ticket.error.message}` };
    }
    case 'set_result': {
      const result = ToolResultSchema.safeParse(w.result);
      return result.success ? { type: 'set_result', result: result.data } : { type: 'block', reason: `invalid intercept result: ${result.error.message}` };
    }
    default: {
      // An intercept the types do not know (data cast past them) blocks the call rather than failing the step.
      const unknown: never = w;
      return { type: 'block', reason: `unknown intercept ${JSON.stringify(unknown)}` };
    }
  }
}

/**
 * Where a call's context keeps its batch's host: a symbol and a plain property, as `CANCELLATION`
 * is kept, so that a tool that wraps its context (`Object.create`, a `Proxy`) can report through it.
 */
const CALL_HOST: unique symbol = Symbol('awaken.call-host');

/** The context of one tool call; methods on a class, so a call costs one object, not seven closures. */
class CallContext implements ToolCallContext {
  readonly callId: string;
  readonly toolName: string;
  readonly threadId: string;
  readonly runId: string;
  readonly agentSpec: ToolCallContext['agentSpec'];
  readonly snapshot: Snapshot;
  readonly resume?: ResumeContext;
  /** The run's cancellation (`signal` asks it for the run's `AbortSignal`). */
  readonly [CANCELLATION]: RunSignal;
  /** The tool and the arguments it runs with (kept here so that a retry needs nothing else). */
  readonly tool: Tool;
  readonly args: JsonValue;
  readonly [CALL_HOST]: BatchHost;
  /** The recovery policy the call's batch pinned it to. */
  readonly #policy: ToolRecoveryPolicy;
  /** Dispatches of this call so far (counted across its run's processes). */
  #attempts: number;

  constructor(
    host: BatchHost,
    call: ToolCall,
    snapshot: Snapshot,
    resume: BatchResume | undefined,
    tool: Tool,
    args: JsonValue,
    policy: ToolRecoveryPolicy,
    attempts: number,
  ) {
    this[CALL_HOST] = host;
    this.#policy = policy;
    this.#attempts = attempts;
    this.tool = tool;
    this.args = args;
    this.callId = call.id;
    this.toolName = call.name;
    this.threadId = host.threadId;
    this.runId = host.runId;
    this.agentSpec = host.resolved.spec;
    this.snapshot = snapshot;
    this[CANCELLATION] = host.cancellation;
    if (resume !== undefined)
      this.resume =
        resume.ticket === undefined
          ? { decision: resume.decision, mode: resume.mode }
          : { decision: resume.decision, mode: resume.mode, ticket: resume.ticket };
  }

  /**
   * The run's signal, made when a tool first asks for it (`RunSignal`). Read through a property that
   * is not `#private`: a context a tool wraps (`Object.create`, a `Proxy`) reads it as its own.
   */
  get signal(): AbortSignal {
    return this[CANCELLATION].signal;
  }

  state<V>(key: StateKey<V, unknown>): V | undefined {
    return this.snapshot.get(key);
  }

  /** Counts another dispatch when the call's policy allows one after an unavailable tool (and the run is not cancelled). */
  retried(): boolean {
    if (this[CANCELLATION].aborted || !retryUnavailable(this.#attempts, this.#policy)) return false;
    this.#attempts++;
    return true;
  }

  reportActivity(activityType: string, content: JsonValue): Promise<void> {
    return emitted(this[CALL_HOST], { event_type: 'activity_snapshot', message_id: this.callId, activity_type: activityType, content, replace: true });
  }

  reportActivityDelta(activityType: string, patch: JsonValue): Promise<void> {
    return emitted(this[CALL_HOST], {
      event_type: 'activity_delta',
      message_id: this.callId,
      activity_type: activityType,
      patch: Array.isArray(patch) ? patch : [patch],
    });
  }

  streamOutput(delta: string): Promise<void> {
    return emitted(this[CALL_HOST], { event_type: 'tool_call_stream_delta', id: this.callId, name: this.toolName, delta });
  }

  reportProgress(status: ProgressStatus, message?: string, progress?: number): Promise<void> {
    return emitted(this[CALL_HOST], {
      event_type: 'activity_snapshot',
      message_id: this.callId,
      activity_type: TOOL_CALL_PROGRESS,
      content: {
        schema: 'tool-call-progress.v1',
        node_id: `tool_call:${this.callId}`,
        call_id: this.callId,
        tool_name: this.toolName,
        status,
        ...(progress !== undefined ? { progress } : {}),
        ...(message !== undefined ? { message } : {}),
        run_id: this.runId,
        thread_id: this.threadId,
      },
      replace: true,
    });
  }
}
