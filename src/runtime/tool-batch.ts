import { z } from 'zod';
import { describeStateError } from '../contract/errors.ts';
import type { JsonValue } from '../contract/json.ts';
import { isTerminalToolCallStatus, type ToolCallStatus } from '../contract/lifecycle.ts';
import { ToolCallSchema, type Message, type ToolCall } from '../contract/message.ts';
import {
  outcomeOf,
  SuspendTicketSchema,
  ToolResultSchema,
  ToolResults,
  type SuspendTicket,
  type ToolCallResume,
  type ToolCallResumeMode,
  type ToolResult,
} from '../contract/tool.ts';
import type { Phase } from '../contract/phase.ts';
import { isPromiseLike } from '../core/phase/maybe-promise.ts';
import type { PhaseRuntime } from '../core/phase/phase-runtime.ts';
import type { PhaseFields } from '../core/phase/plugin.ts';
import type { Snapshot } from '../core/state/snapshot.ts';
import { MutationBatch, type MutationOp } from '../core/state/mutation-batch.ts';
import { mergeParallelCommands, StateCommand, type ScheduledAction, type TypedEffect } from '../core/state/state-command.ts';
import { defineStateKey, type StateKey } from '../core/state/state-key.ts';
import type { AgentEvent } from '../contract/event.ts';
import type { Env } from './env.ts';
import { InterceptConflicts, ToolCallStates, ToolIntercepts, withEntry, type InterceptRecord, type ToolCallState } from './loop-keys.ts';
import type { ResolvedAgent } from './resolve.ts';
import { isToolOutput, ToolFailure, type ProgressStatus, type ToolOutput, type ResumeContext, type ToolCallContext } from './tool.ts';

const RESOLVED: Promise<void> = Promise.resolve();

/** An event delivered through the host, as a promise (for callers that always want one: tools, reports). */
export const emitted = (host: BatchHost, event: AgentEvent): Promise<void> => host.emit(event) ?? RESOLVED;

export const INTERRUPTED = '[Tool execution was interrupted]';

/** What the loop lends a tool batch. */
export interface BatchHost {
  readonly env: Env;
  readonly resolved: ResolvedAgent;
  readonly phase: PhaseRuntime;
  readonly threadId: string;
  readonly runId: string;
  readonly signal: AbortSignal;
  /** Delivers an event; a promise only when the sink is asynchronous. */
  emit(event: AgentEvent): Promise<void> | undefined;
  /** Runs a phase with its fields (the host adds the run's); throws on cancellation or a phase error. */
  runPhase<P extends Phase>(phase: P, fields: PhaseFields<P>): Promise<void> | void;
  /** Submits a command; throws if it cannot be committed. */
  submit(command: StateCommand): Promise<void> | void;
  messages(): readonly Message[];
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

export const ToolBatchKey = defineStateKey<ToolBatchRecord | null, ToolBatchUpdate>({
  key: '__runtime.tool_batch',
  init: () => null,
  apply: (s, u) => {
    if (u.op === 'begin') return u.record;
    if (u.op === 'clear' || s === null) return null;
    const results = withEntry(s.results, u.call_id, u.result);
    if (u.staged === undefined) return { ...s, results };
    return { ...s, results, staged: withEntry(s.staged, u.call_id, u.staged) };
  },
  codec: z
    .object({
      message_id: z.string(),
      text: z.string(),
      calls: z.array(ToolCallSchema),
      results: z.record(z.string(), ToolResultSchema),
      staged: z.record(z.string(), StagedCommandSchema).optional(),
    })
    .nullable() as z.ZodType<ToolBatchRecord | null>,
});

/** A command's writes as data (undefined when it writes nothing). */
function stagedOf(command: StateCommand | undefined): StagedCommand | undefined {
  if (command === undefined || (command.patch.isEmpty() && command.scheduledActions.length === 0 && command.effects.length === 0)) return undefined;
  return { ops: [...command.patch.ops], actions: [...command.scheduledActions], effects: [...command.effects] };
}

/** The command staged writes stand for. */
function commandOf(staged: StagedCommand): StateCommand {
  return new StateCommand(new MutationBatch(undefined, [...staged.ops]), [...staged.actions], [...staged.effects]);
}

interface Entry {
  readonly call: ToolCall;
  status: ToolCallStatus;
  result?: ToolResult;
  command?: StateCommand;
  resumeMode: ToolCallResumeMode;
  suspensionId?: string;
  suspensionReason?: string;
  /** Whether `tool_call_done` was emitted for the current outcome. */
  reported: boolean;
}

const PRIORITY = { block: 3, suspend: 2, set_result: 1 } as const;

/** `tool_call_resumed.result` of a settled call (core-spec §4.8). */
export function resumedProjection(result: ToolResult): JsonValue {
  switch (result.status) {
    case 'success':
      return result.metadata !== undefined && Object.keys(result.metadata).length > 0 ? { data: result.data, metadata: result.metadata } : result.data;
    case 'error':
      return result.message !== null ? { error: result.message } : result.data;
    case 'pending':
      return null;
  }
}

/** The text the model sees for a result: its message, else the compact JSON of its data. */
export const toolMessageText = (result: ToolResult): string => result.message ?? JSON.stringify(result.data);

/**
 * One batch of tool calls through the single pipeline of seed 003: committed as requested, each
 * call gated in model order (Block > Suspend > SetResult, else Allow → execute), results staged
 * behind the publication barrier and published in model order once every call is terminal.
 */
export class ToolBatch {
  readonly #host: BatchHost;
  readonly #entries: Entry[];
  readonly #calls: readonly ToolCall[];
  readonly #text: string;
  readonly #messageId: string;
  blockedReason: string | undefined;

