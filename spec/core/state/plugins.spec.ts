import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_KEY_OPTIONS, keyOptions } from '../../../src/core/state/state-key.ts';
import { MutationBatch } from '../../../src/core/state/mutation-batch.ts';
import { StateStore } from '../../../src/runtime/state-store.ts';
import { StateCommand } from '../../../src/core/state/state-command.ts';
import { counterKey, registerKey } from '../../support/keys.ts';

const A = counterKey('p.a');
const B = registerKey('p.b');
const Kept = registerKey('p.kept');

describe('plugin install / uninstall (core-spec §1.5)', () => {
  it('registers every key of a plugin, and refuses a second install', () => {
    const s = new StateStore();
    expect(s.installPlugin('p', [{ key: A }, { key: B }])).toEqual({ ok: true, value: undefined });
    expect(s.registration('p.a')?.owner).toBe('p');
    expect(s.installPlugin('p', [])).toEqual({ ok: false, error: { code: 'plugin_already_installed', name: 'p' } });
    expect(s.installedPlugins()).toEqual(['p']);
    expect(s.hasPlugin('p')).toBe(true);
    expect(s.hasPlugin('q')).toBe(false);
  });

  it('checks every key before inserting any (a taken name fails, nothing registered)', () => {
    const s = new StateStore();
    s.installPlugin('first', [{ key: B }]);
    expect(s.installPlugin('second', [{ key: A }, { key: B }])).toEqual({ ok: false, error: { code: 'key_already_registered', key: 'p.b' } });
    expect(s.isRegistered('p.a')).toBe(false);
    expect(s.installPlugin('third', [{ key: A }, { key: A }])).toEqual({ ok: false, error: { code: 'key_already_registered', key: 'p.a' } });
  });

  it('registerKey fails on a taken name; registerKeys skips silently', () => {
    const s = new StateStore();
    expect(s.registerKey(A).ok).toBe(true);
    expect(s.registerKey(A)).toEqual({ ok: false, error: { code: 'key_already_registered', key: 'p.a' } });
    s.registerKeys([{ key: A, options: { scope: 'thread' } }]);
    expect(s.registration('p.a')?.options.scope).toBe('run');
  });

  it('uninstall clears owned keys in one commit unless retained, then unregisters them', () => {
    const s = new StateStore();
    s.installPlugin('p', [{ key: A }, { key: B }, { key: Kept, options: { retainOnUninstall: true } }]);
    s.commit(new MutationBatch().update(A, 1).update(Kept, 'k'));
    expect(s.uninstallPlugin('p')).toEqual({ ok: true, value: undefined });
    expect(s.revision).toBe(2);
    expect(s.snapshot().has(A)).toBe(false);
    expect(s.snapshot().get(Kept)).toBe('k');
    expect(s.isRegistered('p.a')).toBe(false);
    expect(s.isRegistered('p.kept')).toBe(true);
    expect(s.uninstallPlugin('p')).toEqual({ ok: false, error: { code: 'plugin_not_installed', name: 'p' } });
  });

  it('unregistered keys merge as exclusive', () => {
    const s = new StateStore();
    s.registerKeys([{ key: A }]);
    expect(s.strategyOf('p.a')).toBe('commutative');
    expect(s.strategyOf('nope')).toBe('exclusive');
  });
});

