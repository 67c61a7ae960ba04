import { err, ok, type Result } from '../../contract/result.ts';
import type { StateError } from '../../contract/errors.ts';
import type { MergeStrategy, StateKey } from './state-key.ts';

/** One recorded write. Ops are data: the reducer is looked up at commit time from the registry. */
export type MutationOp = { readonly kind: 'update'; readonly key: string; readonly update: unknown } | { readonly kind: 'clear'; readonly key: string };

/** What a commit reads of a batch: its base revision and its ops (a batch, or a command's own writes). */
export interface Writes {
  readonly baseRevision: number | undefined;
  readonly ops: readonly MutationOp[];
}

/** The op list of every batch without ops (never written to: `#add` replaces it). */
const NO_OPS: readonly MutationOp[] = [];

/**
 * The writes of one hook, action handler or tool (core-spec §1.3). `touchedKeys` has one entry per
 * op, duplicates included (read from the ops: the hot paths walk the ops themselves). Builder
 * methods mutate and return `this`; `extend`/`mergeParallel` are pure.
 */
export class MutationBatch {
  baseRevision: number | undefined;
  #ops: readonly MutationOp[];

  constructor(baseRevision?: number, ops: readonly MutationOp[] = NO_OPS) {
    this.baseRevision = baseRevision;
    this.#ops = ops;
  }

  /** The ops, in order (read-only to callers: the builder methods add to them). */
  get ops(): readonly MutationOp[] {
    return this.#ops;
  }

  /** Adds an op (see `withOp`). */
  #add(op: MutationOp): void {
    this.#ops = withOp(this.#ops, op);
  }

  get touchedKeys(): string[] {
    return this.ops.map((o) => o.key);
  }

  update<V, U>(key: StateKey<V, U>, update: U): this {
    this.#add({ kind: 'update', key: key.key, update });
    return this;
  }

  /** Removes the key's value (back to absent). */
  clear(key: StateKey<unknown, unknown> | string): this {
    this.#add({ kind: 'clear', key: typeof key === 'string' ? key : key.key });
    return this;
  }

  isEmpty(): boolean {
    return this.ops.length === 0;
  }

  clone(): MutationBatch {
    return new MutationBatch(this.baseRevision, [...this.ops]);
  }
}

/** Lists shorter than this are copied to add an op; longer ones grow in place. */
const COPY_BELOW = 4;

/**
 * `ops` with `op` added: a list of one for the first op (`ops` is then the shared empty list, never
 * written to), a copy one longer while the list is short, then `push`. Most lists hold one to three
 * ops, and a first `push` would reserve room for seventeen; from four on, growth in place keeps long
 * batches linear. The list passed in must be the caller's own (it may be pushed to).
 */
export function withOp(ops: readonly MutationOp[], op: MutationOp): readonly MutationOp[] {
  const n = ops.length;
  if (n === 0) return [op];
  if (n >= COPY_BELOW) {
    (ops as MutationOp[]).push(op);
    return ops;
  }
  const next: MutationOp[] = new Array(n + 1);
  for (let i = 0; i < n; i++) next[i] = ops[i] as MutationOp;
  next[n] = op;
  return next;
}

export function reconcileBase(left: number | undefined, right: number | undefined): Result<number | undefined, StateError> {
  if (left !== undefined && right !== undefined && left !== right) {
    return err({ code: 'mutation_base_revision_mismatch', left, right });
  }
  return ok(left ?? right);
}

/** Sequential composition: `right`'s ops after `left`'s. */
export function extendBatch(left: MutationBatch, right: MutationBatch): Result<MutationBatch, StateError> {
  const base = reconcileBase(left.baseRevision, right.baseRevision);
  if (!base.ok) return base;
  return ok(new MutationBatch(base.value, [...left.ops, ...right.ops]));
}

/**
 * Parallel composition: fails with `parallel_merge_conflict` at the first key of `right` (in its
 * order) that `left` also touched and whose strategy is exclusive. Duplicates inside one side never
 * conflict. Unregistered keys count as exclusive (the `strategyOf` callback decides).
 */
export function mergeParallelBatch(left: MutationBatch, right: MutationBatch, strategyOf: (key: string) => MergeStrategy): Result<MutationBatch, StateError> {
  const base = reconcileBase(left.baseRevision, right.baseRevision);
  if (!base.ok) return base;
  if (left.touchedKeys.length > 0 && right.touchedKeys.length > 0) {
    const seen = new Set(left.touchedKeys);
    for (const key of right.touchedKeys) {
      if (seen.has(key) && strategyOf(key) === 'exclusive') return err({ code: 'parallel_merge_conflict', key });
    }
  }
  return ok(new MutationBatch(base.value, [...left.ops, ...right.ops]));
}
