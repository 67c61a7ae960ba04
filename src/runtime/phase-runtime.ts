// Over 500 lines: the engine's driver keeps its lock, its commit paths and the dispatch of effects in
// one room, since every path that commits must take and release the same lock.
import type { StateError } from '../contract/errors.ts';
import type { Phase } from '../contract/phase.ts';
import { err, ok, type Result } from '../contract/result.ts';
import {
  activeHooks,
  basedOn,
  commandOf,
  completing,
  deadLettered,
  DEFAULT_MAX_PHASE_ROUNDS,
  effectPayload,
  effectRecord,
  effectReport,
  gathered,
  hookContext,
  hookError,
  idleExecute,
  idleReport,
  mergeEffects,
  NO_EFFECTS,
  nothingToRun,
  ONE_HOOK_COMMITTED,
  ONE_HOOK_REPORTS,
  partition,
  phaseResult,
  queuedWrites,
  actionPayload,
  roundRefused,
  runnableActions,
  submitFailure,
  zeroReport,
  type ExecuteReport,
  type Gathered,
  type GatherReport,
  type Outcome,
} from '../core/phase/engine.ts';
import { errorText, StateFailure, type PhaseError } from '../core/phase/phase-error.ts';
import { buildExecutionEnv, type EnvOptions, type ExecutionEnv, type HookRegistration, type PhaseContext, type Plugin } from '../core/phase/plugin.ts';
import type { EffectRecord, EffectReport, PhaseRunReport } from '../core/phase/report.ts';
import { FailedScheduledActions, PendingScheduledActions, RUNTIME_QUEUE_PLUGIN } from '../core/phase/runtime-keys.ts';
import type { Snapshot } from '../core/state/snapshot.ts';
import { mergeAllCommands, type StateCommand } from '../core/state/state-command.ts';
import { all, andFinally, andThen, andThenOrElse, type MaybePromise } from './maybe-promise.ts';
import { StateStore } from './state-store.ts';

export { DEFAULT_MAX_PHASE_ROUNDS } from '../core/phase/engine.ts';

/** Per env, the runtime whose store has its keys installed and nothing written (`forRun`). */
const TEMPLATES = new WeakMap<ExecutionEnv, PhaseRuntime>();

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

/**
 * Runs the phase engine of `core/phase/engine.ts` (core-spec §2): it holds the state, the next
 * action id and the lock, calls hooks and handlers, commits what the engine's functions return and
 * dispatches effects after each commit. Phase runs and submits are serialised; commit order never
 * depends on which hook promise settles first. While hooks and handlers are synchronous no promise
 * is awaited (ADR 0005).
 */
export class PhaseRuntime {
  readonly store: StateStore;
  #env: ExecutionEnv;
  readonly maxRounds: number;
  #nextId = 1;
  #busy = false;
  readonly #waiters: (() => void)[] = [];

  private constructor(store: StateStore, env: ExecutionEnv, maxRounds: number) {
    this.store = store;
    this.#env = env;
    this.maxRounds = maxRounds;
  }

  /** The plugins whose hooks, handlers and keys the phases run with. */
  get env(): ExecutionEnv {
    return this.#env;
  }

