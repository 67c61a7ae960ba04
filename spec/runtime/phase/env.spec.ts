import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolDescriptors } from '../../../src/contract/tool.ts';
import { buildExecutionEnv, preRegistered, type PluginRegistrar } from '../../../src/core/phase/plugin.ts';
import { PhaseRuntime } from '../../../src/runtime/phase-runtime.ts';
import { defineAction, defineEffect, StateCommand } from '../../../src/core/state/state-command.ts';
import { counterKey } from '../../support/keys.ts';
import { plugin } from '../../support/plugins.ts';

const A = defineAction('x.a', 'step_end', z.null());
const E = defineEffect('x.e', z.null());
const tool = (id: string) => ({ descriptor: ToolDescriptors.new(id, id, id) });
const noop = () => StateCommand.empty();

describe('plugin registrar duplicates (core-spec §1.5, §2.6)', () => {
  it.each([
    ['key in one plugin', [plugin('p', (r) => r.registerKey(counterKey('k')).registerKey(counterKey('k')))], { code: 'key_already_registered', key: 'k' }],
    [
      'key across plugins',
      [plugin('p', (r) => r.registerKey(counterKey('k'))), plugin('q', (r) => r.registerKey(counterKey('k')))],
      { code: 'key_already_registered', key: 'k' },
    ],
    [
      'handler in one plugin',
      [plugin('p', (r) => r.registerScheduledAction(A, noop).registerScheduledAction(A, noop))],
      { code: 'handler_already_registered', key: 'x.a' },
    ],
    [
      'handler across plugins',
      [plugin('p', (r) => r.registerScheduledAction(A, noop)), plugin('q', (r) => r.registerScheduledAction(A, noop))],
      { code: 'handler_already_registered', key: 'x.a' },
    ],
    [
      'effect handler in one plugin',
      [plugin('p', (r) => r.registerEffect(E, () => {}).registerEffect(E, () => {}))],
      { code: 'effect_handler_already_registered', key: 'x.e' },
    ],
    [
      'effect handler across plugins',
      [plugin('p', (r) => r.registerEffect(E, () => {})), plugin('q', (r) => r.registerEffect(E, () => {}))],
      { code: 'effect_handler_already_registered', key: 'x.e' },
    ],
    ['tool in one plugin', [plugin('p', (r) => r.registerTool(tool('t')).registerTool(tool('t')))], { code: 'tool_already_registered', toolId: 't' }],
    [
      'tool across plugins',
      [plugin('p', (r) => r.registerTool(tool('t'))), plugin('q', (r) => r.registerTool(tool('t')))],
      { code: 'tool_already_registered', toolId: 't' },
    ],
    ['plugin name', [plugin('p', () => {}), plugin('p', () => {})], { code: 'plugin_already_installed', name: 'p' }],
  ])('reports a duplicate %s', (_label, plugins, error) => {
    expect(buildExecutionEnv(plugins)).toEqual({ ok: false, error });
    expect(PhaseRuntime.create(plugins)).toEqual({ ok: false, error });
  });

  it('a key already in the store fails runtime creation', () => {
    const first = PhaseRuntime.create([plugin('p', (r) => r.registerKey(counterKey('k')))]);
    if (!first.ok) throw new Error('create');
    expect(PhaseRuntime.create([plugin('q', (r) => r.registerKey(counterKey('k')))], { store: first.value.store })).toEqual({
      ok: false,
      error: { code: 'key_already_registered', key: 'k' },
    });
  });
});

describe('activation (book: 插件系统内部机制)', () => {
  const plugins = [
    plugin('on', (r) =>
      r
        .registerKey(counterKey('on.k'))
        .registerPhaseHook('step_end', noop)
        .registerTool(tool('on.t'))
        .registerRequestTransform((s: string) => `${s}+on`)
        .registerScheduledAction(A, noop),
    ),
    plugin('off', (r) =>
      r
        .registerKey(counterKey('off.k'))
        .registerPhaseHook('step_end', noop)
        .registerTool(tool('on.t'))
        .registerRequestTransform((s: string) => `${s}+off`)
        .registerEffect(E, () => {}),
    ),
  ];

  it('inactive plugins keep keys, action and effect handlers but lose hooks, tools and transforms', () => {
    const env = buildExecutionEnv(plugins, { activePlugins: ['on'] });
    if (!env.ok) throw new Error('env');
    expect(env.value.hooks.get('step_end')?.map((h) => h.pluginId)).toEqual(['on']);
    expect([...env.value.tools.keys()]).toEqual(['on.t']);
    expect(env.value.transforms).toHaveLength(1);
    expect([...env.value.actionHandlers.keys()]).toEqual(['x.a']);
    expect([...env.value.effectHandlers.keys()]).toEqual(['x.e']);
    expect(env.value.plugins.map((p) => p.name)).toEqual(['on', 'off']);
  });

  it('request transforms run in registration order, only from active plugins', () => {
    const all = PhaseRuntime.create([plugins[0]!, plugin('third', (r) => r.registerRequestTransform((s: string) => `${s}+third`))]);
    if (!all.ok) throw new Error('create');
    expect(all.value.applyRequestTransforms('req')).toBe('req+on+third');
    const some = PhaseRuntime.create(plugins, { activePlugins: ['off'] });
    if (!some.ok) throw new Error('create');
    expect(some.value.applyRequestTransforms('req')).toBe('req+off');
  });
});

