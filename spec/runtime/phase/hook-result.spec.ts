import { describe, expect, it } from 'vitest';
import type { Plugin, PhaseHook } from '../../../src/core/phase/plugin.ts';
import { defineAction, StateCommand } from '../../../src/core/state/state-command.ts';
import { PhaseRuntime } from '../../../src/runtime/phase-runtime.ts';
import { z } from 'zod';
import { counterKey, logKey } from '../../support/keys.ts';
import { hookPlugin, keysPlugin, plugin } from '../../support/plugins.ts';

const C1 = counterKey('c1');
const L1 = logKey('l1');
const keys = keysPlugin('keys', [{ key: C1 }, { key: L1 }]);

function runtime(plugins: Plugin[]): PhaseRuntime {
  const r = PhaseRuntime.create([keys, ...plugins]);
  if (!r.ok) throw new Error(JSON.stringify(r.error));
  return r.value;
}

// Hooks that return nothing type-check as hooks (this file is type-checked with the specs).
const nothing: PhaseHook<'step_start'> = () => {};
const nothingLater: PhaseHook<'step_start'> = async () => {};
const sometimes: PhaseHook<'step_start'> = (ctx) => (ctx.snapshot.revision === 0 ? StateCommand.empty().update(C1, 1) : undefined);

describe('a hook that returns nothing changes nothing', () => {
  it('alone, at once or as a promise: the phase runs, nothing is committed', async () => {
    for (const hook of [nothing, nothingLater]) {
      const rt = runtime([hookPlugin('a', 'step_start', hook)]);
      const report = await rt.runPhase('step_start');
      expect(report.ok && report.value).toMatchObject({ hooksRun: 1, commits: 0 });
      expect(rt.store.revision).toBe(0);
    }
  });

  it('beside hooks that return commands: theirs are committed, in one commit', async () => {
    const rt = runtime([
      hookPlugin('a', 'step_start', nothing),
      hookPlugin('b', 'step_start', () => StateCommand.empty().update(L1, 'b')),
      hookPlugin('c', 'step_start', nothingLater),
      hookPlugin('d', 'step_start', async () => StateCommand.empty().update(C1, 2)),
    ]);
    const report = await rt.runPhase('step_start');
    expect(report.ok && report.value).toMatchObject({ hooksRun: 4, commits: 1 });
    expect(rt.store.snapshot().get(L1)).toEqual(['b']);
    expect(rt.store.snapshot().get(C1)).toBe(2);
  });

  it('when it is re-run after an exclusive conflict and then returns nothing', async () => {
    const rt = runtime([
      hookPlugin('a', 'step_start', () => StateCommand.empty().update(L1, 'a')),
      hookPlugin('b', 'step_start', (ctx) => (ctx.snapshot.revision === 0 ? StateCommand.empty().update(L1, 'b') : undefined)),
    ]);
    const report = await rt.runPhase('step_start');
    expect(report.ok && report.value).toMatchObject({ hooksRun: 2, deferredHooks: 1, commits: 1 });
    expect(rt.store.snapshot().get(L1)).toEqual(['a']);
  });

  it('a hook that answers with a command on one snapshot and nothing on the next', async () => {
    const rt = runtime([hookPlugin('a', 'step_start', sometimes)]);
    await rt.runPhase('step_start');
    await rt.runPhase('step_start');
    expect(rt.store.snapshot().get(C1)).toBe(1);
    expect(rt.store.revision).toBe(1);
  });

  it('so does an action handler: the action is done, nothing else changes', async () => {
    const Noop = defineAction('test.noop', 'step_start', z.string());
    const seen: string[] = [];
    const rt = runtime([
      plugin('acts', (r) => {
        r.registerScheduledAction(Noop, (_ctx, payload) => void seen.push(payload));
        r.registerPhaseHook('step_start', (ctx) => (ctx.snapshot.revision === 0 ? StateCommand.empty().scheduleAction(Noop, 'hello') : undefined));
      }),
    ]);
    const report = await rt.runPhase('step_start');
    expect(report.ok && report.value).toMatchObject({ processedActions: 1, failedActions: 0 });
    expect(seen).toEqual(['hello']);
  });
});
