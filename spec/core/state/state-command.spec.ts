import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { extendBatch, mergeParallelBatch, MutationBatch } from '../../../src/core/state/mutation-batch.ts';
import { defineAction, defineEffect, extendCommand, mergeAllCommands, mergeParallelCommands, StateCommand } from '../../../src/core/state/state-command.ts';
import type { MergeStrategy } from '../../../src/core/state/state-key.ts';
import { counterKey, registerKey } from '../../support/keys.ts';

const C = counterKey('c');
const D = counterKey('d');
const X = registerKey('x');
const Y = registerKey('y');
const strategyOf = (k: string): MergeStrategy => (k === 'c' || k === 'd' ? 'commutative' : 'exclusive');
const Ping = defineAction('test.ping', 'step_end', z.number());
const Audit = defineEffect('test.audit', z.string());

describe('commands and batches built from empty', () => {
  it('property: each keeps its own ops, actions and effects (nothing written to one is seen by another)', () => {
    const write = fc.constantFrom('op', 'action', 'effect');
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat({ max: 3 }), write), { maxLength: 30 }), (writes) => {
        const commands = Array.from({ length: 4 }, () => StateCommand.empty());
        const batches = Array.from({ length: 4 }, () => new MutationBatch());
        const expected = Array.from({ length: 4 }, () => ({ ops: 0, actions: 0, effects: 0, batch: 0 }));
        for (const [i, w] of writes) {
          const c = commands[i] as StateCommand;
          const e = expected[i] as (typeof expected)[number];
          if (w === 'op') {
            c.update(C, 1);
            (batches[i] as MutationBatch).clear(X);
            e.ops++;
            e.batch++;
          } else if (w === 'action') {
            c.scheduleAction(Ping, i);
            e.actions++;
          } else {
            c.emit(Audit, `${i}`);
            e.effects++;
          }
        }
        for (const [i, c] of commands.entries()) {
          expect({ ops: c.patch.ops.length, actions: c.scheduledActions.length, effects: c.effects.length, batch: batches[i]?.ops.length }).toEqual(
            expected[i],
          );
          expect(c.scheduledActions.every((a) => a.payload === i)).toBe(true);
          expect(c.effects.every((a) => a.payload === `${i}`)).toBe(true);
        }
        // A command or batch created afterwards is still empty.
        expect(StateCommand.empty().isEmpty()).toBe(true);
        expect(new MutationBatch().ops).toEqual([]);
      }),
    );
  });
});

describe('MutationBatch', () => {
  it('records one touched key per op, duplicates included', () => {
    const b = new MutationBatch().update(C, 1).update(C, 2).clear(X);
    expect(b.touchedKeys).toEqual(['c', 'c', 'x']);
    expect(b.ops.map((o) => o.kind)).toEqual(['update', 'update', 'clear']);
    expect(new MutationBatch().isEmpty()).toBe(true);
  });

  it('extend reconciles base revisions: equal or one-sided is fine, two different fail', () => {
    expect(extendBatch(new MutationBatch(1), new MutationBatch(2))).toEqual({
      ok: false,
      error: { code: 'mutation_base_revision_mismatch', left: 1, right: 2 },
    });
    const r = extendBatch(new MutationBatch(undefined).update(C, 1), new MutationBatch(3).update(X, 'a'));
    expect(r.ok && r.value.baseRevision).toBe(3);
    expect(r.ok && r.value.touchedKeys).toEqual(['c', 'x']);
  });

  it('mergeParallel reports the first conflicting key in the right side order', () => {
    const left = new MutationBatch().update(X, 'a').update(Y, 'b');
    const right = new MutationBatch().update(Y, 'c').update(X, 'd');
    expect(mergeParallelBatch(left, right, strategyOf)).toEqual({ ok: false, error: { code: 'parallel_merge_conflict', key: 'y' } });
    expect(mergeParallelBatch(new MutationBatch().update(X, 'a').update(X, 'b'), new MutationBatch(), strategyOf).ok).toBe(true);
  });
});

