import type { z } from 'zod';
import type { StateError } from '../../contract/errors.ts';
import type { Phase } from '../../contract/phase.ts';
import { err, ok, type Result } from '../../contract/result.ts';
import { extendBatch, mergeParallelBatch, MutationBatch, withOp, type MutationOp, type Writes } from './mutation-batch.ts';
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
/** The op list of commands without writes (never written to: `#add` replaces it). */
const NO_OPS: readonly MutationOp[] = Object.freeze([]);

/**
 * What a hook, action handler or tool hands back: state writes, scheduled actions and effects
 * (core-spec §1.4). Builder methods mutate and return `this`; `extendCommand`/`mergeParallelCommands`
 * are pure and return new commands.
 */
export class StateCommand {
  /**
   * The writes, held here until someone asks for them as a batch (`patch`): most commands are only
   * committed, and a batch object per command would be made for nothing. Once `#patch` exists it
   * holds them, and `#base` and `#ops` are no longer read.
   */
  #base: number | undefined;
  #ops: readonly MutationOp[];
  #patch: MutationBatch | undefined;
  #actions: readonly ScheduledAction[];
  #effects: readonly TypedEffect[];

  constructor(patch?: MutationBatch, scheduledActions: readonly ScheduledAction[] = NO_ACTIONS, effects: readonly TypedEffect[] = NO_EFFECTS) {
    this.#base = undefined;
    this.#ops = NO_OPS;
    this.#patch = patch;
    this.#actions = scheduledActions;
    this.#effects = effects;
  }

  /**
   * A command over `ops`, without a batch object until `patch` is asked for (`new StateCommand(new
   * MutationBatch(base, ops), …)` without the batch). The list becomes the command's own: it may be
   * written to, and the caller keeps no hold on it.
   */
  static fromOps(
    ops: readonly MutationOp[],
    base?: number,
    scheduledActions: readonly ScheduledAction[] = NO_ACTIONS,
    effects: readonly TypedEffect[] = NO_EFFECTS,
  ): StateCommand {
    const command = new StateCommand(undefined, scheduledActions, effects);
    command.#base = base;
    command.#ops = ops.length === 0 ? NO_OPS : ops;
    return command;
  }

  /**
   * The writes as a batch: made at the first ask over the command's writes, and the one place they
   * are kept from then on (what is written to it is the command's, and the reverse).
   */
  get patch(): MutationBatch {
    if (this.#patch === undefined) this.#patch = new MutationBatch(this.#base, this.#ops.length === 0 ? undefined : this.#ops);
    return this.#patch;
  }

  /** The writes, in order (the same list as `patch.ops`, without making the batch). */
  get ops(): readonly MutationOp[] {
    return this.#patch === undefined ? this.#ops : this.#patch.ops;
  }

  /**
   * The writes of `command` to commit: the command itself, or its `patch` when it was made by another
   * copy of this library (a plugin that bundles its own), whose commands have no `ops` of their own.
   */
  static writesOf(command: StateCommand): Writes {
    return #ops in command ? command : (command as { readonly patch: MutationBatch }).patch;
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

  /** Adds a write to the command's own list (see `withOp`). */
  #add(op: MutationOp): void {
    this.#ops = withOp(this.#ops, op);
  }

  update<V, U>(key: StateKey<V, U>, update: U): this {
    if (this.#patch !== undefined) this.#patch.update(key, update);
    else this.#add({ kind: 'update', key: key.key, update });
    return this;
  }

  clear(key: StateKey<unknown, unknown> | string): this {
    if (this.#patch !== undefined) this.#patch.clear(key);
    else this.#add({ kind: 'clear', key: typeof key === 'string' ? key : key.key });
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
    if (this.#patch !== undefined) this.#patch.baseRevision = revision;
    else this.#base = revision;
    return this;
  }

  get baseRevision(): number | undefined {
    return this.#patch === undefined ? this.#base : this.#patch.baseRevision;
  }

  get touchedKeys(): readonly string[] {
    return this.ops.map((o) => o.key);
  }

  isEmpty(): boolean {
    return this.ops.length === 0 && this.scheduledActions.length === 0 && this.effects.length === 0;
  }

  clone(): StateCommand {
    return StateCommand.fromOps([...this.ops], this.baseRevision, [...this.scheduledActions], [...this.effects]);
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
    const commandOps = StateCommand.writesOf(command).ops;
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
  return ok(StateCommand.fromOps(ops, base, actions, effects));
}
