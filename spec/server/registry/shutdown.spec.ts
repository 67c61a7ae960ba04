import { describe, expect, it } from 'vitest';
import { deterministicEnv } from '../../../src/runtime/env.ts';
import { ClusterRelay } from '../../../src/server/cluster-relay.ts';
import type { LiveRun } from '../../../src/server/live-run.ts';
import { silentLogger } from '../../../src/server/log.ts';
import { RegistryShutdown } from '../../../src/server/registry/shutdown.ts';
import { RunLeases } from '../../../src/server/run-leases.ts';
import { MemoryStore } from '../../../src/stores/memory.ts';
import { liveRun, memoryBus, stored } from '../../support/registry-fakes.ts';

/** The end of a registry: parked runs left waiting, runs in flight given their grace, then every stream closed. */
function setup() {
  const env = deterministicEnv();
  const store = new MemoryStore();
  const leases = new RunLeases(store, env, { owner: 'A' });
  const runs: (LiveRun & { handle: ReturnType<typeof liveRun>['handle'] })[] = [];
  const steps: string[] = [];
  const released: LiveRun[][] = [];
  let quiet = 0;
  const end = new RegistryShutdown({
    store,
    env,
    logger: silentLogger,
    leases,
    relay: new ClusterRelay(memoryBus(), silentLogger),
    runs: () => runs,
    stopUpkeep: () => void steps.push('upkeep stopped'),
    flushLogs: async () => void steps.push('logs flushed'),
    releaseAll: async (parked) => (released.push([...parked]), 0),
    quiet: () => void quiet++,
  });
  return { store, leases, runs, steps, released, end, quiet: () => quiet };
}

describe('RegistryShutdown.shutdown', () => {
  it('detaches a parked run (left waiting), cancels a running one and lets it finish within the grace, then closes every stream', async () => {
    const { runs, steps, end } = setup();
    const parked = liveRun('p', 't1', { status: 'waiting' });
    parked.handle.detachable = true;
    const going = liveRun('g', 't2');
    runs.push(parked, going);
    end.onShutdown(() => void steps.push('stream closed'));
    expect(end.closing).toBe(false);
    await end.shutdown({ graceMs: 5_000 });
    expect(end.closing).toBe(true);
    expect(parked.handle.cancels).toBe(0);
    expect([going.stopRequested, going.handle.cancels]).toEqual([true, 1]);
    expect(steps).toEqual(['upkeep stopped', 'logs flushed', 'stream closed']);
  });

  it('marks a run still going after the grace interrupted and releases its thread', async () => {
    const { store, leases, runs, end } = setup();
    const stubborn = liveRun('s', 't1');
    stubborn.handle.endsOnCancel = false;
    runs.push(stubborn);
    await stored(store, 's', 't1', 'running');
    expect((await leases.take('t1', 's')).ok).toBe(true);
    await end.shutdown({ graceMs: 50 });
    expect(await store.getRun('s')).toMatchObject({
      status: 'done',
      termination: { type: 'error', value: 'interrupted: the server shut down while the run was going' },
    });
    expect(await store.getLease('t1')).toBeUndefined();
  });

  it('waits for a run that has told its end but is still writing it (its handle not settled), and for what it releases then', async () => {
    const { store, leases, runs, end } = setup();
    await stored(store, 'f', 't1', 'done');
    expect((await leases.take('t1', 'f')).ok).toBe(true);
    // Its run_finish was seen (status done); its last writes, then its release, are still to come.
    const finishing = liveRun('f', 't1', { status: 'done', terminalSeen: true, released: undefined });
    finishing.handle.endsOnCancel = false;
    runs.push(finishing);
    void finishing.handle.done.then(() => {
      finishing.released = leases.release('t1', 'f');
    });
    setTimeout(() => finishing.handle.end(), 30);
    await end.shutdown({ graceMs: 5_000 });
    expect(finishing.handle.cancels).toBe(0);
    expect(await store.getLease('t1')).toBeUndefined();
  });

  it('waits for the lease release of a run that ended just before it (no longer among the runs), so no lease outlives the shutdown', async () => {
    const { store, leases, end } = setup();
    await stored(store, 'e', 't1', 'done');
    expect((await leases.take('t1', 'e')).ok).toBe(true);
    // The store answers the release late, as a database under load does.
    const release = store.releaseLease.bind(store);
    store.releaseLease = async (t, r) => {
      await new Promise((ok) => setTimeout(ok, 30));
      return release(t, r);
    };
    void leases.release('t1', 'e');
    await end.shutdown({ graceMs: 10 });
    expect(await store.getLease('t1')).toBeUndefined();
  });

  it('a stream that closes on its own is no longer closed at shutdown, and tells the server it may go quiet', async () => {
    const { end, quiet } = setup();
    let closed = 0;
    const off = end.onShutdown(() => void closed++);
    off();
    off();
    expect(quiet()).toBe(1);
    await end.shutdown({ graceMs: 10 });
    expect(closed).toBe(0);
  });
});

describe('RegistryShutdown.releaseParked', () => {
  it("hands this instance's runs to the release while the server goes on, and releases nothing once shutting down", async () => {
    const { runs, released, end } = setup();
    runs.push(liveRun('p', 't1', { status: 'waiting' }));
    expect(await end.releaseParked()).toBe(0);
    expect(released.map((rs) => rs.map((r) => r.runId))).toEqual([['p']]);
    await end.shutdown({ graceMs: 10 });
    expect(await end.releaseParked()).toBe(0);
    expect(released).toHaveLength(1);
  });
});
