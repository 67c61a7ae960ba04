import { afterAll, describe, expect, it } from 'vitest';
import type { DeterministicEnv } from '../../src/runtime/env.ts';
import { PostgresBus } from '../../src/stores/postgres-bus.ts';
import { PostgresStore } from '../../src/stores/postgres.ts';
import { dropPrefix, PG_URL } from '../support/postgres.ts';
import { gatedTool, json, testServer } from '../support/server.ts';
import { namedEnv } from '../support/runtime.ts';

/**
 * Two instances on PostgreSQL, one cut off past its lease (issue: the server under faults; seed 001:
 * exactly one terminal frame). The other sweeps the run: it ends it, appends its terminal frame to
 * the shared log and frees the thread. When the cut-off instance comes back and its run goes on, none
 * of what that run does afterwards reaches the shared log, where followers on every instance read.
 */
const TTL = 10_000;
const prefix = `sb${process.pid}`;
const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const o of opened.reverse()) await o.close().catch(() => undefined);
  await dropPrefix(prefix);
});

async function instance(name: string, script: Parameters<typeof testServer>[0], tools: NonNullable<Parameters<typeof testServer>[1]>['tools'] = undefined) {
  const store = PostgresStore.withPrefix(PG_URL, prefix);
  const bus = new PostgresBus(PG_URL, { prefix });
  opened.push(store, bus);
  const s = testServer(script, {
    store,
    env: namedEnv(name),
    ...(tools !== undefined ? { tools } : {}),
    registry: { bus, leases: { owner: name, ttlMs: TTL } },
  });
  await s.registry.attachBus();
  return { ...s, bus };
}

const eventOf = (data: string) => JSON.parse(data) as { event_type: string; run_id?: string; termination?: { type: string; value?: string } };

describe('an instance cut off past its lease, on a shared log', () => {
  it("after the sweep's terminal frame, nothing of the swept run reaches the shared log: one terminal frame, nothing after it", async () => {
    const g = gatedTool();
    const a = await instance(
      'a',
      [{ text: 'before the tool', tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: 'a' } }] }, { text: 'after the tool' }],
      [g.tool],
    );
    const b = await instance('b', [{ text: 'b done' }]);
    const started = await a.app.request('/v1/runs', json({ threadId: 'split', messages: [{ role: 'user', content: 'go' }] }));
    const runA = started.headers.get('x-awaken-run-id') as string;
    void started.text();
    for (let i = 0; i < 500 && g.started.length === 0; i++) await new Promise((r) => setTimeout(r, 2));
    expect(g.started).toHaveLength(1);

    (b.runtime.env as DeterministicEnv).advance(TTL + 1);
    expect(await b.registry.sweepLeases()).toEqual([runA]);
    const atSweep = await b.bus.lastSeq('split');

    // A comes back: its tool returns, its run goes on (its checkpoint is refused) and ends.
    g.open();
    for (let i = 0; i < 1000 && a.registry.currentRun('split') !== undefined; i++) await new Promise((r) => setTimeout(r, 2));
    expect(a.registry.currentRun('split')).toBeUndefined();
    await a.registry.shutdown();

    const frames = (await b.bus.read('split', 0, 10_000)).map((f) => ({ seq: f.seq, runId: f.runId, event: eventOf(f.data) }));
    const terminals = frames.filter((f) => f.event.event_type === 'run_finish' && f.runId === runA);
    expect(terminals.map((f) => f.event.termination)).toEqual([{ type: 'error', value: 'interrupted: its instance stopped renewing the thread lease' }]);
    expect(frames.filter((f) => f.seq > atSweep)).toEqual([]);

    // The thread goes on under B, on the same shared log.
    const next = await b.app.request('/v1/runs', json({ threadId: 'split', messages: [{ role: 'user', content: 'again' }] }));
    expect(next.status).toBe(200);
    expect(await next.text()).toContain('b done');
    expect(Math.min(...(await b.bus.read('split', atSweep, 10_000)).map((f) => f.seq))).toBe(atSweep + 1);
    await b.registry.shutdown();
  });
});
