import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Phase } from '../../../src/contract/phase.ts';
import {
  actionPayload,
  activeHooks,
  completing,
  deadLettered,
  gathered,
  nothingToRun,
  partition,
  queued,
  roundRefused,
  runnableActions,
  submitFailure,
  type Outcome,
} from '../../../src/core/phase/engine.ts';
import { buildExecutionEnv, type ExecutionEnv, type HookRegistration } from '../../../src/core/phase/plugin.ts';
import { FailedScheduledActions, PendingScheduledActions, type ActionEnvelope } from '../../../src/core/phase/runtime-keys.ts';
import { Snapshot } from '../../../src/core/state/snapshot.ts';
import { defineAction, defineEffect, StateCommand } from '../../../src/core/state/state-command.ts';
import type { MergeStrategy } from '../../../src/core/state/state-key.ts';
import { counterKey, registerKey } from '../../support/keys.ts';
import { plugin } from '../../support/plugins.ts';

/**
 * The phase engine as functions of data: every function here is called on plain values (snapshots,
 * commands, registrations), without a store, a lock or a runtime, and returns what to commit, run or
 * report. The interpreter that calls hooks and commits is specified in spec/runtime/phase.
 */

const Tick = defineAction('t.tick', 'step_end', z.object({ n: z.number().int() }));
const Later = defineAction('t.later', 'run_end', z.null());
const Note = defineEffect('t.note', z.string());
const Count = counterKey('count');
const Owner = registerKey('owner');

function env(): ExecutionEnv {
  const built = buildExecutionEnv([
    plugin('a', (r) =>
      r
        .registerPhaseHook('step_end', () => StateCommand.empty())
        .registerScheduledAction(Tick, () => StateCommand.empty())
        .registerEffect(Note, () => undefined),
    ),
    plugin('b', (r) => r.registerPhaseHook('step_end', () => StateCommand.empty()).registerScheduledAction(Later, () => StateCommand.empty())),
  ]);
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return built.value;
}

const queueOf = (envelopes: readonly ActionEnvelope[], revision = 3): Snapshot =>
  new Snapshot(revision, new Map<string, unknown>([[PendingScheduledActions.key, Object.freeze(envelopes.map((e) => Object.freeze(e)))]]));

const tick = (id: number, n: number): ActionEnvelope => ({ id, action: { phase: 'step_end', key: Tick.key, payload: { n } } });