describe('StateCommand', () => {
  it('collects updates, scheduled actions (phase from the spec) and effects', () => {
    const cmd = StateCommand.empty().update(C, 1).scheduleAction(Ping, 7).emit(Audit, 'hi').withBaseRevision(4);
    expect(cmd.scheduledActions).toEqual([{ phase: 'step_end', key: 'test.ping', payload: 7 }]);
    expect(cmd.effects).toEqual([{ key: 'test.audit', payload: 'hi' }]);
    expect(cmd.baseRevision).toBe(4);
    expect(cmd.isEmpty()).toBe(false);
    expect(StateCommand.empty().emit(Audit, 'x').isEmpty()).toBe(false);
    expect(StateCommand.empty().isEmpty()).toBe(true);
  });

  it('extend appends patch, actions and effects', () => {
    const a = StateCommand.empty().update(X, 'a').scheduleAction(Ping, 1);
    const b = StateCommand.empty().update(X, 'b').emit(Audit, 'e');
    const r = extendCommand(a, b);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.touchedKeys).toEqual(['x', 'x']);
    expect(r.value.scheduledActions).toHaveLength(1);
    expect(r.value.effects).toHaveLength(1);
    expect(a.touchedKeys).toEqual(['x']);
    expect(extendCommand(StateCommand.empty().withBaseRevision(1), StateCommand.empty().withBaseRevision(2)).ok).toBe(false);
    expect(a.extend(b)).toEqual(r);
  });

  it('mergeParallel as a method equals the function', () => {
    const a = StateCommand.empty().update(C, 1);
    const b = StateCommand.empty().update(C, 2).update(X, 'x');
    expect(a.mergeParallel(b, strategyOf)).toEqual(mergeParallelCommands(a, b, strategyOf));
    expect(b.mergeParallel(b, strategyOf)).toEqual({ ok: false, error: { code: 'parallel_merge_conflict', key: 'x' } });
  });

  it('clone is independent of the original', () => {
    const a = StateCommand.empty().update(C, 1);
    const b = a.clone().update(C, 2);
    expect(a.touchedKeys).toEqual(['c']);
    expect(b.touchedKeys).toEqual(['c', 'c']);
  });

  // Merging the commands of parallel tools: associative, and refused where both touch an exclusive key.
  describe('property: mergeParallel', () => {
    const key = fc.constantFrom(C, D, X, Y);
    const command = fc
      .record({
        keys: fc.array(key, { maxLength: 3 }),
        base: fc.option(fc.constantFrom(0, 1), { nil: undefined }),
        actions: fc.nat({ max: 2 }),
      })
      .map(({ keys, base, actions }) => {
        const cmd = StateCommand.empty();
        for (const k of keys) cmd.update(k as typeof C, 1);
        for (let i = 0; i < actions; i++) cmd.scheduleAction(Ping, i);
        if (base !== undefined) cmd.withBaseRevision(base);
        return cmd;
      });
    const exclusiveOverlap = (a: StateCommand, b: StateCommand): boolean =>
      a.touchedKeys.some((k) => strategyOf(k) === 'exclusive' && b.touchedKeys.includes(k));
    const mismatch = (a: StateCommand, b: StateCommand): boolean =>
      a.baseRevision !== undefined && b.baseRevision !== undefined && a.baseRevision !== b.baseRevision;

    it('fails with parallel_merge_conflict iff some exclusive key is touched on both sides', () => {
      fc.assert(
        fc.property(command, command, (a, b) => {
          fc.pre(!mismatch(a, b));
          const r = mergeParallelCommands(a, b, strategyOf);
          expect(r.ok).toBe(!exclusiveOverlap(a, b));
          if (!r.ok) expect(r.error.code).toBe('parallel_merge_conflict');
        }),
        { numRuns: 300 },
      );
    });

    it('is associative (same success, same ops, actions and base revision)', () => {
      fc.assert(
        fc.property(command, command, command, (a, b, c) => {
          const ab = mergeParallelCommands(a, b, strategyOf);
          const left = ab.ok ? mergeParallelCommands(ab.value, c, strategyOf) : ab;
          const bc = mergeParallelCommands(b, c, strategyOf);
          const right = bc.ok ? mergeParallelCommands(a, bc.value, strategyOf) : bc;
          expect(left.ok).toBe(right.ok);
          if (left.ok && right.ok) {
            expect(left.value.patch.ops).toEqual(right.value.patch.ops);
            expect(left.value.touchedKeys).toEqual(right.value.touchedKeys);
            expect(left.value.scheduledActions).toEqual(right.value.scheduledActions);
            expect(left.value.baseRevision).toBe(right.value.baseRevision);
          }
        }),
        { numRuns: 300 },
      );
    });

    it('mergeAll equals the left fold of mergeParallel from the empty command', () => {
      fc.assert(
        fc.property(fc.array(command, { maxLength: 4 }), (cmds) => {
          const all = mergeAllCommands(cmds, strategyOf);
          let acc: ReturnType<typeof mergeAllCommands> = { ok: true, value: StateCommand.empty() };
          for (const c of cmds) if (acc.ok) acc = mergeParallelCommands(acc.value, c, strategyOf);
          expect(all.ok).toBe(acc.ok);
          if (!all.ok && !acc.ok) expect(all.error).toEqual(acc.error);
          if (all.ok && acc.ok) {
            expect(all.value.touchedKeys).toEqual(acc.value.touchedKeys);
            expect(all.value.patch.ops).toEqual(acc.value.patch.ops);
            expect(all.value.scheduledActions).toEqual(acc.value.scheduledActions);
            expect(all.value.baseRevision).toBe(acc.value.baseRevision);
          }
        }),
        { numRuns: 200 },
      );
    });
  });
});
