import type { StateError } from '../../contract/errors.ts';
import { PHASES, type Phase } from '../../contract/phase.ts';
import { err, ok, type Result } from '../../contract/result.ts';
import type { Snapshot } from '../state/snapshot.ts';
import { mergeAllCommands, StateCommand } from '../state/state-command.ts';
import { StateStore } from '../state/state-store.ts';
import { andThen, isPromiseLike, type MaybePromise } from './maybe-promise.ts';
import { errorText, StateFailure, type PhaseError } from './phase-error.ts';
import {
  buildExecutionEnv,
  type EnvOptions,
  type ExecutionEnv,
  type HookRegistration,
  type PhaseContext,
  type Plugin,
} from './plugin.ts';
import { addEffectReports, emptyEffectReport, type EffectRecord, type EffectReport, type PhaseRunReport } from './report.ts';
import { FailedScheduledActions, PendingScheduledActions, RUNTIME_QUEUE_PLUGIN, type ActionEnvelope } from './runtime-keys.ts';

/** Convergence bound of EXECUTE: at most this many rounds may do work (book: Scheduled Actions → 限制). */
export const DEFAULT_MAX_PHASE_ROUNDS = 16;

/** Anything with an `aborted` flag, e.g. an `AbortSignal`; checked at phase entry and after GATHER. */
export interface CancellationFlag {
  readonly aborted: boolean;
}

export interface PhaseRunOptions {
  /** The phase's input, handed to hooks as `ctx.input` (the loop passes `PhaseInputs[phase]`). */
  readonly input?: object;
  /** Plugin ids whose hooks run; empty or absent = every active plugin's hooks. */
  readonly activeHookFilter?: readonly string[];
  readonly signal?: CancellationFlag;
}

export interface PhaseRuntimeOptions extends EnvOptions {
  readonly store?: StateStore;
  readonly maxRounds?: number;
}

export interface SubmitReport {
  readonly revision: number;
  readonly effects: EffectReport;
}

type GatherReport = Pick<PhaseRunReport, 'phase' | 'hooksRun' | 'deferredHooks' | 'commits' | 'effects'>;
type ExecuteReport = Pick<PhaseRunReport, 'rounds' | 'processedActions' | 'skippedActions' | 'failedActions' | 'commits' | 'effects'>;
type Gathered = { readonly index: number; readonly command: StateCommand };

const EMPTY_INPUT: Readonly<Record<string, unknown>> = Object.freeze({});
const NO_ACTIONS: readonly ActionEnvelope[] = Object.freeze([]);
const NO_EFFECTS: EffectReport = Object.freeze(emptyEffectReport());
const IDLE_REPORTS = Object.fromEntries(PHASES.map((p) => [p, Object.freeze(zeroReport(p))])) as Readonly<Record<Phase, PhaseRunReport>>;
/** GATHER's result when its one hook wrote nothing, per phase. */
const ONE_HOOK_REPORTS = Object.freeze(
  Object.fromEntries(PHASES.map((p) => [p, Object.freeze(ok(Object.freeze({ phase: p, hooksRun: 1, deferredHooks: 0, commits: 0, effects: NO_EFFECTS })))])),
) as Readonly<Record<Phase, Result<GatherReport, PhaseError>>>;

/**
 * The phase engine (core-spec §2): GATHER (hooks on one frozen snapshot, exclusive-conflict
 * partition, serial re-run) then EXECUTE (scheduled-action convergence), with effects dispatched
 * after each commit. Phase runs and submits are serialised; commit order never depends on which
 * hook promise settles first. While hooks and handlers are synchronous no promise is awaited.
 */
export class PhaseRuntime {
  readonly store: StateStore;
  readonly env: ExecutionEnv;
  readonly maxRounds: number;
  #nextId = 1;
  #busy = false;
  readonly #waiters: (() => void)[] = [];

  private constructor(store: StateStore, env: ExecutionEnv, maxRounds: number) {
    this.store = store;
    this.env = env;
    this.maxRounds = maxRounds;
  }

  /** Builds the env, registers the runtime queue keys and installs every plugin's keys into the store. */
  static create(plugins: readonly Plugin[], options: PhaseRuntimeOptions = {}): Result<PhaseRuntime, StateError> {
    const env = buildExecutionEnv(plugins, options);
    if (!env.ok) return env;
    return PhaseRuntime.over(env.value, options);
  }