  constructor(host: BatchHost, calls: readonly ToolCall[], text: string, messageId: string) {
    this.#host = host;
    this.#text = text;
    this.#messageId = messageId;
    this.#calls = calls;
    this.#entries = calls.map((call) => ({ call, status: 'new', resumeMode: 'replay_tool_call', reported: false }));
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
    const states = snapshot.get(ToolCallStates) ?? {};
    if (record === undefined || record === null) return undefined;
    const batch = new ToolBatch(host, record.calls, record.text, record.message_id);
    for (const entry of batch.#entries) {
      const state = Object.hasOwn(states, entry.call.id) ? states[entry.call.id] : undefined;
      if (state === undefined) return undefined;
      entry.status = state.status;
      entry.resumeMode = state.resume_mode;
      if (state.suspension_id !== undefined) entry.suspensionId = state.suspension_id;
      if (state.suspension_reason !== undefined) entry.suspensionReason = state.suspension_reason;
      const result = Object.hasOwn(record.results, entry.call.id) ? record.results[entry.call.id] : undefined;
      if (result !== undefined) entry.result = result;
      const staged = record.staged !== undefined && Object.hasOwn(record.staged, entry.call.id) ? record.staged[entry.call.id] : undefined;
      if (staged !== undefined) entry.command = commandOf(staged);
      entry.reported = true;
    }
    return batch.suspendedIds().length > 0 ? batch : undefined;
  }

  /** The suspended calls, in model order, with the tickets they suspended with. */
  suspendedCalls(): { readonly call: ToolCall; readonly messageId: string; readonly ticket: SuspendTicket | undefined }[] {
    return this.#entries.filter((e) => e.status === 'suspended').map((e) => ({ call: e.call, messageId: this.#messageId, ticket: e.result?.suspension }));
  }

  get calls(): readonly ToolCall[] {
    return this.#calls;
  }

  statuses(): ToolCallStatus[] {
    return this.#entries.map((e) => e.status);
  }

  suspendedIds(): string[] {
    return this.#entries.filter((e) => e.status === 'suspended').map((e) => e.call.id);
  }

  /** Finds the suspended call a decision targets: by call id, else by suspension id. */
  targetOf(targetId: string): string | undefined {
    const byCall = this.#entries.find((e) => e.call.id === targetId && e.status === 'suspended');
    if (byCall !== undefined) return byCall.call.id;
    return this.#entries.find((e) => e.suspensionId === targetId && e.status === 'suspended')?.call.id;
  }

