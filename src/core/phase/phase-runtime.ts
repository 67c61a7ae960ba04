import type { StateError } from '../../contract/errors.ts';
import type { Phase } from '../../contract/phase.ts';
import { err, ok, type Result } from '../../contract/result.ts';
import type { Snapshot } from '../state/snapshot.ts';
import { mergeAllCommands, StateCommand } from '../state/state-command.ts';
import { StateStore } from '../state/state-store.ts';
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
  readonly input?: Readonly<Record<string, unknown>>;
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

const EMPTY_INPUT: Readonly<Record<string, unknown>> = Object.freeze({});

/**
 * The phase engine (core-spec §2): GATHER (hooks on one frozen snapshot, exclusive-conflict
 * partition, serial re-run) then EXECUTE (scheduled-action convergence), with effects dispatched
 * after each commit. Phase runs and submits are serialised; commit order never depends on which
 * hook promise settles first.
 */
export class PhaseRuntime {
  readonly store: StateStore;
  readonly env: ExecutionEnv;
  readonly maxRounds: number;
  #nextId = 1;
  #tail: Promise<unknown> = Promise.resolve();

  private constructor(store: StateStore, env: ExecutionEnv, maxRounds: number) {
    this.store = store;
    this.env = env;
    this.maxRounds = maxRounds;
  }

  /** Builds the env, registers the runtime queue keys and installs every plugin's keys into the store. */
  static create(plugins: readonly Plugin[], options: PhaseRuntimeOptions = {}): Result<PhaseRuntime, StateError> {
    const env = buildExecutionEnv(plugins, options);
    if (!env.ok) return env;
    const store = options.store ?? new StateStore();
    if (!store.installedPlugins().includes(RUNTIME_QUEUE_PLUGIN)) {
      const queue = store.installPlugin(RUNTIME_QUEUE_PLUGIN, [{ key: PendingScheduledActions }, { key: FailedScheduledActions }]);
      if (!queue.ok) return queue;
    }
    for (const plugin of env.value.plugins) {
      const installed = store.installPlugin(plugin.name, plugin.keys);
      if (!installed.ok) return installed;
    }
    return ok(new PhaseRuntime(store, env.value, options.maxRounds ?? DEFAULT_MAX_PHASE_ROUNDS));
  }

  /** A runtime over a new run's store (run-scoped keys absent, thread-scoped kept, revision 0). */
  forNewRun(): PhaseRuntime {
    return new PhaseRuntime(this.store.beginRun(), this.env, this.maxRounds);
  }

