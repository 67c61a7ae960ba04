import type { AgentRunResult } from '../contract/run-result.ts';
import type { Decision } from '../contract/decision.ts';
import type { RunTap, TappedInference } from './tap.ts';
import { describeStateError, type InferenceExecutionError, type StateError } from '../contract/errors.ts';
import { andThenUnlessHalted, cancelled, failed, haltOfCommit, haltOfPhase, isHalt, type Halt, type Halting } from './halt.ts';
import { isPromiseLike } from './maybe-promise.ts';
import type { AgentEvent } from '../contract/event.ts';
import { mergeInferenceOverride, type InferenceOverride } from '../contract/inference.ts';
import {
  deriveRunStatus,
  fromDoneReason,
  TerminationReasons,
  toRunStatus,
  type TerminationReason,
} from '../contract/lifecycle.ts';
import { messageText, Messages, type Message, type ToolCall } from '../contract/message.ts';
import type { JsonValue } from '../contract/json.ts';
import type { Phase } from '../contract/phase.ts';
import { mergeResponseMetadata, streamText, type ResponseMetadataPart, type StreamPart, type StreamResult } from '../contract/stream.ts';
import { ToolResults, type ToolCallResume, type ToolDescriptor } from '../contract/tool.ts';
import type { TokenUsage } from '../contract/usage.ts';
import { StreamAccumulator } from '../core/inference/accumulator.ts';
import { stepsAfter } from '../core/steps-after.ts';
import type { PhaseRuntime } from './phase-runtime.ts';
import type { PhaseFields, PhaseInputs, RunFields } from '../core/phase/plugin.ts';
import { StateCommand } from '../core/state/state-command.ts';
import { compactionView, contextChanged, CONTINUATION_PROMPT, shouldRetryTruncated } from '../core/context/index.ts';
import { StopDecisionKey } from './builtin-plugins.ts';
import { autocompact, CompactionStateKey, type ReportedRequest } from './context.ts';
import type { Env } from './env.ts';
import type { EventSink } from './event-sink.ts';
import { InferenceFailure, type InferenceRequest } from './llm.ts';
import {
  ContextMessages,
  filterToolIds,
  InferenceOverrideState,
  orderedContextMessages,
  RunLifecycle,
  ToolFilter,
  LoopControl,
  AgentOverlayKey,
  type AgentOverlayState,
} from './loop-keys.ts';
import { describeResolveError, type ResolvedAgent } from './resolve.ts';
import type { ResolveError } from '../contract/errors.ts';
import type { Result } from '../contract/result.ts';
import type { RunCheckpoint, ThreadRunStore } from './thread-run-store.ts';
import { emitted, INTERRUPTED, ToolBatch, ToolBatchKey, type BatchHost } from './tool-batch.ts';


/** What BeforeInference left for one step's request. */
interface RequestInputs {
  readonly filter: ReturnType<typeof ToolFilter.init> | undefined;
  readonly override: InferenceOverride | undefined;
  readonly context: ReturnType<typeof orderedContextMessages>;
}

/** One streamed inference: its result, or that it was cancelled or failed, and the calls it opened. */
interface Inference {
  readonly result: StreamResult;
  readonly cancelled: boolean;
  readonly error?: InferenceFailure;
  readonly started: { id: string; name: string }[];
}

/** Result message of a requested call that did not run because the run stopped after inference. */
export const NOT_EXECUTED = '[Tool call not executed: the run stopped]';

/** What a part of a step ends with: go on (`undefined`) or the step's termination, now or later. */
type StepEnd = TerminationReason | undefined | Promise<TerminationReason | undefined>;

export interface RunParams {
  readonly env: Env;
  readonly resolved: ResolvedAgent;
  readonly phase: PhaseRuntime;
  readonly sink: EventSink;
  readonly store: ThreadRunStore | undefined;
  readonly threadId: string;
  readonly runId: string;
  readonly history: readonly Message[];
  /** Messages the store holds for the thread (default: the history's length; more when the history was rewound). */
  readonly storedCount?: number;
  readonly input: readonly Message[];
  readonly overrides: InferenceOverride | undefined;
  /** The run's own signal; its owner calls `RunLoop.aborted()` when it fires. */
  readonly signal: AbortSignal;
  readonly waitForDecisions: boolean;
  /**
   * Resolves with the next decisions for this run, `undefined` when the signal aborts, or `detached`
   * when the run is let go while it waits (it stays waiting in the store).
   */
  readonly nextDecisions: () => Promise<readonly Decision[] | undefined | 'detached'>;
  /** Messages that arrived with the decisions: they join the thread once the resumed calls are settled. */
  readonly takeInput?: () => readonly Message[];
  /** Tells the caller which calls are suspended (so decisions can be validated). */
  readonly onSuspended: (batch: ToolBatch | undefined) => void;
  /** The provider-side model that answered the last inference (set by retrying executors). */
  readonly answeredBy: () => string | undefined;
  /** Every inference failure of the run, in order: the retry policy adds those it absorbed, the loop the rest. */
  readonly inferenceErrors?: InferenceExecutionError[];
  /** The run that delegated this one (a sub-run's `run_start` names it). */
  readonly parentRunId?: string;
  /** What the agent's plugins watch of the run beyond its events (`RunTap`). */
  readonly tap?: RunTap;
  /**
   * Resolves the agent a handoff made active (`AgentOverlayKey`), given the run's own: an overlay of
   * it (its plugins stay the run's), or a registered agent with its own plugins. Without it, a
   * handoff blocks the run.
   */
  readonly reresolve?: (target: AgentOverlayState, base: ResolvedAgent) => Result<ResolvedAgent, ResolveError>;
}

/**
 * One run of the loop (book: Run 生命周期与 Phases; core-spec §3): RunStart → steps → RunEnd, with
 * snapshot isolation at every phase, a checkpoint at every StepEnd, and exactly one `run_finish`
 * for each `run_start` it emits.
 */
export type { AgentRunResult } from '../contract/run-result.ts';
export { decisionFor, type Decision } from '../contract/decision.ts';

export class RunLoop implements BatchHost {
  readonly env: Env;
  /** The agent the run acts as: its own, or what a handoff made active (`#handoff`). */
  resolved: ResolvedAgent;
  /** The run's own agent, and the name of the handoff applied (undefined: none). */
  readonly #base: ResolvedAgent;
  #acting: string | undefined;
  readonly phase: PhaseRuntime;
  readonly threadId: string;
  readonly runId: string;
  readonly signal: AbortSignal;
  readonly tap: RunTap | undefined;
  readonly #p: RunParams;
  readonly #messages: Message[];
  readonly #inputStart: number;
  /** The run's steps (`stepsAfter` over what it emits), from every segment: a revived run starts from the count it had. */
  #steps = 0;
  readonly #usage = { prompt: 0, completion: 0, total: 0, seen: false };
  /** The part of `#usage` the store already counted (its checkpoints report only what came after). */
  readonly #usageStored = { input: 0, output: 0 };
  #batch: ToolBatch | undefined;
  /** Tool calls announced by `tool_call_start` and not yet closed by `tool_call_done`. */
  readonly #open = new OpenCalls();
  #clearBatchRecord = false;
  /** Messages the store holds for this thread as far as this run knows (optimistic concurrency). */
  #persistedCount: number;
  /** Leading messages the store holds as this run holds them (the rest it replaces at the next checkpoint). */
  #storedPrefix: number;
  /** Continuations asked for after MaxTokens cuts, in this run (bounded by max_continuation_retries). */
  #continuations = 0;
  /** What `#sentView` has sent so far, and how much of the history it holds. */
  #sent: Message[] | undefined;
  #sentUpTo = 0;
  #tools: readonly ToolDescriptor[] | undefined;
  /** What the provider said of the inference being read (`response_metadata` parts, merged), for the tap. */
  #described: Omit<ResponseMetadataPart, 'type'> | undefined;
  /** The provider stream being read (`#read`): where its parts go, and whether a part is awaited from it (`aborted()` ends it then). */
  #reading:
    | {
        readonly iterator: AsyncIterator<StreamPart>;
        readonly acc: StreamAccumulator;
        readonly started: { id: string; name: string }[];
        readonly resolve: (end: ReadEnd) => void;
        waiting: boolean;
      }
    | undefined;