  allTerminal(): boolean {
    return this.#entries.every((e) => isTerminalToolCallStatus(e.status));
  }

  /**
   * Commits the batch as requested, before any gate or executor runs. The tool-call states of the
   * previous batch are dropped in the same commit (they are all terminal by now).
   */
  begin(): Promise<void> | void {
    const cmd = StateCommand.empty().update(ToolCallStates, { op: 'clear' }).update(ToolBatchKey, {
      op: 'begin',
      record: { message_id: this.#messageId, text: this.#text, calls: this.calls, results: {} },
    });
    for (const e of this.#entries) cmd.update(ToolCallStates, { op: 'put', state: this.#state(e, 'new') });
    return this.#host.submit(cmd);
  }

  /**
   * Gates and executes every call in the configured mode, then reports the settled calls. In
   * sequential mode, while every call is allowed and everything on the way answers now, no promise
   * is made; from the first call that is not, `#runFrom` goes on.
   */
  run(): Promise<void> | undefined {
    if (this.#host.resolved.toolExecution.mode !== 'sequential') return this.#runFrom(0, undefined);
    for (let k = 0; k < this.#entries.length; k++) {
      const entry = this.#entries[k] as Entry;
      const gated = this.#gate(entry);
      if (isPromiseLike<Gate>(gated) || gated.type !== 'allow') return this.#runFrom(k, gated);
      const executed = this.#execute(entry, entry.call.arguments, this.#preview(), undefined);
      if (executed !== undefined) return executed.then(() => (entry.status === 'suspended' ? this.#stopAfter(k) : this.#runFrom(k + 1, undefined)));
      if (entry.status === 'suspended') return this.#stopAfter(k);
    }
    return this.#reportSettled();
  }

  /** The calls from `from` on, in the configured mode (`gated`: the gate already asked of call `from`), then the report. */
  async #runFrom(from: number, gated: Gate | Promise<Gate> | undefined): Promise<void> {
    const parallel = this.#host.resolved.toolExecution.mode !== 'sequential';
    const allowed: Entry[] = [];
    for (let k = from; k < this.#entries.length; k++) {
      const entry = this.#entries[k] as Entry;
      const asked = k === from && gated !== undefined ? gated : this.#gate(entry);
      const gate = isPromiseLike<Gate>(asked) ? await asked : asked;
      if (gate.type === 'block') {
        this.blockedReason = gate.reason;
        await this.#settle(entry, { ...ToolResults.error(entry.call.name, gate.reason), metadata: { rejected: true } }, undefined);
        await this.#interrupt(this.#entries.slice(k + 1));
        break;
      }
      if (gate.type === 'suspend') {
        await this.#suspendByGate(entry, gate.ticket);
        continue;
      }
      if (gate.type === 'set_result') {
        await this.#settle(entry, gate.result, undefined);
        continue;
      }
      if (parallel) {
        allowed.push(entry);
        continue;
      }
      const executed = this.#execute(entry, entry.call.arguments, this.#preview(), undefined);
      if (executed !== undefined) await executed;
      if (entry.status === 'suspended') {
        // Sequential stops at the first call that suspends itself (book: 工具执行模式 → Sequential).
        await this.#interrupt(this.#entries.slice(k + 1));
        break;
      }
    }
    if (allowed.length > 0) await this.#runParallel(allowed);
    const reported = this.#reportSettled();
    if (reported !== undefined) await reported;
  }

  /** Sequential mode after call `k` suspended itself: the calls after it are interrupted, then the report. */
  async #stopAfter(k: number): Promise<void> {
    await this.#interrupt(this.#entries.slice(k + 1));
    const reported = this.#reportSettled();
    if (reported !== undefined) await reported;
  }

  /** Applies decisions to suspended calls, in model order, and emits `tool_call_resumed` for each. */
  async resume(decisions: ReadonlyMap<string, ToolCallResume>, options: { readonly silent?: boolean } = {}): Promise<void> {
    let wait: Promise<void> | void;
    const emit = options.silent === true ? (): Promise<void> => Promise.resolve() : (e: AgentEvent): Promise<void> => emitted(this.#host, e);
    for (const entry of this.#entries) {
      const decision = decisions.get(entry.call.id);
      if (decision === undefined || entry.status !== 'suspended') continue;
      if (decision.action === 'cancel') {
        const result = ToolResults.error(entry.call.name, `Tool call cancelled: ${decision.reason ?? 'cancelled by decision'}`);
        entry.result = result;
        entry.status = 'cancelled';
        await this.#host.submit(
          StateCommand.empty()
            .update(ToolCallStates, { op: 'put', state: { ...this.#state(entry, 'cancelled'), resume_input: decision } })
            .update(ToolBatchKey, { op: 'result', call_id: entry.call.id, result }),
        );
        entry.reported = true;
        // A cancel decision reads as a denial unless the decision carries its own result.
        await emit({
          event_type: 'tool_call_resumed',
          target_id: entry.call.id,
          result: decision.result ?? { approved: false, ...(decision.reason !== undefined ? { reason: decision.reason } : {}) },
        });
        continue;
      }
      entry.status = 'resuming';
      wait = this.#host.submit(StateCommand.empty().update(ToolCallStates, { op: 'put', state: { ...this.#state(entry, 'resuming'), resume_input: decision } }));
      if (wait !== undefined) await wait;
      const resume: ResumeContext = { decision, mode: entry.resumeMode };
      if (entry.resumeMode === 'use_decision_as_tool_result') {
        await this.#settle(entry, ToolResults.success(entry.call.name, decision.result ?? null), undefined);
      } else {
        const args = entry.resumeMode === 'pass_decision_to_tool' ? (decision.result ?? entry.call.arguments) : entry.call.arguments;
        await this.#execute(entry, args, this.#preview(), resume);
      }
      if ((entry.status as ToolCallStatus) === 'suspended') {
        entry.reported = false;
        continue;
      }
      entry.reported = true;
      await emit({ event_type: 'tool_call_resumed', target_id: entry.call.id, result: resumedProjection(entry.result as ToolResult) });
    }
    if (options.silent !== true) await this.#reportSettled();
  }

  /**
   * Publishes the batch once every call is terminal: each call's staged state is committed and its
   * AfterToolExecute phase runs, in model order; then the assistant message and the tool messages
   * join the history. Returns the messages to append.
   */
  publish(newId: () => string): Message[] | Promise<Message[]> {
    const committed = this.#commitStaged(0);
    return committed === undefined ? this.#messagesOf(newId) : committed.then(() => this.#messagesOf(newId));
  }

  /** From call `from` on, in model order: its staged writes, then its AfterToolExecute phase (a promise only if one of them is asynchronous). */
  #commitStaged(from: number): Promise<void> | undefined {
    for (let i = from; i < this.#entries.length; i++) {
      const entry = this.#entries[i] as Entry;
      const submitted = entry.command === undefined ? undefined : this.#host.submit(entry.command);
      if (submitted !== undefined) return submitted.then(() => this.#afterTool(i));
      const ran = this.#afterToolPhase(entry);
      if (ran !== undefined) return ran.then(() => this.#commitStaged(i + 1));
    }
    return undefined;
  }

  #afterTool(i: number): Promise<void> | undefined {
    const ran = this.#afterToolPhase(this.#entries[i] as Entry);
    return ran === undefined ? this.#commitStaged(i + 1) : ran.then(() => this.#commitStaged(i + 1));
  }

  #afterToolPhase(entry: Entry): Promise<void> | void {
    return this.#host.runPhase('after_tool_execute', { toolCall: entry.call, toolResult: entry.result, messages: this.#host.messages() });
  }

  /** The assistant message with the calls, then one tool message per call, in model order. */
  #messagesOf(newId: () => string): Message[] {
    const messages: Message[] = [
      {
        id: this.#messageId,
        role: 'assistant',
        content: this.#text === '' ? [] : [{ type: 'text', text: this.#text }],
        tool_calls: this.calls.map((c) => ({ ...c })),
      },
    ];
    for (const entry of this.#entries) {
      messages.push({
        id: newId(),
        role: 'tool',
        content: [{ type: 'text', text: toolMessageText(entry.result as ToolResult) }],
        tool_call_id: entry.call.id,
      });
    }
    return messages;
  }

  // ---- internals --------------------------------------------------------------------------------

  #state(entry: Entry, status: ToolCallStatus): ToolCallState {
    const state: Writable<ToolCallState> = {
      call_id: entry.call.id,
      tool_name: entry.call.name,
      arguments: entry.call.arguments,
      status,
      updated_at: this.#host.env.clock.now(),
      resume_mode: entry.resumeMode,
    };
    // Added when set, in this order (no spreads: three times per call).
    if (entry.suspensionId !== undefined) state.suspension_id = entry.suspensionId;
    if (entry.suspensionReason !== undefined) state.suspension_reason = entry.suspensionReason;
    return state;
  }

  /** BeforeToolExecute for one call, then its intercepts by priority (same priority: first wins). */
  #gate(entry: Entry): Gate | Promise<Gate> {
    const wait = this.#host.runPhase('before_tool_execute', { toolCall: entry.call, messages: this.#host.messages() });
    return wait === undefined ? this.#intercepted(entry) : wait.then(() => this.#intercepted(entry));
  }

  /** The gate's verdict from the intercepts recorded for the call. */
  #intercepted(entry: Entry): Gate | Promise<Gate> {
    const recorded = this.#host.phase.store.snapshot().get(ToolIntercepts);
    if (recorded === undefined || recorded.length === 0) return ALLOW;
    const records = recorded.filter((r) => r.call_id === entry.call.id);
    if (records.length === 0) return ALLOW;
    let winner: InterceptRecord | undefined;
    const conflicts: InterceptRecord[] = [];
    for (const record of records) {
      if (winner === undefined || PRIORITY[record.intercept.type] > PRIORITY[winner.intercept.type]) winner = record;
      else if (PRIORITY[record.intercept.type] === PRIORITY[winner.intercept.type]) conflicts.push(record);
    }
    const cmd = StateCommand.empty().update(ToolIntercepts, { op: 'clear', call_id: entry.call.id });
    for (const c of conflicts) cmd.update(InterceptConflicts, c);
    const verdict = gateOf((winner as InterceptRecord).intercept);
    const wait = this.#host.submit(cmd);
    return wait === undefined ? verdict : wait.then(() => verdict);
  }

  async #suspendByGate(entry: Entry, ticket: SuspendTicket): Promise<void> {
    entry.resumeMode = ticket.resume_mode;
    entry.suspensionId = ticket.suspension.id;
    entry.suspensionReason = ticket.suspension.action;
    await this.#settle(entry, ToolResults.suspended(entry.call.name, `Tool '${entry.call.name}' suspended: awaiting approval`, ticket), undefined);
  }

