import type { StateError, UnknownKeyPolicy } from '../../contract/errors.ts';
import type { JsonValue } from '../../contract/json.ts';
import { err, ok, type Result } from '../../contract/result.ts';
import { MutationBatch, type MutationOp, type Writes } from './mutation-batch.ts';
import { Snapshot, type SnapshotDraft } from './snapshot.ts';
import type { AnyStateKey, MergeStrategy, StateKeyOptions } from './state-key.ts';

/**
 * The state as data: a registry of keys and one immutable snapshot, changed only by the functions of
 * this module, each of which returns a new value (book: 状态与快照模型). The runtime's `StateStore`
 * holds the current pair, runs commit hooks and is the only thing that changes.
 */

export interface RegisteredKey {
  readonly key: AnyStateKey;
  readonly options: StateKeyOptions;
  /** Name of the plugin that registered the key, if any. */
  readonly owner: string | undefined;
}

/** Every registered key by name. */
export type KeyRegistry = ReadonlyMap<string, RegisteredKey>;

export interface CommitEvent {
  readonly previousRevision: number;
  readonly newRevision: number;
  readonly opCount: number;
  readonly snapshot: Snapshot;
}

export type CommitHook = (event: CommitEvent) => void;

/** Serialised state as stores keep it: `extensions` is keyed by state-key name, sorted. */
export interface PersistedState {
  readonly revision: number;
  readonly extensions: { readonly [key: string]: JsonValue };
}

export interface KeyRegistration {
  readonly key: AnyStateKey;
  readonly options?: Partial<StateKeyOptions>;
}

/** Merge strategy of a key; unregistered keys count as exclusive (core-spec §1.5). */
export function strategyIn(keys: KeyRegistry, name: string): MergeStrategy {
  return keys.get(name)?.key.merge ?? 'exclusive';
}

/**
 * Why `batch` cannot be committed on `snapshot`, in the order of core-spec §1.5 (stale base revision
 * → `revision_conflict`; unregistered key → `unknown_key`), or `undefined`.
 */
export function commitFailure(keys: KeyRegistry, snapshot: Snapshot, batch: Writes): StateError | undefined {
  const ops = batch.ops;
  if (ops.length === 0) return undefined;
  const base = batch.baseRevision;
  if (base !== undefined && base !== snapshot.revision) return { code: 'revision_conflict', expected: base, actual: snapshot.revision };
  for (let i = 0; i < ops.length; i++) {
    const key = (ops[i] as MutationOp).key;
    if (!keys.has(key)) return { code: 'unknown_key', key };
  }
  return undefined;
}

/**
 * The snapshot after `batch` (core-spec §1.5): empty → the same snapshot; otherwise the ops applied
 * in order and the revision + 1. A failure changes nothing.
 */
export function commitBatch(keys: KeyRegistry, snapshot: Snapshot, batch: Writes): Result<Snapshot, StateError> {
  const failure = commitFailure(keys, snapshot, batch);
  if (failure !== undefined) return err(failure);
  return ok(committed(keys, snapshot, batch));
}

/** `commitBatch` for a batch `commitFailure` accepted (the hot path: no result object). */
export function committed(keys: KeyRegistry, snapshot: Snapshot, batch: Writes): Snapshot {
  const ops = batch.ops;
  return ops.length === 0 ? snapshot : Snapshot.applied(snapshot, snapshot.revision + 1, ops, keys);
}

/**
 * The snapshot the state would have after `batches` in order, with its revision unchanged (no
 * revision checks): staged writes that are not yet published (seed 003's publication barrier).
 */
export function previewBatches(keys: KeyRegistry, snapshot: Snapshot, batches: readonly MutationBatch[]): Result<Snapshot, StateError> {
  if (batches.every((b) => b.isEmpty())) return ok(snapshot);
  const next = Snapshot.draft(snapshot);
  for (const batch of batches) {
    for (const op of batch.ops) if (!keys.has(op.key)) return err({ code: 'unknown_key', key: op.key });
    applyOps(next, batch, keys);
  }
  return ok(new Snapshot(snapshot.revision, next));
}

// ---- plugins --------------------------------------------------------------------------------------

