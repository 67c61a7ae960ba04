import { describe, expect, it } from 'vitest';
import { deterministicEnv } from '../../../src/runtime/env.ts';
import type { ThreadLease } from '../../../src/runtime/store.ts';
import { ClusterRelay } from '../../../src/server/cluster-relay.ts';
import { silentLogger } from '../../../src/server/log.ts';
import { LiveRuns } from '../../../src/server/registry/live-runs.ts';
import { RunStart } from '../../../src/server/registry/start.ts';
import type { ConcurrencyPolicy, RunObserver } from '../../../src/server/registry/types.ts';
import { RunLeases } from '../../../src/server/run-leases.ts';
import { ThreadLocks } from '../../../src/server/thread-locks.ts';
import { MemoryStore } from '../../../src/stores/memory.ts';
import { fakeRuntime, memoryBus, stored, testLauncher, testLogs, tick } from '../../support/registry-fakes.ts';

/** Starting a run: registered as its thread's, one in flight per thread (refused or superseded), a paused thread refused unless discarded. */
function setup(options: { readonly policy?: ConcurrencyPolicy; readonly observer?: RunObserver } = {}) {
  const env = deterministicEnv();
  const store = new MemoryStore();
  const { runtime, handles } = fakeRuntime(env);
  const leases = new RunLeases(store, env, { owner: 'A', ttlMs: 100 });
  const other = new RunLeases(store, env, { owner: 'B', ttlMs: 100 });
  const runs = new LiveRuns(() => false);
  const logs = testLogs(store, runs, undefined);
  const launcher = testLauncher(env, logs, runs, leases);
  const bus = memoryBus();
  const abandoned: [ThreadLease, string][] = [];
  let closing = false;
  const starts = new RunStart({
    runtime,
    store,
    env,
    logger: silentLogger,
    policy: options.policy ?? 'reject',
    leases,
    locks: new ThreadLocks(),
    relay: new ClusterRelay(bus, silentLogger),
    runs,
    launcher,
    observer: options.observer,
    touch: (t) => void logs.log(t),
    endAbandoned: async (lease, how) => {
      abandoned.push([lease, how]);
      await store.finishRun(lease.run_id, { type: 'error', value: how }, 0);
      await leases.release(lease.thread_id, lease.run_id);
      return true;
    },
    closing: () => closing,
    runOptions: (agentId) => ({ waitForDecisions: true, checkpoint: { fence: { owner: leases.owner }, agentDigest: `digest of ${agentId}` } }),
  });
  return { env, store, handles, leases, other, runs, bus, abandoned, starts, close: () => void (closing = true) };
}

