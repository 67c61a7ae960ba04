import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DeterministicEnv } from '../../src/runtime/env.ts';
import type { Store } from '../../src/runtime/store.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { SqliteStore } from '../../src/stores/sqlite.ts';
import { bodyJson, gatedTool, json, readFrames, testServer, type SseFrame } from '../support/server.ts';
import { namedEnv } from '../support/runtime.ts';

/**
 * Two instances on one store (issue: the server under faults, finding 1). Instance A "dies" by never
 * renewing its leases again (its process would be gone); B's clock is moved past the lease. The
 * process-level version (kill -9 of `awaken serve` on PostgreSQL) is in spec/chaos/.
 */
const TTL = 10_000;
const go = (threadId: string, text = 'go') => json({ threadId, messages: [{ role: 'user', content: text }] });
const data = (f: SseFrame) => JSON.parse(f.data) as { event_type: string; run_id?: string; termination?: { type: string; value?: string } };

function pair(store: Store, policy: 'reject' | 'supersede' = 'reject') {
  const g = gatedTool();
  const a = testServer([{ tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: 'a' } }] }, { text: 'a done' }], {
    store,
    tools: [g.tool],
    env: namedEnv('a'),
    registry: { policy, leases: { owner: 'A', ttlMs: TTL } },
  });
  const b = testServer([{ text: 'b done' }, { text: 'b again' }], { store, env: namedEnv('b'), registry: { policy, leases: { owner: 'B', ttlMs: TTL } } });
  return { a, b, g, clockB: b.runtime.env as DeterministicEnv };
}

async function startGated(a: ReturnType<typeof testServer>, g: ReturnType<typeof gatedTool>, threadId: string): Promise<string> {
  const r = await a.app.request('/v1/runs', go(threadId));
  const runId = r.headers.get('x-awaken-run-id') as string;
  void r.text();
  for (let i = 0; i < 500 && g.started.length === 0; i++) await new Promise((res) => setTimeout(res, 2));
  expect(g.started).toHaveLength(1);
  return runId;
}

describe('a run whose instance died', () => {
  it('holds its thread only until its lease expires: then any instance ends it interrupted, its followers get the terminal frame, and the thread takes a new run', async () => {
    const store = new MemoryStore();
    const { a, b, g, clockB } = pair(store);
    const runA = await startGated(a, g, 't');

    const busy = await b.app.request('/v1/runs', go('t'));
    expect(busy.status).toBe(409);
    expect(await busy.json()).toMatchObject({ code: 'thread_busy', run_id: runA });
    expect(await bodyJson(b.app.request('/v1/threads/t'))).toMatchObject({ active_run_id: runA, active_run_status: 'running' });
    expect(await b.registry.sweepLeases()).toEqual([]);

    const follower = readFrames(await b.app.request('/v1/threads/t/stream'), (fs) => fs.some((f) => data(f).event_type === 'run_finish'), 5_000);
    clockB.advance(TTL + 1);
    expect(await b.registry.sweepLeases()).toEqual([runA]);
    expect(await store.getRun(runA)).toMatchObject({
      status: 'done',
      termination: { type: 'error', value: 'interrupted: its instance stopped renewing the thread lease' },
    });
    const seen = await follower;
    expect(seen.map(data)).toEqual([
      {
        event_type: 'run_finish',
        thread_id: 't',
        run_id: runA,
        termination: { type: 'error', value: 'interrupted: its instance stopped renewing the thread lease' },
      },
    ]);
    expect((await bodyJson(b.app.request('/v1/threads/t'))).active_run_id).toBeUndefined();

    const next = await b.app.request('/v1/runs', go('t', 'again'));
    expect(next.status).toBe(200);
    expect(await next.text()).toContain('b done');
    g.open();
    await a.registry.shutdown();
  });

  it('a cancel from another instance takes effect at once: the run ends cancelled and the thread is free', async () => {
    const store = new MemoryStore();
    const { a, b, g, clockB } = pair(store);
    const runA = await startGated(a, g, 'c');
    clockB.advance(TTL + 1);
    const cancel = await b.app.request(`/v1/runs/${runA}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    expect(cancel.status).toBe(202);
    expect((await store.getRun(runA))?.termination).toEqual({ type: 'cancelled' });
    expect((await b.app.request('/v1/runs', go('c'))).status).toBe(200);
    g.open();
    await a.registry.shutdown();
  });

  it('a live instance keeps its thread: renewal moves the lease on, and a cancel request on the lease reaches its run', async () => {
    const store = new MemoryStore();
    const { a, b, g, clockB } = pair(store);
    const runA = await startGated(a, g, 'r');
    (a.runtime.env as DeterministicEnv).advance(TTL - 1);
    await a.registry.renewLeases();
    clockB.advance(TTL + 1);
    expect(await b.registry.sweepLeases()).toEqual([]);
    // The notification of a cancel can be lost (no bus here at all): the request on the lease is not.
    expect((await b.app.request(`/v1/runs/${runA}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } })).status).toBe(202);
    await a.registry.renewLeases();
    g.open();
    for (let i = 0; i < 500 && a.registry.currentRun('r') !== undefined; i++) await new Promise((res) => setTimeout(res, 2));
    expect((await store.getRun(runA))?.termination).toEqual({ type: 'cancelled' });
  });

  it('supersede across instances: the start that takes the lease wins, the other run is stopped (its instance learns at renewal) and ends cancelled before the new one starts', async () => {
    const store = new MemoryStore();
    const { a, b, g } = pair(store, 'supersede');
    const runA = await startGated(a, g, 's');
    const started = b.app.request('/v1/runs', go('s'));
    // A renews while B waits for A's run to end: it finds its lease gone and stops its run.
    await new Promise((res) => setTimeout(res, 20));
    await a.registry.renewLeases();
    g.open();
    const r = await started;
    expect(r.status).toBe(200);
    // B's run started only once A's had ended: never two at once.
    expect(await store.getRun(runA)).toMatchObject({ status: 'done', termination: { type: 'cancelled' } });
    const frames = (await r.text()).split('\n\n').filter((x) => x.startsWith('id:'));
    expect(frames.length).toBeGreaterThan(0);
    expect(await store.getLease('s')).toBeUndefined();
  });
});