/** Why the plugin `name` with `keys` cannot be installed next to `installed` (every check before any insert). */
export function installFailure(
  registry: KeyRegistry,
  installed: ReadonlyMap<string, readonly string[]>,
  name: string,
  keys: readonly KeyRegistration[],
): StateError | undefined {
  if (installed.has(name)) return { code: 'plugin_already_installed', name };
  for (let i = 0; i < keys.length; i++) {
    const key = (keys[i] as KeyRegistration).key.key;
    // A plugin has a handful of keys: a scan of the names so far costs less than a set per install.
    if (registry.has(key)) return { code: 'key_already_registered', key };
    for (let j = 0; j < i; j++) if ((keys[j] as KeyRegistration).key.key === key) return { code: 'key_already_registered', key };
  }
  return undefined;
}

/** The batch that clears a plugin's keys on uninstall (those not `retainOnUninstall` that have a value). */
export function uninstallBatch(registry: KeyRegistry, snapshot: Snapshot, owned: readonly string[]): MutationBatch {
  const clear = new MutationBatch(snapshot.revision);
  for (const key of owned) {
    const reg = registry.get(key);
    if (reg !== undefined && !reg.options.retainOnUninstall && snapshot.has(key)) clear.clear(key);
  }
  return clear;
}

// ---- persistence (core-spec §1.7) -----------------------------------------------------------------

/** Each persistent key with a value, encoded into the object `into` picks for it (none: left out), in name order; the first failure. */
export function exportInto(
  registry: KeyRegistry,
  snapshot: Snapshot,
  into: (options: StateKeyOptions) => Record<string, JsonValue> | undefined,
): StateError | undefined {
  const pass: ExportRun = { registry, all: undefined, thread: undefined, run: undefined, into, failure: undefined };
  Snapshot.visitSortedWith(snapshot, pass, exportOne);
  return pass.failure;
}

/**
 * One export pass: where each persistent key's encoded value goes — `all` (every key), or `thread`
 * and `run` by scope, or what `into` picks — and the first failure. One object per pass, visited by
 * one module-level function: a pass allocates no closure (the loop exports its state every step).
 */
interface ExportRun {
  readonly registry: KeyRegistry;
  readonly all: Record<string, JsonValue> | undefined;
  readonly thread: Record<string, JsonValue> | undefined;
  readonly run: Record<string, JsonValue> | undefined;
  readonly into: ((options: StateKeyOptions) => Record<string, JsonValue> | undefined) | undefined;
  failure: StateError | undefined;
}

/** Visits one present key of an export pass; true (stop) at the first failure. */
function exportOne(pass: ExportRun, name: string, value: unknown): boolean {
  const reg = pass.registry.get(name);
  if (reg === undefined || !reg.options.persistent) return false;
  const target = pass.all ?? (pass.into !== undefined ? pass.into(reg.options) : reg.options.scope === 'thread' ? pass.thread : pass.run);
  if (target === undefined) return false;
  try {
    defineOwn(target, name, reg.key.encode(value));
    return false;
  } catch (e) {
    pass.failure = { code: 'key_encode', key: name, message: messageOf(e) };
    return true;
  }
}

/** The persistent keys `filter` accepts, with the snapshot's revision; keys sorted. */
export function exportState(registry: KeyRegistry, snapshot: Snapshot, filter: (options: StateKeyOptions) => boolean): Result<PersistedState, StateError> {
  const extensions: Record<string, JsonValue> = {};
  const failure = exportInto(registry, snapshot, (o) => (filter(o) ? extensions : undefined));
  return failure !== undefined ? err(failure) : ok({ revision: snapshot.revision, extensions });
}

/** Every persistent key, with the snapshot's revision; keys sorted (`exportState` accepting all, without its closures). */
export function exportAll(registry: KeyRegistry, snapshot: Snapshot): Result<PersistedState, StateError> {
  const extensions: Record<string, JsonValue> = {};
  const pass: ExportRun = { registry, all: extensions, thread: undefined, run: undefined, into: undefined, failure: undefined };
  Snapshot.visitSortedWith(snapshot, pass, exportOne);
  return pass.failure !== undefined ? err(pass.failure) : ok({ revision: snapshot.revision, extensions });
}

