import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresBus } from '../../src/stores/postgres-bus.ts';
import { PostgresStore } from '../../src/stores/postgres.ts';
import { dropPrefix, PG_URL } from '../support/postgres.ts';
import { report } from '../chaos/chaos.ts';
import { bodyJson, gatedTool, json, readFrames, testServer, type SseFrame } from '../support/server.ts';

/**
 * Two instances on one PostgreSQL database lose every connection at once (`pg_terminate_backend` on
 * the connections the server opened: a database restart, a failover, a proxy dropping them). Issue:
 * the server under faults, finding 4.
 */
const prefix = `cf${process.pid}`;
const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const o of opened.reverse()) await o.close().catch(() => undefined);
  await dropPrefix(prefix);
});

async function instance(script: Parameters<typeof testServer>[0], tools?: NonNullable<Parameters<typeof testServer>[1]>['tools']) {
  const store = PostgresStore.withPrefix(PG_URL, prefix);
  const bus = new PostgresBus(PG_URL, { prefix, reconnectMs: 1_000 });
  opened.push(store, bus);
  const s = testServer(script, { store, registry: { bus }, ...(tools !== undefined ? { tools } : {}) });
  await s.registry.attachBus();
  return s;
}

async function terminate(): Promise<number> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  const r = await c.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [`awaken:${prefix}`]);
  await c.end();
  return r.rowCount ?? 0;
}

const until = async (cond: () => boolean | Promise<boolean>, ms: number): Promise<number> => {
  const start = Date.now();
  while (!(await cond())) {
    if (Date.now() - start > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - start;
};

const data = (f: SseFrame) => JSON.parse(f.data) as { event_type: string; termination?: { type: string } };

describe('the cluster bus after its connections are terminated', () => {
  it('reports degraded, reconnects, catches followers up with what was appended meanwhile, and carries cancels again', async () => {
    const g = gatedTool();
    const a = await instance(
      [{ text: ['while', ' B was deaf'] }, { tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: 'x' } }] }, { text: 'never' }],
      [g.tool],
    );
    const b = await instance([]);
    expect((await b.app.request('/v1/threads', json({ id: 'cf' }))).status).toBe(201);
    const follower = readFrames(
      await b.app.request('/v1/threads/cf/stream?since=0'),
      (fs) => fs.filter((f) => data(f).event_type === 'run_finish').length >= 2,
      30_000,
    );
    expect((await bodyJson(b.app.request('/health/ready'))).status).toBe('healthy');

    const started = Date.now();
    const killed = await terminate();
    expect(killed).toBeGreaterThanOrEqual(2);
    await until(() => b.registry.busStatus === 'down', 5_000);
    const ready = await b.app.request('/health/ready');
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ status: 'degraded', components: { store: 'ok', runtime: 'ok', bus: 'reconnecting' } });
    expect((await b.app.request('/health')).status).toBe(200);

    // A run on A while B cannot hear it.
    const first = await a.app.request('/v1/runs', json({ threadId: 'cf', messages: [{ role: 'user', content: 'one' }] }));
    await first.text();

    const recovered = await until(() => a.registry.busStatus === 'listening' && b.registry.busStatus === 'listening', 15_000);
    report('postgres backends terminated', { terminated: killed, listeningAgainMs: Date.now() - started, polledMs: recovered });
    expect((await b.app.request('/health/ready')).status).toBe(200);

    // A cancel sent from B reaches the run on A.
    const second = await a.app.request('/v1/runs', json({ threadId: 'cf', messages: [{ role: 'user', content: 'two' }] }));
    const runId = second.headers.get('x-awaken-run-id') as string;
    await until(() => g.started.length === 1, 10_000);
    expect((await b.app.request(`/v1/runs/${runId}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } })).status).toBe(202);
    g.open();
    await second.text();

    const seen = await follower;
    const ids = seen.map((f) => Number(f.id));
    expect(ids).toEqual(ids.map((_, i) => i + 1));
    report('postgres backends terminated: follower', { frames: ids.length, lost: ids.length === 0 ? 'all' : 0 });
    expect(seen.filter((f) => data(f).event_type === 'run_finish').map((f) => data(f).termination?.type)).toEqual(['natural_end', 'cancelled']);
  }, 60_000);
});
