import type { StateError } from '../../contract/errors.ts';
import { PHASES, type Phase } from '../../contract/phase.ts';
import { err, ok, type Result } from '../../contract/result.ts';
import { MutationBatch, type Writes } from '../state/mutation-batch.ts';
import type { Snapshot } from '../state/snapshot.ts';
import { mergeAllCommands, StateCommand, type TypedEffect } from '../state/state-command.ts';
import type { MergeStrategy } from '../state/state-key.ts';
import { errorText, StateFailure, type PhaseError } from './phase-error.ts';
import type { ExecutionEnv, HookRegistration, PhaseContext } from './plugin.ts';
import { addEffectReports, emptyEffectReport, type EffectRecord, type EffectReport, type PhaseRunReport } from './report.ts';
import { FailedScheduledActions, PendingScheduledActions, type ActionEnvelope } from './runtime-keys.ts';

/**
 * The phase engine as functions of data (core-spec §2). Each takes snapshots, commands and
 * registrations and returns what to commit, run or report; none calls a hook or a handler, waits,
 * keeps a counter or holds a lock. `PhaseRuntime` (src/runtime) interprets them: it holds the state,
 * the next action id and the lock, calls hooks and handlers, and dispatches effects (ADR 0005).
 */

/** Convergence bound of EXECUTE: at most this many rounds may do work (book: Scheduled Actions → 限制). */
export const DEFAULT_MAX_PHASE_ROUNDS = 16;

/** One hook's non-empty command and the hook's index in registration order. */
export interface Gathered {
  readonly index: number;
  readonly command: StateCommand;
}

/** How one hook or handler call ended: its command (nothing: it changes nothing), or what it threw or rejected with. */
export type Outcome = { readonly ok: true; readonly value: StateCommand | void } | { readonly ok: false; readonly reason: unknown };

/** A queued action this phase's EXECUTE runs, with its handler's registration. */
export interface RunnableAction {
  readonly envelope: ActionEnvelope;
  readonly registration: NonNullable<ReturnType<ExecutionEnv['actionHandlers']['get']>>;
}

type EffectRegistration = NonNullable<ReturnType<ExecutionEnv['effectHandlers']['get']>>;

const EMPTY_INPUT: Readonly<Record<string, unknown>> = Object.freeze({});
const NO_ACTIONS: readonly ActionEnvelope[] = Object.freeze([]);

/** The report of no effects (shared, frozen). */
export const NO_EFFECTS: EffectReport = Object.freeze(emptyEffectReport());

// ---- GATHER ---------------------------------------------------------------------------------------

/** The hooks of `phase` that run: every active plugin's, or those of the plugins in `filter` when it names any. */
export function activeHooks(env: ExecutionEnv, phase: Phase, filter: readonly string[] | undefined): readonly HookRegistration[] {
  const hooks = env.hooks.get(phase) as readonly HookRegistration[];
  return filter === undefined || filter.length === 0 ? hooks : hooks.filter((h) => filter.includes(h.pluginId));
}

/** What a hook or handler is given: the phase, one snapshot and the phase's input (`PhaseInputs`, the caller's contract). */
export function hookContext(phase: Phase, snapshot: Snapshot, input: object | undefined): PhaseContext {
  return { phase, snapshot, input: (input ?? EMPTY_INPUT) as unknown as PhaseContext['input'] };
}

/** What a hook or handler answered, as a command: nothing is the empty command (`HookResult`). */
export function commandOf(answer: StateCommand | void): StateCommand {
  return answer ?? StateCommand.empty();
}

/** The command a hook returned, based on the snapshot it saw unless it chose a base itself. */
export function basedOn(command: StateCommand, snapshot: Snapshot): StateCommand {
  if (command.baseRevision === undefined) command.withBaseRevision(snapshot.revision);
  return command;
}

/**
 * The hooks' outcomes read by index (never by settle order): the first failure by index, or every
 * non-empty command based on `snapshot`.
 */