  /** A runtime over an env already built (its plugins registered once): the queue keys and every plugin's keys installed into the store. */
  static over(env: ExecutionEnv, options: Pick<PhaseRuntimeOptions, 'store' | 'maxRounds'> = {}): Result<PhaseRuntime, StateError> {
    const store = options.store ?? new StateStore();
    if (!store.hasPlugin(RUNTIME_QUEUE_PLUGIN)) {
      const queue = store.installPlugin(RUNTIME_QUEUE_PLUGIN, [{ key: PendingScheduledActions }, { key: FailedScheduledActions }]);
      if (!queue.ok) return queue;
    }
    for (const plugin of env.plugins) {
      const installed = store.installPlugin(plugin.name, plugin.keys);
      if (!installed.ok) return installed;
    }
    return ok(new PhaseRuntime(store, env, options.maxRounds ?? DEFAULT_MAX_PHASE_ROUNDS));
  }

  /** A runtime over a new run's store (run-scoped keys absent, thread-scoped kept, revision 0). */
  forNewRun(): PhaseRuntime {
    return new PhaseRuntime(this.store.beginRun(), this.env, this.maxRounds);
  }

  /** GATHER then EXECUTE for one phase. */
  runPhase(phase: Phase, options: PhaseRunOptions = {}): Promise<Result<PhaseRunReport, PhaseError>> {
    return this.#exclusive(() => this.#runPhase(phase, options));
  }