describe('store edges', () => {
  it('unsubscribing a commit hook twice is harmless', () => {
    const s = new StateStore();
    s.registerKeys([{ key: A }]);
    const seen: number[] = [];
    const off = s.onCommit((e) => seen.push(e.newRevision));
    off();
    off();
    s.commit(new MutationBatch().update(A, 1));
    expect(seen).toEqual([]);
  });

  it('thread-scoped restore fails with key_decode on a bad value and changes nothing', () => {
    const s = new StateStore();
    s.registerKeys([{ key: A, options: { scope: 'thread' } }]);
    const r = s.restoreThreadScoped({ revision: 0, extensions: { 'p.a': 'x' } }, 'error');
    expect(r.ok === false && r.error.code).toBe('key_decode');
    expect(s.snapshot().has(A)).toBe(false);
  });

  it('reports a non-Error thrown by an encoder as text', () => {
    const s = new StateStore();
    const Bad = {
      ...A,
      key: 'bad',
      encode: (): never => {
        throw 'plain';
      },
    };
    s.registerKeys([{ key: Bad }]);
    s.commit(new MutationBatch().update(Bad, 1));
    expect(s.exportPersisted()).toEqual({ ok: false, error: { code: 'key_encode', key: 'bad', message: 'plain' } });
  });

  it('a batch built from ops derives its touched keys; commands can clear keys', () => {
    const b = new MutationBatch(undefined, [{ kind: 'clear', key: 'p.a' }]);
    expect(b.touchedKeys).toEqual(['p.a']);
    const s = new StateStore();
    s.registerKeys([{ key: A }]);
    s.commit(new MutationBatch().update(A, 1));
    s.commit(StateCommand.empty().clear(A).patch);
    expect(s.snapshot().has(A)).toBe(false);
  });
});

describe('key options (a registration’s options, defaults filled in)', () => {
  const optionsArb = fc.record(
    { persistent: fc.boolean(), retainOnUninstall: fc.boolean(), scope: fc.constantFrom('run' as const, 'thread' as const) },
    { requiredKeys: [] },
  );

  it('property: every option asked for is kept, every other one is its default; equal requests share one frozen object', () => {
    fc.assert(
      fc.property(optionsArb, (asked) => {
        const options = keyOptions(asked);
        expect(options).toEqual({ ...DEFAULT_KEY_OPTIONS, ...asked });
        expect(Object.isFrozen(options)).toBe(true);
        expect(keyOptions({ ...asked })).toBe(options);
      }),
    );
  });

  it('an option given as undefined reads as its default (a spread would have kept the undefined)', () => {
    expect(keyOptions({ persistent: undefined as unknown as boolean, scope: 'thread' })).toEqual({
      persistent: true,
      retainOnUninstall: false,
      scope: 'thread',
    });
    expect(keyOptions()).toEqual(DEFAULT_KEY_OPTIONS);
  });
});

describe('a new run’s store shares the registry it began from until one of them changes it', () => {
  const C = counterKey('p.c');

  it.each(['install', 'register', 'uninstall'] as const)('a change (%s) in either store leaves the other’s registry as it was', (change) => {
    for (const changed of ['run', 'origin'] as const) {
      const origin = new StateStore();
      origin.installPlugin('p', [{ key: A }]);
      const run = origin.beginRun();
      const target = changed === 'run' ? run : origin;
      const other = changed === 'run' ? origin : run;
      if (change === 'install') target.installPlugin('q', [{ key: C }]);
      else if (change === 'register') target.registerKey(C);
      else target.uninstallPlugin('p');
      expect(other.isRegistered('p.a')).toBe(true);
      expect(other.isRegistered('p.c')).toBe(false);
      expect(other.installedPlugins()).toEqual(['p']);
      expect(target.isRegistered('p.a')).toBe(change !== 'uninstall');
      expect(target.isRegistered('p.c')).toBe(change !== 'uninstall');
    }
  });

  it('two runs begun from one store each get their own registry on change', () => {
    const origin = new StateStore();
    origin.installPlugin('p', [{ key: A }]);
    const first = origin.beginRun();
    const second = origin.beginRun();
    first.registerKey(C);
    expect(second.isRegistered('p.c')).toBe(false);
    expect(origin.isRegistered('p.c')).toBe(false);
    expect(first.commit(new MutationBatch().update(C, 1)).ok).toBe(true);
    expect(second.commit(new MutationBatch().update(C, 1))).toEqual({ ok: false, error: { code: 'unknown_key', key: 'p.c' } });
  });
});
