import type { StateError, UnknownKeyPolicy } from '../../contract/errors.ts';
import type { JsonValue } from '../../contract/json.ts';
import { err, ok, type Result } from '../../contract/result.ts';
import { MutationBatch } from './mutation-batch.ts';
import { Snapshot, type SnapshotDraft } from './snapshot.ts';
import { keyOptions, type AnyStateKey, type MergeStrategy, type StateKeyOptions } from './state-key.ts';

export interface RegisteredKey {
  readonly key: AnyStateKey;
  readonly options: StateKeyOptions;
  /** Name of the plugin that registered the key, if any. */
  readonly owner: string | undefined;
}

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

/**
 * The live state: a registry of keys, one immutable snapshot, commit hooks and installed plugins
 * (book: 状态与快照模型 → StateStore). Every operation is synchronous and deterministic.
 */
export class StateStore {
  #snapshot: Snapshot;
  readonly #keys: Map<string, RegisteredKey>;
  readonly #plugins = new Map<string, readonly string[]>();
  readonly #commitHooks: CommitHook[] = [];
  #exported: { readonly snapshot: Snapshot; readonly result: Result<PersistedState, StateError> } | undefined;

  constructor(keys: ReadonlyMap<string, RegisteredKey> = new Map()) {
    this.#keys = new Map(keys);
    this.#snapshot = new Snapshot(0, new Map());
  }

  get revision(): number {
    return this.#snapshot.revision;
  }

  snapshot(): Snapshot {
    return this.#snapshot;
  }

  // ---- registry ---------------------------------------------------------------------------------