  /**
   * `runPhase` without the promise when it can finish now: an idle runtime whose hooks and handlers
   * are synchronous returns the result directly (the loop's hot path).
   */
  runPhaseNow(phase: Phase, options: PhaseRunOptions = {}): MaybePromise<Result<PhaseRunReport, PhaseError>> {
    if (this.#busy) return this.runPhase(phase, options);
    this.#busy = true;
    let out: MaybePromise<Result<PhaseRunReport, PhaseError>>;
    try {
      out = this.#runPhase(phase, options);
    } catch (e) {
      this.#release();
      throw e;
    }
    return this.#settleNow(out);
  }

  /**
   * Whether running `phase` now would do nothing — no hook registered for it, no queued action it
   * would run, no phase or submit in progress — so that a caller may skip building its input.
   */
  idle(phase: Phase): boolean {
    return !this.#busy && (this.env.hooks.get(phase) as readonly HookRegistration[]).length === 0 && this.#noWork(phase);
  }

  /** Validates, enqueues actions, commits and dispatches effects (core-spec §2.5). */
  submitCommand(command: StateCommand): Promise<Result<SubmitReport, StateError>> {
    return this.#exclusive(() => this.#submit(command));
  }

  /** `submitCommand` without the promise when it can finish now (see `runPhaseNow`). */
  submitCommandNow(command: StateCommand): MaybePromise<Result<SubmitReport, StateError>> {
    if (this.#busy) return this.submitCommand(command);
    return this.#submitNow(this.#submit, command);
  }

  /**
   * `submitCommandNow` for a caller that needs only whether the command was committed: the failure,
   * or `undefined` (no report is built: the loop submits several commands a step).
   */
  submitOrFail(command: StateCommand): MaybePromise<StateError | undefined> {
    if (this.#busy) return this.submitCommand(command).then((r) => (r.ok ? undefined : r.error));
    return this.#submitNow(this.#submitQuiet, command);
  }

  /** Takes the idle runtime's lock and submits with `submit` at once (no closure per call: the hot path). */
  #submitNow<T>(submit: (this: PhaseRuntime, command: StateCommand) => MaybePromise<T>, command: StateCommand): MaybePromise<T> {
    this.#busy = true;
    let out: MaybePromise<T>;
    try {
      out = submit.call(this, command);
    } catch (e) {
      this.#release();
      throw e;
    }
    return this.#settleNow(out);
  }

  /** Runs the phase's hooks on one snapshot and merges their commands without committing (no fallback). */
  collectCommands(phase: Phase, options: PhaseRunOptions = {}): Promise<Result<StateCommand, PhaseError>> {
    return this.#exclusive(() =>
      andThen(this.#runHooks(this.#activeHooks(phase, options), phase, this.store.snapshot(), options), (gathered) =>
        gathered.ok
          ? mergeAllCommands(
              gathered.value.map((g) => g.command),
              this.store.strategyOf,
            )
          : gathered,
      ),
    );
  }

  /** Runs EXECUTE only (used after a collected command was submitted). */
  executeActions(phase: Phase, options: PhaseRunOptions = {}): Promise<Result<PhaseRunReport, PhaseError>> {
    return this.#exclusive(() =>
      andThen(this.#execute(phase, options), (executed) => (executed.ok ? ok({ ...zeroReport(phase), ...executed.value }) : executed)),
    );
  }

  /** Request transforms of active plugins, in registration order. */
  applyRequestTransforms<R>(request: R): R {
    let out = request;
    for (const transform of this.env.transforms) out = transform(out) as R;
    return out;
  }

  // ---- serialisation ------------------------------------------------------------------------------

  /** FIFO mutual exclusion; an idle runtime runs the task at once and a synchronous task costs no await. */
  #exclusive<T>(task: () => MaybePromise<T>): Promise<T> {
    if (!this.#busy) return this.#start(task);
    return new Promise<T>((resolve, reject) => this.#waiters.push(() => this.#start(task).then(resolve, reject)));
  }

  #start<T>(task: () => MaybePromise<T>): Promise<T> {
    this.#busy = true;
    let out: MaybePromise<T>;
    try {
      out = task();
    } catch (e) {
      this.#release();
      return Promise.reject(e);
    }
    if (!isPromiseLike<T>(out)) {
      this.#release();
      return Promise.resolve(out);
    }
    return Promise.resolve(out).finally(() => this.#release());
  }

  /** Releases the lock now for a synchronous result, or when the promise settles. */
  #settleNow<T>(out: MaybePromise<T>): MaybePromise<T> {
    if (!isPromiseLike<T>(out)) {
      this.#release();
      return out;
    }
    return Promise.resolve(out).finally(() => this.#release());
  }

  #release(): void {
    this.#busy = false;
    this.#waiters.shift()?.();
  }

  // ---- phase run ----------------------------------------------------------------------------------

  #runPhase(phase: Phase, options: PhaseRunOptions): MaybePromise<Result<PhaseRunReport, PhaseError>> {
    if (isCancelled(options)) return err({ code: 'cancelled' });
    // Fast path: no hook and nothing queued for this phase.
    if (this.#activeHooks(phase, options).length === 0 && this.#noWork(phase)) return ok(this.#idleReport(phase));
    return andThen(this.#gather(phase, options), (gathered) => {
      if (!gathered.ok) return gathered;
      if (isCancelled(options)) return err({ code: 'cancelled' });
      return andThen(this.#execute(phase, options), (executed): Result<PhaseRunReport, PhaseError> => {
        if (!executed.ok) return executed;
        const g = gathered.value;
        const e = executed.value;
        return ok({
          phase,
          hooksRun: g.hooksRun,
          deferredHooks: g.deferredHooks,
          commits: g.commits + e.commits,
          rounds: e.rounds,
          processedActions: e.processedActions,
          skippedActions: e.skippedActions,
          failedActions: e.failedActions,
          effects: mergeEffects(g.effects, e.effects),
        });
      });
    });
  }

  /** Whether no queued action would run in this phase's EXECUTE. */
  #noWork(phase: Phase): boolean {
    const queue = this.store.snapshot().get(PendingScheduledActions);
    if (queue === undefined) return true;
    for (const e of queue) if (e.action.phase === phase && this.env.actionHandlers.has(e.action.key)) return false;
    return true;
  }

  #idleReport(phase: Phase): PhaseRunReport {
    const skipped = this.store.snapshot().get(PendingScheduledActions)?.length ?? 0;
    return skipped === 0 ? IDLE_REPORTS[phase] : { ...IDLE_REPORTS[phase], skippedActions: skipped };
  }

  #activeHooks(phase: Phase, options: PhaseRunOptions): readonly HookRegistration[] {
    const hooks = this.env.hooks.get(phase) as readonly HookRegistration[];
    const filter = options.activeHookFilter;
    return filter === undefined || filter.length === 0 ? hooks : hooks.filter((h) => filter.includes(h.pluginId));
  }

  /** The engine passes the input it is given on: its shape per phase is the caller's contract (`PhaseInputs`). */
  #context(phase: Phase, snapshot: Snapshot, options: PhaseRunOptions): PhaseContext {
    return { phase, snapshot, input: (options.input ?? EMPTY_INPUT) as unknown as PhaseContext['input'] };
  }

  /**
   * Runs hooks on one snapshot. Synchronous hooks are called in registration order; if any returns
   * a promise, all are awaited together. Results are read by index: the first error by index wins.
   */
  #runHooks(
    hooks: readonly HookRegistration[],
    phase: Phase,
    snapshot: Snapshot,
    options: PhaseRunOptions,
  ): MaybePromise<Result<Gathered[], PhaseError>> {
    const ctx = this.#context(phase, snapshot, options);
    const results: PromiseSettledResult<StateCommand>[] = [];
    const promises: (PromiseLike<StateCommand> | undefined)[] = [];
    let pending = false;
    for (const h of hooks) {
      try {
        const out = h.hook(ctx);
        if (isPromiseLike<StateCommand>(out)) {
          pending = true;
          promises.push(out);
          results.push({ status: 'fulfilled', value: StateCommand.empty() });
        } else {
          promises.push(undefined);
          results.push({ status: 'fulfilled', value: out });
        }
      } catch (reason) {
        promises.push(undefined);
        results.push({ status: 'rejected', reason });
      }
    }
    const scan = (settled: readonly PromiseSettledResult<StateCommand>[]): Result<Gathered[], PhaseError> => {
      const commands: Gathered[] = [];
      for (let index = 0; index < settled.length; index++) {
        const s = settled[index] as PromiseSettledResult<StateCommand>;
        if (s.status === 'rejected') return err(hookError(s.reason, phase, (hooks[index] as HookRegistration).pluginId));
        const command = s.value;
        if (command.baseRevision === undefined) command.withBaseRevision(snapshot.revision);
        if (!command.isEmpty()) commands.push({ index, command });
      }
      return ok(commands);
    };
    if (!pending) return scan(results);
    return Promise.allSettled(promises.map((p, i) => p ?? settledToPromise(results[i] as PromiseSettledResult<StateCommand>))).then(scan);
  }

  #gather(phase: Phase, options: PhaseRunOptions): MaybePromise<Result<GatherReport, PhaseError>> {
    const hooks = this.#activeHooks(phase, options);
    if (hooks.length === 1) return this.#gatherOne(hooks[0] as HookRegistration, phase, options);
    const base: GatherReport = { phase, hooksRun: hooks.length, deferredHooks: 0, commits: 0, effects: NO_EFFECTS };
    if (hooks.length === 0) return ok(base);
    return andThen(this.#runHooks(hooks, phase, this.store.snapshot(), options), (gathered) => {
      if (!gathered.ok) return gathered;
      const commands = gathered.value;
      if (commands.length === 0) return ok(base);

      // Greedy partition in registration order: a command is deferred when one of its exclusive keys
      // is already claimed by an earlier command of the batch. Commutative keys never defer.
      const claimed = new Set<string>();
      const batch: StateCommand[] = [];
      const deferred: number[] = [];
      for (const { index, command } of commands) {
        const ops = command.patch.ops;
        let conflict = false;
        for (const op of ops) {
          if (claimed.has(op.key) && this.store.strategyOf(op.key) === 'exclusive') {
            conflict = true;
            break;
          }
        }
        if (conflict) {
          deferred.push(index);
          continue;
        }
        for (const op of ops) if (this.store.strategyOf(op.key) === 'exclusive') claimed.add(op.key);
        batch.push(command);
      }
      const merged = batch.length === 1 ? ok(batch[0] as StateCommand) : mergeAllCommands(batch, this.store.strategyOf);
      if (!merged.ok) return merged;
      return andThen(this.#submit(merged.value), (submitted) => {
        if (!submitted.ok) return submitted;
        const afterBatch: GatherReport = { ...base, commits: 1, effects: submitted.value.effects };
        return deferred.length === 0 ? ok(afterBatch) : this.#rerunDeferred(hooks, deferred, phase, options, afterBatch);
      });
    });
  }

  /**
   * GATHER with a single hook: the same as the general path (its command, based on the snapshot it
   * saw, committed unless empty), without the partition and merge that only several hooks need.
   */
  #gatherOne(hook: HookRegistration, phase: Phase, options: PhaseRunOptions): MaybePromise<Result<GatherReport, PhaseError>> {
    const snapshot = this.store.snapshot();
    let out: MaybePromise<StateCommand>;
    try {
      out = hook.hook(this.#context(phase, snapshot, options));
    } catch (e) {
      return err(hookError(e, phase, hook.pluginId));
    }
    if (!isPromiseLike<StateCommand>(out)) return this.#commitOne(out, snapshot, phase);
    return Promise.resolve(out).then(
      (command) => this.#commitOne(command, snapshot, phase),
      (e: unknown) => err(hookError(e, phase, hook.pluginId)),
    );
  }

  #commitOne(command: StateCommand, snapshot: Snapshot, phase: Phase): MaybePromise<Result<GatherReport, PhaseError>> {
    if (command.baseRevision === undefined) command.withBaseRevision(snapshot.revision);
    if (command.isEmpty()) return ONE_HOOK_REPORTS[phase];
    return andThen(this.#submit(command), (submitted) =>
      submitted.ok ? ok({ phase, hooksRun: 1, deferredHooks: 0, commits: 1, effects: submitted.value.effects }) : submitted,
    );
  }

  /** Deferred hooks re-run one by one on a fresh snapshot; their first-run commands are discarded. */
  async #rerunDeferred(
    hooks: readonly HookRegistration[],
    deferred: readonly number[],
    phase: Phase,
    options: PhaseRunOptions,
    report: GatherReport,
  ): Promise<Result<GatherReport, PhaseError>> {
    let { commits, effects } = report;
    for (const index of deferred) {
      const hook = hooks[index] as HookRegistration;
      const fresh = this.store.snapshot();
      let command: StateCommand;
      try {
        command = await hook.hook(this.#context(phase, fresh, options));
      } catch (e) {
        return err(hookError(e, phase, hook.pluginId));
      }
      if (command.baseRevision === undefined) command.withBaseRevision(fresh.revision);
      if (command.isEmpty()) continue;
      const again = await this.#submit(command);
      if (!again.ok) return again;
      effects = mergeEffects(effects, again.value.effects);
      commits++;
    }
    return ok({ ...report, deferredHooks: deferred.length, commits, effects });
  }

  /** Matching queued actions (this phase, with a handler), in queue order, and the queue length. */
  #matching(phase: Phase): { matching: { envelope: ActionEnvelope; registration: NonNullable<ReturnType<ExecutionEnv['actionHandlers']['get']>> }[]; queued: number } {
    const queue = this.store.snapshot().get(PendingScheduledActions) ?? NO_ACTIONS;
    const matching = [];
    for (const envelope of queue) {
      const registration = envelope.action.phase === phase ? this.env.actionHandlers.get(envelope.action.key) : undefined;
      if (registration !== undefined) matching.push({ envelope, registration });
    }
    return { matching, queued: queue.length };
  }

  #execute(phase: Phase, options: PhaseRunOptions): MaybePromise<Result<ExecuteReport, PhaseError>> {
    const first = this.#matching(phase);
    if (first.matching.length === 0) {
      return ok({ rounds: 0, processedActions: 0, skippedActions: first.queued, failedActions: 0, commits: 0, effects: NO_EFFECTS });
    }
    return this.#executeRounds(phase, options);
  }

  async #executeRounds(phase: Phase, options: PhaseRunOptions): Promise<Result<ExecuteReport, PhaseError>> {
    let rounds = 0;
    let processed = 0;
    let failed = 0;
    let commits = 0;
    let effects = NO_EFFECTS;
    for (;;) {
      const { matching, queued } = this.#matching(phase);
      if (matching.length === 0) {
        return ok({ rounds, processedActions: processed, skippedActions: queued, failedActions: failed, commits, effects });
      }
      // The bound counts rounds that do work: a 16-deep cascade converges, a 17th working round fails
      // (0.6 checks before reading the queue and so allows only 15; docs/parity.md).
      if (rounds === this.maxRounds) return err({ code: 'phase_run_loop_exceeded', phase, maxRounds: this.maxRounds });
      rounds++;
      for (const { envelope, registration } of matching) {
        const decoded = registration.spec.payload.safeParse(envelope.action.payload);
        let command: StateCommand;
        try {
          if (!decoded.success) throw new Error(`invalid payload for ${envelope.action.key}: ${decoded.error.message}`);
          command = await registration.handler(this.#context(phase, this.store.snapshot(), options), decoded.data);
        } catch (e) {
          this.#deadLetter(envelope, errorText(e));
          commits++;
          failed++;
          continue;
        }
        command.update(PendingScheduledActions, { op: 'remove', id: envelope.id });
        const submitted = await this.#submit(command);
        if (submitted.ok) {
          processed++;
          commits++;
          effects = mergeEffects(effects, submitted.value.effects);
        } else {
          this.#deadLetter(envelope, `failed to submit action command: ${errorText(new StateFailure(submitted.error))}`);
          commits++;
          failed++;
        }
      }
    }
  }

  /** Moves a failed action to the dead-letter queue; both keys are always registered, so this cannot fail. */
  #deadLetter(envelope: ActionEnvelope, error: string): void {
    const batch = StateCommand.empty()
      .update(PendingScheduledActions, { op: 'remove', id: envelope.id })
      .update(FailedScheduledActions, { id: envelope.id, action: envelope.action, error });
    this.store.commit(batch.patch);
  }

  #submit(command: StateCommand): MaybePromise<Result<SubmitReport, StateError>> {
    const failure = this.#commitCommand(command);
    if (failure !== undefined) return err(failure);
    const revision = this.store.revision;
    if (command.effects.length === 0) return ok({ revision, effects: NO_EFFECTS });
    return this.#dispatchEffects(command, this.store.snapshot()).then((effects) => ok({ revision, effects }));
  }

  /** `#submit` without its report: the failure, if any, once effects are dispatched. */
  #submitQuiet(command: StateCommand): MaybePromise<StateError | undefined> {
    const failure = this.#commitCommand(command);
    if (failure !== undefined || command.effects.length === 0) return failure;
    return this.#dispatchEffects(command, this.store.snapshot()).then(() => undefined);
  }

  /** Validates the command, enqueues its actions and commits it: the failure, if any. */
  #commitCommand(command: StateCommand): StateError | undefined {
    for (const action of command.scheduledActions) {
      if (!this.env.actionHandlers.has(action.key)) return { code: 'unknown_scheduled_action_handler', key: action.key };
    }
    for (const effect of command.effects) {
      if (!this.env.effectHandlers.has(effect.key)) return { code: 'unknown_effect_handler', key: effect.key };
    }
    let patch = command.patch;
    if (command.scheduledActions.length > 0) {
      patch = patch.clone();
      const firstId = this.#nextId;
      command.scheduledActions.forEach((action, i) => {
        patch.update(PendingScheduledActions, { op: 'push', envelope: { id: firstId + i, action } });
      });
    }
    const failure = this.store.tryCommit(patch);
    if (failure !== undefined) return failure;
    this.#nextId += command.scheduledActions.length;
    return undefined;
  }

  /** Sequential, in order, against the post-commit snapshot; failures are recorded, never propagated. */
  async #dispatchEffects(command: StateCommand, snapshot: Snapshot): Promise<EffectReport> {
    const records: EffectRecord[] = [];
    let failed = 0;
    for (const effect of command.effects) {
      // Validated at submit: every effect key has a handler.
      const registration = this.env.effectHandlers.get(effect.key) as NonNullable<ReturnType<ExecutionEnv['effectHandlers']['get']>>;
      const record = { key: effect.key, payload: effect.payload, revision: snapshot.revision };
      try {
        const decoded = registration.spec.payload.safeParse(effect.payload);
        if (!decoded.success) throw new Error(`invalid payload for ${effect.key}: ${decoded.error.message}`);
        await registration.handler(decoded.data, snapshot);
        records.push(record);
      } catch (e) {
        failed++;
        records.push({ ...record, error: errorText(e) });
      }
    }
    return { attempted: records.length, dispatched: records.length - failed, failed, records };
  }
}

function mergeEffects(a: EffectReport, b: EffectReport): EffectReport {
  if (b.attempted === 0) return a;
  if (a.attempted === 0) return b;
  return addEffectReports(a, b);
}

function settledToPromise<T>(s: PromiseSettledResult<T>): Promise<T> {
  return s.status === 'fulfilled' ? Promise.resolve(s.value) : Promise.reject(s.reason);
}

function isCancelled(options: PhaseRunOptions): boolean {
  return options.signal?.aborted === true;
}

function hookError(reason: unknown, phase: Phase, pluginId: string): PhaseError {
  if (reason instanceof StateFailure) return reason.error;
  return { code: 'hook_failed', phase, pluginId, message: errorText(reason) };
}

function zeroReport(phase: Phase): PhaseRunReport {
  return {
    phase,
    hooksRun: 0,
    deferredHooks: 0,
    commits: 0,
    rounds: 0,
    processedActions: 0,
    skippedActions: 0,
    failedActions: 0,
    effects: NO_EFFECTS,
  };
}
