import { describe, expect, it } from 'vitest';
import { deterministicEnv } from '../../../src/runtime/env.ts';
import type { ThreadLease } from '../../../src/runtime/store.ts';
import { ClusterRelay } from '../../../src/server/cluster-relay.ts';
import type { LiveRun } from '../../../src/server/live-run.ts';
import { silentLogger } from '../../../src/server/log.ts';
import { RunControl } from '../../../src/server/registry/cross-instance.ts';
import { LiveRuns } from '../../../src/server/registry/live-runs.ts';
import { RunLeases } from '../../../src/server/run-leases.ts';
import { ThreadLocks } from '../../../src/server/thread-locks.ts';
import { MemoryStore } from '../../../src/stores/memory.ts';
import { liveRun, memoryBus, stored, tick } from '../../support/registry-fakes.ts';

/** Cancels and decisions for a run wherever it is: here at once, relayed to the instance that holds it, taken up when that one is gone. */
const approve = [{ target_id: 'c1', decision: { kind: 'approve' } }] as never;

function setup(options: { readonly bus?: boolean } = {}) {
  const env = deterministicEnv();
  const store = new MemoryStore();
  const leases = new RunLeases(store, env, { owner: 'A', ttlMs: 30, sweepMs: 10 });
  const other = new RunLeases(store, env, { owner: 'B', ttlMs: 30, sweepMs: 10 });
  const runs = new LiveRuns(() => false);
  const bus = memoryBus();
  const releasing = new Set<LiveRun>();
  const abandoned: [string, string][] = [];
  /** What `adopt` takes up: a run parked here once `adoptable` names it. */
  const adoptable = new Set<string>();
  const control = new RunControl({
    store,
    env,
    logger: silentLogger,
    leases,
    locks: new ThreadLocks(),
    relay: options.bus === false ? undefined : new ClusterRelay(bus, silentLogger),
    runs,
    isReleasing: (run) => releasing.has(run),
    endAbandoned: async (lease: ThreadLease, how) => {
      abandoned.push([lease.run_id, how]);
      await store.finishRun(lease.run_id, { type: 'cancelled' }, 0);
      return true;
    },
    adopt: async (runOrThread) => {
      const record = await store.getRun(runOrThread);
      if (record === undefined || !adoptable.has(record.run_id)) return false;
      runs.add(liveRun(record.run_id, record.thread_id, { status: 'waiting' }));
      return true;
    },
  });
  return { env, store, leases, other, runs, bus, releasing, abandoned, adoptable, control };
}

describe('RunControl here', () => {
  it('cancels a run here (its stop intent recorded) and decides a parked one; says why it cannot', () => {
    const { runs, control } = setup();
    const going = liveRun('r1', 't1');
    const parked = liveRun('r2', 't2', { status: 'waiting' });
    runs.add(going);
    runs.add(parked);
    expect(control.decide('t1', approve)).toMatchObject({ ok: false, error: { code: 'not_waiting' } });
    expect(control.decide('t2', approve)).toEqual({ ok: true, value: { runId: 'r2' } });
    expect(parked.handle.decided).toEqual([approve]);
    expect(control.cancel('r1')).toEqual({ ok: true, value: { runId: 'r1' } });
    expect(going.stopRequested).toBe(true);
    expect(going.handle.cancels).toBe(1);
    expect(control.cancel('nope')).toMatchObject({ ok: false, error: { code: 'run_not_found' } });
    expect(control.decide('nope', approve)).toMatchObject({ ok: false, error: { code: 'run_not_found' } });
  });

  it('carries out the commands other instances send for the runs here, not for one being let go or not here', async () => {
    const { runs, bus, releasing, control } = setup();
    await control.attachBus();
    const going = liveRun('r1', 't1');
    const parked = liveRun('r2', 't2', { status: 'waiting' });
    const leaving = liveRun('r3', 't3', { status: 'waiting' });
    for (const r of [going, parked, leaving]) runs.add(r);
    releasing.add(leaving);
    bus.command({ action: 'cancel', runId: 'r1' });
    bus.command({ action: 'decide', runId: 'r2', decisions: approve });
    bus.command({ action: 'decide', runId: 'r3', decisions: approve });
    bus.command({ action: 'cancel', runId: 'elsewhere' });
    expect([going.stopRequested, going.handle.cancels]).toEqual([true, 1]);
    expect(parked.handle.decided).toEqual([approve]);
    expect(leaving.handle.decided).toEqual([]);
  });
});