export function gathered(hooks: readonly HookRegistration[], outcomes: readonly Outcome[], phase: Phase, snapshot: Snapshot): Result<Gathered[], PhaseError> {
  const commands: Gathered[] = [];
  for (let index = 0; index < outcomes.length; index++) {
    const o = outcomes[index] as Outcome;
    if (!o.ok) return err(hookError(o.reason, phase, (hooks[index] as HookRegistration).pluginId));
    if (o.value === undefined) continue;
    const command = basedOn(o.value, snapshot);
    if (!command.isEmpty()) commands.push({ index, command });
  }
  return ok(commands);
}

/**
 * GATHER's greedy partition in registration order: a command is deferred when one of its exclusive
 * keys is already claimed by an earlier command of the batch; commutative keys never defer. The
 * batch is merged into one command (one atomic commit); deferred hooks re-run one by one.
 */
export function partition(
  commands: readonly Gathered[],
  strategyOf: (key: string) => MergeStrategy,
): Result<{ readonly command: StateCommand; readonly deferred: readonly number[] }, StateError> {
  const claimed = new Set<string>();
  const batch: StateCommand[] = [];
  const deferred: number[] = [];
  for (const { index, command } of commands) {
    const ops = StateCommand.writesOf(command).ops;
    if (ops.some((op) => claimed.has(op.key) && strategyOf(op.key) === 'exclusive')) {
      deferred.push(index);
      continue;
    }
    for (const op of ops) if (strategyOf(op.key) === 'exclusive') claimed.add(op.key);
    batch.push(command);
  }
  const merged = batch.length === 1 ? ok(batch[0] as StateCommand) : mergeAllCommands(batch, strategyOf);
  return merged.ok ? ok({ command: merged.value, deferred }) : merged;
}

/** What a hook that threw or rejected is reported as (a `StateFailure` carries its own state error). */
export function hookError(reason: unknown, phase: Phase, pluginId: string): PhaseError {
  if (reason instanceof StateFailure) return reason.error;
  return { code: 'hook_failed', phase, pluginId, message: errorText(reason) };
}

// ---- submit (core-spec §2.5) ----------------------------------------------------------------------

/** Why `command` cannot be submitted: an action or effect with no registered handler. */
export function submitFailure(env: ExecutionEnv, command: StateCommand): StateError | undefined {
  for (const action of command.scheduledActions) {
    if (!env.actionHandlers.has(action.key)) return { code: 'unknown_scheduled_action_handler', key: action.key };
  }
  for (const effect of command.effects) {
    if (!env.effectHandlers.has(effect.key)) return { code: 'unknown_effect_handler', key: effect.key };
  }
  return undefined;
}

/**
 * The batch that commits `command`: its patch, with each scheduled action pushed onto the queue under
 * the ids `firstId`, `firstId + 1`, … (contiguous; the caller advances its counter by the number of
 * actions once the commit succeeded). A command without actions commits its own patch.
 */
export function queued(command: StateCommand, firstId: number): MutationBatch {
  if (command.scheduledActions.length === 0) return command.patch;
  const patch = new MutationBatch(command.baseRevision, [...StateCommand.writesOf(command).ops]);
  command.scheduledActions.forEach((action, i) => {
    patch.update(PendingScheduledActions, { op: 'push', envelope: { id: firstId + i, action } });
  });
  return patch;
}

/** What commits `command` (`queued`): a command without actions commits its own writes, without a batch made for them. */
export function queuedWrites(command: StateCommand, firstId: number): Writes {
  return command.scheduledActions.length === 0 ? StateCommand.writesOf(command) : queued(command, firstId);
}

/** The validated payload of an effect (its key has a handler: checked at submit), or why it is invalid. */
export function effectPayload(registration: EffectRegistration, effect: TypedEffect): Result<unknown, string> {
  const decoded = registration.spec.payload.safeParse(effect.payload);
  return decoded.success ? ok(decoded.data) : err(`invalid payload for ${effect.key}: ${decoded.error.message}`);
}

