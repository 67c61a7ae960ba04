import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import type { z } from 'zod';
import type { JsonValue } from '../contract/json.ts';
import { MutationBatch, mergeParallelBatch } from '../core/state/mutation-batch.ts';
import type { StateKey, StateKeyOptions } from '../core/state/state-key.ts';
import { StateStore } from '../runtime/state-store.ts';

/**
 * The laws every state key must keep (book: 状态键, 合并策略; core-spec §1), checked with fast-check
 * over the updates a user supplies:
 *
 * - `commutative`: batches written in parallel give the same value in every order and grouping
 *   (whichever order GATHER merges the hooks in, and however the batches fall into commits);
 * - `exclusive`: two writers of the key in one GATHER round are a `parallel_merge_conflict`;
 * - `pure`: `apply` returns a new value and never changes the one it is given (snapshots share values);
 * - `codec`: every reachable value survives `encode` → JSON → `codec` unchanged;
 * - `persistence`: a persistent key's value is restored exactly from what its scope exports.
 *
 * A failure is shrunk by fast-check and printed as the sequence of updates that shows it, with the
 * seed and path that reproduce it.
 */
export interface KeyLawOptions<V, U> {
  /** The updates a hook may write. */
  readonly update: fc.Arbitrary<U>;
  /** Values to start from (default: what folding updates over `init()` reaches). */
  readonly value?: fc.Arbitrary<V>;
  /** How the key is registered (default: persistent, run scope). */
  readonly options?: Partial<StateKeyOptions>;
  readonly numRuns?: number;
  readonly seed?: number;
  /** `law@path` from a failure's report: replays that law's counterexample alone. */
  readonly path?: string;
}

export type KeyLaw = 'commutative' | 'exclusive' | 'pure' | 'codec' | 'persistence';

export interface LawFailure {
  readonly key: string;
  readonly law: KeyLaw;
  /** What the law says, one line. */
  readonly statement: string;
  /** The shrunk counterexample, as lines a person reads: the start value, the updates, what differed. */
  readonly counterexample: readonly string[];
  readonly seed: number;
  /** `law@path`: with `seed`, what `checkStateKeyLaws` takes to replay this counterexample. */
  readonly path: string | undefined;
}

export interface KeyLawReport {
  readonly key: string;
  readonly checked: readonly KeyLaw[];
  readonly failures: readonly LawFailure[];
  readonly passed: boolean;
}

const STATEMENTS: Readonly<Record<KeyLaw, string>> = {
  commutative: 'parallel batches give the same value in every order and grouping',
  exclusive: 'two writers in one GATHER round are a conflict',
  pure: 'apply returns a new value and leaves the one it was given unchanged',
  codec: 'every reachable value survives encode → JSON → codec unchanged',
  persistence: 'the value is restored exactly from what its scope exports',
};

/** Compact JSON for a person (functions, undefined and cycles shown, never thrown on). */
export function show(value: unknown): string {
  try {
    const text = JSON.stringify(value, (_k, v: unknown) =>
      v === undefined ? '<undefined>' : typeof v === 'function' ? '<function>' : typeof v === 'bigint' ? `${v}n` : v,
    );
    return text === undefined ? String(value) : text.length > 200 ? `${text.slice(0, 200)}…` : text;
  } catch {
    return String(value);
  }
}

/** A deep copy that is frozen all the way down: `apply` changing it throws (ESM code is strict). */
function frozenCopy<T>(value: T): T {
  const copy = structuredClone(value);
  const freeze = (x: unknown): void => {
    if (typeof x !== 'object' || x === null || Object.isFrozen(x)) return;
    Object.freeze(x);
    for (const v of Object.values(x)) freeze(v);
  };
  freeze(copy);
  return copy;
}

const fold = <V, U>(key: StateKey<V, U>, start: V, updates: readonly U[]): V => updates.reduce((v, u) => key.apply(v, u), start);

const SEED = Symbol('seed');
type Seeded<V, U> = U | { readonly [SEED]: V };

/**
 * The key as the checks register it: the same name, strategy, codec and encoding, and an `apply`
 * that also takes a seed — the value to start from, written as is (a value is not an update).
 */
export function seedable<V, U>(key: StateKey<V, U>): StateKey<V, Seeded<V, U>> {
  return {
    key: key.key,
    merge: key.merge,
    init: () => key.init(),
    apply: (v, u) => (typeof u === 'object' && u !== null && SEED in u ? (u as { readonly [SEED]: V })[SEED] : key.apply(v, u as U)),
    codec: key.codec,
    encode: (v) => key.encode(v),
  };
}
/** An update that sets the key of `seedable` to `value`. */
export const seedOf = <V>(value: V): { readonly [SEED]: V } => ({ [SEED]: value });

