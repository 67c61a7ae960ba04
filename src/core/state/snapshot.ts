import type { MutationOp } from './mutation-batch.ts';
import type { AnyStateKey, StateKey } from './state-key.ts';

/**
 * Where each key's value sits in a snapshot: every name gets a slot the first time a value is
 * written under it and keeps it. Append-only, so the snapshots of a store (and of the runs it
 * begins) share one layout: an older snapshot simply has fewer slots. A commit then copies an array
 * of slots instead of rebuilding a hash map.
 */
export class KeyLayout {
  readonly #index = new Map<string, number>();
  readonly #names: string[] = [];
  /** Slots in the order of the names; sorted again only when asked for after a name was added. */
  #sorted: readonly number[] | undefined = [];

  slotOf(name: string): number | undefined {
    return this.#index.get(name);
  }

  /** The name's slot, given now if it has none. */
  slotFor(name: string): number {
    const known = this.#index.get(name);
    if (known !== undefined) return known;
    const slot = this.#names.length;
    this.#names.push(name);
    this.#index.set(name, slot);
    this.#sorted = undefined;
    return slot;
  }

  nameAt(slot: number): string {
    return this.#names[slot] as string;
  }

  /** Every slot, in the order of the names. */
  sortedSlots(): readonly number[] {
    if (this.#sorted !== undefined) return this.#sorted;
    const names = this.#names;
    const sorted = names.map((_, i) => i).sort((a, b) => ((names[a] as string) < (names[b] as string) ? -1 : 1));
    this.#sorted = sorted;
    return sorted;
  }
}

/** What an empty slot holds (distinct from a stored `undefined`). */
const ABSENT: unique symbol = Symbol('absent');

/**
 * An immutable, revisioned view of the state (book: 状态与快照模型 → Snapshot). Absent ≠ default:
 * `get` returns `undefined` for a key that was never written.
 */
export class Snapshot {
  readonly revision: number;
  readonly #layout: KeyLayout;
  readonly #slots: readonly unknown[];

  /** `values` by name, or a draft; internally (`applied`) a layout and the new snapshot's own `slots`. */
  constructor(revision: number, values: ReadonlyMap<string, unknown> | SnapshotDraft | KeyLayout, slots?: unknown[]) {
    this.revision = revision;
    if (values instanceof KeyLayout) {
      this.#layout = values;
      this.#slots = slots ?? [];
    } else if (values instanceof SnapshotDraft) {
      this.#layout = values.layout;
      this.#slots = values.slots;
    } else {
      const layout = new KeyLayout();
      const own: unknown[] = [];
      for (const [name, value] of values) own[layout.slotFor(name)] = value;
      this.#layout = layout;
      this.#slots = own;
    }
    Object.freeze(this);
  }

  get<V>(key: StateKey<V, unknown>): V | undefined {
    const value = this.#read(key.key);
    return value === ABSENT ? undefined : (value as V);
  }

  /** The value, or the key's default when absent (without inserting it). */
  getOrDefault<V>(key: StateKey<V, unknown>): V {
    const value = this.#read(key.key);
    return value === ABSENT ? key.init() : (value as V);
  }

  has(key: StateKey<unknown, unknown> | string): boolean {
    return this.#read(typeof key === 'string' ? key : key.key) !== ABSENT;
  }

  /** Raw value by name, for generic tooling (persistence, diffing). */
  getByName(name: string): unknown {
    const value = this.#read(name);
    return value === ABSENT ? undefined : value;
  }

  /** Key names present, sorted. */
  keys(): string[] {
    const out: string[] = [];
    for (const slot of this.#layout.sortedSlots()) if (slot < this.#slots.length && this.#slots[slot] !== ABSENT) out.push(this.#layout.nameAt(slot));
    return out;
  }

  #read(name: string): unknown {
    const slot = this.#layout.slotOf(name);
    return slot === undefined || slot >= this.#slots.length ? ABSENT : this.#slots[slot];
  }