/** The record of one dispatched effect: the revision of the commit that carried it and, if it failed, why. */
export function effectRecord(effect: TypedEffect, revision: number, error: string | undefined): EffectRecord {
  const record = { key: effect.key, payload: effect.payload, revision };
  return error === undefined ? record : { ...record, error };
}

/** The report of the effects dispatched after one commit, from their records in dispatch order. */
export function effectReport(records: readonly EffectRecord[]): EffectReport {
  const failed = records.reduce((n, r) => (r.error === undefined ? n : n + 1), 0);
  return { attempted: records.length, dispatched: records.length - failed, failed, records };
}

// ---- EXECUTE (core-spec §2.4) ---------------------------------------------------------------------

/** The queued actions of `phase` that have a handler, in queue order, and the queue's length. */
export function runnableActions(
  env: ExecutionEnv,
  snapshot: Snapshot,
  phase: Phase,
): { readonly runnable: readonly RunnableAction[]; readonly queued: number } {
  const queue = snapshot.get(PendingScheduledActions) ?? NO_ACTIONS;
  const runnable: RunnableAction[] = [];
  for (const envelope of queue) {
    const registration = envelope.action.phase === phase ? env.actionHandlers.get(envelope.action.key) : undefined;
    if (registration !== undefined) runnable.push({ envelope, registration });
  }
  return { runnable, queued: queue.length };
}

/** Whether no queued action would run in this phase's EXECUTE. */
export function nothingToRun(env: ExecutionEnv, snapshot: Snapshot, phase: Phase): boolean {
  const queue = snapshot.get(PendingScheduledActions);
  if (queue === undefined) return true;
  for (const e of queue) if (e.action.phase === phase && env.actionHandlers.has(e.action.key)) return false;
  return true;
}

/**
 * The convergence bound: another working round after `rounds` is refused once `rounds` reached
 * `maxRounds` (a 16-deep cascade converges, a 17th working round fails; 0.6 checks before reading
 * the queue and so allows only 15, docs/parity.md).
 */
export function roundRefused(phase: Phase, rounds: number, maxRounds: number): PhaseError | undefined {
  return rounds >= maxRounds ? { code: 'phase_run_loop_exceeded', phase, maxRounds } : undefined;
}

/** The validated payload of a queued action, or why it is invalid. */
export function actionPayload({ envelope, registration }: RunnableAction): Result<unknown, string> {
  const decoded = registration.spec.payload.safeParse(envelope.action.payload);
  return decoded.success ? ok(decoded.data) : err(`invalid payload for ${envelope.action.key}: ${decoded.error.message}`);
}

/** A handler's command with the action taken off the queue in the same commit. */
export function completing(command: StateCommand, envelope: ActionEnvelope): StateCommand {
  return command.update(PendingScheduledActions, { op: 'remove', id: envelope.id });
}

/** The batch that moves a failed action to the dead-letter queue (both keys always registered: it cannot fail). */
export function deadLettered(envelope: ActionEnvelope, error: string): MutationBatch {
  return StateCommand.empty()
    .update(PendingScheduledActions, { op: 'remove', id: envelope.id })
    .update(FailedScheduledActions, { id: envelope.id, action: envelope.action, error }).patch;
}

// ---- reports --------------------------------------------------------------------------------------

export type GatherReport = Pick<PhaseRunReport, 'phase' | 'hooksRun' | 'deferredHooks' | 'commits' | 'effects'>;
export type ExecuteReport = Pick<PhaseRunReport, 'rounds' | 'processedActions' | 'skippedActions' | 'failedActions' | 'commits' | 'effects'>;

const IDLE_REPORTS = Object.fromEntries(PHASES.map((p) => [p, Object.freeze(zeroReport(p))])) as Readonly<Record<Phase, PhaseRunReport>>;

/** GATHER's result when its one hook wrote nothing, per phase (shared, frozen). */
export const ONE_HOOK_REPORTS = Object.freeze(
  Object.fromEntries(PHASES.map((p) => [p, Object.freeze(ok(Object.freeze({ phase: p, hooksRun: 1, deferredHooks: 0, commits: 0, effects: NO_EFFECTS })))])),
) as Readonly<Record<Phase, Result<GatherReport, PhaseError>>>;