  #exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(task, task);
    this.#tail = run.catch(() => undefined);
    return run;
  }

  /** GATHER then EXECUTE for one phase. */
  runPhase(phase: Phase, options: PhaseRunOptions = {}): Promise<Result<PhaseRunReport, PhaseError>> {
    return this.#exclusive(() => this.#runPhase(phase, options));
  }

  /** Validates, enqueues actions, commits and dispatches effects (core-spec §2.5). */
  submitCommand(command: StateCommand): Promise<Result<SubmitReport, StateError>> {
    return this.#exclusive(() => this.#submit(command));
  }

  /** Runs the phase's hooks on one snapshot and merges their commands without committing (no fallback). */
  collectCommands(phase: Phase, options: PhaseRunOptions = {}): Promise<Result<StateCommand, PhaseError>> {
    return this.#exclusive(async () => {
      const hooks = this.#activeHooks(phase, options);
      const snapshot = this.store.snapshot();
      const gathered = await this.#runHooks(hooks, phase, snapshot, options);
      if (!gathered.ok) return gathered;
      return mergeAllCommands(
        gathered.value.map((g) => g.command),
        this.store.strategyOf,
      );
    });
  }

  /** Runs EXECUTE only (used after a collected command was submitted). */
  executeActions(phase: Phase, options: PhaseRunOptions = {}): Promise<Result<PhaseRunReport, PhaseError>> {
    return this.#exclusive(async () => {
      const executed = await this.#execute(phase, options);
      if (!executed.ok) return executed;
      return ok({ ...zeroReport(phase), ...executed.value });
    });
  }

  /** Request transforms of active plugins, in registration order. */
  applyRequestTransforms<R>(request: R): R {
    let out = request;
    for (const transform of this.env.transforms) out = transform(out) as R;
    return out;
  }

  // ---- internals ---------------------------------------------------------------------------------

  async #runPhase(phase: Phase, options: PhaseRunOptions): Promise<Result<PhaseRunReport, PhaseError>> {
    if (isCancelled(options)) return err({ code: 'cancelled' });
    const gathered = await this.#gather(phase, options);
    if (!gathered.ok) return gathered;
    if (isCancelled(options)) return err({ code: 'cancelled' });
    const executed = await this.#execute(phase, options);
    if (!executed.ok) return executed;
    return ok({
      ...gathered.value,
      rounds: executed.value.rounds,
      processedActions: executed.value.processedActions,
      skippedActions: executed.value.skippedActions,
      failedActions: executed.value.failedActions,
      commits: gathered.value.commits + executed.value.commits,
      effects: addEffectReports(gathered.value.effects, executed.value.effects),
    });
  }

  #activeHooks(phase: Phase, options: PhaseRunOptions): readonly HookRegistration[] {
    const hooks = this.env.hooks.get(phase) as readonly HookRegistration[];
    const filter = options.activeHookFilter ?? [];
    return filter.length === 0 ? hooks : hooks.filter((h) => filter.includes(h.pluginId));
  }

  #context(phase: Phase, snapshot: Snapshot, options: PhaseRunOptions): PhaseContext {
    return { phase, snapshot, input: options.input ?? EMPTY_INPUT };
  }

  /** Runs hooks concurrently on one snapshot; results are indexed, the first error by index wins. */
  async #runHooks(
    hooks: readonly HookRegistration[],
    phase: Phase,
    snapshot: Snapshot,
    options: PhaseRunOptions,
  ): Promise<Result<{ index: number; command: StateCommand }[], PhaseError>> {
    const ctx = this.#context(phase, snapshot, options);
    const settled = await Promise.allSettled(hooks.map(async (h) => h.hook(ctx)));
    const commands: { index: number; command: StateCommand }[] = [];
    for (let index = 0; index < settled.length; index++) {
      const s = settled[index] as PromiseSettledResult<StateCommand>;
      if (s.status === 'rejected') return err(hookError(s.reason, phase, (hooks[index] as HookRegistration).pluginId));
      const command = s.value;
      if (command.baseRevision === undefined) command.withBaseRevision(snapshot.revision);
      if (!command.isEmpty()) commands.push({ index, command });
    }
    return ok(commands);
  }

  async #gather(
    phase: Phase,
    options: PhaseRunOptions,
  ): Promise<Result<Omit<PhaseRunReport, 'rounds' | 'processedActions' | 'skippedActions' | 'failedActions'>, PhaseError>> {
    const hooks = this.#activeHooks(phase, options);
    const base = { phase, hooksRun: hooks.length, deferredHooks: 0, commits: 0, effects: emptyEffectReport() };
    if (hooks.length === 0) return ok(base);
    const snapshot = this.store.snapshot();
    const gathered = await this.#runHooks(hooks, phase, snapshot, options);
    if (!gathered.ok) return gathered;
    const commands = gathered.value;
    if (commands.length === 0) return ok(base);

    // Greedy partition in registration order: a command is deferred when one of its exclusive keys
    // is already claimed by an earlier command of the batch. Commutative keys never defer.
    const claimed = new Set<string>();
    const batch: StateCommand[] = [];
    const deferred: number[] = [];
    for (const { index, command } of commands) {
      const exclusive = [...new Set(command.touchedKeys)].filter((k) => this.store.strategyOf(k) === 'exclusive');
      if (exclusive.some((k) => claimed.has(k))) {
        deferred.push(index);
        continue;
      }
      for (const k of exclusive) claimed.add(k);
      batch.push(command);
    }

    let effects = emptyEffectReport();
    let commits = 0;
    const merged = mergeAllCommands(batch, this.store.strategyOf);
    if (!merged.ok) return merged;
    const submitted = await this.#submit(merged.value);
    if (!submitted.ok) return submitted;
    effects = addEffectReports(effects, submitted.value.effects);
    commits++;

    // Deferred hooks re-run one by one on a fresh snapshot; their first-run commands are discarded.
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
      effects = addEffectReports(effects, again.value.effects);
      commits++;
    }
    return ok({ ...base, deferredHooks: deferred.length, commits, effects });
  }

  async #execute(
    phase: Phase,
    options: PhaseRunOptions,
  ): Promise<
    Result<
      Pick<PhaseRunReport, 'rounds' | 'processedActions' | 'skippedActions' | 'failedActions' | 'commits' | 'effects'>,
      PhaseError
    >
  > {
    let rounds = 0;
    let processed = 0;
    let failed = 0;
    let commits = 0;
    let effects = emptyEffectReport();
    const handlers = this.env.actionHandlers;
    for (;;) {
      const queue = this.store.snapshot().getOrDefault(PendingScheduledActions);
      const matching = queue.flatMap((envelope) => {
        const registration = envelope.action.phase === phase ? handlers.get(envelope.action.key) : undefined;
        return registration === undefined ? [] : [{ envelope, registration }];
      });
      if (matching.length === 0) {
        return ok({ rounds, processedActions: processed, skippedActions: queue.length, failedActions: failed, commits, effects });
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
          effects = addEffectReports(effects, submitted.value.effects);
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

  async #submit(command: StateCommand): Promise<Result<SubmitReport, StateError>> {
    for (const action of command.scheduledActions) {
      if (!this.env.actionHandlers.has(action.key)) return err({ code: 'unknown_scheduled_action_handler', key: action.key });
    }
    for (const effect of command.effects) {
      if (!this.env.effectHandlers.has(effect.key)) return err({ code: 'unknown_effect_handler', key: effect.key });
    }
    const patch = command.patch.clone();
    const firstId = this.#nextId;
    command.scheduledActions.forEach((action, i) => {
      patch.update(PendingScheduledActions, { op: 'push', envelope: { id: firstId + i, action } });
    });
    const committed = this.store.commit(patch);
    if (!committed.ok) return committed;
    this.#nextId += command.scheduledActions.length;
    const effects = await this.#dispatchEffects(command, this.store.snapshot());
    return ok({ revision: committed.value, effects });
  }

  /** Sequential, in order, against the post-commit snapshot; failures are recorded, never propagated. */
  async #dispatchEffects(command: StateCommand, snapshot: Snapshot): Promise<EffectReport> {
    if (command.effects.length === 0) return emptyEffectReport();
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
    effects: emptyEffectReport(),
  };
}
