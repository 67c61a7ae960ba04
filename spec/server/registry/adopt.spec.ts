import { describe, expect, it } from 'vitest';
import { deterministicEnv } from '../../../src/runtime/env.ts';
import { silentLogger } from '../../../src/server/log.ts';
import { asPrincipal } from '../../../src/server/principal.ts';
import { RunAdoption } from '../../../src/server/registry/adopt.ts';
import { LiveRuns } from '../../../src/server/registry/live-runs.ts';
import type { RunObserver } from '../../../src/server/registry/types.ts';
import { RunLeases } from '../../../src/server/run-leases.ts';
import { ThreadLocks } from '../../../src/server/thread-locks.ts';
import { MemoryStore } from '../../../src/stores/memory.ts';
import { fakeRuntime, liveRun, stored, testLauncher, testLogs } from '../../support/registry-fakes.ts';

/** Taking up a run parked in the store that no live instance holds, and reading one without taking it up. */
function setup(observer?: RunObserver) {
  const env = deterministicEnv();
  const store = new MemoryStore();
  const { runtime, revived, recovered } = fakeRuntime(env);
  const leases = new RunLeases(store, env, { owner: 'A', ttlMs: 100 });
  const other = new RunLeases(store, env, { owner: 'B', ttlMs: 100 });
  const runs = new LiveRuns(() => false);
  const logs = testLogs(store, runs, undefined);
  const launcher = testLauncher(env, logs, runs, leases);
  let closing = false;
  const adoption = new RunAdoption({
    runtime,
    store,
    logger: silentLogger,
    leases,
    locks: new ThreadLocks(),
    runs,
    launcher,
    observer,
    closing: () => closing,
  });
  return { env, store, revived, recovered, leases, other, runs, adoption, close: () => void (closing = true) };
}

describe('RunAdoption.adopt', () => {
  it('takes up a stored waiting run as a parked run here: revived, its lease taken, found by run or thread id', async () => {
    const seen: unknown[] = [];
    const { store, revived, runs, adoption } = setup({ observe: (run, start, sink) => (seen.push(run), start(sink)) });
    await stored(store, 'parked', 't1', 'waiting');
    expect(await adoption.adopt('parked')).toBe(true);
    expect(revived.map((h) => h.runId)).toEqual(['parked']);
    expect(runs.current('t1')).toMatchObject({ runId: 'parked', status: 'waiting' });
    expect((await store.getLease('t1'))?.run_id).toBe('parked');
    expect(seen).toEqual([{ threadId: 't1', runId: 'parked', agentId: 'agent', messages: [], resumed: true }]);
    // Already here: taken up once.
    expect(await adoption.adopt('t1')).toBe(true);
    expect(revived).toHaveLength(1);
  });

  it('takes up nothing when no run waits, or another instance holds it alive; takes it over once that lease has expired', async () => {
    const { env, store, other, revived, adoption } = setup();
    expect(await adoption.adopt('nothing')).toBe(false);
    await stored(store, 'done', 't0', 'done');
    expect(await adoption.adopt('done')).toBe(false);
    await stored(store, 'held', 't1', 'waiting');
    expect((await other.take('t1', 'held')).ok).toBe(true);
    expect(await adoption.adopt('held')).toBe(false);
    env.advance(1_000);
    expect(await adoption.adopt('held')).toBe(true);
    expect(revived.map((h) => h.runId)).toEqual(['held']);
    expect((await store.getLease('t1'))?.owner).toBe('A');
  });

  it("takes up nothing while shutting down, nor another principal's run", async () => {
    const { store, adoption, close } = setup();
    await stored(store, 'parked', 't1', 'waiting');
    await store.claimThread('t1', 'alice');
    expect(await asPrincipal('bob', () => adoption.adopt('parked'))).toBe(false);
    close();
    expect(await adoption.adopt('parked')).toBe(false);
  });
});

describe('RunAdoption.waitingAnywhere', () => {
  it('reads a run parked in the store without taking it up; one parked here with its calls', async () => {
    const { store, runs, adoption } = setup();
    await stored(store, 'parked', 't1', 'waiting');
    expect(await adoption.waitingAnywhere('t1')).toEqual({ runId: 'parked', threadId: 't1', calls: [] });
    expect(runs.size).toBe(0);
    const call = { callId: 'c1', name: 'approve', arguments: {}, messageId: 'm' };
    runs.add(liveRun('here', 't2', { status: 'waiting', waiting: new Map([['c1', call]]) }));
    expect(await adoption.waitingAnywhere('here')).toEqual({ runId: 'here', threadId: 't2', calls: [call] });
    runs.add(liveRun('busy', 't3'));
    expect(await adoption.waitingAnywhere('t3')).toBeUndefined();
  });
});

describe('RunAdoption.recover', () => {
  it('takes up a stored running run as a running run here: recovered by the runtime, its lease taken, the observer told it is a recovery', async () => {
    const seen: unknown[] = [];
    const { store, recovered, runs, adoption } = setup({ observe: (run, start, sink) => (seen.push(run), start(sink)) });
    await stored(store, 'left', 't1', 'running');
    expect(await adoption.recover('left')).toBe(true);
    expect(recovered.map((h) => h.runId)).toEqual(['left']);
    expect(runs.current('t1')).toMatchObject({ runId: 'left', status: 'running' });
    expect((await store.getLease('t1'))?.run_id).toBe('left');
    expect(seen).toEqual([{ threadId: 't1', runId: 'left', agentId: 'agent', messages: [], resumed: true, recovered: true }]);
    // Only a running run, and only once.
    expect(await adoption.recover('left')).toBe(false);
    await stored(store, 'parked', 't2', 'waiting');
    expect(await adoption.recover('parked')).toBe(false);
    expect(recovered).toHaveLength(1);
  });

  it('ends a run it cannot take up with the reason, never leaving it looking alive', async () => {
    const { store, runs, adoption } = setup();
    await stored(store, 'gone-1', 't1', 'running');
    expect(await adoption.recover('gone-1')).toBe(false);
    expect(await store.getRun('gone-1')).toMatchObject({
      status: 'done',
      termination: { type: 'error', value: "interrupted: it could not be taken up: agent 'retired' not found" },
    });
    expect(runs.current('t1')).toBeUndefined();
    expect(await store.getLease('t1')).toBeUndefined();
  });

  it('leaves a run another instance holds alive to it, and takes it over once that lease has expired', async () => {
    const { env, store, other, recovered, adoption } = setup();
    await stored(store, 'held', 't1', 'running');
    expect((await other.take('t1', 'held')).ok).toBe(true);
    expect(await adoption.recover('held')).toBe(false);
    expect(await store.getRun('held')).toMatchObject({ status: 'running' });
    env.advance(200);
    expect(await adoption.recover('held')).toBe(true);
    expect(recovered.map((h) => h.runId)).toEqual(['held']);
  });
});