/** GATHER's result when its one hook's command, without effects, was committed, per phase (shared, frozen). */
export const ONE_HOOK_COMMITTED = Object.freeze(
  Object.fromEntries(PHASES.map((p) => [p, Object.freeze(ok(Object.freeze({ phase: p, hooksRun: 1, deferredHooks: 0, commits: 1, effects: NO_EFFECTS })))])),
) as Readonly<Record<Phase, Result<GatherReport, PhaseError>>>;

/** EXECUTE's report when nothing was queued (shared, frozen). */
const IDLE_EXECUTE_REPORT: ExecuteReport = Object.freeze({
  rounds: 0,
  processedActions: 0,
  skippedActions: 0,
  failedActions: 0,
  commits: 0,
  effects: NO_EFFECTS,
});
const IDLE_EXECUTE: Result<ExecuteReport, PhaseError> = Object.freeze(ok(IDLE_EXECUTE_REPORT));

/** A phase run's result for one hook whose writes (`commits`: none, or one committed command) were all, nothing queued, per phase (shared, frozen). */
const oneHookRuns = (commits: number): Readonly<Record<Phase, Result<PhaseRunReport, PhaseError>>> =>
  Object.freeze(Object.fromEntries(PHASES.map((p) => [p, Object.freeze(ok(Object.freeze({ ...zeroReport(p), hooksRun: 1, commits })))]))) as Readonly<
    Record<Phase, Result<PhaseRunReport, PhaseError>>
  >;
const ONE_HOOK_QUIET_RUNS = oneHookRuns(0);
const ONE_HOOK_COMMITTED_RUNS = oneHookRuns(1);

/** A phase run's result from its GATHER and its EXECUTE (`phaseReport`), shared for the common run: one hook, nothing queued. */
export function phaseResult(g: GatherReport, e: ExecuteReport): Result<PhaseRunReport, PhaseError> {
  if (e === IDLE_EXECUTE_REPORT) {
    const committed = ONE_HOOK_COMMITTED[g.phase];
    if (committed.ok && g === committed.value) return ONE_HOOK_COMMITTED_RUNS[g.phase];
    const quiet = ONE_HOOK_REPORTS[g.phase];
    if (quiet.ok && g === quiet.value) return ONE_HOOK_QUIET_RUNS[g.phase];
  }
  return ok(phaseReport(g, e));
}

/** EXECUTE with nothing to run: `skipped` queued actions were for other phases. */
export function idleExecute(skipped: number): Result<ExecuteReport, PhaseError> {
  return skipped === 0 ? IDLE_EXECUTE : ok({ rounds: 0, processedActions: 0, skippedActions: skipped, failedActions: 0, commits: 0, effects: NO_EFFECTS });
}

/** A phase with nothing to do: no hook ran, `skipped` queued actions were for other phases. */
export function idleReport(phase: Phase, skipped: number): PhaseRunReport {
  return skipped === 0 ? IDLE_REPORTS[phase] : { ...IDLE_REPORTS[phase], skippedActions: skipped };
}

/** A phase run's report from its GATHER and its EXECUTE. */
export function phaseReport(g: GatherReport, e: ExecuteReport): PhaseRunReport {
  return {
    phase: g.phase,
    hooksRun: g.hooksRun,
    deferredHooks: g.deferredHooks,
    commits: g.commits + e.commits,
    rounds: e.rounds,
    processedActions: e.processedActions,
    skippedActions: e.skippedActions,
    failedActions: e.failedActions,
    effects: mergeEffects(g.effects, e.effects),
  };
}

export function mergeEffects(a: EffectReport, b: EffectReport): EffectReport {
  if (b.attempted === 0) return a;
  if (a.attempted === 0) return b;
  return addEffectReports(a, b);
}

export function zeroReport(phase: Phase): PhaseRunReport {
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
