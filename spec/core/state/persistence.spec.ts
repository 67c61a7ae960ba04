import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MutationBatch } from '../../../src/core/state/mutation-batch.ts';
import { defineStateKey, type StateKeyOptions } from '../../../src/core/state/state-key.ts';
import { StateStore } from '../../../src/runtime/state-store.ts';
import { counterKey, logKey, registerKey } from '../../support/keys.ts';

const RunA = counterKey('run.a');
const RunB = logKey('run.b');
const ThreadA = counterKey('thread.a');
const ThreadB = registerKey('thread.b');
const Volatile = registerKey('volatile');

const KEYS: { key: typeof RunA | typeof RunB | typeof ThreadA | typeof ThreadB | typeof Volatile; options: Partial<StateKeyOptions> }[] = [
  { key: RunA, options: {} },
  { key: RunB, options: { scope: 'run' } },
  { key: ThreadA, options: { scope: 'thread' } },
  { key: ThreadB, options: { scope: 'thread' } },
  { key: Volatile, options: { persistent: false } },
];

function store(): StateStore {
  const s = new StateStore();
  s.registerKeys(KEYS);
  return s;
}

const write = fc.oneof(
  fc.integer({ min: -3, max: 3 }).map((n) => (b: MutationBatch) => b.update(RunA, n)),
  fc.string({ maxLength: 3 }).map((x) => (b: MutationBatch) => b.update(RunB, x)),
  fc.integer({ min: -3, max: 3 }).map((n) => (b: MutationBatch) => b.update(ThreadA, n)),
  fc.string({ maxLength: 3 }).map((x) => (b: MutationBatch) => b.update(ThreadB, x)),
  fc.string({ maxLength: 3 }).map((x) => (b: MutationBatch) => b.update(Volatile, x)),
  fc.constantFrom(RunA, RunB, ThreadA, ThreadB).map((k) => (b: MutationBatch) => b.clear(k)),
);
const history = fc.array(fc.array(write, { minLength: 1, maxLength: 3 }), { maxLength: 6 });

function run(s: StateStore, batches: ((b: MutationBatch) => MutationBatch)[][]): void {
  for (const ops of batches) {
    const b = new MutationBatch();
    for (const f of ops) f(b);
    s.commit(b);
  }
}