describe('GATHER as data', () => {
  it('picks the hooks of the phase, narrowed by a filter only when it names a plugin', () => {
    const e = env();
    expect(activeHooks(e, 'step_end', undefined).map((h) => h.pluginId)).toEqual(['a', 'b']);
    expect(activeHooks(e, 'step_end', []).map((h) => h.pluginId)).toEqual(['a', 'b']);
    expect(activeHooks(e, 'step_end', ['b']).map((h) => h.pluginId)).toEqual(['b']);
    expect(activeHooks(e, 'run_start', undefined)).toEqual([]);
  });

  it('reads outcomes by index: the first failure by registration order wins, empty commands are dropped, the rest are based on the snapshot seen', () => {
    const hooks = ['p0', 'p1', 'p2', 'p3'].map((pluginId): HookRegistration => ({ pluginId, phase: 'step_end', hook: () => StateCommand.empty() }));
    const snapshot = new Snapshot(7, new Map());
    const wrote = StateCommand.empty().update(Count, 1);
    const outcomes: Outcome[] = [
      { ok: true, value: StateCommand.empty() },
      { ok: true, value: wrote },
      { ok: false, reason: new Error('second') },
      { ok: false, reason: new Error('third') },
    ];
    expect(gathered(hooks, outcomes, 'step_end', snapshot)).toEqual({
      ok: false,
      error: { code: 'hook_failed', phase: 'step_end', pluginId: 'p2', message: 'second' },
    });
    const fine = gathered(hooks.slice(0, 2), outcomes.slice(0, 2), 'step_end', snapshot);
    expect(fine.ok && fine.value.map((g) => [g.index, g.command.baseRevision])).toEqual([[1, 7]]);
  });

  it('keeps a base revision the hook chose itself', () => {
    const hooks: HookRegistration[] = [{ pluginId: 'p', phase: 'step_end', hook: () => StateCommand.empty() }];
    const out = gathered(hooks, [{ ok: true, value: StateCommand.empty().update(Count, 1).withBaseRevision(2) }], 'step_end', new Snapshot(9, new Map()));
    expect(out.ok && out.value[0]?.command.baseRevision).toBe(2);
  });

  /** Commands over three exclusive and two commutative keys, as generated GATHER results. */
  const KEYS: readonly { readonly name: string; readonly merge: MergeStrategy }[] = [
    { name: 'x1', merge: 'exclusive' },
    { name: 'x2', merge: 'exclusive' },
    { name: 'x3', merge: 'exclusive' },
    { name: 'c1', merge: 'commutative' },
    { name: 'c2', merge: 'commutative' },
  ];
  const strategyOf = (name: string): MergeStrategy => KEYS.find((k) => k.name === name)?.merge ?? 'exclusive';
  const written = fc.array(fc.uniqueArray(fc.constantFrom(...KEYS.map((k) => k.name)), { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 6 });
  const commandOf = (keys: readonly string[]): StateCommand => {
    const c = StateCommand.empty();
    for (const k of keys) {
      if (strategyOf(k) === 'exclusive') c.update(registerKey(k), 'v');
      else c.update(counterKey(k), 1);
    }
    return c;
  };

  it('partitions greedily in registration order: the batch never holds one exclusive key twice, each deferred hook conflicts with an earlier batch member, commutative keys never defer', () => {
    fc.assert(
      fc.property(written, (writes) => {
        const commands = writes.map((keys, index) => ({ index, command: commandOf(keys) }));
        const parted = partition(commands, strategyOf);
        expect(parted.ok).toBe(true);
        if (!parted.ok) return;
        const deferred = new Set(parted.value.deferred);
        const claimed = new Set<string>();
        writes.forEach((keys, index) => {
          const exclusive = keys.filter((k) => strategyOf(k) === 'exclusive');
          const conflicts = exclusive.some((k) => claimed.has(k));
          expect(deferred.has(index)).toBe(conflicts);
          if (!conflicts) for (const k of exclusive) claimed.add(k);
        });
        // The merged batch writes each claimed exclusive key exactly once, and every commutative write of the batch.
        const ops = parted.value.command.patch.ops.map((op) => op.key);
        for (const k of claimed) expect(ops.filter((o) => o === k)).toHaveLength(1);
        const commutativeInBatch = writes.filter((_, i) => !deferred.has(i)).flatMap((keys) => keys.filter((k) => strategyOf(k) === 'commutative'));
        expect(ops.filter((o) => strategyOf(o) === 'commutative')).toHaveLength(commutativeInBatch.length);
      }),
    );
  });

  it('gives the same partition for the same commands, and changes none of them', () => {
    fc.assert(
      fc.property(written, (writes) => {
        const commands = writes.map((keys, index) => ({ index, command: commandOf(keys) }));
        const before = commands.map((c) => c.command.patch.ops.length);
        const first = partition(commands, strategyOf);
        const second = partition(commands, strategyOf);
        expect(first.ok && second.ok && first.value.deferred).toEqual(second.ok && second.value.deferred);
        expect(commands.map((c) => c.command.patch.ops.length)).toEqual(before);
      }),
    );
  });
});

describe('submit as data', () => {
  it('refuses an action or effect without a handler, naming its key', () => {
    const e = env();
    const unknownAction = StateCommand.empty().scheduleAction(defineAction('nobody', 'step_end', z.null()), null);
    const unknownEffect = StateCommand.empty().emit(defineEffect('nobody.fx', z.null()), null);
    expect(submitFailure(e, unknownAction)).toEqual({ code: 'unknown_scheduled_action_handler', key: 'nobody' });
    expect(submitFailure(e, unknownEffect)).toEqual({ code: 'unknown_effect_handler', key: 'nobody.fx' });
    expect(submitFailure(e, StateCommand.empty().scheduleAction(Tick, { n: 1 }).emit(Note, 'hi'))).toBeUndefined();
  });

  it('queues actions under contiguous ids from the one given, on a copy of the patch; a command without actions commits its own patch', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000 }), fc.array(fc.integer(), { maxLength: 6 }), (firstId, ns) => {
        const command = StateCommand.empty().update(Count, 1);
        for (const n of ns) command.scheduleAction(Tick, { n });
        const batch = queued(command, firstId);
        if (ns.length === 0) {
          expect(batch).toBe(command.patch);
          return;
        }
        expect(command.patch.ops).toHaveLength(1);
        const pushes = batch.ops.slice(1).map((op) => (op.kind === 'update' ? (op.update as { envelope: ActionEnvelope }).envelope : undefined));
        expect(pushes.map((e) => e?.id)).toEqual(ns.map((_, i) => firstId + i));
        expect(pushes.map((e) => (e!.action.payload as { n: number }).n)).toEqual(ns);
      }),
    );
  });
});

