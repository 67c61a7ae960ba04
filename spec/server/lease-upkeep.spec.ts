import { describe, expect, it, vi } from 'vitest';
import type { TerminationReason } from '../../src/contract/lifecycle.ts';
import type { RunHandle } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv, realEnv, type DeterministicEnv, type Env } from '../../src/runtime/env.ts';
import type { RunRecord } from '../../src/runtime/store.ts';
import type { RunCheckpoint } from '../../src/runtime/thread-run-store.ts';
import { LeaseUpkeep } from '../../src/server/lease-upkeep.ts';
import type { LiveRun } from '../../src/server/live-run.ts';
import { silentLogger } from '../../src/server/log.ts';
import type { RecoveryFate } from '../../src/server/recovery.ts';
import { RunLeases } from '../../src/server/run-leases.ts';
import { ThreadLocks } from '../../src/server/thread-locks.ts';
import { MemoryStore } from '../../src/stores/memory.ts';

/**
 * The lease upkeep of one instance on its own (the registry's use of it: spec/server/leases.spec.ts):
 * renewal stops the runs whose lease is gone or carries a cancel, a sweep ends the runs of dead
 * instances, leaves parked ones waiting, and never touches this instance's own.
 */
const TTL = 1_000;

function setup(sleep?: Env['sleep'], takingUp?: { readonly fate: (run: RunRecord, stopped: string) => RecoveryFate }) {
  const recovered: string[] = [];
  const simulated = deterministicEnv();
  const env: DeterministicEnv = sleep === undefined ? simulated : { ...simulated, sleep };
  const store = new MemoryStore();
  const mine = new RunLeases(store, env, { owner: 'A', ttlMs: TTL });
  const other = new RunLeases(store, env, { owner: 'Z', ttlMs: TTL });
  const runs: LiveRun[] = [];
  const terminals: [string, string, TerminationReason][] = [];
  const upkeep = new LeaseUpkeep({
    leases: mine,
    store,
    env,
    logger: silentLogger,
    locks: new ThreadLocks(),
    runs: () => runs,
    isLive: (runId) => runs.some((r) => r.runId === runId),
    appendTerminal: async (threadId, runId, termination) => void terminals.push([threadId, runId, termination]),
    ...(takingUp !== undefined ? { fate: takingUp.fate, recover: async (runId: string) => (recovered.push(runId), true) } : {}),
  });
  const live = (runId: string, threadId: string): LiveRun => {
    const run = { runId, threadId, status: 'running', stopRequested: false, handle: { cancel: vi.fn() } as unknown as RunHandle } as unknown as LiveRun;
    runs.push(run);
    return run;
  };
  const stored = (runId: string, threadId: string, status: RunCheckpoint['status'], parentRunId?: string) =>
    store.checkpoint({
      ...(parentRunId !== undefined ? { parentRunId } : {}),
      threadId,
      runId,
      agentId: 'agent',
      messages: [],
      status,
      steps: 1,
      threadState: { revision: 1, extensions: {} },
      runState: { revision: 1, extensions: {} },
      updatedAt: 0,
    });
  return { env, store, mine, other, runs, terminals, upkeep, live, stored, recovered };
}

describe('LeaseUpkeep.renew', () => {
  it('keeps a run whose lease it renews; stops one whose lease was taken from it, and one whose lease carries a cancel request', async () => {
    const { mine, other, upkeep, live } = setup();
    const kept = live('r1', 't1');
    const taken = live('r2', 't2');
    const cancelled = live('r3', 't3');
    for (const r of [kept, taken, cancelled]) expect((await mine.take(r.threadId, r.runId)).ok).toBe(true);
    expect((await other.take('t2', 'z2', true)).ok).toBe(true);
    expect(await mine.requestCancel('r3')).toBe(true);
    await upkeep.renew();
    expect(kept.handle.cancel).not.toHaveBeenCalled();
    expect(kept.stopRequested).toBe(false);
    for (const r of [taken, cancelled]) {
      expect(r.handle.cancel).toHaveBeenCalledTimes(1);
      expect(r.stopRequested).toBe(true);
    }
    // Once stopped, not again.
    await upkeep.renew();
    expect(taken.handle.cancel).toHaveBeenCalledTimes(1);
  });
});