  /** Committed state plus the staged writes of every settled call before the barrier. */
  #preview(): Snapshot {
    const staged = this.#entries.flatMap((e) => (e.command !== undefined ? [e.command.patch] : []));
    const preview = this.#host.phase.store.preview(staged);
    if (!preview.ok) throw new Error(describeStateError(preview.error));
    return preview.value;
  }

  /** Marks the call running, runs it and settles it; a promise only if something on the way is asynchronous. */
  #execute(entry: Entry, args: JsonValue, snapshot: Snapshot, resume: ResumeContext | undefined): Promise<void> | void {
    entry.status = 'running';
    const wait = this.#host.submit(StateCommand.empty().update(ToolCallStates, { op: 'put', state: this.#state(entry, 'running') }));
    const run = (): Promise<void> | void => {
      const out = this.#invoke(entry.call, args, snapshot, resume);
      return isPromiseLike<Invoked>(out) ? Promise.resolve(out).then((o) => this.#settle(entry, o.result, o.command)) : this.#settle(entry, out.result, out.command);
    };
    return wait === undefined ? run() : wait.then(run);
  }

  async #runParallel(allowed: Entry[]): Promise<void> {
    let wait: Promise<void> | void;
    const frozen = this.#host.phase.store.snapshot();
    for (const entry of allowed) {
      entry.status = 'running';
      wait = this.#host.submit(StateCommand.empty().update(ToolCallStates, { op: 'put', state: this.#state(entry, 'running') }));
      if (wait !== undefined) await wait;
    }
    const outputs = await Promise.all(allowed.map((e) => this.#invoke(e.call, e.call.arguments, frozen, undefined)));
    // ParallelBatchApproval checks the staged writes for exclusive-key conflicts, in model order.
    let merged: StateCommand | undefined;
    for (let i = 0; i < allowed.length; i++) {
      const entry = allowed[i] as Entry;
      let { result, command } = outputs[i] as { result: ToolResult; command: StateCommand | undefined };
      if (this.#host.resolved.toolExecution.mode === 'parallel_batch_approval' && command !== undefined) {
        const next = merged === undefined ? ({ ok: true, value: command } as const) : mergeParallelCommands(merged, command, this.#host.phase.store.strategyOf);
        if (next.ok) merged = next.value;
        else {
          result = ToolResults.error(entry.call.name, describeStateError(next.error));
          command = undefined;
        }
      }
      await this.#settle(entry, result, command);
    }
  }

  /** Runs the tool; its result now when it answers synchronously. A throw or rejection fails the call. */
  #invoke(call: ToolCall, args: JsonValue, snapshot: Snapshot, resume: ResumeContext | undefined): Invoked | Promise<Invoked> {
    const tool = this.#host.resolved.tools.get(call.name);
    if (tool === undefined) return { result: ToolResults.error(call.name, `tool '${call.name}' not found`), command: undefined };
    const ctx = this.#context(call, snapshot, resume);
    try {
      tool.validateArgs?.(args);
      const out = tool.execute(args, ctx);
      return isPromiseLike<Awaited<typeof out>>(out) ? Promise.resolve(out).then(invoked, (e: unknown) => failedCall(call, e)) : invoked(out);
    } catch (e) {
      return failedCall(call, e);
    }
  }

  #context(call: ToolCall, snapshot: Snapshot, resume: ResumeContext | undefined): ToolCallContext {
    return new CallContext(this.#host, call, snapshot, resume);
  }

  /** Records a call's outcome: its status is committed now; its state command stays staged. */
  #settle(entry: Entry, result: ToolResult, command: StateCommand | undefined): Promise<void> | void {
    const outcome = outcomeOf(result);
    entry.result = result;
    if (command !== undefined) entry.command = command;
    if (outcome === 'suspended' && result.suspension !== undefined) {
      entry.resumeMode = result.suspension.resume_mode;
      entry.suspensionId = result.suspension.suspension.id;
      entry.suspensionReason = result.suspension.suspension.action;
    }
    entry.status = outcome === 'succeeded' ? 'succeeded' : outcome === 'failed' ? 'failed' : 'suspended';
    const staged = stagedOf(command);
    return this.#host.submit(
      StateCommand.empty()
        .update(ToolCallStates, { op: 'put', state: this.#state(entry, entry.status) })
        .update(ToolBatchKey, staged === undefined ? { op: 'result', call_id: entry.call.id, result } : { op: 'result', call_id: entry.call.id, result, staged }),
    );
  }

  async #interrupt(entries: readonly Entry[]): Promise<void> {
    for (const entry of entries) await this.#settle(entry, ToolResults.error(entry.call.name, INTERRUPTED), undefined);
  }

