import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PhaseRuntime } from '../../../src/runtime/phase-runtime.ts';
import type { Plugin } from '../../../src/core/phase/plugin.ts';
import { defineAction, defineEffect, StateCommand } from '../../../src/core/state/state-command.ts';
import { StateFailure } from '../../../src/core/phase/phase-error.ts';
import { counterKey } from '../../support/keys.ts';
import { plugin } from '../../support/plugins.ts';

const Count = counterKey('count');
const Audit = defineEffect('audit.record', z.string());
const Other = defineEffect('audit.other', z.number());
const Bump = defineAction('audit.bump', 'step_end', z.null());

function runtime(plugins: Plugin[]): PhaseRuntime {
  const r = PhaseRuntime.create(plugins);
  if (!r.ok) throw new Error(JSON.stringify(r.error));
  return r.value;
}

describe('effects (book: Effects → 分发生命周期)', () => {
  it('are dispatched after the commit, in order, against the post-commit snapshot', async () => {
    const log: string[] = [];
    const rt = runtime([
      plugin('p', (r) =>
        r
          .registerKey(Count)
          .registerEffect(Audit, (payload, snap) => void log.push(`${payload}@${snap.revision}:${snap.get(Count)}`))
          .registerPhaseHook('step_end', () => StateCommand.empty().update(Count, 5).emit(Audit, 'one').emit(Audit, 'two')),
      ),
    ]);
    rt.store.onCommit((e) => log.push(`commit ${e.newRevision}`));
    const report = await rt.runPhase('step_end');
    expect(log).toEqual(['commit 1', 'one@1:5', 'two@1:5']);
    expect(report.ok && report.value.effects).toEqual({
      attempted: 2,
      dispatched: 2,
      failed: 0,
      records: [
        { key: 'audit.record', payload: 'one', revision: 1 },
        { key: 'audit.record', payload: 'two', revision: 1 },
      ],
    });
  });

  it('a failing effect handler is recorded, never propagated, and rolls nothing back', async () => {
    const log: string[] = [];
    const rt = runtime([
      plugin('p', (r) =>
        r
          .registerKey(Count)
          .registerEffect(Audit, () => Promise.reject(new Error('webhook down')))
          .registerEffect(Other, (n) => void log.push(`other ${n}`))
          .registerPhaseHook('step_end', () =>
            StateCommand.empty()
              .update(Count, 1)
              .emit(Audit, 'x')
              .emit(Other, 'not a number' as unknown as number)
              .emit(Other, 2),
          ),
      ),
    ]);
    const report = await rt.runPhase('step_end');
    expect(report.ok).toBe(true);
    expect(report.ok && report.value.effects).toMatchObject({ attempted: 3, dispatched: 1, failed: 2 });
    const records = report.ok ? report.value.effects.records : [];
    expect(records.map((r) => [r.key, r.error?.split(':')[0]])).toEqual([
      ['audit.record', 'webhook down'],
      ['audit.other', 'invalid payload for audit.other'],
      ['audit.other', undefined],
    ]);
    expect(log).toEqual(['other 2']);
    expect(rt.store.snapshot().get(Count)).toBe(1);
  });

  it('an effect without a handler is refused at submit: nothing committed, no effect dispatched', async () => {
    const log: string[] = [];
    const rt = runtime([plugin('p', (r) => r.registerKey(Count).registerEffect(Audit, (p) => void log.push(p)))]);
    const r = await rt.submitCommand(StateCommand.empty().update(Count, 1).emit(Audit, 'a').emit(Other, 1));
    expect(r).toEqual({ ok: false, error: { code: 'unknown_effect_handler', key: 'audit.other' } });
    expect(rt.store.revision).toBe(0);
    expect(log).toEqual([]);
  });

  it('a hook emitting an unknown effect fails the phase', async () => {
    const rt = runtime([plugin('p', (r) => r.registerPhaseHook('step_start', () => StateCommand.empty().emit(Other, 1)))]);
    expect(await rt.runPhase('step_start')).toEqual({ ok: false, error: { code: 'unknown_effect_handler', key: 'audit.other' } });
  });

  it('effects emitted by action handlers are dispatched and counted in the phase report', async () => {
    const log: string[] = [];
    const rt = runtime([
      plugin('p', (r) =>
        r
          .registerKey(Count)
          .registerEffect(Audit, (p, snap) => void log.push(`${p}@${snap.get(Count)}`))
          .registerScheduledAction(Bump, () => StateCommand.empty().update(Count, 1).emit(Audit, 'from action'))
          .registerPhaseHook('step_end', () => StateCommand.empty().scheduleAction(Bump, null).emit(Audit, 'from hook')),
      ),
    ]);
    const report = await rt.runPhase('step_end');
    expect(log).toEqual(['from hook@undefined', 'from action@1']);
    expect(report.ok && report.value.effects).toMatchObject({ attempted: 2, dispatched: 2 });
    expect(report.ok && report.value.commits).toBe(2);
  });

  it('a StateFailure thrown by an effect handler is recorded with its description', async () => {
    const rt = runtime([
      plugin('p', (r) =>
        r
          .registerEffect(Audit, () => {
            throw new StateFailure({ code: 'cancelled' });
          })
          .registerPhaseHook('run_end', () => StateCommand.empty().emit(Audit, 'x')),
      ),
    ]);
    const report = await rt.runPhase('run_end');
    expect(report.ok && report.value.effects.records).toEqual([{ key: 'audit.record', payload: 'x', revision: 0, error: 'cancelled' }]);
  });
});