  /**
   * Runs on with `next`'s plugins from now on (a handoff to another agent, book: 使用 Agent Handoff;
   * core-spec §11.1): the plugins `next` lacks are uninstalled (their keys cleared in one commit,
   * unless retained), the ones the store lacks are installed with their keys at init, and those in
   * both keep their state. Between phases only: the runtime must be idle.
   */
  swapEnv(next: ExecutionEnv): Result<void, StateError> {
    if (next === this.#env) return ok(undefined);
    const kept = new Set(next.plugins.map((p) => p.name));
    for (const plugin of this.#env.plugins) {
      if (kept.has(plugin.name) || !this.store.hasPlugin(plugin.name)) continue;
      const removed = this.store.uninstallPlugin(plugin.name);
      if (!removed.ok) return removed;
    }
    for (const plugin of next.plugins) {
      if (this.store.hasPlugin(plugin.name)) continue;
      const installed = this.store.installPlugin(plugin.name, plugin.keys);
      if (!installed.ok) return installed;
    }
    this.#env = next;
    return ok(undefined);
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

  /**
   * A runtime for a new run over `env`: a new store with every plugin's keys installed, revision 0,
   * action ids from 1. The keys are installed once per env, into a store no run writes to; each run's
   * store begins from it (`beginRun`) and shares its registry until it changes it.
   */
  static forRun(env: ExecutionEnv): Result<PhaseRuntime, StateError> {
    let template = TEMPLATES.get(env);
    if (template === undefined) {
      const made = PhaseRuntime.over(env);
      if (!made.ok) return made;
      template = made.value;
      TEMPLATES.set(env, template);
    }
    return ok(template.forNewRun());
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
    return !this.#busy && (this.env.hooks.get(phase) as readonly HookRegistration[]).length === 0 && nothingToRun(this.env, this.store.snapshot(), phase);
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
      andThen(this.#runHooks(activeHooks(this.env, phase, options.activeHookFilter), phase, this.store.snapshot(), options), (g) =>
        g.ok
          ? mergeAllCommands(
              g.value.map((x) => x.command),
              this.store.strategyOf,
            )
          : g,
      ),
    );
  }

  /** Runs EXECUTE only (used after a collected command was submitted). */
  executeActions(phase: Phase, options: PhaseRunOptions = {}): Promise<Result<PhaseRunReport, PhaseError>> {
    return this.#exclusive(() =>
      andThen(this.#execute(phase, options), (executed) => (executed.ok ? ok({ ...zeroReport(phase), ...executed.value }) : executed)),
    );
  }

  /**
   * Request transforms of active plugins, in registration order; `mend(out, before)` sees each
   * transform's answer before the next transform does (the loop puts back what a copy lost).
   */
  applyRequestTransforms<R>(request: R, mend?: (out: R, before: R) => R): R {
    let out = request;
    for (const transform of this.env.transforms) {
      const next = transform(out) as R;
      out = mend === undefined ? next : mend(next, out);
    }
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
    return Promise.resolve(this.#settleNow(out));
  }

  /** Releases the lock now for a synchronous result, or when the promise settles. */
  #settleNow<T>(out: MaybePromise<T>): MaybePromise<T> {
    return andFinally(out, PhaseRuntime.#releaseOf, this);
  }

  static #releaseOf(runtime: PhaseRuntime): void {
    runtime.#release();
  }

  #release(): void {
    this.#busy = false;
    this.#waiters.shift()?.();
  }

  // ---- phase run ----------------------------------------------------------------------------------

  #runPhase(phase: Phase, options: PhaseRunOptions): MaybePromise<Result<PhaseRunReport, PhaseError>> {
    if (isCancelled(options)) return err({ code: 'cancelled' });
    const hooks = activeHooks(this.env, phase, options.activeHookFilter);
    const snapshot = this.store.snapshot();
    // Fast path: no hook and nothing queued for this phase.
    if (hooks.length === 0 && nothingToRun(this.env, snapshot, phase)) return ok(idleReport(phase, snapshot.get(PendingScheduledActions)?.length ?? 0));
    return andThen(this.#gather(hooks, phase, options), this.#gathered, phase, options);
  }

  /** GATHER done: EXECUTE, then the phase's report (bound once: no closure per phase run). */
  readonly #gathered = (g: Result<GatherReport, PhaseError>, phase: Phase, options: PhaseRunOptions): MaybePromise<Result<PhaseRunReport, PhaseError>> => {
    if (!g.ok) return g;
    if (isCancelled(options)) return err({ code: 'cancelled' });
    return andThen(this.#execute(phase, options), executedAfter, g.value);
  };