/** The key's value after committing `batches` through the real engine: merged in `order`, `cuts` splitting them into commits. */
function committedValue<V, U>(plain: StateKey<V, U>, start: V, batches: readonly (readonly U[])[], order: readonly number[], cuts: ReadonlySet<number>): V {
  const key = seedable(plain);
  const store = new StateStore();
  const registered = store.registerKey(key as never);
  if (!registered.ok) throw new Error(`cannot register ${key.key}: ${show(registered.error)}`);
  const seeded = store.commit(new MutationBatch().update(key, seedOf(start)));
  if (!seeded.ok) throw new Error(`cannot seed ${key.key}: ${show(seeded.error)}`);
  let pending: MutationBatch | undefined;
  const flush = (): void => {
    if (pending === undefined) return;
    const r = store.commit(pending);
    if (!r.ok) throw new Error(`commit failed: ${show(r.error)}`);
    pending = undefined;
  };
  order.forEach((i, position) => {
    const batch = new MutationBatch();
    for (const u of batches[i] ?? []) batch.update(key, u);
    if (pending === undefined) pending = batch;
    else {
      const merged = mergeParallelBatch(pending, batch, () => key.merge);
      if (!merged.ok) throw new Error(`merge failed: ${show(merged.error)}`);
      pending = merged.value;
    }
    if (cuts.has(position)) flush();
  });
  flush();
  return store.snapshot().get(key as StateKey<V, unknown>) as V;
}

