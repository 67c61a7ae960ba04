import type { StateKey } from './state-key.ts';

/**
 * An immutable, revisioned view of the state (book: 状态与快照模型 → Snapshot). Absent ≠ default:
 * `get` returns `undefined` for a key that was never written.
 */
export class Snapshot {
  readonly revision: number;
  readonly #values: ReadonlyMap<string, unknown>;

  constructor(revision: number, values: ReadonlyMap<string, unknown>) {
    this.revision = revision;
    this.#values = values;
    Object.freeze(this);
  }

  get<V>(key: StateKey<V, unknown>): V | undefined {
    return this.#values.get(key.key) as V | undefined;
  }

  /** The value, or the key's default when absent (without inserting it). */
  getOrDefault<V>(key: StateKey<V, unknown>): V {
    return this.#values.has(key.key) ? (this.#values.get(key.key) as V) : key.init();
  }

  has(key: StateKey<unknown, unknown> | string): boolean {
    return this.#values.has(typeof key === 'string' ? key : key.key);
  }

  /** Raw value by name, for generic tooling (persistence, diffing). */
  getByName(name: string): unknown {
    return this.#values.get(name);
  }

  /** Key names present, sorted. */
  keys(): string[] {
    return [...this.#values.keys()].sort();
  }

  /** Internal: the backing map, shared copy-on-write with the store. */
  static valuesOf(snapshot: Snapshot): ReadonlyMap<string, unknown> {
    return snapshot.#values;
  }
}