  /** `tool_call_done` for every settled call not yet reported, in model order (a promise only for an asynchronous sink). */
  #reportSettled(from = 0): Promise<void> | undefined {
    for (let i = from; i < this.#entries.length; i++) {
      const entry = this.#entries[i] as Entry;
      if (entry.reported || entry.result === undefined || entry.status === 'resuming' || entry.status === 'running') continue;
      entry.reported = true;
      const wait = this.#host.emit({
        event_type: 'tool_call_done',
        id: entry.call.id,
        message_id: this.#messageId,
        result: entry.result,
        outcome: outcomeOf(entry.result),
      });
      if (wait !== undefined) return wait.then(() => this.#reportSettled(i + 1));
    }
    return undefined;
  }
}

type Writable<T> = { -readonly [K in keyof T]: T[K] };

/** What running a tool gave: its result and the state command it staged. */
interface Invoked {
  readonly result: ToolResult;
  readonly command: StateCommand | undefined;
}

const invoked = (out: ToolResult | ToolOutput): Invoked => (isToolOutput(out) ? { result: out.result, command: out.command } : { result: out, command: undefined });

function failedCall(call: ToolCall, e: unknown): Invoked {
  if (e instanceof ToolFailure) return { result: ToolResults.error(call.name, e.message), command: undefined };
  return { result: ToolResults.error(call.name, `Internal error: ${e instanceof Error ? e.message : String(e)}`), command: undefined };
}