describe('RunControl.cancelAnywhere', () => {
  it('asks the instance holding the run (a cancel request on its lease, and the bus)', async () => {
    const { store, other, bus, control } = setup();
    await stored(store, 'r1', 't1', 'running');
    expect((await other.take('t1', 'r1')).ok).toBe(true);
    expect(await control.cancelAnywhere('r1')).toEqual({ ok: true, value: { runId: 'r1' } });
    expect((await store.getLease('t1'))?.cancel_requested).toBe(true);
    expect(bus.sent).toEqual([{ action: 'cancel', runId: 'r1' }]);
  });

  it('ends here, at once, a run whose instance is gone, and a parked run no instance holds', async () => {
    const { env, store, other, abandoned, control } = setup();
    await stored(store, 'r1', 't1', 'running');
    expect((await other.take('t1', 'r1')).ok).toBe(true);
    env.advance(1_000);
    expect((await control.cancelAnywhere('t1')).ok).toBe(true);
    expect(abandoned).toEqual([['r1', 'cancelled']]);
    await stored(store, 'r2', 't2', 'waiting');
    expect((await control.cancelAnywhere('r2')).ok).toBe(true);
    expect(await store.getRun('r2')).toMatchObject({ status: 'done', termination: { type: 'cancelled' } });
    expect(await control.cancelAnywhere('nothing')).toMatchObject({ ok: false, error: { code: 'run_not_found' } });
  });
});

describe('RunControl.decideAnywhere', () => {
  it('takes up a parked run no instance holds and decides it here', async () => {
    const { store, runs, bus, adoptable, control } = setup();
    await stored(store, 'r1', 't1', 'waiting');
    adoptable.add('r1');
    expect(await control.decideAnywhere('r1', approve)).toEqual({ ok: true, value: { runId: 'r1' } });
    expect((runs.get('r1') as LiveRun & { handle: { decided: unknown[] } }).handle.decided).toEqual([approve]);
    expect(bus.sent).toEqual([]);
  });

  it('relays the decision to the instance holding the run, and answers once it renews its lease (it is alive)', async () => {
    const { env, store, other, bus, control } = setup();
    await stored(store, 'r1', 't1', 'waiting');
    expect((await other.take('t1', 'r1')).ok).toBe(true);
    const answer = control.decideAnywhere('r1', approve);
    await tick(30);
    expect(bus.sent).toEqual([{ action: 'decide', runId: 'r1', decisions: approve }]);
    env.advance(5);
    await other.renew();
    expect(await answer).toEqual({ ok: true, value: { runId: 'r1' } });
  });

  it('takes the run up here once the instance holding it is gone, and refuses when that one neither answers nor lets go', async () => {
    const gone = setup();
    await stored(gone.store, 'r1', 't1', 'waiting');
    expect((await gone.other.take('t1', 'r1')).ok).toBe(true);
    const answer = gone.control.decideAnywhere('r1', approve);
    await tick(60);
    gone.adoptable.add('r1');
    expect(await answer).toEqual({ ok: true, value: { runId: 'r1' } });

    const stuck = setup();
    await stored(stuck.store, 'r1', 't1', 'waiting');
    expect((await stuck.other.take('t1', 'r1')).ok).toBe(true);
    expect(await stuck.control.decideAnywhere('r1', approve)).toMatchObject({ ok: false, error: { code: 'thread_busy', runId: 'r1' } });
  });

  it('without a bus, a run neither here nor parked in the store is not found', async () => {
    const { control } = setup({ bus: false });
    expect(await control.decideAnywhere('nope', approve)).toMatchObject({ ok: false, error: { code: 'run_not_found' } });
  });
});

describe('RunControl.activeRun', () => {
  it("names the thread's run here, else the lease holder's, else a parked run in the store", async () => {
    const { store, runs, other, control } = setup();
    runs.add(liveRun('here', 't1'));
    expect(await control.activeRun('t1')).toEqual({ runId: 'here', status: 'running' });
    await stored(store, 'there', 't2', 'waiting');
    expect((await other.take('t2', 'there')).ok).toBe(true);
    expect(await control.activeRun('t2')).toEqual({ runId: 'there', status: 'waiting' });
    await stored(store, 'parked', 't3', 'waiting');
    expect(await control.activeRun('t3')).toEqual({ runId: 'parked', status: 'waiting' });
    expect(await control.activeRun('t4')).toBeUndefined();
  });
});