  constructor(params: RunParams) {
    this.#p = params;
    this.env = params.env;
    this.resolved = params.resolved;
    this.#base = params.resolved;
    this.phase = params.phase;
    this.threadId = params.threadId;
    this.runId = params.runId;
    this.signal = params.signal;
    this.tap = params.tap;
    this.#messages = [...params.history];
    this.#inputStart = this.#messages.length;
    this.#persistedCount = params.storedCount ?? params.history.length;
    // The history is the store's messages, or their first part when the thread was rewound.
    this.#storedPrefix = params.history.length;
    this.#messages.push(...params.input);
  }

  messages(): readonly Message[] {
    return this.#messages;
  }

  /** `run_start`, naming the parent run of a sub-run. */
  #runStart(): AgentEvent {
    const parent = this.#p.parentRunId;
    return parent === undefined ? { event_type: 'run_start', thread_id: this.threadId, run_id: this.runId } : { event_type: 'run_start', thread_id: this.threadId, run_id: this.runId, parent_run_id: parent };
  }

  /**
   * Delivers an event; returns a promise only when the sink is asynchronous. Here and in the tool
   * batch, `emit`, `submit` and `runPhase` are awaited only when they return a promise
   * (`wait = …; if (wait !== undefined) await wait;`): an `await` on a synchronous result still costs
   * a turn of the microtask queue and a promise, a few dozen times per step.
   */
  emit(event: AgentEvent): Promise<void> | undefined {
    if (event.event_type === 'tool_call_start') this.#open.add(event.id, event.name);
    else if (event.event_type === 'tool_call_done') this.#open.remove(event.id);
    this.#steps = stepsAfter(this.#steps, event);
    return this.#p.sink.emit(event) ?? undefined;
  }

  /** Commits a command: a halt if it is refused; synchronous (no promise) when nothing in it is asynchronous. */
  submit(command: StateCommand): Halting {
    const failure = this.phase.submitOrFail(command);
    if (failure === undefined) return undefined;
    return isPromiseLike<StateError | undefined>(failure) ? Promise.resolve(failure).then(haltOfCommit) : haltOfCommit(failure);
  }

  /**
   * Runs a phase with its typed input (`PhaseInputs`): the phase's own fields and the run's, in a new
   * object (the caller's is not touched). A halt on cancellation or a phase error. Synchronous (no
   * promise) when its hooks and handlers are.
   */
  runPhase<P extends Phase>(phase: P, fields: PhaseFields<P>, cancellable = true): Halting {
    // A phase with nothing to run is only a cancellation point: its input is not built.
    if (this.phase.idle(phase)) return cancellable && this.signal.aborted ? cancelled() : undefined;
    const input = { agentSpec: this.resolved.spec, threadId: this.threadId, runId: this.runId, ...fields } satisfies RunFields as PhaseInputs[P];
    const r = this.phase.runPhaseNow(phase, cancellable ? { input, signal: this.signal } : { input });
    if (isPromiseLike<Awaited<typeof r>>(r)) return Promise.resolve(r).then(haltOfPhase);
    return r.ok ? undefined : haltOfPhase(r);
  }

  /**
   * Wakes an inference waiting on a provider that does not listen to the signal: the run's owner
   * calls it when `signal` aborts (the listener it has on the signal anyway: one per run).
   */
  aborted(): void {
    if (this.#reading?.waiting === true) this.#endRead(ABORTED);
  }

  /** Runs to the end: the final termination, after any suspensions and resumes. */
  async execute(): Promise<AgentRunResult> {
    let termination: TerminationReason;
    try {
      const halted = await this.#begin();
      termination = halted ?? (await this.#steps_());
      while (termination.type === 'suspended') {
        const resumed = await this.#park();
        if (resumed === 'cancelled') return this.#result(TerminationReasons.cancelled());
        if (resumed === 'returned') return this.#result(TerminationReasons.suspended());
        termination = resumed;
      }
    } catch (e) {
      termination = thrown(e);
    }
    return this.#finish(termination);
  }

  /** RunStart committed, `run_start`, the RunStart phase and the write-ahead checkpoint; the halt that stopped them, if any. */
  async #begin(): Promise<Halt | undefined> {
    let halt: Halting = this.submit(StateCommand.empty().update(RunLifecycle, { op: 'start', run_id: this.runId, at: this.env.clock.now() }));
    if (halt !== undefined && (halt = await halt) !== undefined) return halt;
    const emitting = this.emit(this.#runStart());
    if (emitting !== undefined) await emitting;
    if (this.signal.aborted) return cancelled();
    halt = this.runPhase('run_start', { now: this.env.clock.now(), tools: [...this.resolved.tools.values()].map((t) => t.descriptor) });
    if (halt !== undefined && (halt = await halt) !== undefined) return halt;
    // Write-ahead: the run and its input are stored before the first step (listed at once, never lost).
    return this.#checkpoint(undefined);
  }

  /**
   * Takes up a run that parked in another process (it died, or shut down): its suspended batch is
   * rebuilt from the restored state and the run waits for decisions as if it had never left — the
   * suspended segment already ended there, so nothing is emitted until a decision resumes it.
   */
  async revive(): Promise<AgentRunResult> {
    let termination: TerminationReason;
    try {
      const lifecycle = this.phase.store.snapshot().get(RunLifecycle);
      const batch = lifecycle?.status === 'waiting' && lifecycle.run_id === this.runId ? ToolBatch.restore(this) : undefined;
      if (batch === undefined) return this.#finish(failed(`run ${this.runId} is not waiting for a decision in the stored state`));
      this.#batch = batch;
      // Every step of a waiting run has ended and was counted, the one that parked it too (`#suspendStep`).
      this.#steps = lifecycle?.step_count ?? 0;
      let resumed = await this.#awaitDecisions(batch);
      for (;;) {
        if (resumed === 'cancelled') return this.#result(TerminationReasons.cancelled());
        if (resumed === 'returned') return this.#result(TerminationReasons.suspended());
        termination = resumed;
        if (termination.type !== 'suspended') break;
        resumed = await this.#park();
      }
    } catch (e) {
      termination = thrown(e);
    }
    return this.#finish(termination);
  }

  // ---- the step loop ---------------------------------------------------------------------------------

  async #steps_(): Promise<TerminationReason> {
    for (;;) {
      if (this.signal.aborted) return TerminationReasons.cancelled();
      const outcome = await this.#step();
      const control = this.#loopControl(outcome);
      const next = isPromiseLike<TerminationReason | undefined>(control) ? await control : control;
      if (next !== undefined) return next;
    }
  }

  /**
   * A plugin's `ContinueRun` (LoopControl) turns a natural end into another step; it is cleared at
   * every step's end, so it never outlives the step it was asked in.
   */
  #loopControl(outcome: TerminationReason | undefined): TerminationReason | undefined | Promise<TerminationReason | undefined> {
    if (this.phase.store.snapshot().get(LoopControl) === undefined) return outcome;
    const next = outcome?.type === 'natural_end' ? undefined : outcome;
    const submitted = this.submit(StateCommand.empty().clear(LoopControl));
    if (submitted === undefined) return next;
    return isPromiseLike<Halt | undefined>(submitted) ? submitted.then((h) => h ?? next) : submitted;
  }

  /**
   * One step; returns a termination, or `undefined` to go on. Its parts: the step's request inputs
   * (BeforeInference, the per-step accumulators consumed), the inference (continued while truncated),
   * AfterInference, then the outcome — an error, an answer, or a tool batch (which ends the step
   * itself). Every other way out ends the step with the termination it found (`#endStep`).
   */
  async #step(): Promise<TerminationReason | undefined> {
    const handedOff = this.#handoff();
    if (handedOff !== undefined) return isPromiseLike<TerminationReason | undefined>(handedOff) ? await handedOff : handedOff;
    const emitting = this.emit({ event_type: 'step_start', message_id: this.env.ids.next('message') });
    if (emitting !== undefined) await emitting;
    try {
      let stop: TerminationReason | undefined;
      let halt: Halting;
      end: {
        halt = this.runPhase('step_start', { messages: this.#messages });
        if (halt !== undefined && (stop = await halt) !== undefined) break end;
        stop = this.#checkTermination();
        if (stop !== undefined) break end;

        const pending = this.#requestInputs();
        const inputs = isPromiseLike<RequestInputs | Halt>(pending) ? await pending : pending;
        if (isHalt(inputs)) {
          stop = inputs;
          break end;
        }
        stop = this.#checkTermination();
        if (stop !== undefined) break end;

        halt = this.#autocompact();
        if (halt !== undefined && (stop = await halt) !== undefined) break end;
        let inference = await this.#inferOnce(this.#buildRequest(inputs.filter, inputs.override, inputs.context));
        if (this.#truncated(inference)) inference = await this.#continueTruncated(inference, inputs);
        if (inference.cancelled || inference.error !== undefined) await this.#closeStartedCalls(inference.started, INTERRUPTED);
        if (inference.cancelled) {
          stop = TerminationReasons.cancelled();
          break end;
        }

        const text = streamText(inference.result);
        halt = this.#afterInference(inference, text);
        if (halt !== undefined && (stop = await halt) !== undefined) break end;
        stop = this.#checkTermination();
        if (inference.error !== undefined) {
          const asked = stop;
          stop = this.#afterError(inference.error, asked);
          // The failure itself ends the run (no policy stopped it first, none tolerates it).
          if (asked === undefined && stop !== undefined) {
            const failed = this.#failedInference(inference.error);
            if (failed !== undefined) await failed;
          }
          break end;
        }
        if (stop !== undefined || inference.result.toolCalls.length === 0) {
          const answered = this.#answer(inference, text, stop);
          stop = isPromiseLike<TerminationReason>(answered) ? await answered : answered;
          break end;
        }
        const ran = this.#runTools(inference, text);
        return isPromiseLike<TerminationReason | undefined>(ran) ? await ran : ran;
      }
      const ended = this.#endStep(stop);
      return isPromiseLike<TerminationReason | undefined>(ended) ? await ended : ended;
    } catch (e) {
      // Only foreign code throws (a sink, a store): the step's end is attempted, the failure reported once.
      const termination = thrown(e);
      try {
        const ended = this.#endStep(undefined);
        if (ended !== undefined) await ended;
      } catch {
        // The step failed already; its end is attempted, its own failure not reported twice.
      }
      return termination;
    }
  }

  /**
   * A handoff takes effect at a step boundary, before `step_start`: the agent named in
   * `AgentOverlayKey` is resolved (the run's own agent with the overlay, or a registered agent) and
   * acted as from this step on, with its plugins: the phases run with its env, the plugins it lacks
   * uninstalled and its own installed (`PhaseRuntime.swapEnv`; an overlay keeps the run's). An
   * `activity_snapshot` of type `agent_handoff` shows the switch. A target that does not resolve
   * blocks the run with the reason.
   */
  #handoff(): TerminationReason | undefined | Promise<TerminationReason | undefined> {
    const target = this.phase.store.snapshot().get(AgentOverlayKey);
    if (target?.name === this.#acting) return undefined;
    const from = this.#acting ?? this.#base.spec.id;
    let next = this.#base;
    if (target !== undefined) {
      const r = this.#p.reresolve?.(target, this.#base);
      if (r === undefined || !r.ok) return TerminationReasons.blocked(`handoff resolve failed: ${r === undefined ? 'no resolver' : describeResolveError(r.error)}`);
      next = r.value;
    }
    const swapped = this.phase.swapEnv(next.executionEnv);
    if (!swapped.ok) return TerminationReasons.blocked(`handoff resolve failed: ${describeStateError(swapped.error)}`);
    this.resolved = next;
    this.#acting = target?.name;
    this.#tools = undefined;
    this.#sent = undefined;
    this.#sentUpTo = 0;
    const emitted = this.emit({ event_type: 'activity_snapshot', message_id: this.env.ids.next('message'), activity_type: 'agent_handoff', content: { from, to: target?.name ?? this.#base.spec.id }, replace: true });
    return emitted === undefined ? undefined : emitted.then(() => undefined);
  }

  /** BeforeInference, then what it left for this step's request: a tool filter, an override, context messages (each consumed). */
  #requestInputs(): RequestInputs | Halt | Promise<RequestInputs | Halt> {
    const ran = this.runPhase('before_inference', { messages: this.#messages, tools: this.#allTools() });
    return ran === undefined ? this.#consumeInputs() : andThenUnlessHalted(ran, () => this.#consumeInputs());
  }

  #consumeInputs(): RequestInputs | Halt | Promise<RequestInputs | Halt> {
    const snap = this.phase.store.snapshot();
    const inputs: RequestInputs = { filter: snap.get(ToolFilter), override: snap.get(InferenceOverrideState), context: orderedContextMessages(snap.get(ContextMessages)) };
    // The per-step accumulators are emptied (back to absent) once read.
    const clear = StateCommand.empty();
    if (inputs.filter !== undefined) clear.clear(ToolFilter);
    if (inputs.override !== undefined) clear.clear(InferenceOverrideState);
    if (inputs.context.length > 0) clear.update(ContextMessages, { op: 'consume' });
    const submitted = this.submit(clear);
    return submitted === undefined ? inputs : andThenUnlessHalted(submitted, () => inputs);
  }

  /** A response cut by the output limit, with continuations left (book: 截断恢复). */
  #truncated(inference: Inference): boolean {
    return !inference.cancelled && inference.error === undefined && shouldRetryTruncated(inference.result, this.#continuations, this.resolved.spec.max_continuation_retries);
  }

  /** Continues a truncated response: what it said so far, the continuation prompt, and the same request again — while truncated. */
  async #continueTruncated(truncated: Inference, inputs: RequestInputs): Promise<Inference> {
    let inference = truncated;
    do {
      this.#continuations++;
      const complete = new Set(inference.result.toolCalls.map((c) => c.id));
      await this.#closeStartedCalls(inference.started.filter((c) => !complete.has(c.id)), INTERRUPTED);
      const partial = streamText(inference.result);
      if (partial !== '') this.#messages.push({ id: this.env.ids.next('message'), role: 'assistant', content: [{ type: 'text', text: partial }] });
      this.#messages.push(Messages.internalUser(CONTINUATION_PROMPT, { id: this.env.ids.next('message') }));
      inference = await this.#inferOnce(this.#buildRequest(inputs.filter, inputs.override, inputs.context));
    } while (this.#truncated(inference));
    return inference;
  }

  /** AfterInference, with what the stop policies observe of the inference. */
  #afterInference(inference: Inference, text: string): Halting {
    const result = inference.result;
    const observation =
      inference.error === undefined
        ? {
            ok: true as const,
            inputTokens: result.usage?.prompt_tokens ?? 0,
            outputTokens: result.usage?.completion_tokens ?? 0,
            text,
            toolNames: result.toolCalls.map((c) => c.name),
          }
        : { ok: false as const };
    return this.runPhase('after_inference', {
      inference: observation,
      now: this.env.clock.now(),
      llmResponse: inference.error === undefined ? result : { error: inference.error.error },
      messages: this.#messages,
    });
  }

  /** After a failed inference: the stop a policy asked for, else the error — unless a consecutive-errors policy bounds retries (then go on). */
  #afterError(error: InferenceFailure, stop: TerminationReason | undefined): TerminationReason | undefined {
    if (stop !== undefined) return stop;
    const tolerated = this.resolved.stopPolicies.some((p) => p.id === 'consecutive_errors');
    return tolerated ? undefined : TerminationReasons.error(error.message);
  }

  /**
   * The `error` event of an inference failure that ends the run, with the same message as the run's
   * termination and the failure's code: the terminal every protocol shows (each encoder ends its
   * stream there, and ignores the step's end and the `run_finish` that still follow).
   */
  #failedInference(error: InferenceFailure): Promise<void> | undefined {
    return this.emit({ event_type: 'error', message: error.message, code: error.error.code });
  }

  /** An answer without tools, or a stop after inference: the text is kept (0.6 loses it ⟂), no tool runs. */
  #answer(inference: Inference, text: string, stop: TerminationReason | undefined): TerminationReason | Promise<TerminationReason> {
    const closed = this.#closeStartedCalls(inference.started, NOT_EXECUTED);
    return closed === undefined ? this.#answered(text, stop) : closed.then(() => this.#answered(text, stop));
  }

  #answered(text: string, stop: TerminationReason | undefined): TerminationReason {
    if (text !== '') this.#messages.push({ id: this.env.ids.next('message'), role: 'assistant', content: [{ type: 'text', text }] });
    return stop ?? TerminationReasons.naturalEnd();
  }

  /**
   * Runs the step's tool calls as one batch and ends the step; a batch left waiting suspends the run.
   * Synchronous while the commits, hooks, tools and sink are.
   */
  #runTools(inference: Inference, text: string): StepEnd {
    const batch = ToolBatch.open(this, inference.result.toolCalls, text, this.env.ids.next('message'));
    this.#batch = batch;
    return this.#thenStep(batch.begin(), () => this.#thenStep(batch.run(), () => this.#afterBatch(batch)));
  }

  /** `next()` once `first` went on; else the step ends with `first`'s halt. A promise only when one of them is. */
  #thenStep(first: Halting, next: () => StepEnd): StepEnd {
    if (first === undefined) return next();
    if (isPromiseLike<Halt | undefined>(first)) return first.then((h) => (h === undefined ? next() : this.#endStep(h)));
    return this.#endStep(first);
  }

  /** A batch that ran: suspended (the run waits), or published and the step ended — blocked, or with the stop the state holds. */
  #afterBatch(batch: ToolBatch): StepEnd {
    if (batch.blockedReason === undefined && deriveRunStatus(batch.statuses()) === 'waiting') return this.#suspendStep();
    return this.#thenStep(this.#publish(batch, true), () => this.#endStep(batch.blockedReason !== undefined ? TerminationReasons.blocked(batch.blockedReason) : this.#checkTermination()));
  }

  /**
   * A step whose batch waits is a completed step of the run (core-spec §3.5: StepCompleted, then the
   * run waits), counted in the same commit that parks the run — so a run revived from the store
   * finds every step it took in `step_count`.
   */
  #suspendStep(): StepEnd {
    const at = this.env.clock.now();
    const waiting = this.submit(StateCommand.empty().update(RunLifecycle, { op: 'step_completed', at }).update(RunLifecycle, { op: 'set_waiting', reason: 'suspended', at }));
    return this.#thenStep(waiting, () => this.#endStep(TerminationReasons.suspended()));
  }

  /**
   * Publishes a finished batch. Inside a step, the durable batch record is cleared with the step's
   * StepCompleted commit; after a resume (the step already ended) it is cleared at once.
   */
  #publish(batch: ToolBatch, withinStep: boolean): Halting {
    const publishing = batch.publish(this.#newMessageId);
    if (isPromiseLike<Message[] | Halt>(publishing)) return publishing.then((p) => (isHalt(p) ? p : this.#published(p, withinStep)));
    return isHalt(publishing) ? publishing : this.#published(publishing, withinStep);
  }

  #published(messages: readonly Message[], withinStep: boolean): Halting {
    this.#messages.push(...messages);
    this.#batch = undefined;
    if (withinStep) {
      this.#clearBatchRecord = true;
      return undefined;
    }
    return this.submit(StateCommand.empty().update(ToolBatchKey, { op: 'clear' }));
  }

  readonly #newMessageId = (): string => this.env.ids.next('message');

  /**
   * StepCompleted, StepEnd phase, checkpoint, `state_snapshot`, `step_end`; passes `termination` on —
   * now when every stage is synchronous, else once the stages are done. Every stage is attempted once,
   * also after one halted (the step is closed either way); the first halt is the step's termination —
   * unless the step already ends with one (then that one is the cause).
   */
  #endStep<T extends TerminationReason | undefined>(termination: T): T | Halt | Promise<T | Halt> {
    const ended = this.#endStepFrom(0, undefined);
    if (ended === undefined) return termination;
    const settle = (h: Halt | undefined): T | Halt => (h === undefined || isHalt(termination) ? termination : h);
    return isPromiseLike<Halt | undefined>(ended) ? ended.then(settle) : settle(ended);
  }

  /** The stages of a step's end from `stage` on, in order; a promise only from the first asynchronous one; the halt that stopped them. */
  #endStepFrom(stage: number, first: Halt | undefined): Halting {
    let halted = first;
    for (;;) {
      let wait: Halting | Promise<void>;
      switch (stage++) {
        case 0:
          wait = this.#completeStep();
          break;
        case 1:
          // Whatever interrupted the step, every call it announced is closed before the step ends.
          wait = this.#open.size > 0 ? this.#closeCalls(this.#open.list(), INTERRUPTED) : undefined;
          break;
        case 2:
          wait = this.runPhase('step_end', { messages: this.#messages }, false);
          break;
        case 3:
          wait = this.#checkpoint(undefined);
          break;
        case 4:
          wait = this.#emitSnapshot();
          break;
        case 5:
          wait = this.emit({ event_type: 'step_end' });
          break;
        default:
          return halted;
      }
      if (wait === undefined) continue;
      if (!isPromiseLike<Halt | undefined | void>(wait)) halted ??= wait;
      else return wait.then((h) => this.#endStepFrom(stage, halted ?? (isHalt(h) ? h : undefined)));
    }
  }

  /** StepCompleted (while the run is running) and the clearing of a published batch's record, in one commit. */
  #completeStep(): Halting {
    const lifecycle = this.phase.store.snapshot().get(RunLifecycle);
    const completed = StateCommand.empty();
    if (lifecycle !== undefined && lifecycle.status === 'running') completed.update(RunLifecycle, { op: 'step_completed', at: this.env.clock.now() });
    if (this.#clearBatchRecord) completed.update(ToolBatchKey, { op: 'clear' });
    this.#clearBatchRecord = false;
    return completed.isEmpty() ? undefined : this.submit(completed);
  }

  #checkTermination(): TerminationReason | undefined {
    const snap = this.phase.store.snapshot();
    const lifecycle = snap.get(RunLifecycle);
    if (lifecycle === undefined || lifecycle.status !== 'done') return undefined;
    const reason = fromDoneReason(lifecycle.status_reason ?? 'unknown');
    const decision = snap.get(StopDecisionKey);
    if (reason.type === 'stopped' && decision !== undefined && decision !== null && decision.code === reason.value.code) {
      return TerminationReasons.stopped(decision.code, decision.detail);
    }
    return reason;
  }

  // ---- inference ------------------------------------------------------------------------------------

  /** Reports what the context transform did, streams one inference and reports its completion. */
  #inferOnce(request: ReportedRequest): Promise<Inference> {
    const report = request.contextReport;
    if (report !== undefined && contextChanged(report)) {
      const wait = this.emit({ event_type: 'activity_snapshot', message_id: this.env.ids.next('message'), activity_type: 'context_window', content: { ...report }, replace: true });
      if (wait !== undefined) return wait.then(() => this.#inferTimed(request));
    }
    return this.#inferTimed(request);
  }

  /**
   * One inference, then `inference_complete` with the model that answered, its usage and its
   * duration — unless the provider failed: a failed inference did not complete (the failure is the
   * run's `error` event when it ends the run). A plugin's tap is told of it either way.
   */
  #inferTimed(request: InferenceRequest): Promise<Inference> {
    const started = this.env.clock.now();
    return this.#infer(request).then((inference) => {
      const model = this.#p.answeredBy() ?? request.model;
      const usage = inference.result.usage;
      const ended = this.env.clock.now();
      const duration = Math.max(0, ended - started);
      this.tap?.inference?.(this.#tapped(request, inference, model, started, ended));
      if (inference.error !== undefined) return inference;
      const wait = this.emit(
        usage === undefined
          ? { event_type: 'inference_complete', model, duration_ms: duration }
          : { event_type: 'inference_complete', model, usage, duration_ms: duration },
      );
      return wait === undefined ? inference : wait.then(() => inference);
    });
  }

  /**
   * The inference as a tap is told of it: besides what the loop saw, what the provider said of its
   * answer and of itself (`response_metadata`), and the answer, unless the inference failed.
   */
  #tapped(request: InferenceRequest, inference: Inference, model: string, started: number, ended: number): TappedInference {
    const { result, error } = inference;
    const said = this.#described;
    this.#described = undefined;
    const reasoning = result.reasoning;
    return {
      request,
      provider: this.resolved.providerId,
      answeredBy: model,
      startedAt: started,
      endedAt: ended,
      ...(result.usage !== undefined ? { usage: result.usage } : {}),
      ...(result.stopReason !== undefined ? { stopReason: result.stopReason } : {}),
      ...(error !== undefined ? { error: error.error } : {}),
      cancelled: inference.cancelled,
      ...(said?.provider_name !== undefined ? { providerName: said.provider_name } : {}),
      ...(said?.id !== undefined ? { responseId: said.id } : {}),
      ...(said?.model !== undefined ? { responseModel: said.model } : {}),
      ...(said?.server !== undefined ? { server: said.server } : {}),
      ...(error === undefined ? { output: { text: streamText(result), ...(reasoning !== '' ? { reasoning } : {}), toolCalls: result.toolCalls } } : {}),
    };
  }

  /**
   * Auto-compaction (book: 压缩): when the history sent reaches the threshold, the summary of its
   * older part joins the history as an internal system message; the activity `context_compaction`
   * reports `started`, then `compacted`, `skipped` or `failed`.
   */
  #autocompact(): Halting {
    const context = this.resolved.context;
    return context === undefined ? undefined : this.#compact(context);
  }

  async #compact(context: NonNullable<ResolvedAgent['context']>): Promise<Halt | undefined> {
    // One id, drawn only when a compaction fires: the activity's and the summary message's.
    let activityId: string | undefined;
    const idOf = (): string => (activityId ??= this.env.ids.next('message'));
    const report = (content: Record<string, JsonValue>): Promise<void> =>
      emitted(this, { event_type: 'activity_snapshot', message_id: idOf(), activity_type: 'context_compaction', content, replace: true });
    const outcome = await autocompact(this.#messages, context, {
      model: this.resolved.modelName,
      summaryId: idOf,
      onStart: (pre) => report({ status: 'started', pre_tokens: pre }),
      signal: this.signal,
    });
    if (outcome === undefined) return undefined;
    if (this.signal.aborted) return cancelled();
    if (outcome.status !== 'compacted') {
      await report({ ...outcome });
      return undefined;
    }
    this.#messages.splice(0, this.#messages.length, ...outcome.history);
    this.#storedPrefix = 0;
    const previous = this.phase.store.snapshot().get(CompactionStateKey);
    let halt = this.submit(StateCommand.empty().update(CompactionStateKey, { total_compactions: (previous?.total_compactions ?? 0) + 1, last: outcome.record }));
    if (halt !== undefined && (halt = await halt) !== undefined) return halt;
    await report({ status: 'compacted', ...outcome.record });
    return undefined;
  }

  #buildRequest(
    filter: ReturnType<typeof ToolFilter.init> | undefined,
    stepOverride: InferenceOverride | undefined,
    context: ReturnType<typeof orderedContextMessages>,
  ): ReportedRequest {
    const spec = this.resolved.spec;
    let overrides: InferenceOverride | undefined = spec.reasoning_effort !== undefined ? { reasoning_effort: spec.reasoning_effort } : undefined;
    if (this.#p.overrides !== undefined) overrides = mergeInferenceOverride(overrides ?? {}, this.#p.overrides);
    if (stepOverride !== undefined) overrides = mergeInferenceOverride(overrides ?? {}, stepOverride);

    let messages: Message[];
    if (this.resolved.context === undefined && context.length === 0) messages = this.#sentView();
    else {
      messages = [];
      if (spec.system_prompt !== '') messages.push(systemMessage(spec.system_prompt));
      // With a context policy, the summarised part of a compacted history is not sent again.
      const history = this.resolved.context !== undefined ? compactionView(this.#messages) : this.#messages;
      for (const m of history) if (sent(m)) messages.push(m);
      placeContextMessages(messages, context, spec.system_prompt !== '', () => this.env.ids.next('message'));
    }

    const tools = filter === undefined ? this.#allTools() : this.#toolsOf(filter);
    if (overrides === undefined) return this.phase.applyRequestTransforms({ model: this.resolved.modelName, messages, tools, signal: this.signal, threadId: this.threadId });
    const { model: overrideModel, ...rest } = overrides;
    const request: InferenceRequest = {
      model: overrideModel ?? this.resolved.modelName,
      messages,
      tools,
      ...(Object.keys(rest).length > 0 ? { overrides: rest } : {}),
      signal: this.signal,
      threadId: this.threadId,
    };
    return this.phase.applyRequestTransforms(request);
  }

  /** Every tool's descriptor, in registration order (one list for the run: the agent's tools do not change in it). */
  #allTools(): readonly ToolDescriptor[] {
    return (this.#tools ??= this.#toolsOf(undefined));
  }

  #toolsOf(filter: ReturnType<typeof ToolFilter.init> | undefined): ToolDescriptor[] {
    const ids = filterToolIds([...this.resolved.tools.keys()], filter);
    return ids.map((id) => this.resolved.tools.get(id)?.descriptor).filter((d) => d !== undefined);
  }

  /**
   * The messages sent when nothing is inserted or summarised: one array for the whole run, to which
   * each step appends what the history gained (without a context policy the history only grows).
   * Requests share it, so an executor that keeps a request past its stream copies the messages
   * (`InferenceRequest.messages`).
   */
  #sentView(): Message[] {
    if (this.#sent === undefined) {
      this.#sent = [];
      if (this.resolved.spec.system_prompt !== '') this.#sent.push(systemMessage(this.resolved.spec.system_prompt));
    }
    for (let i = this.#sentUpTo; i < this.#messages.length; i++) {
      const m = this.#messages[i] as Message;
      if (sent(m)) this.#sent.push(m);
    }
    this.#sentUpTo = this.#messages.length;
    return this.#sent;
  }

  /** Streams one inference, emitting its deltas; tool calls become ready at the end, in start order. */
  #infer(request: InferenceRequest): Promise<Inference> {
    const acc = new StreamAccumulator();
    this.#described = undefined;
    const started: { id: string; name: string }[] = [];
    let iterator: AsyncIterator<StreamPart>;
    try {
      iterator = this.resolved.llm.stream(request)[Symbol.asyncIterator]();
    } catch (e) {
      return Promise.reject(e as Error);
    }
    if (this.signal.aborted) return Promise.resolve(this.#inferred(ABORTED, iterator, acc, started));
    return this.#read(iterator, acc, started).then((end) => this.#inferred(end, iterator, acc, started));
  }

  /** The inference a read ended with: cancelled, failed, or its result with its calls announced ready (`tool_call_ready`). */
  #inferred(end: ReadEnd, iterator: AsyncIterator<StreamPart>, acc: StreamAccumulator, started: { id: string; name: string }[]): Inference | Promise<Inference> {
    if (end === ABORTED) {
      void iterator.return?.();
      return { result: acc.finish({ cancelled: true }), cancelled: true, started };
    }
    if (end !== READ) {
      if (this.signal.aborted) return { result: acc.finish({ cancelled: true }), cancelled: true, started };
      const e = end.thrown;
      const failure = e instanceof InferenceFailure ? e : new InferenceFailure({ code: 'provider', message: e instanceof Error ? e.message : String(e) });
      if (failure.error.code === 'cancelled') return { result: acc.finish({ cancelled: true }), cancelled: true, started };
      this.#p.inferenceErrors?.push(failure.error);
      return { result: acc.finish({ cancelled: true }), cancelled: false, error: failure, started };
    }
    const result = acc.finish();
    if (result.usage !== undefined) {
      this.#usage.seen = true;
      this.#usage.prompt += Math.max(0, result.usage.prompt_tokens ?? 0);
      this.#usage.completion += Math.max(0, result.usage.completion_tokens ?? 0);
      this.#usage.total += Math.max(0, result.usage.total_tokens ?? (result.usage.prompt_tokens ?? 0) + (result.usage.completion_tokens ?? 0));
    }
    const inference: Inference = { result, cancelled: false, started };
    const ready = this.#announceReady(result.toolCalls, 0);
    return ready === undefined ? inference : ready.then(() => inference);
  }

  /** `tool_call_ready` for the calls from `from` on, in start order (a promise only for an asynchronous sink). */
  #announceReady(calls: readonly ToolCall[], from: number): Promise<void> | undefined {
    for (let i = from; i < calls.length; i++) {
      const call = calls[i] as ToolCall;
      const wait = this.emit({ event_type: 'tool_call_ready', id: call.id, name: call.name, arguments: call.arguments });
      if (wait !== undefined) return wait.then(() => this.#announceReady(calls, i + 1));
    }
    return undefined;
  }

  /**
   * Reads the provider's parts into `acc`, emitting their events, part after part: one promise for
   * the stream, not one per part (a part's `then` goes straight to the next pull). Ends `READ` at the
   * stream's end, `ABORTED` when the run's signal fires — between parts, or while the provider has not
   * answered (it may never; `aborted()` wakes the read) — or with what was thrown: by the provider,
   * the accumulator or a sink. A sink's promise is waited for before the next part (never cut short).
   * The callbacks are the run's, made once (`#pull`, `#onRead`, `#failRead`); the read in progress is
   * `#reading`. A read ends early only when the run is aborted, and an aborted run starts no other
   * read, so a callback of a read that ended never meets a later one.
   */
  #read(iterator: AsyncIterator<StreamPart>, acc: StreamAccumulator, started: { id: string; name: string }[]): Promise<ReadEnd> {
    return new Promise<ReadEnd>((resolve) => {
      this.#reading = { iterator, acc, started, resolve, waiting: false };
      this.#pull();
    });
  }


  /** Ends the read in progress (once). */
  #endRead(end: ReadEnd): void {
    const reading = this.#reading;
    if (reading === undefined) return;
    this.#reading = undefined;
    reading.resolve(end);
  }

  readonly #failRead = (thrown: unknown): void => this.#endRead({ thrown });

  readonly #pull = (): void => {
    const reading = this.#reading;
    if (reading === undefined) return;
    if (this.signal.aborted) return this.#endRead(ABORTED);
    let next: Promise<IteratorResult<StreamPart>>;
    try {
      next = reading.iterator.next();
    } catch (e) {
      return this.#failRead(e);
    }
    reading.waiting = true;
    next.then(this.#onRead, this.#failRead);
  };

  readonly #onRead = (r: IteratorResult<StreamPart>): void => {
    const reading = this.#reading;
    if (reading === undefined) return;
    reading.waiting = false;
    if (r.done === true) return this.#endRead(READ);
    let wait: Promise<void> | undefined;
    try {
      wait = this.#onPart(r.value, reading.acc, reading.started);
    } catch (e) {
      return this.#failRead(e);
    }
    if (wait === undefined) this.#pull();
    else wait.then(this.#pull, this.#failRead);
  };

  /** One streamed part: into the accumulator, and its event out (a promise only for an asynchronous sink). */
  #onPart(part: StreamPart, acc: StreamAccumulator, started: { id: string; name: string }[]): Promise<void> | undefined {
    acc.push(part);
    switch (part.type) {
      case 'text_delta':
        return part.delta === '' ? undefined : this.emit({ event_type: 'text_delta', delta: part.delta });
      case 'reasoning_delta':
        return part.delta === '' ? undefined : this.emit({ event_type: 'reasoning_delta', delta: part.delta });
      case 'reasoning_encrypted':
        return this.emit({ event_type: 'reasoning_encrypted_value', encrypted_value: part.value });
      case 'tool_call_start':
        started.push({ id: part.id, name: part.name });
        return this.emit({ event_type: 'tool_call_start', id: part.id, name: part.name });
      case 'tool_call_delta':
        return part.args_delta === '' ? undefined : this.emit({ event_type: 'tool_call_delta', id: part.id, args_delta: part.args_delta });
      case 'response_metadata':
        // Told to the tap alone: no event carries it.
        if (this.tap?.inference !== undefined) this.#described = mergeResponseMetadata(this.#described, part);
        return undefined;
      default:
        return undefined;
    }
  }

  /** A stream that ends early still closes every tool call it opened, as interrupted. */
  #closeStartedCalls(started: readonly { id: string; name: string }[], message: string): Promise<void> | undefined {
    return started.length === 0 ? undefined : this.#closeCalls(started, message);
  }

  async #closeCalls(started: readonly { id: string; name: string }[], message: string): Promise<void> {
    let wait: Promise<void> | void;
    for (const call of started) {
      const result = ToolResults.error(call.name, message);
      wait = this.emit({ event_type: 'tool_call_done', id: call.id, message_id: '', result, outcome: 'failed' });
      if (wait !== undefined) await wait;
    }
  }

  // ---- suspension -----------------------------------------------------------------------------------

  /** Ends the suspended segment, waits for decisions and resumes the batch under the same run id. */
  async #park(): Promise<TerminationReason | 'cancelled' | 'returned'> {
    let wait: Promise<void> | void;
    const batch = this.#batch as ToolBatch;
    const halt = await this.#checkpoint(TerminationReasons.suspended());
    if (halt !== undefined) return halt;
    await this.#emitSnapshot();
    wait = this.emit({ event_type: 'run_finish', thread_id: this.threadId, run_id: this.runId, termination: TerminationReasons.suspended() });
    if (wait !== undefined) await wait;
    if (!this.#p.waitForDecisions) return 'returned';
    return this.#awaitDecisions(batch);
  }

  /**
   * Waits for decisions on a parked batch and resumes it. `returned` when the run is let go while it
   * waits (a server shutting down): it stays waiting in the store, decidable after a restart.
   */
  async #awaitDecisions(batch: ToolBatch): Promise<TerminationReason | 'cancelled' | 'returned'> {
    let wait: Promise<void> | void;
    let halt: Halting;
    const pending = new Map<string, ToolCallResume>();
    for (;;) {
      this.#p.onSuspended(batch);
      const decisions = await this.#p.nextDecisions();
      if (decisions === 'detached') {
        this.#p.onSuspended(undefined);
        return 'returned';
      }
      if (decisions === undefined) {
        this.#p.onSuspended(undefined);
        await this.#abandon(batch);
        return 'cancelled';
      }
      for (const d of decisions) {
        const target = batch.targetOf(d.targetId);
        if (target !== undefined) pending.set(target, d.decision);
      }
      const suspended = batch.suspendedIds();
      const ready =
        this.resolved.toolExecution.decisionReplay === 'batch_all_suspended' ? suspended.every((id) => pending.has(id)) : suspended.some((id) => pending.has(id));
      if (!ready) continue;
      this.#p.onSuspended(undefined);
      try {
        wait = this.emit(this.#runStart());
        if (wait !== undefined) await wait;
        halt = this.submit(StateCommand.empty().update(RunLifecycle, { op: 'set_running', at: this.env.clock.now() }));
        if (halt !== undefined && (halt = await halt) !== undefined) return halt;
        // The store learns the run is going again before any tool runs: a process that dies from here
        // on leaves it running (to be marked interrupted), never waiting on a decision already taken.
        halt = this.#checkpoint(undefined);
        if (halt !== undefined && (halt = await halt) !== undefined) return halt;
        const now = new Map([...pending].filter(([id]) => suspended.includes(id)));
        for (const id of now.keys()) pending.delete(id);
        halt = batch.resume(now);
        if (halt !== undefined && (halt = await halt) !== undefined) return halt;
        if (!batch.allTerminal()) {
          halt = this.submit(StateCommand.empty().update(RunLifecycle, { op: 'set_waiting', reason: 'suspended', at: this.env.clock.now() }));
          if (halt !== undefined && (halt = await halt) !== undefined) return halt;
          halt = this.#checkpoint(TerminationReasons.suspended());
          if (halt !== undefined && (halt = await halt) !== undefined) return halt;
          await this.#emitSnapshot();
          wait = this.emit({ event_type: 'run_finish', thread_id: this.threadId, run_id: this.runId, termination: TerminationReasons.suspended() });
          if (wait !== undefined) await wait;
          continue;
        }
        halt = this.#publish(batch, false);
        if (halt !== undefined && (halt = await halt) !== undefined) return halt;
        this.#takeInput();
        const stop = this.#checkTermination();
        if (stop !== undefined) return stop;
        return await this.#steps_();
      } catch (e) {
        return thrown(e);
      }
    }
  }

  /** Messages sent with the decisions, after the results of the calls they answered (ids already held are skipped). */
  #takeInput(): void {
    const input = this.#p.takeInput?.() ?? [];
    if (input.length === 0) return;
    const held = new Set(this.#messages.map((m) => m.id));
    this.#messages.push(...input.filter((m) => m.id === undefined || !held.has(m.id)));
  }

  /** A parked run cancelled before its decisions: its suspended calls are cancelled. */
  async #abandon(batch: ToolBatch): Promise<void> {
    const cancel: ToolCallResume = { decision_id: '', action: 'cancel', reason: 'run cancelled', updated_at: this.env.clock.now() };
    const decisions = new Map(batch.suspendedIds().map((id) => [id, cancel] as const));
    // The run is over either way: a halt or a failure on the way changes nothing for the caller, and
    // the stream already ended with run_finish{suspended} (nothing more is emitted for this run).
    try {
      await batch.resume(decisions, { silent: true });
    } catch {
      // See above.
    }
    try {
      let halt = this.submit(StateCommand.empty().update(RunLifecycle, { op: 'done', reason: 'cancelled', at: this.env.clock.now() }));
      if (halt !== undefined) halt = await halt;
      // The stored run record ends cancelled too (the stream already ended with the suspension).
      if (halt === undefined) await this.#checkpoint(TerminationReasons.cancelled());
    } catch {
      // See above.
    }
  }

  // ---- run end --------------------------------------------------------------------------------------

  async #finish(termination: TerminationReason): Promise<AgentRunResult> {
    try {
      const lifecycle = this.phase.store.snapshot().get(RunLifecycle);
      const target = toRunStatus(termination);
      let halt: Halting;
      if (target.status === 'done' && lifecycle !== undefined && lifecycle.status !== 'done') {
        halt = this.submit(StateCommand.empty().update(RunLifecycle, { op: 'done', reason: target.doneReason ?? 'unknown', at: this.env.clock.now() }));
        if (halt !== undefined) halt = await halt;
      }
      if (halt === undefined) {
        halt = this.runPhase('run_end', { messages: this.#messages }, false);
        if (halt !== undefined) halt = await halt;
      }
      // A run that failed keeps its first error.
      if (isHalt(halt) && termination.type !== 'error') termination = halt;
    } catch (e) {
      if (termination.type !== 'error') termination = thrown(e);
    }
    const response = this.#response();
    try {
      // The final checkpoint is attempted; the run's result does not depend on it.
      await this.#checkpoint(termination);
    } catch {
      // See above.
    }
    await this.#emitSnapshot();
    const lifecycle = this.phase.store.snapshot().get(RunLifecycle);
    await this.emit({
      event_type: 'run_finish',
      thread_id: this.threadId,
      run_id: this.runId,
      result: {
        response,
        status: lifecycle?.status ?? 'done',
        ...(lifecycle?.status_reason !== undefined ? { status_reason: lifecycle.status_reason } : {}),
      },
      termination,
    });
    return this.#result(termination);
  }

  #response(): string {
    for (let i = this.#messages.length - 1; i >= this.#inputStart; i--) {
      const m = this.#messages[i] as Message;
      if (m.role === 'assistant') return messageText(m);
    }
    return '';
  }

  #result(termination: TerminationReason): AgentRunResult {
    const usage: TokenUsage = this.#usage.seen
      ? { prompt_tokens: this.#usage.prompt, completion_tokens: this.#usage.completion, total_tokens: this.#usage.total }
      : {};
    return { threadId: this.threadId, runId: this.runId, response: this.#response(), steps: this.#steps, termination, usage, inferenceErrors: [...(this.#p.inferenceErrors ?? [])] };
  }

  /** `state_snapshot`; a promise only for an asynchronous sink. */
  #emitSnapshot(): Promise<void> | undefined {
    const exported = this.phase.store.exportPersisted();
    const snapshot = exported.ok ? { revision: exported.value.revision, extensions: exported.value.extensions } : { error: describeStateError(exported.error) };
    return this.emit({ event_type: 'state_snapshot', snapshot });
  }

  /** Writes the run to the store: `undefined` once written (or without a store), a halt when the state cannot be exported. */
  #checkpoint(termination: TerminationReason | undefined): Halting {
    const store = this.#p.store;
    if (store === undefined) return undefined;
    const state = this.phase.store.exportByScope();
    if (!state.ok) return failed('state could not be exported for the checkpoint');
    const lifecycle = this.phase.store.snapshot().get(RunLifecycle);
    const checkpoint: Writable<RunCheckpoint> = {
      threadId: this.threadId,
      runId: this.runId,
      agentId: this.resolved.spec.id,
      messages: this.#messages,
      appendFrom: this.#storedPrefix,
      status: lifecycle?.status ?? 'running',
      steps: this.#steps,
      threadState: state.value.thread,
      runState: state.value.run,
      updatedAt: this.env.clock.now(),
      expectedMessageCount: this.#persistedCount,
    };
    if (termination !== undefined) checkpoint.termination = termination;
    if (this.#p.parentRunId !== undefined) checkpoint.parentRunId = this.#p.parentRunId;
    // The store adds these to the run's totals: what this loop inferred since its last checkpoint written.
    const tokens = { input: this.#usage.prompt - this.#usageStored.input, output: this.#usage.completion - this.#usageStored.output };
    checkpoint.tokens = tokens;
    const written = this.#messages.length;
    const storing = store.checkpoint(checkpoint);
    if (!isPromiseLike<void>(storing)) return this.#stored(written, tokens);
    return Promise.resolve(storing).then(() => this.#stored(written, tokens));
  }

  /** The store holds the first `written` messages as this run holds them. */
  #stored(written: number, tokens: RunCheckpoint['tokens']): undefined {
    this.#usageStored.input += tokens?.input ?? 0;
    this.#usageStored.output += tokens?.output ?? 0;
    this.#persistedCount = written;
    this.#storedPrefix = written;
    return undefined;
  }
}