type Gate =
  | { readonly type: 'allow' }
  | { readonly type: 'block'; readonly reason: string }
  | { readonly type: 'suspend'; readonly ticket: SuspendTicket }
  | { readonly type: 'set_result'; readonly result: ToolResult };

const ALLOW: Gate = { type: 'allow' };

/** The verdict of the winning intercept (an invalid ticket or result blocks the call). */
function gateOf(w: InterceptRecord['intercept']): Gate {
  switch (w.type) {
    case 'block':
      return { type: 'block', reason: w.reason };
    case 'suspend': {
      const ticket = SuspendTicketSchema.safeParse(w.ticket);
      return ticket.success ? { type: 'suspend', ticket: ticket.data } : { type: 'block', reason: `invalid suspend ticket: ${ticket.error.message}` };
    }
    case 'set_result': {
      const result = ToolResultSchema.safeParse(w.result);
      return result.success ? { type: 'set_result', result: result.data } : { type: 'block', reason: `invalid intercept result: ${result.error.message}` };
    }
  }
}

/** The context of one tool call; methods on a class, so a call costs one object, not seven closures. */
class CallContext implements ToolCallContext {
  readonly callId: string;
  readonly toolName: string;
  readonly threadId: string;
  readonly runId: string;
  readonly agentSpec: ToolCallContext['agentSpec'];
  readonly snapshot: Snapshot;
  readonly signal: AbortSignal;
  readonly resume?: ResumeContext;
  readonly #host: BatchHost;