/** Thread-scoped and run-scoped persistent keys in one pass (as a checkpoint needs both). */
export function exportByScope(
  registry: KeyRegistry,
  snapshot: Snapshot,
): Result<{ readonly thread: PersistedState; readonly run: PersistedState }, StateError> {
  const thread: Record<string, JsonValue> = {};
  const run: Record<string, JsonValue> = {};
  const pass: ExportRun = { registry, all: undefined, thread, run, into: undefined, failure: undefined };
  Snapshot.visitSortedWith(snapshot, pass, exportOne);
  const failure = pass.failure;
  if (failure !== undefined) return err(failure);
  return ok({ thread: { revision: snapshot.revision, extensions: thread }, run: { revision: snapshot.revision, extensions: run } });
}

/** The persisted values of the keys `accept` takes, decoded by their codecs, in name order. */
export function decodePersisted(
  registry: KeyRegistry,
  persisted: PersistedState,
  policy: UnknownKeyPolicy,
  accept: (options: StateKeyOptions) => boolean,
): Result<Map<string, unknown>, StateError> {
  const decoded = new Map<string, unknown>();
  for (const name of Object.keys(persisted.extensions).sort()) {
    const reg = registry.get(name);
    if (reg === undefined) {
      if (policy === 'error') return err({ code: 'unknown_key', key: name });
      continue;
    }
    if (!accept(reg.options)) continue;
    const parsed = reg.key.codec.safeParse(persisted.extensions[name]);
    if (!parsed.success) return err({ code: 'key_decode', key: name, message: parsed.error.message });
    decoded.set(name, parsed.data);
  }
  return ok(decoded);
}

/** Exactly `values` at `revision` (a restore: nothing of `snapshot` kept but its layout). */
export function replaced(snapshot: Snapshot, values: ReadonlyMap<string, unknown>, revision: number): Snapshot {
  const next = Snapshot.emptyDraft(snapshot);
  for (const [name, value] of values) next.set(name, value);
  return new Snapshot(revision, next);
}

/** `snapshot` with `values` written over it; revision kept. */
export function merged(snapshot: Snapshot, values: ReadonlyMap<string, unknown>): Snapshot {
  const next = Snapshot.draft(snapshot);
  for (const [name, value] of values) next.set(name, value);
  return new Snapshot(snapshot.revision, next);
}

/** `snapshot` without run-scoped values (revision kept). */
export function withoutRunScoped(registry: KeyRegistry, snapshot: Snapshot): Snapshot {
  const next = Snapshot.draft(snapshot);
  next.forEachSorted((name) => {
    if (registry.get(name)?.options.scope !== 'thread') next.delete(name);
  });
  return new Snapshot(snapshot.revision, next);
}

/**
 * A new run's snapshot of the same thread: thread-scoped values carried over, run-scoped absent,
 * revision 0 (core-spec §1.8: 0.6 builds a fresh store per run).
 */
export function carriedToNewRun(registry: KeyRegistry, snapshot: Snapshot): Snapshot {
  const carried = Snapshot.emptyDraft(snapshot);
  Snapshot.forEachSorted(snapshot, (name, value) => {
    if (registry.get(name)?.options.scope === 'thread') carried.set(name, value);
  });
  return new Snapshot(0, carried);
}

/** Applies a batch's ops in order to a draft (keys already checked as registered). */
function applyOps(next: SnapshotDraft, batch: MutationBatch, keys: KeyRegistry): void {
  for (const op of batch.ops) {
    if (op.kind === 'clear') {
      next.delete(op.key);
      continue;
    }
    const { key } = keys.get(op.key) as RegisteredKey;
    next.set(op.key, key.apply(next.has(op.key) ? next.get(op.key) : key.init(), op.update));
  }
}

/** Sets an own property, so that no key name (not even "__proto__") is lost. */
function defineOwn(target: Record<string, JsonValue>, name: string, value: JsonValue): void {
  if (name === '__proto__') Object.defineProperty(target, name, { value, enumerable: true, writable: true, configurable: true });
  else target[name] = value;
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