/** Checks the laws of one key; the report lists each law that fails with its shrunk counterexample. */
export function checkStateKeyLaws<V, U>(key: StateKey<V, U>, o: KeyLawOptions<V, U>): KeyLawReport {
  const at = o.path?.indexOf('@') ?? -1;
  const replaying = o.path !== undefined && at > 0 ? { law: o.path.slice(0, at), path: o.path.slice(at + 1) } : undefined;
  const params = { numRuns: o.numRuns ?? 100, ...(o.seed !== undefined ? { seed: o.seed } : {}) };
  const updates = fc.array(o.update, { maxLength: 5 });
  const value: fc.Arbitrary<V> = o.value ?? updates.map((us) => fold(key, key.init(), us));
  const failures: LawFailure[] = [];
  const checked: KeyLaw[] = [];

  const run = <T>(law: KeyLaw, arb: fc.Arbitrary<T>, holds: (t: T) => string[] | undefined): void => {
    if (replaying !== undefined && replaying.law !== law) return;
    checked.push(law);
    let explained: string[] = [];
    const r = fc.check(
      fc.property(arb, (t) => {
        const why = holds(t);
        if (why === undefined) return true;
        explained = why;
        return false;
      }),
      replaying !== undefined ? { ...params, path: replaying.path } : params,
    );
    if (!r.failed) return;
    // The last explanation written is the shrunk counterexample's; an exception is one too.
    if (r.counterexample !== null) {
      try {
        explained = holds(r.counterexample[0] as T) ?? explained;
      } catch (e) {
        explained = [`it throws: ${e instanceof Error ? e.message : String(e)}`];
      }
    }
    failures.push({
      key: key.key,
      law,
      statement: STATEMENTS[law],
      counterexample: explained,
      seed: r.seed,
      path: r.counterexamplePath !== null ? `${law}@${r.counterexamplePath}` : undefined,
    });
  };

  if (key.merge === 'commutative') {
    const batches = fc.array(fc.array(o.update, { minLength: 1, maxLength: 3 }), { minLength: 2, maxLength: 4 });
    // The order as sort keys and the commit boundaries as positions: both shrink towards "reversed, one commit".
    const arb = fc
      .tuple(value, batches, fc.array(fc.nat({ max: 7 }), { minLength: 4, maxLength: 4 }), fc.uniqueArray(fc.nat({ max: 3 }), { maxLength: 3 }))
      .map(([start, bs, keys, cutAt]) => {
        const order = bs.map((_, i) => i).sort((a, b) => (keys[b] ?? 0) - (keys[a] ?? 0) || b - a);
        return [start, bs, order, cutAt.filter((c) => c < bs.length - 1)] as const;
      });
    run('commutative', arb, ([start, bs, order, cuts]) => {
      const inOrder = committedValue(
        key,
        start,
        bs,
        bs.map((_, i) => i),
        new Set(),
      );
      const other = committedValue(key, start, bs, order, new Set(cuts));
      if (isDeepStrictEqual(key.encode(inOrder), key.encode(other))) return undefined;
      return [
        `start:      ${show(key.encode(start))}`,
        ...bs.map((b, i) => `batch ${i + 1}:    ${b.map((u) => `update(${show(u)})`).join(', ')}`),
        `merged in order ${bs.map((_, i) => i + 1).join(', ')}, one commit → ${show(key.encode(inOrder))}`,
        `merged in order ${order.map((i) => i + 1).join(', ')}${
          cuts.length > 0
            ? `, committed after position ${[...cuts]
                .sort()
                .map((c) => c + 1)
                .join(', ')}`
            : ', one commit'
        } → ${show(key.encode(other))}`,
      ];
    });
  } else {
    run('exclusive', fc.tuple(o.update, o.update), ([a, b]) => {
      const merged = mergeParallelBatch(new MutationBatch().update(key, a), new MutationBatch().update(key, b), () => key.merge);
      return !merged.ok && merged.error.code === 'parallel_merge_conflict'
        ? undefined
        : [`writer 1: update(${show(a)})`, `writer 2: update(${show(b)})`, 'merged in one GATHER round without a conflict'];
    });
  }

  run('pure', fc.tuple(value, o.update), ([start, u]) => {
    const before = structuredClone(start);
    const frozen = frozenCopy(start);
    try {
      key.apply(frozen, u);
    } catch (e) {
      return [`start:  ${show(key.encode(before))}`, `update(${show(u)}) changes the value it is given: ${e instanceof Error ? e.message : String(e)}`];
    }
    return undefined;
  });

  run('codec', fc.tuple(value, updates), ([start, us]) => {
    const reached = fold(key, start, us);
    const wire = JSON.parse(JSON.stringify(key.encode(reached))) as JsonValue;
    const parsed = (key.codec as z.ZodType<V>).safeParse(wire);
    if (!parsed.success)
      return [
        `start:  ${show(key.encode(start))}`,
        ...us.map((u) => `update(${show(u)})`),
        `reaches ${show(wire)}, which the codec rejects: ${parsed.error.message.slice(0, 200)}`,
      ];
    if (isDeepStrictEqual(key.encode(parsed.data), key.encode(reached))) return undefined;
    return [
      `start:  ${show(key.encode(start))}`,
      ...us.map((u) => `update(${show(u)})`),
      `reaches ${show(key.encode(reached))}`,
      `decoded back as ${show(key.encode(parsed.data))}`,
    ];
  });

  const registration = { persistent: true, ...(o.options ?? {}) };
  if (registration.persistent) {
    run('persistence', fc.tuple(value, updates), ([start, us]) => {
      const reached = fold(key, start, us);
      const store = new StateStore();
      store.registerKey(seedable(key) as never, registration);
      const committed = store.commit(new MutationBatch().update(seedable(key), seedOf(reached)));
      if (!committed.ok) return [`cannot commit: ${show(committed.error)}`];
      const scoped = store.exportByScope();
      if (!scoped.ok) return [`reaches ${show(reached)}, which does not export: ${show(scoped.error)}`];
      const persisted = registration.scope === 'thread' ? scoped.value.thread : scoped.value.run;
      const restored = new StateStore();
      restored.registerKey(key as never, registration);
      const r = registration.scope === 'thread' ? restored.restoreThreadScoped(persisted, 'error') : restored.restorePersisted(persisted, 'error');
      if (!r.ok)
        return [`reaches ${show(key.encode(reached))}`, `exported as ${show(persisted.extensions[key.key])}, which does not restore: ${show(r.error)}`];
      const back = restored.snapshot().get(key as StateKey<V, unknown>) as V;
      return isDeepStrictEqual(key.encode(back), key.encode(reached))
        ? undefined
        : [`reaches ${show(key.encode(reached))}`, `restored as ${show(key.encode(back))}`];
    });
  }
  return { key: key.key, checked, failures, passed: failures.length === 0 };
}

/** A report as text: each law checked, and each failure with its counterexample and how to reproduce it. */
export function describeKeyLaws(report: KeyLawReport): string {
  const lines = [`${report.key}: ${report.passed ? 'every law holds' : `${report.failures.length} law(s) broken`} (${report.checked.join(', ')})`];
  for (const f of report.failures) {
    lines.push(`  ✗ ${f.law}: ${f.statement}`);
    for (const c of f.counterexample) lines.push(`      ${c}`);
    lines.push(`      reproduce: seed ${f.seed}${f.path !== undefined ? `, path "${f.path}"` : ''}`);
  }
  return `${lines.join('\n')}\n`;
}