  constructor(host: BatchHost, call: ToolCall, snapshot: Snapshot, resume: ResumeContext | undefined) {
    this.#host = host;
    this.callId = call.id;
    this.toolName = call.name;
    this.threadId = host.threadId;
    this.runId = host.runId;
    this.agentSpec = host.resolved.spec;
    this.snapshot = snapshot;
    this.signal = host.signal;
    if (resume !== undefined) this.resume = resume;
  }

  state<V>(key: StateKey<V, unknown>): V | undefined {
    return this.snapshot.get(key);
  }

  reportActivity(activityType: string, content: JsonValue): Promise<void> {
    return emitted(this.#host, { event_type: 'activity_snapshot', message_id: this.callId, activity_type: activityType, content, replace: true });
  }

  reportActivityDelta(activityType: string, patch: JsonValue): Promise<void> {
    return emitted(this.#host, { event_type: 'activity_delta', message_id: this.callId, activity_type: activityType, patch: Array.isArray(patch) ? patch : [patch] });
  }

  streamOutput(delta: string): Promise<void> {
    return emitted(this.#host, { event_type: 'tool_call_stream_delta', id: this.callId, name: this.toolName, delta });
  }

  reportProgress(status: ProgressStatus, message?: string, progress?: number): Promise<void> {
    return emitted(this.#host, {
      event_type: 'activity_snapshot',
      message_id: this.callId,
      activity_type: 'tool-call-progress',
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
