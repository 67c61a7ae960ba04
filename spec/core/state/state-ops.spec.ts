import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MutationBatch } from '../../../src/core/state/mutation-batch.ts';
import { Snapshot } from '../../../src/core/state/snapshot.ts';
import { z } from 'zod';
import { defineStateKey, keyOptions } from '../../../src/core/state/state-key.ts';
import { commitBatch, exportAll, exportByScope, exportState, strategyIn, type KeyRegistry, type RegisteredKey } from '../../../src/core/state/state-ops.ts';
import { StateStore } from '../../../src/runtime/state-store.ts';
import { counterKey, logKey } from '../../support/keys.ts';

/** Commit as a function: (registry, snapshot, batch) → the next snapshot, the given one untouched. */

const Count = counterKey('count');
const Log = logKey('log');
const registry: KeyRegistry = new Map([
  [Count.key, { key: Count, options: keyOptions({}), owner: undefined }],
  [Log.key, { key: Log, options: keyOptions({}), owner: undefined }],
]);

describe('commitBatch', () => {
  it('returns the next snapshot and leaves the one it was given as it was', () => {
    const before = new Snapshot(4, new Map<string, unknown>([[Count.key, 1]]));
    const next = commitBatch(registry, before, new MutationBatch(4).update(Count, 2).update(Log, 'a'));
    expect(next.ok && [next.value.revision, next.value.get(Count), next.value.get(Log)]).toEqual([5, 3, ['a']]);
    expect([before.revision, before.get(Count), before.has(Log)]).toEqual([4, 1, false]);
  });

  it('keeps the same snapshot for an empty batch, and refuses a stale base or an unknown key without a new snapshot', () => {
    const s = new Snapshot(2, new Map());
    const empty = commitBatch(registry, s, new MutationBatch());
    expect(empty.ok && empty.value).toBe(s);
    expect(commitBatch(registry, s, new MutationBatch(1).update(Count, 1))).toEqual({
      ok: false,
      error: { code: 'revision_conflict', expected: 1, actual: 2 },
    });
    expect(commitBatch(registry, s, new MutationBatch().update(counterKey('nope'), 1))).toEqual({ ok: false, error: { code: 'unknown_key', key: 'nope' } });
  });

  it('agrees with the store that holds the state, commit after commit', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.integer({ min: -5, max: 5 }), fc.string({ maxLength: 3 })), { maxLength: 12 }), (updates) => {
        const store = new StateStore(registry);
        let snapshot = store.snapshot();
        for (const u of updates) {
          const batch = typeof u === 'number' ? new MutationBatch().update(Count, u) : new MutationBatch().update(Log, u);
          const next = commitBatch(registry, snapshot, batch);
          expect(store.commit(batch).ok).toBe(next.ok);
          if (next.ok) snapshot = next.value;
        }
        expect([snapshot.revision, snapshot.get(Count), snapshot.get(Log)]).toEqual([store.revision, store.snapshot().get(Count), store.snapshot().get(Log)]);
      }),
    );
  });

  it('counts an unregistered key as exclusive', () => {
    expect(strategyIn(registry, Count.key)).toBe('commutative');
    expect(strategyIn(registry, Log.key)).toBe('exclusive');
    expect(strategyIn(registry, 'unknown')).toBe('exclusive');
  });
});

describe('exporting a snapshot', () => {
  /** A key whose encoding fails for the value 13, to see the first failure come out the same way. */
  const keyOf = (name: string) =>
    defineStateKey<number, number>({
      key: name,
      init: () => 0,
      apply: (_s, u) => u,
      codec: z.number(),
      encode: (v) => {
        if (v === 13) throw new Error(`cannot encode ${name}`);
        return v * 2;
      },
    });

  it('property: every key at once, and by scope in one pass, are the filtered exports — the same keys, values, order and first failure', () => {
    const entry = fc.record({ persistent: fc.boolean(), thread: fc.boolean(), value: fc.option(fc.integer({ min: 10, max: 15 }), { nil: undefined }) });
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd', 'e', '__proto__', 'z.y'), entry, { maxKeys: 7 }),
        fc.nat({ max: 9 }),
        (entries, revision) => {
          const keys = new Map<string, RegisteredKey>();
          const values = new Map<string, unknown>();
          for (const [name, e] of Object.entries(entries)) {
            keys.set(name, {
              key: keyOf(name) as never,
              options: keyOptions({ persistent: e.persistent, scope: e.thread ? 'thread' : 'run' }),
              owner: undefined,
            });
            if (e.value !== undefined) values.set(name, e.value);
          }
          const snapshot = new Snapshot(revision, values);
          const all = exportAll(keys, snapshot);
          expect(all).toEqual(exportState(keys, snapshot, () => true));
          if (all.ok)
            expect(Object.keys(all.value.extensions)).toEqual(
              Object.keys((exportState(keys, snapshot, () => true) as { value: { extensions: object } }).value.extensions),
            );
          const thread = exportState(keys, snapshot, (o) => o.scope === 'thread');
          const run = exportState(keys, snapshot, (o) => o.scope !== 'thread');
          const byScope = exportByScope(keys, snapshot);
          if (!all.ok) expect(byScope).toEqual(all);
          else expect(byScope).toEqual({ ok: true, value: { thread: (thread as { value: unknown }).value, run: (run as { value: unknown }).value } });
        },
      ),
      { numRuns: 300 },
    );
  });
});