describe('one instance, one thread at a time', () => {
  it("a start that arrives while this instance is sweeping the thread's dead run waits for the sweep, then runs (not refused by the lease the sweep holds)", async () => {
    const store = new MemoryStore();
    let open: () => void = () => undefined;
    const gate = new Promise<void>((r) => (open = r));
    // B's store holds the sweep in finishRun: the lease is B's (taken over) and the run not yet ended.
    const held = new Proxy(store, {
      get(target, key) {
        if (key === 'finishRun') return async (...args: Parameters<Store['finishRun']>) => (await gate, target.finishRun(...args));
        const v = Reflect.get(target, key, target) as unknown;
        return typeof v === 'function' ? (v as (...xs: unknown[]) => unknown).bind(target) : v;
      },
    });
    const g = gatedTool();
    const a = testServer([{ tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: 'a' } }] }], {
      store,
      tools: [g.tool],
      env: namedEnv('a'),
      registry: { leases: { owner: 'A', ttlMs: TTL } },
    });
    const b = testServer([{ text: 'b done' }], { store: held, env: namedEnv('b'), registry: { leases: { owner: 'B', ttlMs: TTL } } });
    const runA = await startGated(a, g, 'ex');
    (b.runtime.env as DeterministicEnv).advance(TTL + 1);
    const swept = b.registry.sweepLeases();
    await expect.poll(async () => (await store.getLease('ex'))?.owner).toBe('B');
    const started = b.app.request('/v1/runs', go('ex', 'again'));
    await new Promise((r) => setTimeout(r, 50));
    open();
    expect(await swept).toEqual([runA]);
    const r = await started;
    expect(r.status).toBe(200);
    expect(await r.text()).toContain('b done');
    g.open();
    await a.registry.shutdown();
    await b.registry.shutdown();
  });
});

describe('an instance cut off past its lease (split brain)', () => {
  for (const [name, open] of [
    ['memory', () => new MemoryStore()],
    ['SQLite', () => new SqliteStore(join(mkdtempSync(join(tmpdir(), 'awaken-lease-')), 'awaken.db'))],
  ] as const) {
    it(`${name}: once another instance has ended its run, what the cut-off instance's run does later reaches neither the thread nor the run's record`, async () => {
      const store = open();
      const { a, b, g, clockB } = pair(store);
      const runA = await startGated(a, g, 'sb');
      clockB.advance(TTL + 1);
      expect(await b.registry.sweepLeases()).toEqual([runA]);
      const interrupted = { type: 'error', value: 'interrupted: its instance stopped renewing the thread lease' };
      const thread = (await store.loadThread('sb'))?.messages;

      // A wakes up before it renews: its tool returns, its run goes on and would write its answer.
      g.open();
      for (let i = 0; i < 1000 && a.registry.currentRun('sb') !== undefined; i++) await new Promise((res) => setTimeout(res, 2));
      expect(a.registry.currentRun('sb')).toBeUndefined();
      expect(await store.getRun(runA)).toMatchObject({ status: 'done', termination: interrupted });
      expect((await store.loadThread('sb'))?.messages).toEqual(thread);

      // The thread goes on under the instance that ended the run.
      const next = await b.app.request('/v1/runs', go('sb', 'again'));
      expect(next.status).toBe(200);
      expect(await next.text()).toContain('b done');
      expect((await store.loadThread('sb'))?.messages.map((m) => m.role)).toEqual([...(thread ?? []).map((m) => m.role), 'user', 'assistant']);
      await a.registry.shutdown();
      await b.registry.shutdown();
    });
  }
});

describe('concurrent starts on one thread across two instances (reject)', () => {
  it('of 100 starts on two instances sharing a SQLite file, exactly one runs', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'awaken-lease-')), 'awaken.db');
    const g = gatedTool();
    const mk = (owner: string) =>
      testServer(
        Array.from({ length: 100 }, () => ({ tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: owner } }] })),
        { store: new SqliteStore(path), tools: [g.tool], env: namedEnv(owner), registry: { leases: { owner } } },
      );
    const a = mk('A');
    const b = mk('B');
    const responses = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? a : b).app.request('/v1/runs', go('race'))));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(99);
    g.open();
    await Promise.all(responses.map((r) => r.text()));
    await a.registry.shutdown();
    await b.registry.shutdown();
  });
});