describe('persistence (core-spec §1.7)', () => {
  it('exports only persistent keys that have a value, sorted by name, with the revision', () => {
    const s = store();
    s.commit(new MutationBatch().update(ThreadB, 'x').update(RunA, 2).update(Volatile, 'v'));
    const exported = s.exportPersisted();
    expect(exported).toEqual({ ok: true, value: { revision: 1, extensions: { 'run.a': 2, 'thread.b': 'x' } } });
    expect(exported.ok && Object.keys(exported.value.extensions)).toEqual(['run.a', 'thread.b']);
    expect(s.exportThreadScoped()).toEqual({ ok: true, value: { revision: 1, extensions: { 'thread.b': 'x' } } });
    expect(s.exportRunScoped()).toEqual({ ok: true, value: { revision: 1, extensions: { 'run.a': 2 } } });
  });

  it('property: exportByScope is exportThreadScoped and exportRunScoped at once, key order and failures included', () => {
    fc.assert(
      fc.property(history, fc.boolean(), (batches, failing) => {
        const s = new StateStore();
        s.registerKeys(KEYS);
        const Broken = defineStateKey<number, number>({
          key: 'broken',
          init: () => 0,
          apply: (_v, u) => u,
          codec: z.number(),
          encode: () => {
            throw new Error('no');
          },
        });
        if (failing) s.registerKeys([{ key: Broken, options: { scope: 'thread' } }]);
        run(s, batches);
        if (failing) s.commit(new MutationBatch().update(Broken, 1));
        const both = s.exportByScope();
        const thread = s.exportThreadScoped();
        const runScoped = s.exportRunScoped();
        if (!thread.ok || !runScoped.ok) {
          expect(both).toEqual({ ok: false, error: thread.ok ? (runScoped as { error: unknown }).error : thread.error });
          return;
        }
        expect(both).toEqual({ ok: true, value: { thread: thread.value, run: runScoped.value } });
        if (both.ok) {
          expect(Object.keys(both.value.thread.extensions)).toEqual(Object.keys(thread.value.extensions));
          expect(Object.keys(both.value.run.extensions)).toEqual(Object.keys(runScoped.value.extensions));
        }
      }),
    );
  });

  it('unknown keys: policy error fails, skip ignores', () => {
    const s = store();
    const p = { revision: 3, extensions: { ghost: 1, 'run.a': 4 } };
    expect(s.restorePersisted(p, 'error')).toEqual({ ok: false, error: { code: 'unknown_key', key: 'ghost' } });
    expect(s.revision).toBe(0);
    expect(s.restorePersisted(p, 'skip')).toEqual({ ok: true, value: undefined });
    expect(s.revision).toBe(3);
    expect(s.snapshot().get(RunA)).toBe(4);
  });

  it('a value the codec rejects fails with key_decode and changes nothing', () => {
    const s = store();
    const r = s.restorePersisted({ revision: 1, extensions: { 'run.a': 'not a number' } }, 'error');
    expect(r.ok === false && r.error.code).toBe('key_decode');
    expect(s.snapshot().has(RunA)).toBe(false);
  });

  it('an encoder that throws fails the export with key_encode', () => {
    const s = new StateStore();
    const Bad = defineStateKey({
      key: 'bad',
      init: () => 0,
      apply: (_v: number, u: number) => u,
      codec: z.number(),
      encode: () => {
        throw new Error('nope');
      },
    });
    s.registerKeys([{ key: Bad }]);
    s.commit(new MutationBatch().update(Bad, 1));
    expect(s.exportPersisted()).toEqual({ ok: false, error: { code: 'key_encode', key: 'bad', message: 'nope' } });
  });

  it('applySeed merges known keys without touching the revision; clearRunScoped drops run keys', () => {
    const s = store();
    s.commit(new MutationBatch().update(ThreadA, 1));
    expect(s.applySeed({ revision: 50, extensions: { 'run.a': 7, ghost: 1 } }, 'skip').ok).toBe(true);
    expect(s.revision).toBe(1);
    expect(s.snapshot().get(RunA)).toBe(7);
    expect(s.applySeed({ revision: 1, extensions: { ghost: 1 } }, 'error').ok).toBe(false);
    s.clearRunScoped();
    expect(s.snapshot().keys()).toEqual(['thread.a']);
  });

  // What a run exports is what a restored run starts from.
  it('property: export → restore is the identity on persistent keys', () => {
    fc.assert(
      fc.property(history, (batches) => {
        const s = store();
        run(s, batches);
        const exported = s.exportPersisted();
        if (!exported.ok) throw new Error('export failed');
        const t = store();
        expect(t.restorePersisted(exported.value, 'error').ok).toBe(true);
        expect(t.revision).toBe(s.revision);
        for (const { key, options } of KEYS) {
          if (options.persistent === false) expect(t.snapshot().has(key)).toBe(false);
          else expect(t.snapshot().getByName(key.key)).toEqual(s.snapshot().getByName(key.key));
        }
        expect(t.exportPersisted()).toEqual(exported);
      }),
      { numRuns: 300 },
    );
  });

  it('property: thread-scoped restore never brings back run-scoped keys and keeps the revision', () => {
    fc.assert(
      fc.property(history, history, (before, during) => {
        const previous = store();
        run(previous, before);
        const all = previous.exportPersisted();
        if (!all.ok) throw new Error('export failed');
        const next = store();
        run(next, during);
        const runKeysBefore = next.exportRunScoped();
        const revision = next.revision;
        expect(next.restoreThreadScoped(all.value, 'error').ok).toBe(true);
        expect(next.revision).toBe(revision);
        expect(next.exportRunScoped()).toEqual(runKeysBefore);
        for (const key of [ThreadA, ThreadB]) {
          if (previous.snapshot().has(key)) expect(next.snapshot().getByName(key.key)).toEqual(previous.snapshot().getByName(key.key));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('property: a new run starts with run-scoped keys absent, thread-scoped kept, revision 0', () => {
    fc.assert(
      fc.property(history, (batches) => {
        const s = store();
        run(s, batches);
        const next = s.beginRun();
        expect(next.revision).toBe(0);
        for (const key of [RunA, RunB, Volatile]) expect(next.snapshot().has(key)).toBe(false);
        for (const key of [ThreadA, ThreadB]) expect(next.snapshot().getByName(key.key)).toEqual(s.snapshot().getByName(key.key));
        expect(next.isRegistered('run.a')).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});

describe('persistence of awkward key names', () => {
  it('exportByScope keeps a key named "__proto__" like any other', () => {
    const Odd = registerKey('__proto__');
    const s = new StateStore();
    s.registerKeys([{ key: Odd, options: { scope: 'thread' } }, { key: RunA }]);
    s.commit(new MutationBatch().update(Odd, 'p').update(RunA, 1));
    const both = s.exportByScope();
    expect(both.ok && Object.keys(both.value.thread.extensions)).toEqual(['__proto__']);
    // biome-ignore lint/suspicious/noProto: a key named __proto__ is the data this checks survives the round trip
    expect(both.ok && both.value.thread.extensions['__proto__']).toBe('p');
    expect(both.ok && both.value.run.extensions).toEqual({ 'run.a': 1 });
  });

  it('exports and restores a key named "__proto__" like any other', () => {
    const Odd = registerKey('__proto__');
    const s = new StateStore();
    s.registerKeys([{ key: Odd }]);
    s.commit(new MutationBatch().update(Odd, 'kept'));
    const exported = s.exportPersisted();
    expect(exported.ok && Object.keys(exported.value.extensions)).toEqual(['__proto__']);
    const t = new StateStore();
    t.registerKeys([{ key: Odd }]);
    if (!exported.ok) throw new Error('export');
    const wire = JSON.parse(JSON.stringify(exported.value)) as typeof exported.value;
    expect(t.restorePersisted(wire, 'error').ok).toBe(true);
    expect(t.snapshot().get(Odd)).toBe('kept');
  });
});
