import { describeStateError, type StateError } from '../contract/errors.ts';
import type { AgentEvent } from '../contract/event.ts';
import { fromDoneReason, TerminationReasons, type TerminationReason } from '../contract/lifecycle.ts';
import { messageText, type Message } from '../contract/message.ts';
import { unreachable } from '../contract/never.ts';
import type { Phase } from '../contract/phase.ts';
import type { AgentRunResult } from '../contract/run-result.ts';
import { advanceStep, beginRun, type LoopInput, type LoopStep } from '../core/loop/step.ts';
import type { PhaseFields, PhaseInputs, RunFields } from '../core/phase/plugin.ts';
import { StateCommand } from '../core/state/state-command.ts';
import type { PersistedState } from '../core/state/state-ops.ts';
import { stepsAfter } from '../core/steps-after.ts';
import { StopDecisionKey } from './builtin-plugins.ts';
import type { Env } from './env.ts';
import { cancelled, failed, haltOfCommit, haltOfPhase, thrown, type Halt, type Halting } from './halt.ts';
import { CHECKED, RAN, RAN_CANCELLED, ranOf, threwOf, UNCONTROLLED } from './loop/answers.ts';
import { Checkpoints } from './loop/checkpoints.ts';
import { compactHistory } from './loop/compaction.ts';
import { finishRun } from './loop/finish.ts';
import { handoffAnnounced, handoffOf, lifecycleCommand, takenUpAs, type Handoff } from './loop/handoff.ts';
import { closeCalls, OpenCalls } from './loop/open-calls.ts';
import type { RunParams } from './loop/params.ts';
import { StepBatch } from './loop/step-batch.ts';
import { StepInference } from './loop/step-inference.ts';
import { park } from './loop/suspension.ts';
import { endedAtTakeUp, recovery, resumedEvent, revival, type TakeUp } from './loop/take-up.ts';
import { keysOf, LoopControl, RunLifecycle, ToolCallStates, type ToolCallState } from './loop-keys.ts';
import { andThen, andThenOrElse, drive, eachInOrder, type MaybePromise } from './maybe-promise.ts';
import type { PhaseRuntime } from './phase-runtime.ts';
import type { ResolvedAgent } from './resolve.ts';
import type { RunSignal } from './run-signal.ts';
import { tellStepEnded, type RunTap } from './tap.ts';
import { INTERRUPTED, type BatchHost, type ToolBatch } from './tool-batch.ts';

export type { AgentRunResult } from '../contract/run-result.ts';
export type { RunParams } from './loop/params.ts';
export { decisionFor, type Decision } from '../contract/decision.ts';
export { NOT_EXECUTED } from './loop/step-inference.ts';

const isFinal = (step: LoopStep): boolean => step.next.type === 'end' || step.next.type === 'leave' || step.next.type === 'invalid';
const isFinalOrBoundary = (step: LoopStep): boolean => isFinal(step) || step.next.type === 'abort_check';

