import type { z } from 'zod';
import type { StateError } from '../../contract/errors.ts';
import type { Phase } from '../../contract/phase.ts';
import { err, ok, type Result } from '../../contract/result.ts';
import { extendBatch, mergeParallelBatch, MutationBatch, type MutationOp } from './mutation-batch.ts';
import type { MergeStrategy, StateKey } from './state-key.ts';

/** A scheduled action type: which phase's EXECUTE runs it, and its payload codec (book: Scheduled Actions). */
export interface ScheduledActionSpec<P, I = P> {
  readonly key: string;
  readonly phase: Phase;
  /** Validates the payload when the action runs; callers schedule its input form `I`. */
  readonly payload: z.ZodType<P, I>;
}

/** A fire-and-forget effect type, dispatched after commit (book: Effects). */
export interface EffectSpec<P> {
  readonly key: string;
  readonly payload: z.ZodType<P>;
}

export const defineAction = <S extends z.ZodType>(key: string, phase: Phase, payload: S): ScheduledActionSpec<z.output<S>, z.input<S>> =>
  Object.freeze({ key, phase, payload }) as ScheduledActionSpec<z.output<S>, z.input<S>>;

export const defineEffect = <P>(key: string, payload: z.ZodType<P>): EffectSpec<P> => Object.freeze({ key, payload });

export interface ScheduledAction {
  readonly phase: Phase;
  readonly key: string;
  readonly payload: unknown;
}

export interface TypedEffect {
  readonly key: string;
  readonly payload: unknown;
}

/** The shared empty lists of commands without actions or effects (never written to). */
const NO_ACTIONS: readonly ScheduledAction[] = [];
const NO_EFFECTS: readonly TypedEffect[] = [];

/**
 * What a hook, action handler or tool hands back: state writes, scheduled actions and effects
 * (core-spec §1.4). Builder methods mutate and return `this`; `extendCommand`/`mergeParallelCommands`
 * are pure and return new commands.
 */
export class StateCommand {
  readonly patch: MutationBatch;
  #actions: readonly ScheduledAction[];
  #effects: readonly TypedEffect[];

  constructor(
    patch: MutationBatch = new MutationBatch(),
    scheduledActions: readonly ScheduledAction[] = NO_ACTIONS,
    effects: readonly TypedEffect[] = NO_EFFECTS,
  ) {
    this.patch = patch;
    this.#actions = scheduledActions;
    this.#effects = effects;
  }

  /** Scheduled actions, in order (most commands have none: they share one empty list until the first). */
  get scheduledActions(): readonly ScheduledAction[] {
    return this.#actions;
  }

  /** Effects, in order (shared empty list until the first, as for actions). */
  get effects(): readonly TypedEffect[] {
    return this.#effects;
  }

  static empty(): StateCommand {
    return new StateCommand();
  }

  update<V, U>(key: StateKey<V, U>, update: U): this {
    this.patch.update(key, update);
    return this;
  }

  clear(key: StateKey<unknown, unknown> | string): this {
    this.patch.clear(key);
    return this;
  }

  scheduleAction<P, I>(spec: ScheduledActionSpec<P, I>, payload: I): this {
    const action = { phase: spec.phase, key: spec.key, payload };
    if (this.#actions === NO_ACTIONS) this.#actions = [action];
    else (this.#actions as ScheduledAction[]).push(action);
    return this;
  }

  emit<P>(spec: EffectSpec<P>, payload: P): this {
    const effect = { key: spec.key, payload };
    if (this.#effects === NO_EFFECTS) this.#effects = [effect];
    else (this.#effects as TypedEffect[]).push(effect);
    return this;
  }

  withBaseRevision(revision: number): this {
    this.patch.baseRevision = revision;
    return this;
  }

  get baseRevision(): number | undefined {
    return this.patch.baseRevision;
  }

  get touchedKeys(): readonly string[] {
    return this.patch.touchedKeys;
  }

  isEmpty(): boolean {
    return this.patch.isEmpty() && this.scheduledActions.length === 0 && this.effects.length === 0;
  }

  clone(): StateCommand {
    return new StateCommand(this.patch.clone(), [...this.scheduledActions], [...this.effects]);
  }

  /** `other` after this one, as a new command (see `extendCommand`). */
  extend(other: StateCommand): Result<StateCommand, StateError> {
    return extendCommand(this, other);
  }

  /** This command and `other` as if run in parallel, as a new command (see `mergeParallelCommands`). */
  mergeParallel(other: StateCommand, strategyOf: (key: string) => MergeStrategy): Result<StateCommand, StateError> {
    return mergeParallelCommands(this, other, strategyOf);
  }
}

/** Sequential composition of two commands (`extend`); fails only on a base-revision mismatch. */
export function extendCommand(left: StateCommand, right: StateCommand): Result<StateCommand, StateError> {
  const patch = extendBatch(left.patch, right.patch);
  if (!patch.ok) return patch;
  return ok(new StateCommand(patch.value, [...left.scheduledActions, ...right.scheduledActions], [...left.effects, ...right.effects]));
}

/** Parallel composition (`mergeParallel`): exclusive keys touched by both sides conflict. */
export function mergeParallelCommands(left: StateCommand, right: StateCommand, strategyOf: (key: string) => MergeStrategy): Result<StateCommand, StateError> {
  const patch = mergeParallelBatch(left.patch, right.patch, strategyOf);
  if (!patch.ok) return patch;
  return ok(new StateCommand(patch.value, [...left.scheduledActions, ...right.scheduledActions], [...left.effects, ...right.effects]));
}

/**
 * Folds `mergeParallelCommands` over `commands`, left to right, from the empty command — in one
 * pass (the fold would copy the accumulated arrays once per command). Same result, same first error.
 */
export function mergeAllCommands(commands: readonly StateCommand[], strategyOf: (key: string) => MergeStrategy): Result<StateCommand, StateError> {
  let base: number | undefined;
  const claimed = new Set<string>();
  const ops: MutationOp[] = [];
  const actions: ScheduledAction[] = [];
  const effects: TypedEffect[] = [];
  for (const command of commands) {
    const revision = command.baseRevision;
    if (revision !== undefined) {
      if (base === undefined) base = revision;
      else if (base !== revision) return err({ code: 'mutation_base_revision_mismatch', left: base, right: revision });
    }
    // Indexed loops: this runs once per command of a GATHER and is on the hot path.
    // Only exclusive keys can conflict, so only they are remembered.
    const commandOps = command.patch.ops;
    let exclusive: string[] | undefined;
    for (let i = 0; i < commandOps.length; i++) {
      const key = (commandOps[i] as MutationBatch['ops'][number]).key;
      if (strategyOf(key) !== 'exclusive') continue;
      if (claimed.has(key)) return err({ code: 'parallel_merge_conflict', key });
      (exclusive ??= []).push(key);
    }
    if (exclusive !== undefined) for (const key of exclusive) claimed.add(key);
    for (let i = 0; i < commandOps.length; i++) ops.push(commandOps[i] as MutationBatch['ops'][number]);
    if (command.scheduledActions.length > 0) actions.push(...command.scheduledActions);
    if (command.effects.length > 0) effects.push(...command.effects);
  }
  return ok(new StateCommand(new MutationBatch(base, ops), actions, effects));
}