  /**
   * Calls hooks on one snapshot. Synchronous hooks are called in registration order; if any returns
   * a promise, all are awaited together. The engine reads the outcomes by index.
   */
  #runHooks(hooks: readonly HookRegistration[], phase: Phase, snapshot: Snapshot, options: PhaseRunOptions): MaybePromise<Result<Gathered[], PhaseError>> {
    const ctx = hookContext(phase, snapshot, options.input);
    const outcomes: MaybePromise<Outcome>[] = [];
    for (const h of hooks) {
      try {
        outcomes.push(andThenOrElse(h.hook(ctx), answered, threw));
      } catch (reason) {
        outcomes.push({ ok: false, reason });
      }
    }
    return andThen(all(outcomes), gatheredIn, hooks, ctx);
  }

  #gather(hooks: readonly HookRegistration[], phase: Phase, options: PhaseRunOptions): MaybePromise<Result<GatherReport, PhaseError>> {
    if (hooks.length === 1) return this.#gatherOne(hooks[0] as HookRegistration, phase, options);
    const base: GatherReport = { phase, hooksRun: hooks.length, deferredHooks: 0, commits: 0, effects: NO_EFFECTS };
    if (hooks.length === 0) return ok(base);
    return andThen(this.#runHooks(hooks, phase, this.store.snapshot(), options), (g) => {
      if (!g.ok) return g;
      if (g.value.length === 0) return ok(base);
      const parted = partition(g.value, this.store.strategyOf);
      if (!parted.ok) return parted;
      const { command, deferred } = parted.value;
      return andThen(this.#submit(command), (submitted) => {
        if (!submitted.ok) return submitted;
        const afterBatch: GatherReport = { ...base, commits: 1, effects: submitted.value.effects };
        return deferred.length === 0 ? ok(afterBatch) : this.#rerunDeferred(hooks, deferred, phase, options, afterBatch);
      });
    });
  }

  /**
   * GATHER with a single hook: the same as the general path (its command, based on the snapshot it
   * saw, committed unless empty or absent), without the partition and merge only several hooks need.
   */
  #gatherOne(hook: HookRegistration, phase: Phase, options: PhaseRunOptions): MaybePromise<Result<GatherReport, PhaseError>> {
    const snapshot = this.store.snapshot();
    let out: MaybePromise<StateCommand | void>;
    try {
      out = hook.hook(hookContext(phase, snapshot, options.input));
    } catch (e) {
      return err(hookError(e, phase, hook.pluginId));
    }
    return andThenOrElse(out, this.#oneAnswered, oneThrew, snapshot, hook);
  }

  /** A single hook's answer: nothing to commit, or its command based on the snapshot it saw (bound once: the hot path). */
  readonly #oneAnswered = (command: StateCommand | void, snapshot: Snapshot, hook: HookRegistration): MaybePromise<Result<GatherReport, PhaseError>> =>
    command === undefined ? ONE_HOOK_REPORTS[hook.phase] : this.#commitOne(basedOn(command, snapshot), hook.phase);

  #commitOne(command: StateCommand, phase: Phase): MaybePromise<Result<GatherReport, PhaseError>> {
    if (command.isEmpty()) return ONE_HOOK_REPORTS[phase];
    if (command.effects.length > 0) return andThen(this.#submit(command), oneCommitted, phase);
    // Without effects `#submit` finishes now, and its report would only say so: committed directly.
    const failure = this.#commit(command);
    return failure === undefined ? ONE_HOOK_COMMITTED[phase] : err(failure);
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
        command = basedOn(commandOf(await hook.hook(hookContext(phase, fresh, options.input))), fresh);
      } catch (e) {
        return err(hookError(e, phase, hook.pluginId));
      }
      if (command.isEmpty()) continue;
      const again = await this.#submit(command);
      if (!again.ok) return again;
      effects = mergeEffects(effects, again.value.effects);
      commits++;
    }
    return ok({ ...report, deferredHooks: deferred.length, commits, effects });
  }

  #execute(phase: Phase, options: PhaseRunOptions): MaybePromise<Result<ExecuteReport, PhaseError>> {
    const snapshot = this.store.snapshot();
    if (nothingToRun(this.env, snapshot, phase)) return idleExecute(snapshot.get(PendingScheduledActions)?.length ?? 0);
    return this.#executeRounds(phase, options);
  }

  async #executeRounds(phase: Phase, options: PhaseRunOptions): Promise<Result<ExecuteReport, PhaseError>> {
    let rounds = 0;
    let processed = 0;
    let failed = 0;
    let commits = 0;
    let effects = NO_EFFECTS;
    for (;;) {
      const { runnable, queued: queueLength } = runnableActions(this.env, this.store.snapshot(), phase);
      if (runnable.length === 0) {
        return ok({ rounds, processedActions: processed, skippedActions: queueLength, failedActions: failed, commits, effects });
      }
      const refused = roundRefused(phase, rounds, this.maxRounds);
      if (refused !== undefined) return err(refused);
      rounds++;
      for (const action of runnable) {
        const payload = actionPayload(action);
        let command: StateCommand;
        try {
          if (!payload.ok) throw new Error(payload.error);
          command = commandOf(await action.registration.handler(hookContext(phase, this.store.snapshot(), options.input), payload.value));
        } catch (e) {
          this.store.tryCommit(deadLettered(action.envelope, errorText(e)));
          commits++;
          failed++;
          continue;
        }
        const submitted = await this.#submit(completing(command, action.envelope));
        commits++;
        if (submitted.ok) {
          processed++;
          effects = mergeEffects(effects, submitted.value.effects);
        } else {
          this.store.tryCommit(deadLettered(action.envelope, `failed to submit action command: ${errorText(new StateFailure(submitted.error))}`));
          failed++;
        }
      }
    }
  }

  #submit(command: StateCommand): MaybePromise<Result<SubmitReport, StateError>> {
    const failure = this.#commit(command);
    if (failure !== undefined) return err(failure);
    const revision = this.store.revision;
    if (command.effects.length === 0) return ok({ revision, effects: NO_EFFECTS });
    return this.#dispatchEffects(command, this.store.snapshot()).then((effects) => ok({ revision, effects }));
  }

  /** `#submit` without its report: the failure, if any, once effects are dispatched. */
  #submitQuiet(command: StateCommand): MaybePromise<StateError | undefined> {
    const failure = this.#commit(command);
    if (failure !== undefined || command.effects.length === 0) return failure;
    return this.#dispatchEffects(command, this.store.snapshot()).then(() => undefined);
  }

  /** Validates the command, commits it with its actions queued under the next ids, and advances the counter: the failure, if any. */
  #commit(command: StateCommand): StateError | undefined {
    const failure = submitFailure(this.env, command) ?? this.store.tryCommit(queuedWrites(command, this.#nextId));
    if (failure === undefined) this.#nextId += command.scheduledActions.length;
    return failure;
  }

  /** Sequential, in order, against the post-commit snapshot; failures are recorded, never propagated. */
  async #dispatchEffects(command: StateCommand, snapshot: Snapshot): Promise<EffectReport> {
    const records: EffectRecord[] = [];
    for (const effect of command.effects) {
      // Validated at submit: every effect key has a handler.
      const registration = this.env.effectHandlers.get(effect.key) as NonNullable<ReturnType<ExecutionEnv['effectHandlers']['get']>>;
      let error: string | undefined;
      try {
        const payload = effectPayload(registration, effect);
        if (!payload.ok) throw new Error(payload.error);
        await registration.handler(payload.value, snapshot);
      } catch (e) {
        error = errorText(e);
      }
      records.push(effectRecord(effect, snapshot.revision, error));
    }
    return effectReport(records);
  }
}