  /** Internal: every present name with its value, in the order of the names. */
  static forEachSorted(snapshot: Snapshot, visit: (name: string, value: unknown) => void): void {
    visitSorted(snapshot.#layout, snapshot.#slots, visit);
  }

  /**
   * Internal: `forEachSorted` with the visitor's state passed in, for a visitor that is one function
   * for every call (an export on every step then allocates no closure); stops when `visit` returns true.
   */
  static visitSortedWith<C>(snapshot: Snapshot, context: C, visit: (context: C, name: string, value: unknown) => boolean): void {
    const layout = snapshot.#layout;
    const slots = snapshot.#slots;
    for (const slot of layout.sortedSlots()) {
      if (slot >= slots.length) continue;
      const value = slots[slot];
      if (value !== ABSENT && visit(context, layout.nameAt(slot), value)) return;
    }
  }

  /** Internal: a copy of the snapshot's slots to write into (the store's commits). */
  static draft(snapshot: Snapshot): SnapshotDraft {
    return new SnapshotDraft(snapshot.#layout, snapshot.#slots.slice());
  }

  /**
   * Internal: the snapshot at `revision` after `ops`, applied in order to a copy of this one's slots
   * (the store's commits: every op's key is registered in `keys`, checked before). Written straight
   * into the copy, one name lookup per op and no draft: a step commits several times.
   */
  static applied(snapshot: Snapshot, revision: number, ops: readonly MutationOp[], keys: ReadonlyMap<string, { readonly key: AnyStateKey }>): Snapshot {
    const layout = snapshot.#layout;
    const slots = snapshot.#slots.slice();
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as MutationOp;
      const known = layout.slotOf(op.key);
      if (op.kind === 'clear') {
        if (known !== undefined && known < slots.length) slots[known] = ABSENT;
        continue;
      }
      const { key } = keys.get(op.key) as { readonly key: AnyStateKey };
      const current = known !== undefined && known < slots.length ? slots[known] : ABSENT;
      const value = key.apply(current === ABSENT ? key.init() : current, op.update);
      // A name gets its slot once its first value is computed (a reducer that throws adds none).
      const slot = known ?? layout.slotFor(op.key);
      // Slots between the old end and this one are empty, not `undefined`.
      for (let j = slots.length; j < slot; j++) slots.push(ABSENT);
      slots[slot] = value;
    }
    return new Snapshot(revision, layout, slots);
  }

  /** Internal: an empty draft over the snapshot's layout. */
  static emptyDraft(snapshot: Snapshot): SnapshotDraft {
    return new SnapshotDraft(snapshot.#layout, []);
  }
}

/** A snapshot being written: a private copy of the slots, frozen into a `Snapshot` by `new Snapshot(revision, draft)`. */
export class SnapshotDraft {
  readonly layout: KeyLayout;
  readonly slots: unknown[];

  constructor(layout: KeyLayout, slots: unknown[]) {
    this.layout = layout;
    this.slots = slots;
  }

  has(name: string): boolean {
    const slot = this.layout.slotOf(name);
    return slot !== undefined && slot < this.slots.length && this.slots[slot] !== ABSENT;
  }

  get(name: string): unknown {
    const slot = this.layout.slotOf(name);
    if (slot === undefined || slot >= this.slots.length) return undefined;
    const value = this.slots[slot];
    return value === ABSENT ? undefined : value;
  }

  set(name: string, value: unknown): void {
    const slot = this.layout.slotFor(name);
    // Slots between the old end and this one are empty, not `undefined`.
    for (let i = this.slots.length; i < slot; i++) this.slots.push(ABSENT);
    this.slots[slot] = value;
  }

  delete(name: string): void {
    const slot = this.layout.slotOf(name);
    if (slot !== undefined && slot < this.slots.length) this.slots[slot] = ABSENT;
  }

  /** Every present name with its value, in the order of the names. */
  forEachSorted(visit: (name: string, value: unknown) => void): void {
    visitSorted(this.layout, this.slots, visit);
  }
}

function visitSorted(layout: KeyLayout, slots: readonly unknown[], visit: (name: string, value: unknown) => void): void {
  for (const slot of layout.sortedSlots()) {
    if (slot >= slots.length) continue;
    const value = slots[slot];
    if (value !== ABSENT) visit(layout.nameAt(slot), value);
  }
}