  registerKey(key: AnyStateKey, options: Partial<StateKeyOptions> = {}, owner?: string): Result<void, StateError> {
    if (this.#keys.has(key.key)) return err({ code: 'key_already_registered', key: key.key });
    this.#keys.set(key.key, { key, options: keyOptions(options), owner });
    return ok(undefined);
  }

  /** Registers keys that are not yet registered; already-registered names are skipped silently. */
  registerKeys(keys: readonly KeyRegistration[], owner?: string): void {
    for (const { key, options } of keys) {
      if (!this.#keys.has(key.key)) this.#keys.set(key.key, { key, options: keyOptions(options), owner });
    }
  }

  registration(name: string): RegisteredKey | undefined {
    return this.#keys.get(name);
  }

  isRegistered(name: string): boolean {
    return this.#keys.has(name);
  }

  /** Merge strategy of a key; unregistered keys count as exclusive (core-spec §1.5). */
  readonly strategyOf = (name: string): MergeStrategy => this.#keys.get(name)?.key.merge ?? 'exclusive';

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
    if (this.#plugins.has(name)) return err({ code: 'plugin_already_installed', name });
    const names: string[] = [];
    for (const { key } of keys) {
      // A plugin has a handful of keys: a scan of the names so far costs less than a set per install.
      if (this.#keys.has(key.key) || names.includes(key.key)) return err({ code: 'key_already_registered', key: key.key });
      names.push(key.key);
    }
    for (const { key, options } of keys) this.#keys.set(key.key, { key, options: keyOptions(options), owner: name });
    this.#plugins.set(name, names);
    return ok(undefined);
  }

  /** Clears the plugin's keys (unless `retainOnUninstall`) in one commit, then unregisters them. */
  uninstallPlugin(name: string): Result<void, StateError> {
    const owned = this.#plugins.get(name);
    if (owned === undefined) return err({ code: 'plugin_not_installed', name });
    const clear = new MutationBatch(this.revision);
    for (const key of owned) {
      const reg = this.#keys.get(key);
      if (reg !== undefined && !reg.options.retainOnUninstall && this.#snapshot.has(key)) clear.clear(key);
    }
    // Based on the current revision and touching only registered keys: this commit cannot fail.
    this.commit(clear);
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

  /** `commit` for callers that need only its failure, if any (the new revision is `revision`). */
  tryCommit(batch: MutationBatch): StateError | undefined {
    const current = this.#snapshot;
    if (batch.isEmpty()) return undefined;
    if (batch.baseRevision !== undefined && batch.baseRevision !== current.revision) {
      return { code: 'revision_conflict', expected: batch.baseRevision, actual: current.revision };
    }
    for (const op of batch.ops) {
      if (!this.#keys.has(op.key)) return { code: 'unknown_key', key: op.key };
    }
    const next = Snapshot.draft(current);
    applyOps(next, batch, this.#keys);
    const snapshot = new Snapshot(current.revision + 1, next);
    this.#snapshot = snapshot;
    if (this.#commitHooks.length > 0) {
      const event: CommitEvent = { previousRevision: current.revision, newRevision: snapshot.revision, opCount: batch.ops.length, snapshot };
      for (const hook of [...this.#commitHooks]) hook(event);
    }
    return undefined;
  }

  /**
   * The snapshot the state would have after committing `batches` in order, without committing
   * anything (no revision checks, no bump, no hooks). Used for staged writes that are not yet
   * published (seed 003's batch publication barrier).
   */
  preview(batches: readonly MutationBatch[]): Result<Snapshot, StateError> {
    const current = this.#snapshot;
    if (batches.every((b) => b.isEmpty())) return ok(current);
    const next = Snapshot.draft(current);
    for (const batch of batches) {
      for (const op of batch.ops) if (!this.#keys.has(op.key)) return err({ code: 'unknown_key', key: op.key });
      applyOps(next, batch, this.#keys);
    }
    return ok(new Snapshot(current.revision, next));
  }

  // ---- persistence (core-spec §1.7) -------------------------------------------------------------

  /** Each persistent key with a value, encoded into the object `into` picks for it (none: left out), in name order; the first failure. */
  #exportInto(into: (options: StateKeyOptions) => Record<string, JsonValue> | undefined): StateError | undefined {
    let failure: StateError | undefined;
    Snapshot.forEachSorted(this.#snapshot, (name, value) => {
      const reg = this.#keys.get(name);
      if (failure !== undefined || reg === undefined || !reg.options.persistent) return;
      const target = into(reg.options);
      if (target === undefined) return;
      try {
        defineOwn(target, name, reg.key.encode(value));
      } catch (e) {
        failure = { code: 'key_encode', key: name, message: messageOf(e) };
      }
    });
    return failure;
  }

  #export(filter: (options: StateKeyOptions) => boolean): Result<PersistedState, StateError> {
    const extensions: Record<string, JsonValue> = {};
    const failure = this.#exportInto((o) => (filter(o) ? extensions : undefined));
    return failure !== undefined ? err(failure) : ok({ revision: this.revision, extensions });
  }

  /** Every persistent key that has a value, in all scopes, with the current revision; keys sorted. */
  exportPersisted(): Result<PersistedState, StateError> {
    // Snapshots are immutable, so the export of one can be reused until the next commit or restore.
    if (this.#exported?.snapshot === this.#snapshot) return this.#exported.result;
    const result = this.#export(() => true);
    this.#exported = { snapshot: this.#snapshot, result };
    return result;
  }

  /**
   * `exportThreadScoped` and `exportRunScoped` at once (one pass over the state, as a checkpoint
   * needs both).
   */
  exportByScope(): Result<{ readonly thread: PersistedState; readonly run: PersistedState }, StateError> {
    const thread: Record<string, JsonValue> = {};
    const run: Record<string, JsonValue> = {};
    const failure = this.#exportInto((o) => (o.scope === 'thread' ? thread : run));
    if (failure !== undefined) return err(failure);
    return ok({ thread: { revision: this.revision, extensions: thread }, run: { revision: this.revision, extensions: run } });
  }

  exportThreadScoped(): Result<PersistedState, StateError> {
    return this.#export((o) => o.scope === 'thread');
  }

  exportRunScoped(): Result<PersistedState, StateError> {
    return this.#export((o) => o.scope !== 'thread');
  }

  #decodeAll(
    persisted: PersistedState,
    policy: UnknownKeyPolicy,
    accept: (options: StateKeyOptions) => boolean,
  ): Result<Map<string, unknown>, StateError> {
    const decoded = new Map<string, unknown>();
    for (const name of Object.keys(persisted.extensions).sort()) {
      const reg = this.#keys.get(name);
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

  /** Replaces the whole state and takes the persisted revision. No commit hooks run. */
  restorePersisted(persisted: PersistedState, policy: UnknownKeyPolicy): Result<void, StateError> {
    const decoded = this.#decodeAll(persisted, policy, () => true);
    if (!decoded.ok) return decoded;
    const next = Snapshot.emptyDraft(this.#snapshot);
    for (const [name, value] of decoded.value) next.set(name, value);
    this.#snapshot = new Snapshot(persisted.revision, next);
    return ok(undefined);
  }

  /** Merges thread-scoped keys into the current state; other scopes are ignored; revision kept. */
  restoreThreadScoped(persisted: PersistedState, policy: UnknownKeyPolicy): Result<void, StateError> {
    const decoded = this.#decodeAll(persisted, policy, (o) => o.scope === 'thread');
    if (!decoded.ok) return decoded;
    this.#mergeValues(decoded.value);
    return ok(undefined);
  }

  /** Merges every known key into the current state, ignoring the persisted revision; no bump, no hooks. */
  applySeed(persisted: PersistedState, policy: UnknownKeyPolicy): Result<void, StateError> {
    const decoded = this.#decodeAll(persisted, policy, () => true);
    if (!decoded.ok) return decoded;
    this.#mergeValues(decoded.value);
    return ok(undefined);
  }

  /** Drops every run-scoped value (revision kept). */
  clearRunScoped(): void {
    const next = Snapshot.draft(this.#snapshot);
    next.forEachSorted((name) => {
      if (this.#keys.get(name)?.options.scope !== 'thread') next.delete(name);
    });
    this.#snapshot = new Snapshot(this.revision, next);
  }

  /**
   * A store for a new run of the same thread: same registrations, revision 0, run-scoped keys absent,
   * thread-scoped keys carried over (core-spec §1.8: 0.6 builds a fresh store per run).
   */
  beginRun(): StateStore {
    const store = new StateStore(this.#keys);
    for (const [name, keys] of this.#plugins) store.#plugins.set(name, keys);
    const carried = Snapshot.emptyDraft(this.#snapshot);
    Snapshot.forEachSorted(this.#snapshot, (name, value) => {
      if (this.#keys.get(name)?.options.scope === 'thread') carried.set(name, value);
    });
    store.#snapshot = new Snapshot(0, carried);
    return store;
  }

  #mergeValues(values: ReadonlyMap<string, unknown>): void {
    const next = Snapshot.draft(this.#snapshot);
    for (const [name, value] of values) next.set(name, value);
    this.#snapshot = new Snapshot(this.revision, next);
  }
}

/** Applies a batch's ops in order to a draft (keys already checked as registered). */
function applyOps(next: SnapshotDraft, batch: MutationBatch, keys: ReadonlyMap<string, RegisteredKey>): void {
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
