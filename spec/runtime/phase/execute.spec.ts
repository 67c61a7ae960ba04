import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DEFAULT_MAX_PHASE_ROUNDS, PhaseRuntime } from '../../../src/runtime/phase-runtime.ts';
import { FailedScheduledActions, PendingScheduledActions } from '../../../src/core/phase/runtime-keys.ts';
import type { Plugin } from '../../../src/core/phase/plugin.ts';
import { defineAction, StateCommand } from '../../../src/core/state/state-command.ts';
import { counterKey, logKey, registerKey } from '../../support/keys.ts';
import { plugin } from '../../support/plugins.ts';

const Done = logKey('done');
const Count = counterKey('count');
const Node = defineAction('graph.node', 'step_end', z.object({ id: z.number().int() }));
const Later = defineAction('graph.later', 'run_end', z.null());
const Fail = defineAction('graph.fail', 'step_end', z.string());

function runtime(plugins: Plugin[]): PhaseRuntime {
  const r = PhaseRuntime.create(plugins);
  if (!r.ok) throw new Error(JSON.stringify(r.error));
  return r.value;
}

/** A forest of actions: node ids by level; each node's handler schedules its children. */
function graphPlugin(levels: number[][], parents: Map<number, number>): Plugin {
  const children = new Map<number, number[]>();
  for (const [child, parent] of parents) children.set(parent, [...(children.get(parent) ?? []), child]);
  return plugin('graph', (r) =>
    r
      .registerKey(Done)
      .registerKey(Count)
      .registerPhaseHook('step_end', () => {
        const cmd = StateCommand.empty();
        for (const id of levels[0] ?? []) cmd.scheduleAction(Node, { id });
        return cmd;
      })
      .registerScheduledAction(Node, (_ctx, { id }) => {
        const cmd = StateCommand.empty().update(Count, 1);
        for (const c of children.get(id) ?? []) cmd.scheduleAction(Node, { id: c });
        return cmd;
      }),
  );
}

const forest = (depth: fc.Arbitrary<number>) =>
  depth.chain((d) =>
    fc.array(fc.integer({ min: 1, max: 3 }), { minLength: d, maxLength: d }).chain((sizes) => {
      let next = 0;
      const levels = sizes.map((n) => Array.from({ length: n }, () => next++));
      const parentChoices = levels.slice(1).map((level, k) => fc.array(fc.constantFrom(...levels[k]!), { minLength: level.length, maxLength: level.length }));
      return fc.tuple(fc.constant(levels), fc.tuple(...parentChoices)).map(([lv, choice]) => {
        const parents = new Map<number, number>();
        lv.slice(1).forEach((level, k) => {
          level.forEach((id, j) => {
            parents.set(id, choice[k]![j]!);
          });
        });
        return { depth: d, levels: lv, parents };
      });
    }),
  );

