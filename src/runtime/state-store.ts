import type { StateError, UnknownKeyPolicy } from '../contract/errors.ts';
import { err, ok, type Result } from '../contract/result.ts';
import type { MutationBatch, Writes } from '../core/state/mutation-batch.ts';
import { Snapshot } from '../core/state/snapshot.ts';
import { keyOptions, type AnyStateKey, type MergeStrategy, type StateKeyOptions } from '../core/state/state-key.ts';
import {
  carriedToNewRun,
  commitFailure,
  committed,
  decodePersisted,
  exportAll,
  exportByScope,
  exportState,
  installFailure,
  merged,
  previewBatches,
  replaced,
  strategyIn,
  uninstallBatch,
  withoutRunScoped,
  type CommitEvent,
  type CommitHook,
  type KeyRegistration,
  type PersistedState,
  type RegisteredKey,
} from '../core/state/state-ops.ts';

const NO_KEYS: ReadonlyMap<string, RegisteredKey> = new Map();
const NO_VALUES: ReadonlyMap<string, unknown> = new Map();

/**
 * The live state (book: 状态与快照模型 → StateStore): the one place that holds the current snapshot
 * and the key registry and changes them, each change computed by the pure functions of
 * `core/state/state-ops.ts`. Commit hooks run here. Every operation is synchronous and deterministic.
 */
export class StateStore {
  #snapshot: Snapshot;
  /** The registry and the installed plugins; shared with the store a run began from until one of them changes (copy on write). */
  #keys: Map<string, RegisteredKey>;
  #plugins: Map<string, readonly string[]>;
  #shared = false;
  readonly #commitHooks: CommitHook[] = [];
  /** The last export and the snapshot it is of (two fields, not a record per export: the loop exports every step). */
  #exportedOf: Snapshot | undefined;
  #exported: Result<PersistedState, StateError> | undefined;

  /** A store over a copy of `keys`, at revision 0 with nothing in it. (`beginRun` passes `from`: the store a new run begins from.) */
  constructor(keys: ReadonlyMap<string, RegisteredKey> = NO_KEYS, from?: StateStore) {
    if (from === undefined) {
      this.#keys = new Map(keys);
      this.#plugins = new Map();
      this.#snapshot = new Snapshot(0, NO_VALUES);
      return;
    }
    this.#keys = from.#keys;
    this.#plugins = from.#plugins;
    this.#shared = true;
    from.#shared = true;
    this.#snapshot = carriedToNewRun(from.#keys, from.#snapshot);
  }

  /** Before the registry or the plugins change: this store's own copies of both, if it shares them. */
  #own(): void {
    if (!this.#shared) return;
    this.#keys = new Map(this.#keys);
    this.#plugins = new Map(this.#plugins);
    this.#shared = false;
  }

  get revision(): number {
    return this.#snapshot.revision;
  }

  snapshot(): Snapshot {
    return this.#snapshot;
  }

  /** The key registry, read-only (for the core's functions of state). */
  get keys(): ReadonlyMap<string, RegisteredKey> {
    return this.#keys;
  }

  // ---- registry ---------------------------------------------------------------------------------