type Writable<T> = { -readonly [K in keyof T]: T[K] };

/** Whether a history message goes to the model (internal tool messages do not). */
const sent = (m: Message): boolean => !(m.role === 'tool' && m.visibility === 'internal');

const systemMessage = (text: string): Message => ({ role: 'system', content: [{ type: 'text', text }] });

/** Inserts context messages by target (core-spec §3.7). */
function placeContextMessages(
  messages: Message[],
  context: ReturnType<typeof orderedContextMessages>,
  hasSystemPrompt: boolean,
  newId: () => string,
): void {
  const leadingSystem = (): number => {
    let i = 0;
    while (i < messages.length && messages[i]?.role === 'system') i++;
    return i;
  };
  let systemAt = hasSystemPrompt ? 1 : 0;
  const suffix: Message[] = [];
  for (const c of context) {
    const m: Message = { id: newId(), role: c.role, content: [{ type: 'text', text: c.content }], visibility: 'internal' };
    switch (c.target) {
      case 'system':
        messages.splice(systemAt++, 0, m);
        break;
      case 'session':
      case 'conversation':
        messages.splice(leadingSystem(), 0, m);
        break;
      case 'suffix_system':
        suffix.push(m);
        break;
    }
  }
  messages.push(...suffix);
}


/**
 * The tool calls announced and not yet closed, in announcement order. Two parallel lists rather than
 * a map: a step opens and closes a call or two, and removing from a small map reallocates its table.
 */