describe('EXECUTE as data', () => {
  it('runs the queued actions of this phase that have a handler, in queue order, and counts the whole queue', () => {
    const e = env();
    const unhandled: ActionEnvelope = { id: 4, action: { phase: 'step_end', key: 'nobody', payload: null } };
    const later: ActionEnvelope = { id: 2, action: { phase: 'run_end', key: Later.key, payload: null } };
    const snapshot = queueOf([tick(3, 30), later, unhandled, tick(1, 10)]);
    const { runnable, queued: length } = runnableActions(e, snapshot, 'step_end');
    expect(runnable.map((r) => r.envelope.id)).toEqual([3, 1]);
    expect(length).toBe(4);
    expect(nothingToRun(e, snapshot, 'step_end')).toBe(false);
    expect(nothingToRun(e, snapshot, 'before_inference')).toBe(true);
    expect(nothingToRun(e, new Snapshot(0, new Map()), 'step_end')).toBe(true);
    expect(runnableActions(e, snapshot, 'run_end').runnable.map((r) => r.envelope.id)).toEqual([2]);
  });

  it('validates a queued payload with its action schema, naming the action', () => {
    const e = env();
    const [good] = runnableActions(e, queueOf([tick(1, 5)]), 'step_end').runnable;
    const [bad] = runnableActions(e, queueOf([{ id: 2, action: { phase: 'step_end', key: Tick.key, payload: { n: 'five' } } }]), 'step_end').runnable;
    expect(good && actionPayload(good)).toEqual({ ok: true, value: { n: 5 } });
    const refused = bad && actionPayload(bad);
    expect(refused?.ok).toBe(false);
    expect(refused !== undefined && !refused.ok && refused.error).toMatch(/^invalid payload for t\.tick: /);
  });

  it('refuses a working round once the bound is reached, and not before', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 64 }), fc.integer({ min: 0, max: 64 }), fc.constantFrom<Phase>('step_end', 'run_end'), (rounds, max, phase) => {
        const refused = roundRefused(phase, rounds, max);
        expect(refused).toEqual(rounds >= max ? { code: 'phase_run_loop_exceeded', phase, maxRounds: max } : undefined);
      }),
    );
  });

  it('takes a completed action off the queue in its own command, and dead-letters a failed one in one batch', () => {
    const envelope = tick(9, 1);
    const done = completing(StateCommand.empty().update(Count, 2), envelope);
    expect(done.patch.ops.map((op) => op.key)).toEqual([Count.key, PendingScheduledActions.key]);
    const dead = deadLettered(envelope, 'boom');
    expect(dead.ops.map((op) => [op.key, op.kind === 'update' ? op.update : undefined])).toEqual([
      [PendingScheduledActions.key, { op: 'remove', id: 9 }],
      [FailedScheduledActions.key, { id: 9, action: envelope.action, error: 'boom' }],
    ]);
  });

  it('reads frozen snapshots and envelopes without writing them', () => {
    const e = env();
    const snapshot = queueOf([tick(1, 1), tick(2, 2)]);
    expect(() => runnableActions(e, snapshot, 'step_end')).not.toThrow();
    expect(Object.isFrozen(snapshot)).toBe(true);
    expect(snapshot.get(PendingScheduledActions)).toHaveLength(2);
    expect(runnableActions(e, snapshot, 'step_end')).toEqual(runnableActions(e, snapshot, 'step_end'));
  });
});

describe('the exclusive key the partition protects', () => {
  it('is exclusive by default: an unregistered key defers like an exclusive one', () => {
    const strategyOf = (name: string): MergeStrategy => (name === Count.key ? 'commutative' : 'exclusive');
    const commands = [
      { index: 0, command: StateCommand.empty().update(Owner, 'a') },
      { index: 1, command: StateCommand.empty().update(Owner, 'b') },
      { index: 2, command: StateCommand.empty().update(Count, 1) },
      { index: 3, command: StateCommand.empty().update(Count, 1) },
    ];
    const parted = partition(commands, strategyOf);
    expect(parted.ok && parted.value.deferred).toEqual([1]);
  });
});

describe('buildExecutionEnv with a plugin whose register throws', () => {
  it('is an error of the build naming the plugin, not a throw', () => {
    const built = buildExecutionEnv([
      {
        name: 'broken',
        register: () => {
          throw new Error('no database');
        },
      },
    ]);
    expect(built).toEqual({ ok: false, error: { code: 'plugin_register_failed', name: 'broken', message: 'no database' } });
  });
});