/** A phase's report from its GATHER (`g`) and EXECUTE. */
const executedAfter = (e: Result<ExecuteReport, PhaseError>, g: GatherReport): Result<PhaseRunReport, PhaseError> => (e.ok ? phaseResult(g, e.value) : e);

/** GATHER's report for a single hook whose command was submitted. */
const oneCommitted = (submitted: Result<SubmitReport, StateError>, phase: Phase): Result<GatherReport, PhaseError> =>
  submitted.ok ? ok({ phase, hooksRun: 1, deferredHooks: 0, commits: 1, effects: submitted.value.effects }) : submitted;

/** A hook's answer as an outcome (read by index). */
const answered = (value: StateCommand | void): Outcome => ({ ok: true, value });

/** A hook's rejection as an outcome: a failure, read by index. */
const threw = (reason: unknown): Outcome => ({ ok: false, reason });

/** The commands of hooks that all answered on one snapshot (`ctx`'s). */
const gatheredIn = (outcomes: readonly Outcome[], hooks: readonly HookRegistration[], ctx: PhaseContext): Result<Gathered[], PhaseError> =>
  gathered(hooks, outcomes, ctx.phase, ctx.snapshot);

/** A single hook's throw or rejection as the phase's error. */
const oneThrew = (e: unknown, _: Snapshot, hook: HookRegistration): Result<GatherReport, PhaseError> => err(hookError(e, hook.phase, hook.pluginId));

function isCancelled(options: PhaseRunOptions): boolean {
  return options.signal?.aborted === true;
}