  registerKey(key: AnyStateKey, options: Partial<StateKeyOptions> = {}, owner?: string): Result<void, StateError> {
    if (this.#keys.has(key.key)) return err({ code: 'key_already_registered', key: key.key });
    this.#own();
    this.#keys.set(key.key, { key, options: keyOptions(options), owner });
    return ok(undefined);
  }

  /** Registers keys that are not yet registered; already-registered names are skipped silently. */
  registerKeys(keys: readonly KeyRegistration[], owner?: string): void {
    for (const { key, options } of keys) {
      if (this.#keys.has(key.key)) continue;
      this.#own();
      this.#keys.set(key.key, { key, options: keyOptions(options), owner });
    }
  }

  registration(name: string): RegisteredKey | undefined {
    return this.#keys.get(name);
  }

  isRegistered(name: string): boolean {
    return this.#keys.has(name);
  }

  /** Merge strategy of a key; unregistered keys count as exclusive (core-spec §1.5). */
  readonly strategyOf = (name: string): MergeStrategy => strategyIn(this.#keys, name);

  onCommit(hook: CommitHook): () => void {
    this.#commitHooks.push(hook);
    return () => {
      const i = this.#commitHooks.indexOf(hook);
      if (i >= 0) this.#commitHooks.splice(i, 1);
    };
  }

  // ---- plugins ----------------------------------------------------------------------------------

  /** Registers a plugin's keys atomically: every check runs before anything is inserted. */
  installPlugin(name: string, keys: readonly KeyRegistration[]): Result<void, StateError> {
    const failure = installFailure(this.#keys, this.#plugins, name, keys);
    if (failure !== undefined) return err(failure);
    this.#own();
    const names: string[] = [];
    for (const { key, options } of keys) {
      this.#keys.set(key.key, { key, options: keyOptions(options), owner: name });
      names.push(key.key);
    }
    this.#plugins.set(name, names);
    return ok(undefined);
  }

  /** Clears the plugin's keys (unless `retainOnUninstall`) in one commit, then unregisters them. */
  uninstallPlugin(name: string): Result<void, StateError> {
    const owned = this.#plugins.get(name);
    if (owned === undefined) return err({ code: 'plugin_not_installed', name });
    // Based on the current revision and touching only registered keys: this commit cannot fail.
    this.commit(uninstallBatch(this.#keys, this.#snapshot, owned));
    this.#own();
    for (const key of owned) {
      const reg = this.#keys.get(key);
      if (reg !== undefined && !reg.options.retainOnUninstall) this.#keys.delete(key);
    }
    this.#plugins.delete(name);
    return ok(undefined);
  }

  hasPlugin(name: string): boolean {
    return this.#plugins.has(name);
  }

  installedPlugins(): string[] {
    return [...this.#plugins.keys()];
  }

  // ---- commit -----------------------------------------------------------------------------------

  /**
   * Applies a batch atomically, in the exact order of core-spec §1.5: empty → no bump; stale base
   * revision → `revision_conflict`; unregistered key → `unknown_key`; apply ops in order; revision + 1;
   * commit hooks in registration order. A failed commit changes nothing.
   */
  commit(batch: MutationBatch): Result<number, StateError> {
    const failure = this.tryCommit(batch);
    return failure === undefined ? ok(this.#snapshot.revision) : err(failure);
  }

  /** `commit` for callers that need only its failure, if any (the new revision is `revision`); a command's own writes will do. */
  tryCommit(batch: Writes): StateError | undefined {
    const current = this.#snapshot;
    const failure = commitFailure(this.#keys, current, batch);
    if (failure !== undefined || batch.ops.length === 0) return failure;
    const snapshot = committed(this.#keys, current, batch);
    this.#snapshot = snapshot;
    if (this.#commitHooks.length > 0) {
      const event: CommitEvent = { previousRevision: current.revision, newRevision: snapshot.revision, opCount: batch.ops.length, snapshot };
      for (const hook of [...this.#commitHooks]) hook(event);
    }
    return undefined;
  }

  /** The snapshot after `batches` in order, without committing anything (see `previewBatches`). */
  preview(batches: readonly MutationBatch[]): Result<Snapshot, StateError> {
    return previewBatches(this.#keys, this.#snapshot, batches);
  }

  // ---- persistence (core-spec §1.7) -------------------------------------------------------------

  /** Every persistent key that has a value, in all scopes, with the current revision; keys sorted. */
  exportPersisted(): Result<PersistedState, StateError> {
    // Snapshots are immutable, so the export of one can be reused until the next commit or restore.
    if (this.#exportedOf === this.#snapshot && this.#exported !== undefined) return this.#exported;
    const result = exportAll(this.#keys, this.#snapshot);
    this.#exportedOf = this.#snapshot;
    this.#exported = result;
    return result;
  }

  /** `exportThreadScoped` and `exportRunScoped` at once (one pass over the state, as a checkpoint needs both). */
  exportByScope(): Result<{ readonly thread: PersistedState; readonly run: PersistedState }, StateError> {
    return exportByScope(this.#keys, this.#snapshot);
  }

  exportThreadScoped(): Result<PersistedState, StateError> {
    return exportState(this.#keys, this.#snapshot, (o) => o.scope === 'thread');
  }

  exportRunScoped(): Result<PersistedState, StateError> {
    return exportState(this.#keys, this.#snapshot, (o) => o.scope !== 'thread');
  }

  /** Replaces the whole state and takes the persisted revision. No commit hooks run. */
  restorePersisted(persisted: PersistedState, policy: UnknownKeyPolicy): Result<void, StateError> {
    const decoded = decodePersisted(this.#keys, persisted, policy, () => true);
    if (!decoded.ok) return decoded;
    this.#snapshot = replaced(this.#snapshot, decoded.value, persisted.revision);
    return ok(undefined);
  }

  /** Merges thread-scoped keys into the current state; other scopes are ignored; revision kept. */
  restoreThreadScoped(persisted: PersistedState, policy: UnknownKeyPolicy): Result<void, StateError> {
    const decoded = decodePersisted(this.#keys, persisted, policy, (o) => o.scope === 'thread');
    if (!decoded.ok) return decoded;
    this.#snapshot = merged(this.#snapshot, decoded.value);
    return ok(undefined);
  }

  /** Merges every known key into the current state, ignoring the persisted revision; no bump, no hooks. */
  applySeed(persisted: PersistedState, policy: UnknownKeyPolicy): Result<void, StateError> {
    const decoded = decodePersisted(this.#keys, persisted, policy, () => true);
    if (!decoded.ok) return decoded;
    this.#snapshot = merged(this.#snapshot, decoded.value);
    return ok(undefined);
  }

  /** Drops every run-scoped value (revision kept). */
  clearRunScoped(): void {
    this.#snapshot = withoutRunScoped(this.#keys, this.#snapshot);
  }

  /**
   * A store for a new run of the same thread: same registrations, revision 0, run-scoped keys absent,
   * thread-scoped keys carried over (core-spec §1.8: 0.6 builds a fresh store per run). The two
   * stores share the registry until either changes it.
   */
  beginRun(): StateStore {
    return new StateStore(NO_KEYS, this);
  }
}