describe('RunStart', () => {
  it("registers the run as its thread's, holding the thread's lease, and lists it until it ends", async () => {
    const { store, handles, runs, starts } = setup();
    const started = await starts.start({ threadId: 't1', messages: [] });
    if (!started.ok) throw new Error(started.error.message);
    expect(handles.map((h) => h.runId)).toEqual([started.value.runId]);
    expect(runs.current('t1')?.runId).toBe(started.value.runId);
    expect((await store.getLease('t1'))?.run_id).toBe(started.value.runId);
    handles[0]?.end();
    await started.value.done;
    expect(runs.current('t1')).toBeUndefined();
    await tick();
    expect(await store.getLease('t1')).toBeUndefined();
  });

  it("begins the run with the host's options for its agent: the fence of the lease it holds, the agent's digest", async () => {
    const { handles, starts } = setup();
    const started = await starts.start({ threadId: 't1', agentId: 'agent', messages: [] });
    if (!started.ok) throw new Error(started.error.message);
    expect(handles[0]?.options).toEqual({ waitForDecisions: true, checkpoint: { fence: { owner: 'A' }, agentDigest: 'digest of agent' } });
    handles[0]?.end();
    await started.value.done;
  });

  it('refuses a second run on a thread with one in flight under `reject`, and leaves the first going', async () => {
    const { handles, starts } = setup();
    const first = await starts.start({ threadId: 't1', messages: [] });
    if (!first.ok) throw new Error('not started');
    const second = await starts.start({ threadId: 't1', messages: [] });
    expect(second).toMatchObject({ ok: false, error: { code: 'thread_busy', runId: first.value.runId } });
    expect(handles).toHaveLength(1);
    expect(handles[0]?.cancels).toBe(0);
  });

  it('under `supersede` cancels the run in flight, waits for its end, then starts', async () => {
    const { handles, runs, starts, store } = setup({ policy: 'supersede' });
    const first = await starts.start({ threadId: 't1', messages: [] });
    const second = await starts.start({ threadId: 't1', messages: [] });
    if (!first.ok || !second.ok) throw new Error('not started');
    expect(handles[0]?.cancels).toBe(1);
    expect(runs.get(first.value.runId)).toBeUndefined();
    expect(runs.current('t1')?.runId).toBe(second.value.runId);
    expect((await store.getLease('t1'))?.run_id).toBe(second.value.runId);
  });

  it('a run parked in the store that no instance holds pauses the thread: refused (lease let go), or cancelled when the pause is discarded', async () => {
    const { store, handles, starts } = setup();
    await stored(store, 'parked', 't1', 'waiting');
    expect(await starts.start({ threadId: 't1', messages: [] })).toMatchObject({ ok: false, error: { code: 'thread_paused', runId: 'parked' } });
    expect(await store.getLease('t1')).toBeUndefined();
    expect(handles).toHaveLength(0);
    const started = await starts.start({ threadId: 't1', messages: [], discardPause: true });
    expect(started.ok).toBe(true);
    expect(await store.getRun('parked')).toMatchObject({ status: 'done', termination: { type: 'cancelled' } });
  });

  it('refuses under `reject` a thread whose run goes on another instance; under `supersede` tells that instance to stop and takes the thread', async () => {
    const rejecting = setup();
    await stored(rejecting.store, 'elsewhere', 't1', 'running');
    expect((await rejecting.other.take('t1', 'elsewhere')).ok).toBe(true);
    expect(await rejecting.starts.start({ threadId: 't1', messages: [] })).toMatchObject({ ok: false, error: { code: 'thread_busy', runId: 'elsewhere' } });

    const superseding = setup({ policy: 'supersede' });
    await stored(superseding.store, 'elsewhere', 't1', 'running');
    expect((await superseding.other.take('t1', 'elsewhere')).ok).toBe(true);
    const pending = superseding.starts.start({ threadId: 't1', messages: [] });
    await tick(30);
    expect(superseding.bus.sent).toEqual([{ action: 'cancel', runId: 'elsewhere' }]);
    // The other instance ends its run; the start goes on.
    await superseding.store.finishRun('elsewhere', { type: 'cancelled' }, 0);
    const started = await pending;
    if (!started.ok) throw new Error(started.error.message);
    expect((await superseding.store.getLease('t1'))?.run_id).toBe(started.value.runId);
  });

  it('ends the run of an expired lease (its instance is gone) before taking the thread', async () => {
    const { env, store, other, abandoned, starts } = setup();
    await stored(store, 'dead', 't1', 'running');
    expect((await other.take('t1', 'dead')).ok).toBe(true);
    env.advance(1_000);
    const started = await starts.start({ threadId: 't1', messages: [] });
    expect(started.ok).toBe(true);
    expect(abandoned.map(([l, how]) => [l.run_id, how])).toEqual([['dead', 'interrupted']]);
  });

  it('refuses every start once the registry is shutting down', async () => {
    const { handles, starts, close } = setup();
    close();
    expect(await starts.start({ threadId: 't1', messages: [] })).toMatchObject({ ok: false, error: { code: 'shutting_down' } });
    expect(handles).toHaveLength(0);
  });

  it('starts through the observer, which sees the run and calls its start', async () => {
    const seen: unknown[] = [];
    const observer: RunObserver = { observe: (run, start, sink) => (seen.push(run), start(sink)) };
    const { handles, starts } = setup({ observer });
    const started = await starts.start({ threadId: 't1', messages: [] });
    if (!started.ok) throw new Error('not started');
    expect(seen).toEqual([{ threadId: 't1', runId: started.value.runId, agentId: 'agent', messages: [] }]);
    expect(handles).toHaveLength(1);
  });

  it('gives way to a waiting run unless its pause is discarded, and to a running one only under `reject`', () => {
    const { starts } = setup();
    expect(starts.refusal({ threadId: 't' }, { runId: 'r', status: 'waiting' })?.code).toBe('thread_paused');
    expect(starts.refusal({ threadId: 't', discardPause: true }, { runId: 'r', status: 'waiting' })).toBeUndefined();
    expect(starts.refusal({ threadId: 't' }, { runId: 'r', status: 'running' })?.code).toBe('thread_busy');
    expect(setup({ policy: 'supersede' }).starts.refusal({ threadId: 't' }, { runId: 'r', status: 'running' })).toBeUndefined();
  });
});
