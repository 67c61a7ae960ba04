import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MutationBatch } from '../../../src/core/state/mutation-batch.ts';
import { Snapshot } from '../../../src/core/state/snapshot.ts';
import { keyOptions } from '../../../src/core/state/state-key.ts';
import { commitBatch, strategyIn, type KeyRegistry } from '../../../src/core/state/state-ops.ts';
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
    expect(commitBatch(registry, s, new MutationBatch(1).update(Count, 1))).toEqual({ ok: false, error: { code: 'revision_conflict', expected: 1, actual: 2 } });
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