describe('EXECUTE convergence (book: Scheduled Actions → 收敛与级联)', () => {
  it('property 3: a cascade of depth d ≤ 16 converges in exactly d working rounds; depth 17 fails', async () => {
    await fc.assert(
      fc.asyncProperty(forest(fc.oneof(fc.integer({ min: 1, max: 17 }), fc.constantFrom(16, 17))), async ({ depth, levels, parents }) => {
        const rt = runtime([graphPlugin(levels, parents)]);
        const report = await rt.runPhase('step_end');
        const nodes = levels.flat().length;
        if (depth <= DEFAULT_MAX_PHASE_ROUNDS) {
          expect(report.ok).toBe(true);
          if (!report.ok) return;
          expect(report.value.rounds).toBe(depth);
          expect(report.value.processedActions).toBe(nodes);
          expect(rt.store.snapshot().get(Count)).toBe(nodes);
          expect(rt.store.snapshot().getOrDefault(PendingScheduledActions)).toEqual([]);
        } else {
          expect(report).toEqual({ ok: false, error: { code: 'phase_run_loop_exceeded', phase: 'step_end', maxRounds: 16 } });
          const processedBeforeFailure = levels.slice(0, 16).flat().length;
          expect(rt.store.snapshot().get(Count)).toBe(processedBeforeFailure);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('the boundary is exact for a chain: 16 rounds converge, 17 fail', async () => {
    const chain = (n: number) => {
      const levels = Array.from({ length: n }, (_, i) => [i]);
      return new Map(levels.slice(1).map((l, i) => [l[0]!, i]));
    };
    const ok = await runtime([
      graphPlugin(
        Array.from({ length: 16 }, (_, i) => [i]),
        chain(16),
      ),
    ]).runPhase('step_end');
    expect(ok.ok && ok.value.rounds).toBe(16);
    const fail = await runtime([
      graphPlugin(
        Array.from({ length: 17 }, (_, i) => [i]),
        chain(17),
      ),
    ]).runPhase('step_end');
    expect(fail).toEqual({ ok: false, error: { code: 'phase_run_loop_exceeded', phase: 'step_end', maxRounds: 16 } });
  });

  it('an action that respawns forever fails with phase_run_loop_exceeded', async () => {
    // Under a step budget: were the round limit gone, the spec fails here instead of looping forever.
    let runs = 0;
    const rt = runtime([
      plugin('loop', (r) =>
        r
          .registerPhaseHook('step_end', () => StateCommand.empty().scheduleAction(Node, { id: 0 }))
          .registerScheduledAction(Node, () => {
            if (++runs > 1_000) throw new Error('step budget spent: the round limit did not stop the loop');
            return StateCommand.empty().scheduleAction(Node, { id: 0 });
          }),
      ),
    ]);
    expect(await rt.runPhase('step_end')).toEqual({ ok: false, error: { code: 'phase_run_loop_exceeded', phase: 'step_end', maxRounds: 16 } });
    expect(runs).toBe(16);
  });

  it('runs matching actions in queue order, each on a fresh snapshot, with contiguous envelope ids', async () => {
    const seen: string[] = [];
    const rt = runtime([
      plugin('p', (r) =>
        r
          .registerKey(Done)
          .registerPhaseHook('step_end', () => StateCommand.empty().scheduleAction(Node, { id: 1 }).scheduleAction(Node, { id: 2 }))
          .registerScheduledAction(Node, (ctx, { id }) => {
            seen.push(`${id}@${ctx.snapshot.revision}`);
            return StateCommand.empty().update(Done, String(id));
          }),
      ),
    ]);
    let queued: unknown;
    rt.store.onCommit((e) => (queued ??= e.snapshot.get(PendingScheduledActions)));
    await rt.runPhase('step_end');
    expect(queued).toEqual([
      { id: 1, action: { phase: 'step_end', key: 'graph.node', payload: { id: 1 } } },
      { id: 2, action: { phase: 'step_end', key: 'graph.node', payload: { id: 2 } } },
    ]);
    expect(seen).toEqual(['1@1', '2@2']);
    expect(rt.store.snapshot().get(Done)).toEqual(['1', '2']);
  });

  it('leaves actions of other phases queued and counts them as skipped; runs them in their phase', async () => {
    const rt = runtime([
      plugin('p', (r) =>
        r
          .registerKey(Count)
          .registerPhaseHook('step_end', () => StateCommand.empty().scheduleAction(Later, null))
          .registerScheduledAction(Later, () => StateCommand.empty().update(Count, 1)),
      ),
    ]);
    const report = await rt.runPhase('step_end');
    expect(report.ok && report.value).toMatchObject({ rounds: 0, processedActions: 0, skippedActions: 1 });
    const end = await rt.runPhase('run_end');
    expect(end.ok && end.value).toMatchObject({ rounds: 1, processedActions: 1, skippedActions: 0 });
    expect(rt.store.snapshot().get(Count)).toBe(1);
  });

  it('a failing handler is dead-lettered with its error and the phase continues', async () => {
    const Ghost = registerKey('ghost');
    const rt = runtime([
      plugin('p', (r) =>
        r
          .registerKey(Count)
          .registerPhaseHook('step_end', () =>
            StateCommand.empty()
              .scheduleAction(Fail, 'throw')
              .scheduleAction(Fail, 'unknown-key')
              .scheduleAction(Node, { id: 'bad' as unknown as number })
              .scheduleAction(Fail, 'ok'),
          )
          .registerScheduledAction(Node, () => StateCommand.empty())
          .registerScheduledAction(Fail, (_ctx, mode) => {
            if (mode === 'throw') throw new Error('handler broke');
            if (mode === 'unknown-key') return StateCommand.empty().update(Ghost, 'x');
            return StateCommand.empty().update(Count, 1);
          }),
      ),
    ]);
    const report = await rt.runPhase('step_end');
    expect(report.ok && report.value).toMatchObject({ rounds: 1, processedActions: 1, failedActions: 3 });
    const failed = rt.store.snapshot().get(FailedScheduledActions) ?? [];
    expect(failed.map((f) => [f.id, f.error.split(':')[0]])).toEqual([
      [1, 'handler broke'],
      [2, 'failed to submit action command'],
      [3, 'invalid payload for graph.node'],
    ]);
    expect(failed[1]?.error).toBe('failed to submit action command: unknown state key: ghost');
    expect(rt.store.snapshot().get(Count)).toBe(1);
    expect(rt.store.snapshot().getOrDefault(PendingScheduledActions)).toEqual([]);
  });

  it('scheduling an action with no handler is refused at submit and nothing is committed', async () => {
    const rt = runtime([plugin('p', (r) => r.registerKey(Count))]);
    const r = await rt.submitCommand(StateCommand.empty().update(Count, 1).scheduleAction(Node, { id: 1 }));
    expect(r).toEqual({ ok: false, error: { code: 'unknown_scheduled_action_handler', key: 'graph.node' } });
    expect(rt.store.revision).toBe(0);
  });

  it('executeActions runs EXECUTE alone after a submitted command', async () => {
    const rt = runtime([plugin('p', (r) => r.registerKey(Count).registerScheduledAction(Node, () => StateCommand.empty().update(Count, 1)))]);
    await rt.submitCommand(StateCommand.empty().scheduleAction(Node, { id: 1 }));
    const report = await rt.executeActions('step_end');
    expect(report.ok && report.value).toMatchObject({ rounds: 1, processedActions: 1, hooksRun: 0 });
  });

  it('forNewRun starts from revision 0 with run-scoped queues empty', async () => {
    const rt = runtime([plugin('p', (r) => r.registerKey(Count).registerScheduledAction(Later, () => StateCommand.empty()))]);
    await rt.submitCommand(StateCommand.empty().update(Count, 2).scheduleAction(Later, null));
    const next = rt.forNewRun();
    expect(next.store.revision).toBe(0);
    expect(next.store.snapshot().has(PendingScheduledActions)).toBe(false);
    expect(next.store.snapshot().has(Count)).toBe(false);
  });
});
