import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MutationBatch } from '../../../src/core/state/mutation-batch.ts';
import type { CommitEvent } from '../../../src/core/state/state-ops.ts';
import { StateStore } from '../../../src/runtime/state-store.ts';
import { Snapshot } from '../../../src/core/state/snapshot.ts';
import { counterKey, logKey, registerKey } from '../../support/keys.ts';

const Counter = counterKey('counter');
const Name = registerKey('name');
const Log = logKey('log');

function store(): StateStore {
  const s = new StateStore();
  s.registerKeys([{ key: Counter }, { key: Name }, { key: Log }]);
  return s;
}

describe('StateStore.commit (core-spec §1.5)', () => {
  it('property: tryCommit commits exactly as commit does, returning only the failure', () => {
    const op = fc.oneof(
      fc.integer({ min: -3, max: 3 }).map((n) => ({ key: Counter as unknown, value: n as unknown })),
      fc.string({ maxLength: 2 }).map((t) => ({ key: Name as unknown, value: t as unknown })),
      fc.constant({ key: registerKey('ghost') as unknown, value: 'x' as unknown }),
    );
    const batch = fc.record({ base: fc.option(fc.nat({ max: 4 }), { nil: undefined }), ops: fc.array(op, { maxLength: 3 }) });
    fc.assert(
      fc.property(fc.array(batch, { maxLength: 8 }), (batches) => {
        const a = store();
        const b = store();
        for (const { base, ops } of batches) {
          const make = (): MutationBatch => {
            const m = new MutationBatch(base);
            for (const o of ops) m.update(o.key as typeof Name, o.value as string);
            return m;
          };
          const committed = a.commit(make());
          const failure = b.tryCommit(make());
          expect(failure).toEqual(committed.ok ? undefined : committed.error);
          if (committed.ok) expect(b.revision).toBe(committed.value);
          expect(b.exportPersisted()).toEqual(a.exportPersisted());
        }
      }),
    );
  });

  it('keys come out sorted whatever the order their names were first written in, also after an export', () => {
    const s = new StateStore();
    s.registerKeys([{ key: Counter }, { key: Name }, { key: Log }]);
    expect(s.commit(new MutationBatch().update(Name, 'n')).ok).toBe(true);
    expect(Object.keys((s.exportPersisted() as { ok: true; value: { extensions: object } }).value.extensions)).toEqual(['name']);
    expect(s.commit(new MutationBatch().update(Log, 'l').update(Counter, 1)).ok).toBe(true);
    expect(s.snapshot().keys()).toEqual(['counter', 'log', 'name']);
    expect(Object.keys((s.exportPersisted() as { ok: true; value: { extensions: object } }).value.extensions)).toEqual(['counter', 'log', 'name']);
  });

  it('an empty batch succeeds without a bump and without hooks, even with a stale base', () => {
    const s = store();
    const events: CommitEvent[] = [];
    s.onCommit((e) => events.push(e));
    expect(s.commit(new MutationBatch(99))).toEqual({ ok: true, value: 0 });
    expect(s.revision).toBe(0);
    expect(events).toEqual([]);
  });

  it('a stale base revision fails with revision_conflict before the unknown-key check', () => {
    const s = store();
    const batch = new MutationBatch(5).update(counterKey('unregistered'), 1);
    expect(s.commit(batch)).toEqual({ ok: false, error: { code: 'revision_conflict', expected: 5, actual: 0 } });
  });

  it('an unregistered key fails with unknown_key, checked in touched order, and changes nothing', () => {
    const s = store();
    const batch = new MutationBatch(0).update(Counter, 1).update(registerKey('ghost'), 'x').update(registerKey('ghost2'), 'y');
    expect(s.commit(batch)).toEqual({ ok: false, error: { code: 'unknown_key', key: 'ghost' } });
    expect(s.revision).toBe(0);
    expect(s.snapshot().get(Counter)).toBeUndefined();
  });

  it('applies ops in order on the default for an absent key, bumps once, calls hooks in registration order', () => {
    const s = store();
    const calls: string[] = [];
    s.onCommit((e) => calls.push(`a:${e.previousRevision}->${e.newRevision}:${e.opCount}`));
    const off = s.onCommit(() => calls.push('b'));
    const result = s.commit(new MutationBatch().update(Log, 'x').update(Log, 'y').update(Counter, 2).update(Counter, 3));
    expect(result).toEqual({ ok: true, value: 1 });
    expect(s.snapshot().get(Log)).toEqual(['x', 'y']);
    expect(s.snapshot().get(Counter)).toBe(5);
    expect(calls).toEqual(['a:0->1:4', 'b']);
    off();
    s.commit(new MutationBatch().update(Counter, 1));
    expect(calls).toEqual(['a:0->1:4', 'b', 'a:1->2:1']);
  });

  it('clear makes a key absent again (absent ≠ default)', () => {
    const s = store();
    s.commit(new MutationBatch().update(Counter, 0));
    expect(s.snapshot().has(Counter)).toBe(true);
    expect(s.snapshot().get(Counter)).toBe(0);
    s.commit(new MutationBatch().clear(Counter));
    expect(s.snapshot().has(Counter)).toBe(false);
    expect(s.snapshot().getOrDefault(Counter)).toBe(0);
    expect(s.snapshot().keys()).toEqual([]);
  });

  it('a throwing reducer leaves state and revision unchanged', () => {
    const s = new StateStore();
    const Bad = {
      ...Counter,
      key: 'bad',
      apply: (): number => {
        throw new Error('boom');
      },
    };
    s.registerKeys([{ key: Bad }, { key: Counter }]);
    expect(() => s.commit(new MutationBatch().update(Counter, 1).update(Bad, 1))).toThrow('boom');
    expect(s.revision).toBe(0);
    expect(s.snapshot().get(Counter)).toBeUndefined();
  });

  it('snapshots taken before a commit never change', () => {
    const s = store();
    const before = s.snapshot();
    s.commit(new MutationBatch().update(Counter, 1));
    expect(before.get(Counter)).toBeUndefined();
    expect(before.revision).toBe(0);
    expect(Object.isFrozen(before)).toBe(true);
  });

  // Optimistic concurrency: a commit against an old revision changes nothing.
  it('property: a stale base revision fails and leaves state and revision unchanged; a non-empty success bumps by one', () => {
    const op = fc.oneof(
      fc.integer({ min: -5, max: 5 }).map((n) => (b: MutationBatch) => b.update(Counter, n)),
      fc.string({ maxLength: 3 }).map((x) => (b: MutationBatch) => b.update(Log, x)),
      fc.string({ maxLength: 3 }).map((x) => (b: MutationBatch) => b.update(Name, x)),
    );
    const step = fc.record({ ops: fc.array(op, { maxLength: 4 }), base: fc.option(fc.integer({ min: -1, max: 3 }), { nil: undefined }) });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 12 }), (steps) => {
        const s = store();
        for (const { ops, base } of steps) {
          const before = s.snapshot();
          const batch = new MutationBatch(base === undefined ? undefined : Math.max(0, before.revision + base));
          for (const f of ops) f(batch);
          const result = s.commit(batch);
          const stale = batch.baseRevision !== undefined && batch.baseRevision !== before.revision;
          if (batch.isEmpty()) {
            expect(result).toEqual({ ok: true, value: before.revision });
            expect(s.snapshot()).toBe(before);
          } else if (stale) {
            expect(result).toEqual({ ok: false, error: { code: 'revision_conflict', expected: batch.baseRevision, actual: before.revision } });
            expect(s.snapshot()).toBe(before);
          } else {
            expect(result).toEqual({ ok: true, value: before.revision + 1 });
            expect(s.revision).toBe(before.revision + 1);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('StateStore.preview', () => {
  it('shows staged batches applied in order without committing them', () => {
    const s = store();
    s.commit(new MutationBatch().update(Counter, 1));
    const before = s.snapshot();
    const preview = s.preview([new MutationBatch().update(Counter, 2), new MutationBatch().update(Log, 'a').clear(Name)]);
    expect(preview.ok && preview.value.get(Counter)).toBe(3);
    expect(preview.ok && preview.value.get(Log)).toEqual(['a']);
    expect(preview.ok && preview.value.revision).toBe(1);
    expect(s.snapshot()).toBe(before);
    expect(s.preview([])).toEqual({ ok: true, value: before });
    expect(s.preview([new MutationBatch().update(registerKey('ghost'), 'x')])).toEqual({ ok: false, error: { code: 'unknown_key', key: 'ghost' } });
  });

  it('a draft reads absent for a name never written, one beyond its slots, and one deleted', () => {
    const s = store();
    s.commit(new MutationBatch().update(Name, 'n').update(Counter, 1));
    const draft = Snapshot.draft(s.snapshot());
    expect(draft.get('never')).toBeUndefined();
    draft.delete('name');
    expect(draft.get('name')).toBeUndefined();
    expect(draft.get('counter')).toBe(1);
    expect(Snapshot.emptyDraft(s.snapshot()).get('counter')).toBeUndefined();
  });
});
