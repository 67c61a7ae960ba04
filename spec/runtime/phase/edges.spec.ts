import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { describePhaseError } from '../../../src/core/phase/phase-error.ts';
import { PhaseRuntime } from '../../../src/runtime/phase-runtime.ts';
import { FailedScheduledActions, PendingScheduledActions } from '../../../src/core/phase/runtime-keys.ts';
import { defineAction, defineEffect, StateCommand } from '../../../src/core/state/state-command.ts';
import { defineStateKey } from '../../../src/core/state/state-key.ts';
import { StateStore } from '../../../src/runtime/state-store.ts';
import { counterKey, logKey } from '../../support/keys.ts';
import { hookPlugin, plugin } from '../../support/plugins.ts';

const C = counterKey('c');
const L = logKey('l');
const Loop = defineAction('edge.loop', 'step_end', z.null());
const Fail = defineAction('edge.fail', 'run_end', z.null());
const Nope = defineEffect('edge.nope', z.null());

describe('phase engine edges', () => {
  it('fails to create when a runtime queue key name is already taken in the store', () => {
    const store = new StateStore();
    store.registerKeys([{ key: { ...logKey('__runtime.pending_scheduled_actions') } }]);
    expect(PhaseRuntime.create([], { store })).toEqual({
      ok: false,
      error: { code: 'key_already_registered', key: '__runtime.pending_scheduled_actions' },
    });
  });

  it('reuses a store that already has the runtime queue installed', () => {
    const first = PhaseRuntime.create([]);
    if (!first.ok) throw new Error('create');
    expect(PhaseRuntime.create([], { store: first.value.store }).ok).toBe(true);
  });

  it('executeActions reports a non-converging cascade', async () => {
    const r = PhaseRuntime.create([plugin('p', (x) => x.registerScheduledAction(Loop, () => StateCommand.empty().scheduleAction(Loop, null)))], {
      maxRounds: 3,
    });
    if (!r.ok) throw new Error('create');
    await r.value.submitCommand(StateCommand.empty().scheduleAction(Loop, null));
    expect(await r.value.executeActions('step_end')).toEqual({ ok: false, error: { code: 'phase_run_loop_exceeded', phase: 'step_end', maxRounds: 3 } });
  });

  it('GATHER fails on two hooks with different explicit base revisions', async () => {
    const r = PhaseRuntime.create([
      plugin('keys', (x) => x.registerKey(C)),
      hookPlugin('a', 'step_start', () => StateCommand.empty().update(C, 1).withBaseRevision(0)),
      hookPlugin('b', 'step_start', () => StateCommand.empty().update(C, 1).withBaseRevision(3)),
    ]);
    if (!r.ok) throw new Error('create');
    expect(await r.value.runPhase('step_start')).toEqual({ ok: false, error: { code: 'mutation_base_revision_mismatch', left: 0, right: 3 } });
  });

  it('a deferred hook whose re-run command cannot be submitted fails the phase', async () => {
    let calls = 0;
    const r = PhaseRuntime.create([
      plugin('keys', (x) => x.registerKey(L)),
      hookPlugin('a', 'step_start', () => StateCommand.empty().update(L, 'a')),
      hookPlugin('b', 'step_start', () => (++calls === 1 ? StateCommand.empty().update(L, 'b') : StateCommand.empty().emit(Nope, null))),
    ]);
    if (!r.ok) throw new Error('create');
    expect(await r.value.runPhase('step_start')).toEqual({ ok: false, error: { code: 'unknown_effect_handler', key: 'edge.nope' } });
  });

  it('persists the pending and dead-letter queues and restores them', async () => {
    const r = PhaseRuntime.create([
      plugin('p', (x) =>
        x
          .registerScheduledAction(Fail, () => {
            throw new Error('no');
          })
          .registerScheduledAction(Loop, () => StateCommand.empty()),
      ),
    ]);
    if (!r.ok) throw new Error('create');
    await r.value.submitCommand(StateCommand.empty().scheduleAction(Fail, null).scheduleAction(Loop, null));
    await r.value.runPhase('run_end');
    const exported = r.value.store.exportPersisted();
    expect(exported.ok && exported.value.extensions).toEqual({
      '__runtime.failed_scheduled_actions': [{ id: 1, action: { phase: 'run_end', key: 'edge.fail', payload: null }, error: 'no' }],
      '__runtime.pending_scheduled_actions': [{ id: 2, action: { phase: 'step_end', key: 'edge.loop', payload: null } }],
    });
    const again = PhaseRuntime.create([]);
    if (!again.ok || !exported.ok) throw new Error('create');
    expect(again.value.store.restorePersisted(exported.value, 'error').ok).toBe(true);
    expect(again.value.store.snapshot().get(PendingScheduledActions)).toHaveLength(1);
    expect(again.value.store.snapshot().get(FailedScheduledActions)?.[0]?.error).toBe('no');
  });

  it('describes phase errors', () => {
    expect(describePhaseError({ code: 'hook_failed', phase: 'run_start', pluginId: 'p', message: 'm' })).toBe('hook of plugin p failed in run_start: m');
    expect(describePhaseError({ code: 'unknown_key', key: 'k' })).toBe('unknown state key: k');
  });

  it('idle: true only for a phase with no hook, no queued action it would run, and no phase or submit in progress', async () => {
    let release: (() => void) | undefined;
    const r = PhaseRuntime.create([
      plugin('keys', (x) => {
        x.registerKey(C);
        x.registerScheduledAction(Loop, () => StateCommand.empty());
      }),
      hookPlugin('slow', 'step_start', () => new Promise<StateCommand>((resolve) => (release = () => resolve(StateCommand.empty())))),
    ]);
    if (!r.ok) throw new Error('create');
    const engine = r.value;
    expect(engine.idle('before_inference')).toBe(true);
    expect(engine.idle('step_start')).toBe(false);
    expect(engine.idle('step_end')).toBe(true);
    await engine.submitCommand(StateCommand.empty().scheduleAction(Loop, null));
    expect(engine.idle('step_end')).toBe(false);
    expect(engine.idle('before_inference')).toBe(true);
    const running = engine.runPhase('step_start');
    expect(engine.idle('before_inference')).toBe(false);
    release?.();
    expect((await running).ok).toBe(true);
    expect(engine.idle('before_inference')).toBe(true);
  });

  it('submitOrFail: undefined once committed (synchronously when it can), the error otherwise, in turn behind a running phase', async () => {
    let release: (() => void) | undefined;
    const r = PhaseRuntime.create([
      plugin('keys', (x) => x.registerKey(C)),
      hookPlugin('slow', 'step_start', () => new Promise<StateCommand>((resolve) => (release = () => resolve(StateCommand.empty().update(C, 10))))),
    ]);
    if (!r.ok) throw new Error('create');
    const engine = r.value;
    expect(engine.submitOrFail(StateCommand.empty().update(C, 1))).toBeUndefined();
    expect(engine.store.snapshot().get(C)).toBe(1);
    expect(engine.submitOrFail(StateCommand.empty().update(C, 1).withBaseRevision(0))).toEqual({ code: 'revision_conflict', expected: 0, actual: 1 });
    expect(engine.submitOrFail(StateCommand.empty().update(L, 'x'))).toEqual({ code: 'unknown_key', key: 'l' });
    expect(engine.submitOrFail(StateCommand.empty().emit(Nope, null))).toEqual({ code: 'unknown_effect_handler', key: 'edge.nope' });
    const running = engine.runPhase('step_start');
    const queued = engine.submitOrFail(StateCommand.empty().update(C, 100));
    expect(queued).toBeInstanceOf(Promise);
    release?.();
    await running;
    expect(await queued).toBeUndefined();
    // The phase's commit came first, then the queued submit.
    expect(engine.store.snapshot().get(C)).toBe(111);
    expect(engine.store.revision).toBe(3);
  });

  it('GATHER with one hook: a throw, a rejection and an empty command, synchronous or not, as with several hooks', async () => {
    const make = (hook: () => StateCommand | Promise<StateCommand>) => {
      const r = PhaseRuntime.create([plugin('keys', (x) => x.registerKey(C)), hookPlugin('h', 'step_start', hook)]);
      if (!r.ok) throw new Error('create');
      return r.value;
    };
    expect(
      await make(() => {
        throw new Error('boom');
      }).runPhase('step_start'),
    ).toMatchObject({ ok: false, error: { code: 'hook_failed', pluginId: 'h', message: 'boom' } });
    expect(await make(() => Promise.reject(new Error('late'))).runPhase('step_start')).toMatchObject({
      ok: false,
      error: { code: 'hook_failed', pluginId: 'h', message: 'late' },
    });
    expect(await make(() => Promise.resolve(StateCommand.empty().update(C, 2))).runPhase('step_start')).toMatchObject({
      ok: true,
      value: { hooksRun: 1, commits: 1 },
    });
    expect(await make(() => StateCommand.empty()).runPhase('step_start')).toMatchObject({ ok: true, value: { hooksRun: 1, commits: 0 } });
    expect(await make(() => StateCommand.empty().update(L, 'x')).runPhase('step_start')).toEqual({ ok: false, error: { code: 'unknown_key', key: 'l' } });
  });

  it('submitOrFail: an effect is dispatched before it settles; a failure behind a running phase comes back as the error; a throwing reducer releases the lock', async () => {
    const seen: string[] = [];
    let release: (() => void) | undefined;
    const Boom = defineStateKey<number, number>({
      key: 'boom',
      init: () => 0,
      apply: () => {
        throw new Error('reducer');
      },
      codec: z.number(),
    });
    const r = PhaseRuntime.create([
      plugin('keys', (x) => {
        x.registerKey(C);
        x.registerKey(Boom);
        x.registerEffect(Nope, () => void seen.push('effect'));
      }),
      hookPlugin('slow', 'step_start', () => new Promise<StateCommand>((resolve) => (release = () => resolve(StateCommand.empty())))),
    ]);
    if (!r.ok) throw new Error('create');
    const engine = r.value;
    const withEffect = engine.submitOrFail(StateCommand.empty().update(C, 1).emit(Nope, null));
    expect(withEffect).toBeInstanceOf(Promise);
    expect(await withEffect).toBeUndefined();
    expect(seen).toEqual(['effect']);
    const running = engine.runPhase('step_start');
    const queued = engine.submitOrFail(StateCommand.empty().update(L, 'x'));
    release?.();
    await running;
    expect(await queued).toEqual({ code: 'unknown_key', key: 'l' });
    expect(() => engine.submitOrFail(StateCommand.empty().update(Boom, 1))).toThrow('reducer');
    expect(engine.idle('before_inference')).toBe(true);
  });

  it('a phase with nothing to run reports the queued actions it skipped; a submit whose reducer throws rejects and releases the lock', async () => {
    const Boom = defineStateKey<number, number>({
      key: 'boom',
      init: () => 0,
      apply: () => {
        throw new Error('reducer');
      },
      codec: z.number(),
    });
    const r = PhaseRuntime.create([
      plugin('keys', (x) => {
        x.registerKey(Boom);
        x.registerScheduledAction(Loop, () => StateCommand.empty());
      }),
    ]);
    if (!r.ok) throw new Error('create');
    const engine = r.value;
    await engine.submitCommand(StateCommand.empty().scheduleAction(Loop, null).scheduleAction(Loop, null));
    expect(await engine.runPhase('before_inference')).toMatchObject({ ok: true, value: { phase: 'before_inference', skippedActions: 2, commits: 0 } });
    await expect(engine.submitCommand(StateCommand.empty().update(Boom, 1))).rejects.toThrow('reducer');
    expect(engine.idle('before_inference')).toBe(true);
  });
});