describe('a pre-registered plugin (registered once, when it is made)', () => {
  it('registers once: every env built from it has its components, and its register is not called again', () => {
    let calls = 0;
    const counted = preRegistered(
      plugin('pre', (r) => {
        calls++;
        r.registerKey(counterKey('pre.k')).registerPhaseHook('step_end', noop).registerScheduledAction(A, noop).registerTool(tool('pre.t'));
      }),
    );
    expect(calls).toBe(1);
    for (let i = 0; i < 3; i++) {
      const env = buildExecutionEnv([counted]);
      if (!env.ok) throw new Error(env.error.code);
      expect(env.value.plugins).toEqual([{ name: 'pre', keys: [{ key: expect.objectContaining({ key: 'pre.k' }) }] }]);
      expect(env.value.hooks.get('step_end')?.map((h) => h.pluginId)).toEqual(['pre']);
      expect([...env.value.actionHandlers.keys()]).toEqual(['x.a']);
      expect([...env.value.tools.keys()]).toEqual(['pre.t']);
    }
    expect(calls).toBe(1);
    // Its register still registers into a registrar given to it (it is a plugin like any other).
    const into = {
      registerKey: () => into,
      registerPhaseHook: () => into,
      registerScheduledAction: () => into,
      registerTool: () => into,
    } as unknown as PluginRegistrar;
    counted.register(into);
    expect(calls).toBe(2);
  });

  it('a duplicate in its registration is reported by every env built from it, as for any plugin', () => {
    const twice = preRegistered(plugin('dup', (r) => r.registerKey(counterKey('d')).registerKey(counterKey('d'))));
    expect(buildExecutionEnv([twice])).toEqual({ ok: false, error: { code: 'key_already_registered', key: 'd' } });
    expect(buildExecutionEnv([twice])).toEqual({ ok: false, error: { code: 'key_already_registered', key: 'd' } });
  });

  it('a plugin that is not pre-registered is registered by each env built', () => {
    let calls = 0;
    const fresh = plugin('fresh', () => void calls++);
    buildExecutionEnv([fresh]);
    buildExecutionEnv([fresh]);
    expect(calls).toBe(2);
  });

  it('the registrar makes a list at its first entry; a kind never registered reads as empty', () => {
    const env = buildExecutionEnv([plugin('empty', () => {})]);
    expect(env.ok && env.value.plugins).toEqual([{ name: 'empty', keys: [] }]);
    expect(env.ok && [...env.value.hooks.values()].every((l) => l.length === 0)).toBe(true);
  });
});

describe('PhaseRuntime.forRun', () => {
  it('gives every run its own store over the env’s keys, at revision 0, and action ids from 1', async () => {
    const { buildExecutionEnv: build } = await import('../../../src/core/phase/plugin.ts');
    const { defineAction, StateCommand } = await import('../../../src/core/state/state-command.ts');
    const { PendingScheduledActions } = await import('../../../src/core/phase/runtime-keys.ts');
    const { z } = await import('zod');
    const Later = defineAction('p.later', 'run_end', z.null());
    const Count = counterKey('p.count');
    const env = build([plugin('p', (r) => r.registerKey(Count).registerScheduledAction(Later, () => StateCommand.empty()))]);
    if (!env.ok) throw new Error('env');
    const first = PhaseRuntime.forRun(env.value);
    const second = PhaseRuntime.forRun(env.value);
    if (!first.ok || !second.ok) throw new Error('forRun');
    expect(second.value.store).not.toBe(first.value.store);
    for (const r of [first.value, second.value]) {
      expect(r.store.revision).toBe(0);
      expect(r.store.isRegistered('p.count')).toBe(true);
    }
    await first.value.submitCommand(StateCommand.empty().update(Count, 2).scheduleAction(Later, null));
    await second.value.submitCommand(StateCommand.empty().scheduleAction(Later, null));
    expect(first.value.store.snapshot().get(Count)).toBe(2);
    expect(second.value.store.snapshot().get(Count)).toBeUndefined();
    expect(
      second.value.store
        .snapshot()
        .get(PendingScheduledActions)
        ?.map((e) => e.id),
    ).toEqual([1]);
  });
});