/**
 * One run of the loop (book: Run 生命周期与 Phases; core-spec §3): the interpreter of the step
 * machine (`src/core/loop/step.ts`), which decides what comes next; this class does it — runs the
 * phases, infers, runs the tool batch, writes checkpoints, emits — and answers with what came of
 * it. Snapshot isolation at every phase, a checkpoint at every StepEnd, and exactly one
 * `run_finish` for each `run_start` it emits. Every answer goes through `drive`: a run whose hooks,
 * tools, store and sink are synchronous runs without a promise between its steps. The parts with a
 * life of their own are rooms in src/runtime/loop/: the way to the model's answer (StepInference),
 * the tool batch and its publication (StepBatch), taking a run up again (take-up), checkpoints,
 * suspension and the end.
 */
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
  /** The run's cancellation: read as a flag; its `AbortSignal` is made when a request or a tool context is asked for it. */
  readonly cancellation: RunSignal;
  readonly tap: RunTap | undefined;
  readonly #p: RunParams;
  readonly #messages: Message[];
  readonly #inputStart: number;
  /** The step's way to its answer, and the run's inferences. */
  readonly #inference: StepInference;
  readonly #batches: StepBatch;
  readonly #checkpoints: Checkpoints;
  /** The run's steps (`stepsAfter` over what it emits), from every segment: a revived run starts from the count it had. */
  #steps = 0;
  /** Tool calls announced by `tool_call_start` and not yet closed by `tool_call_done`. */
  readonly #open = new OpenCalls();
  /** The machine's state while its `next` is done (one `next` at a time). */
  #state: LoopStep['state'] | undefined;
  /**
   * Whether another instance took the run over (a checkpoint was refused `fenced`): it goes on there,
   * so nothing more of it is emitted here — what this process would say of it is no longer true.
   */
  #fenced = false;

  constructor(params: RunParams) {
    this.#p = params;
    this.env = params.env;
    this.resolved = params.resolved;
    this.#base = params.resolved;
    this.phase = params.phase;
    this.threadId = params.threadId;
    this.runId = params.runId;
    this.cancellation = params.cancellation;
    this.tap = params.tap;
    this.#messages = [...params.history];
    this.#inputStart = this.#messages.length;
    this.#messages.push(...params.input);
    this.#inference = new StepInference(this, this.#messages, {
      overrides: params.overrides,
      answeredBy: params.answeredBy,
      inferenceErrors: params.inferenceErrors,
    });
    this.#batches = new StepBatch(this, this.#messages);
    // The history is the store's messages, or their first part when the thread was rewound.
    this.#checkpoints = new Checkpoints({
      store: params.store,
      env: params.env,
      phase: params.phase,
      threadId: params.threadId,
      runId: params.runId,
      parentRunId: params.parentRunId,
      stamp: params.stamp,
      onFenced: () => (this.#fenced = true),
      persistedCount: params.storedCount ?? params.history.length,
      storedPrefix: params.history.length,
    });
  }

  /** Whether the run was fenced off: another instance took it over, and nothing of it was emitted here since. */
  get fenced(): boolean {
    return this.#fenced;
  }

  messages(): readonly Message[] {
    return this.#messages;
  }

  /** `run_start`, naming the parent run of a sub-run. */
  runStart(): AgentEvent {
    const parent = this.#p.parentRunId;
    return parent === undefined
      ? { event_type: 'run_start', thread_id: this.threadId, run_id: this.runId }
      : { event_type: 'run_start', thread_id: this.threadId, run_id: this.runId, parent_run_id: parent };
  }

  /** Delivers an event; a promise only when the sink is asynchronous. */
  emit(event: AgentEvent): Promise<void> | undefined {
    if (this.#fenced) return undefined;
    if (event.event_type === 'tool_call_start') this.#open.add(event.id, event.name);
    else if (event.event_type === 'tool_call_done') this.#open.remove(event.id);
    this.#steps = stepsAfter(this.#steps, event);
    return this.#p.sink.emit(event) ?? undefined;
  }

  /** Commits a command: a halt if it is refused; synchronous (no promise) when nothing in it is asynchronous. */
  submit(command: StateCommand): Halting {
    const failure = this.phase.submitOrFail(command);
    return failure === undefined ? undefined : andThen<StateError | undefined, Halt | undefined>(failure, haltOfCommit);
  }

  /**
   * Runs a phase with its typed input (`PhaseInputs`): the phase's own fields and the run's, in a new
   * object (the caller's is not touched). A halt on cancellation or a phase error. Synchronous (no
   * promise) when its hooks and handlers are.
   */
  runPhase<P extends Phase>(phase: P, fields: PhaseFields<P>, cancellable = true): Halting {
    // A phase with nothing to run is only a cancellation point: its input is not built.
    if (this.phase.idle(phase)) return cancellable && this.cancellation.aborted ? cancelled() : undefined;
    const input = { agentSpec: this.resolved.spec, threadId: this.threadId, runId: this.runId, ...fields } satisfies RunFields as PhaseInputs[P];
    return andThen(this.phase.runPhaseNow(phase, cancellable ? { input, signal: this.cancellation } : { input }), haltOfPhase);
  }

  /**
   * Wakes an inference waiting on a provider that does not listen to the signal: the run's owner
   * calls it when `signal` aborts (the listener it has on the signal anyway: one per run).
   */
  aborted(): void {
    this.#inference.inferences.aborted();
  }

  /** Runs to the end: the final termination, after any suspensions and resumes. */
  execute(): Promise<AgentRunResult> {
    return this.#run(beginRun());
  }

  /** Takes up a run that parked in another process (it died, or shut down): see `revival`. */
  revive(): Promise<AgentRunResult> {
    return this.#fromStore(() => revival(this, this.#batches), false);
  }

  /**
   * Takes up a run that was running when its process died (seed 003): see `recovery`.
   * `storedSteps`: the steps its stored record says it had begun. Unless the run is refused,
   * `run_start` goes out (a new segment of the run), then an activity `run_resumed` naming where it
   * went on (`RunResumed`); RunStart does not run again.
   */
  recover(storedSteps: number | undefined): Promise<AgentRunResult> {
    return this.#fromStore(() => recovery(this, this.#batches, storedSteps, this.#messages), true);
  }

  /** Taken up from the store, the run first acts as the agent a handoff left active (`takenUpAs`), then goes on. */
  #fromStore(takeUp: () => TakeUp, segment: boolean): Promise<AgentRunResult> {
    return Promise.resolve(
      andThen(takenUpAs(this.phase, this.#base, this.#p.reresolve), (handoff) => {
        // Not taken up: it ends at once, as a segment that went on only to end (its steps kept).
        if (handoff?.type === 'blocked') return this.#takeUp(endedAtTakeUp(this.phase, handoff.termination), segment);
        if (handoff !== undefined) this.#actAs(handoff);
        return this.#takeUp(takeUp(), segment);
      }),
    );
  }

  #takeUp(taken: TakeUp, segment: boolean): Promise<AgentRunResult> {
    if (taken.steps !== undefined) this.#steps = taken.steps;
    if (taken.type === 'refused') return this.#finish(taken.termination);
    const { from, stepStart, resumed } = taken;
    if (!segment) return 'state' in from ? this.#run(from) : this.#finish(from);
    return Promise.resolve(this.emit(this.runStart()))
      .then(() => (resumed === undefined ? undefined : this.emit(resumedEvent(resumed, this.env.ids.next('message')))))
      .then(() => (stepStart === undefined ? undefined : this.emit(stepStart)))
      .then(
        () => ('state' in from ? this.#run(from) : this.#finish(from)),
        (e: unknown) => this.#finish(thrown(e)),
      );
  }

  /**
   * The run's begin goes out at once, as its owner starts it; its steps start a turn of the
   * microtask queue later, once the owner has registered the run and holds its handle (a hook of the
   * first step may cancel it, or ask whether its thread is busy).
   */
  #run(first: LoopStep): Promise<AgentRunResult> {
    return Promise.resolve(drive(first, this.#turn, isFinalOrBoundary))
      .then(this.#steps_)
      .then(this.#conclude);
  }

  readonly #steps_ = (at: LoopStep): MaybePromise<LoopStep> => (isFinal(at) ? at : drive(at, this.#turn, isFinal));

  /** The run's end as the machine left it: finished, left (its stream already ended), or failed by a fault of the interpreter. */
  readonly #conclude = (last: LoopStep): MaybePromise<AgentRunResult> => {
    const next = last.next;
    if (next.type === 'end') return this.#finishing(next.termination);
    if (next.type === 'leave') return this.#result(next.termination);
    return this.#finishing(failed(next.type === 'invalid' ? next.reason : `the loop stopped at ${next.type}`));
  };

  // ---- the interpreter -----------------------------------------------------------------------------

  /** One turn: do what the machine asks, give it what came of it. A failure of foreign code is an answer too. */
  readonly #turn = (step: LoopStep): MaybePromise<LoopStep> => {
    this.#state = step.state;
    let answer: MaybePromise<LoopInput>;
    try {
      answer = step.events.length === 0 ? this.#do(step) : this.#emitThenDo(step);
    } catch (e) {
      return advanceStep(step.state, threwOf(e));
    }
    return andThenOrElse(answer, this.#advance, this.#advanceThrown);
  };

  #emitThenDo(step: LoopStep): MaybePromise<LoopInput> {
    return andThen(eachInOrder(step.events, this.#emitOwn), () => this.#do(step));
  }

  readonly #advance = (input: LoopInput): LoopStep => advanceStep(this.#state as LoopStep['state'], input);
  readonly #advanceThrown = (e: unknown): LoopStep => advanceStep(this.#state as LoopStep['state'], threwOf(e));
  readonly #emitOwn = (event: { readonly message: string; readonly code: string }): Promise<undefined> | undefined =>
    andThen(this.emit({ event_type: 'error', message: event.message, code: event.code }), () => undefined);
  readonly #ran = (stop: TerminationReason | undefined | void): LoopInput => ranOf(stop ?? undefined);

  /** What came of a part that went on (`undefined`: nothing to report, the common case, answered without a call) or stopped, now or later. */
  #went(outcome: MaybePromise<TerminationReason | undefined | void> | undefined): MaybePromise<LoopInput> {
    return outcome === undefined ? RAN : andThen(outcome, this.#ran);
  }

  /**
   * Does one `next` of the machine. It makes no closure: a function that makes one gets a context
   * allocated at every call, and this one is called a dozen times a step.
   */
  #do(step: LoopStep): MaybePromise<LoopInput> {
    const next = step.next;
    switch (next.type) {
      case 'commit':
        return this.#went(this.submit(lifecycleCommand(step.commands, this.runId, this.env.clock.now())));
      case 'emit_run_start':
        return andThen(this.emit(this.runStart()), this.#afterRunStart);
      case 'phase':
        return next.check ? this.#checkedAfter(this.#phase(next.phase, next.cancellable)) : this.#went(this.#phase(next.phase, next.cancellable));
      case 'checkpoint':
        if (this.tap?.stepEnded !== undefined) tellStepEnded(this.tap.stepEnded, this.#steps, this.#messages, this.phase.store);
        return this.#went(this.checkpoint(undefined));
      case 'abort_check':
        return this.cancellation.aborted ? RAN_CANCELLED : RAN;
      case 'handoff':
        return this.#went(this.#handoff());
      case 'emit_step_start':
        return this.#went(this.emit({ event_type: 'step_start', message_id: this.env.ids.next('message') }));
      case 'request_inputs':
        return this.#checkedAfter(this.#inference.requestInputs());
      case 'compact':
        return this.#went(this.#autocompact());
      case 'infer':
        return this.#inference.infer(next.continuation);
      case 'close_started':
        return this.#went(closeCalls(this, this.#inference.current.started, INTERRUPTED));
      case 'answer':
        return this.#inference.answer();
      case 'batch':
        return this.#batches.run(this.#inference);
      case 'publish': {
        const published = this.#batches.publish();
        return next.check ? this.#checkedAfter(published) : this.#went(published);
      }
      case 'complete_step': {
        const completed = this.#completeStep();
        // Whatever interrupted the step, every call it announced is closed before the step ends.
        return this.#open.size === 0 ? this.#went(completed) : this.#closeOpenAfter(completed);
      }
      case 'emit_step_end': {
        const snapshot = this.emitSnapshot();
        return snapshot === undefined ? this.#went(this.#emitStepEnd()) : this.#emitStepEndAfter(snapshot);
      }
      case 'loop_control':
        return this.#loopControl();
      case 'park':
        return park(this, this.#p, this.#batches.current as ToolBatch, next.afterRestart);
      case 'end':
      case 'leave':
      case 'invalid':
        // Final: `drive` stops before them (`isFinal`).
        return { type: 'threw', message: `${next.type} is not done by a turn` };
      default:
        return unreachable(next, 'loop next');
    }
  }

  readonly #afterRunStart = (): LoopInput => (this.cancellation.aborted ? RAN_CANCELLED : RAN);

  #closeOpenAfter(completed: Halting): MaybePromise<LoopInput> {
    return andThen(completed, (halt) => andThen(closeCalls(this, this.#open.list(), INTERRUPTED), () => ranOf(halt)));
  }

  #emitStepEndAfter(snapshot: Promise<void>): MaybePromise<LoopInput> {
    return andThen(snapshot, () => this.#went(this.#emitStepEnd()));
  }

  /** A part's halt, or when it went through the termination the run's state then holds. */
  #checkedAfter(outcome: Halting): MaybePromise<LoopInput> {
    return outcome === undefined ? this.#check() : andThen(outcome, this.#checkUnlessHalted);
  }

  readonly #checkUnlessHalted = (halt: Halt | undefined): LoopInput => (halt !== undefined ? ranOf(halt) : this.#check());

  #check(): LoopInput {
    const stop = this.checkTermination();
    return stop === undefined ? CHECKED : { type: 'checked', stop };
  }

  #emitStepEnd(): Promise<void> | undefined {
    return this.emit({ event_type: 'step_end' });
  }

  #phase(phase: 'run_start' | 'step_start' | 'after_inference' | 'step_end', cancellable: boolean): Halting {
    switch (phase) {
      case 'run_start':
        return this.runPhase('run_start', { now: this.env.clock.now(), tools: [...this.resolved.tools.values()].map((t) => t.descriptor) });
      case 'step_start':
        return this.runPhase('step_start', { messages: this.#messages });
      case 'after_inference':
        return this.#inference.afterInference();
      case 'step_end':
        return this.runPhase('step_end', { messages: this.#messages }, cancellable);
      default:
        return unreachable(phase, 'loop phase');
    }
  }

  /** A handoff takes effect at a step boundary, before `step_start` (`handoffOf`); a target that does not resolve blocks the run. */
  #handoff(): TerminationReason | undefined | Promise<TerminationReason | undefined> {
    const handoff = handoffOf(this.phase, this.#acting, this.#base, this.#p.reresolve);
    if (handoff === undefined || handoff.type === 'blocked') return handoff?.termination;
    this.#actAs(handoff);
    return andThen(this.emit(handoffAnnounced(handoff, this.env.ids.next('message'))), () => undefined);
  }

  #actAs(handoff: Extract<Handoff, { type: 'acting' }>): void {
    this.resolved = handoff.agent;
    this.#acting = handoff.name;
    this.#inference.inferences.reset();
  }

  /** Publishes a batch a resume finished (the step it belonged to ended already). */
  publishResumed(batch: ToolBatch): Halting {
    return this.#batches.publishResumed(batch);
  }

  /** Messages sent with decisions, after the results of the calls they answered (ids already held are skipped). */
  accept(input: readonly Message[]): void {
    if (input.length === 0) return;
    const held = new Set(this.#messages.map((m) => m.id));
    this.#messages.push(...input.filter((m) => m.id === undefined || !held.has(m.id)));
  }

  /** StepCompleted (while the run is running) and the clearing of a published batch's record, in one commit. */
  #completeStep(): Halting {
    const lifecycle = this.phase.store.snapshot().get(RunLifecycle);
    const completed = StateCommand.empty();
    if (lifecycle !== undefined && lifecycle.status === 'running') completed.update(RunLifecycle, { op: 'step_completed', at: this.env.clock.now() });
    this.#batches.completeStep(completed);
    return completed.isEmpty() ? undefined : this.submit(completed);
  }

  /**
   * A plugin's `ContinueRun` (LoopControl) turns a natural end into another step; it is cleared at
   * every step's end, so it never outlives the step it was asked in.
   */
  #loopControl(): MaybePromise<LoopInput> {
    if (this.phase.store.snapshot().get(LoopControl) === undefined) return UNCONTROLLED;
    return andThen(this.submit(StateCommand.empty().clear(LoopControl)), (stop): LoopInput => ({ type: 'controlled', present: true, stop }));
  }

  checkTermination(): TerminationReason | undefined {
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

  /** Auto-compaction (book: 压缩), when the agent has a context policy. */
  #autocompact(): Halting {
    const context = this.resolved.context;
    return context === undefined ? undefined : compactHistory(this, this.#messages, context, () => this.#checkpoints.rewritten());
  }

  // ---- run end --------------------------------------------------------------------------------------

  /** RunEnd, the final checkpoint and `run_finish`, as a promise (a throw of the sink now rejects it). */
  #finish(termination: TerminationReason): Promise<AgentRunResult> {
    try {
      return Promise.resolve(this.#finishing(termination));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** The run's result with the termination it ended with: now when the end answered at once. */
  #finishing(termination: TerminationReason): MaybePromise<AgentRunResult> {
    return andThen(finishRun(this, termination), (final) => this.#result(final));
  }

  /** The run's answer: its last assistant message after the input. */
  response(): string {
    for (let i = this.#messages.length - 1; i >= this.#inputStart; i--) {
      const m = this.#messages[i] as Message;
      if (m.role === 'assistant') return messageText(m);
    }
    return '';
  }

  #result(termination: TerminationReason): AgentRunResult {
    return {
      threadId: this.threadId,
      runId: this.runId,
      response: this.response(),
      steps: this.#steps,
      termination,
      usage: this.#inference.inferences.total(),
      inferenceErrors: [...(this.#p.inferenceErrors ?? [])],
    };
  }

  /** `state_snapshot`; a promise only for an asynchronous sink. */
  emitSnapshot(): Promise<void> | undefined {
    const exported = this.phase.store.exportPersisted();
    const snapshot = exported.ok ? { revision: exported.value.revision, extensions: exported.value.extensions } : { error: describeStateError(exported.error) };
    return this.emit({ event_type: 'state_snapshot', snapshot });
  }

  /** Writes the run to the store: `undefined` once written (or without a store), a halt when the state cannot be exported. */
  checkpoint(termination: TerminationReason | undefined, at?: number, amend?: (run: PersistedState) => PersistedState): Halting {
    if (!this.#checkpoints.stored) return undefined;
    const usage = this.#inference.inferences.usage;
    const facts = { agentId: this.resolved.spec.id, messages: this.#messages, steps: this.#steps, inputTokens: usage.prompt, outputTokens: usage.completion };
    return this.#checkpoints.write(termination, facts, at, amend);
  }

  get durable(): boolean {
    return this.#checkpoints.stored;
  }

  /**
   * A tool batch's durable write: the run as it is, stamped with the latest time its calls were
   * stamped with — a read of the clock here would be a draw a replay (without a store) does not make.
   */
  persist(amend?: (run: PersistedState) => PersistedState): Halting {
    const states = this.phase.store.snapshot().get(ToolCallStates);
    let at = 0;
    if (states !== undefined) for (const id of keysOf(states)) at = Math.max(at, (states[id] as ToolCallState).updated_at);
    return this.checkpoint(undefined, at, amend);
  }
}