describe('LeaseUpkeep.sweep', () => {
  it('ends the run of an expired lease interrupted, appends its terminal frame, frees the thread; leaves a parked run waiting; never sweeps its own run', async () => {
    const { env, store, other, mine, terminals, upkeep, live, stored } = setup();
    await stored('dead', 'td', 'running');
    await stored('parked', 'tp', 'waiting');
    expect((await other.take('td', 'dead')).ok).toBe(true);
    expect((await other.take('tp', 'parked')).ok).toBe(true);
    const own = live('own', 'to');
    expect((await mine.take('to', 'own')).ok).toBe(true);
    expect(await upkeep.sweep()).toEqual([]);

    env.advance(TTL + 1);
    expect(await upkeep.sweep()).toEqual(['dead']);
    const interrupted = { type: 'error', value: 'interrupted: its instance stopped renewing the thread lease' };
    expect(await store.getRun('dead')).toMatchObject({ status: 'done', termination: interrupted });
    expect(terminals).toEqual([['td', 'dead', interrupted]]);
    expect(await store.getLease('td')).toBeUndefined();
    expect(await store.getRun('parked')).toMatchObject({ status: 'waiting' });
    expect(await store.getLease('tp')).toBeUndefined();
    expect((await store.getLease('to'))?.run_id).toBe(own.runId);
    expect(own.handle.cancel).not.toHaveBeenCalled();
  });

  it('a cancel requested on an expired lease ends its run cancelled, parked or not', async () => {
    const { env, store, other, terminals, upkeep, stored } = setup();
    await stored('parked', 'tp', 'waiting');
    expect((await other.take('tp', 'parked')).ok).toBe(true);
    expect(await other.requestCancel('parked')).toBe(true);
    env.advance(TTL + 1);
    expect(await upkeep.sweep()).toEqual(['parked']);
    expect(await store.getRun('parked')).toMatchObject({ status: 'done', termination: { type: 'cancelled' } });
    // Its stream ended with its suspension: no second terminal frame.
    expect(terminals).toEqual([]);
  });
});

describe('LeaseUpkeep.start', () => {
  it('renews and sweeps on its own until stopped', async () => {
    // Its loops wait for real between rounds (a simulated sleep returns at once).
    const { env, store, other, upkeep, stored } = setup(realEnv().sleep);
    await stored('dead', 'td', 'running');
    expect((await other.take('td', 'dead')).ok).toBe(true);
    env.advance(TTL + 1);
    upkeep.start();
    upkeep.start(); // once
    await expect.poll(async () => (await store.getRun('dead'))?.status).toBe('done');
    upkeep.stop();
  });
});

describe('LeaseUpkeep.sweep with a fate for the runs it finds running', () => {
  it('takes up a running run whose fate is to resume (recover), ends one whose fate is not with its reason, and a sub-run or a cancelled one as before', async () => {
    const fates: [string, string][] = [];
    const fate = (run: RunRecord, stopped: string): RecoveryFate => {
      fates.push([run.run_id, stopped]);
      return run.run_id === 'resumed'
        ? { resume: true }
        : { resume: false, reason: `${stopped}, and its agent 'agent' changed since the run started (its config or its code)` };
    };
    const { env, store, other, terminals, upkeep, stored, recovered } = setup(undefined, { fate });
    await stored('resumed', 't1', 'running');
    await stored('changed', 't2', 'running');
    await stored('child', 't3', 'running', 'resumed');
    await stored('stopped', 't4', 'running');
    await stored('parked', 't5', 'waiting');
    for (const [t, r] of [
      ['t1', 'resumed'],
      ['t2', 'changed'],
      ['t3', 'child'],
      ['t4', 'stopped'],
      ['t5', 'parked'],
    ] as const) {
      expect((await other.take(t, r)).ok).toBe(true);
    }
    expect(await other.requestCancel('stopped')).toBe(true);
    env.advance(TTL + 1);
    expect((await upkeep.sweep()).sort()).toEqual(['changed', 'child', 'stopped']);
    // Taken up by `recover`, which takes the expired lease over itself: the sweep left it as it was.
    expect(recovered).toEqual(['resumed']);
    expect(await store.getRun('resumed')).toMatchObject({ status: 'running' });
    expect((await store.getLease('t1'))?.owner).toBe('Z');
    const lapsed = 'interrupted: its instance stopped renewing the thread lease';
    const changed = { type: 'error', value: `${lapsed}, and its agent 'agent' changed since the run started (its config or its code)` };
    expect(await store.getRun('changed')).toMatchObject({ status: 'done', termination: changed });
    expect(await store.getRun('child')).toMatchObject({ status: 'done', termination: { type: 'error', value: lapsed } });
    expect(await store.getRun('stopped')).toMatchObject({ status: 'done', termination: { type: 'cancelled' } });
    expect(await store.getRun('parked')).toMatchObject({ status: 'waiting' });
    // Asked only of the runs that are running, not cancelled and not a sub-run.
    expect(fates.sort()).toEqual([
      ['changed', lapsed],
      ['resumed', lapsed],
    ]);
    expect(terminals.map(([, runId, termination]) => [runId, termination]).sort()).toEqual([
      ['changed', changed],
      ['child', { type: 'error', value: lapsed }],
      ['stopped', { type: 'cancelled' }],
    ]);
  });
});