class OpenCalls {
  readonly #ids: string[] = [];
  readonly #names: string[] = [];

  get size(): number {
    return this.#ids.length;
  }

  add(id: string, name: string): void {
    const at = this.#ids.indexOf(id);
    if (at >= 0) this.#names[at] = name;
    else {
      this.#ids.push(id);
      this.#names.push(name);
    }
  }

  /** Removes the call, keeping the order of the others (shifted down in place: nothing allocated). */
  remove(id: string): void {
    const at = this.#ids.indexOf(id);
    if (at < 0) return;
    for (let i = at; i < this.#ids.length - 1; i++) {
      this.#ids[i] = this.#ids[i + 1] as string;
      this.#names[i] = this.#names[i + 1] as string;
    }
    this.#ids.pop();
    this.#names.pop();
  }

  list(): { id: string; name: string }[] {
    return this.#ids.map((id, i) => ({ id, name: this.#names[i] as string }));
  }
}

/** How reading an inference's stream ended: at its end, by the run's abort, or with what was thrown. */
const READ = 'read' as const;
const ABORTED = 'aborted' as const;
type ReadEnd = typeof READ | typeof ABORTED | { readonly thrown: unknown };

/** A failure of foreign code (a sink, a store), caught where the run catches it, as the run's termination. */
function thrown(e: unknown): TerminationReason {
  return TerminationReasons.error(e instanceof Error ? e.message : String(e));
}

