import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { realEnv } from '../../src/runtime/env.ts';
import { createHttpApp } from '../../src/server/http.ts';
import { Mailbox } from '../../src/server/mailbox.ts';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { ServerMetrics } from '../../src/server/prometheus.ts';
import { failTool, echoTool } from '../support/runtime.ts';
import { gatedTool, json, parseSse, readFrames, testServer } from '../support/server.ts';

/**
 * The operating surface over a socket (docs/server.md → Operating the server): `/metrics` in the
 * Prometheus text format with the values a scripted scenario must produce, `/health/live`, the limit
 * on concurrent requests (streams not counted), and `/metrics` behind the admin token.
 */

/** A store whose `getThread` of `held` waits for the spec to let it go, and whose reads can be made to fail. */
class GatedStore extends MemoryStore {
  #release: (() => void)[] = [];
  failing = false;
  waiting(): number {
    return this.#release.length;
  }
  releaseAll(): void {
    for (const r of this.#release.splice(0)) r();
  }
  releaseOldest(): void {
    this.#release.shift()?.();
  }
  override async getThread(id: string) {
    if (id === 'held') await new Promise<void>((r) => this.#release.push(r));
    if (this.failing) throw new Error('the database went away');
    return super.getThread(id);
  }
  override async listThreads(q: Parameters<MemoryStore['listThreads']>[0]) {
    if (this.failing) throw new Error('the database went away');
    return super.listThreads(q);
  }
}

/** The samples of a Prometheus text exposition: `name{labels}` → value (comments checked for each name). */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-z_:][a-z0-9_:]*(?:\{[^}]*\})?) (\S+)$/i.exec(line);
    if (m === null) throw new Error(`not a sample line: ${line}`);
    out.set(m[1] as string, Number(m[2]));
  }
  return out;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await sleep(10);
  }
  throw new Error(`never: ${what}`);
}

let server: RunningServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function scrape(base: string, headers: Record<string, string> = {}): Promise<Map<string, number>> {
  const r = await fetch(`${base}/metrics`, { headers });
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return samples(await r.text());
}

describe('GET /metrics after three runs, one of them failed', () => {
  it('has every named metric with the value the runs produced', async () => {
    const store = new GatedStore();
    const s = testServer(
      [
        // Run 1: a tool call that succeeds, then an answer (10+20 tokens in, 5+7 out).
        { tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'hi' } }], usage: { prompt_tokens: 10, completion_tokens: 5 } },
        { text: 'done', usage: { prompt_tokens: 20, completion_tokens: 7 } },
        // Run 2: a tool call that fails, then an answer (3 in, 2 out).
        { tool_calls: [{ id: 'c2', name: 'fail', arguments: {} }] },
        { text: 'it failed', usage: { prompt_tokens: 3, completion_tokens: 2 } },
        // Run 3: the model fails.
        { error: 'the provider is down' },
      ],
      { store, tools: [echoTool, failTool] },
    );
    server = await listen(s.app, { port: 0 });
    const base = server.url;
    for (const thread of ['m1', 'm2', 'm3']) {
      const r = await fetch(`${base}/v1/runs`, json({ threadId: thread, messages: [{ role: 'user', content: 'go' }] }));
      expect(r.status).toBe(200);
      const frames = parseSse(await r.text());
      expect(JSON.parse(frames.at(-1)?.data ?? '{}')).toMatchObject({ event_type: 'run_finish' });
    }
    await until(() => s.registry.liveRuns === 0, 'the runs are released');
    // A 5xx answer and a health check that finds the store down.
    store.failing = true;
    expect((await fetch(`${base}/v1/threads`)).status).toBe(500);
    expect((await fetch(`${base}/health`)).status).toBe(503);
    store.failing = false;
    // One stream open while the metrics are read.
    const follower = await fetch(`${base}/v1/threads/m1/stream`);
    expect(follower.headers.get('content-type')).toBe('text/event-stream');

    const m = await scrape(base);
    expect(Object.fromEntries([...m].filter(([k]) => !k.startsWith('awaken_run_duration_seconds_bucket')))).toEqual({
      awaken_active_runs: 0,
      awaken_mailbox_queue_depth: 0,
      awaken_sse_connections: 1,
      awaken_http_requests_in_flight: 0,
      'awaken_runs_total{outcome="natural_end"}': 2,
      'awaken_runs_total{outcome="behavior_requested"}': 0,
      'awaken_runs_total{outcome="stopped"}': 0,
      'awaken_runs_total{outcome="cancelled"}': 0,
      'awaken_runs_total{outcome="blocked"}': 0,
      'awaken_runs_total{outcome="suspended"}': 0,
      'awaken_runs_total{outcome="error"}': 1,
      awaken_run_duration_seconds_sum: expect.any(Number),
      awaken_run_duration_seconds_count: 3,
      'awaken_errors_total{class="run_error"}': 1,
      'awaken_errors_total{class="http_5xx"}': 1,
      'awaken_errors_total{class="store"}': 1,
      'awaken_errors_total{class="overloaded"}': 0,
      'awaken_tokens_total{type="input"}': 33,
      'awaken_tokens_total{type="output"}': 14,
      'awaken_tool_calls_total{status="succeeded"}': 1,
      'awaken_tool_calls_total{status="failed"}': 1,
      'awaken_tool_calls_total{status="suspended"}': 0,
    });
    // Every run is in the +Inf bucket; each metric has its HELP and TYPE.
    expect(m.get('awaken_run_duration_seconds_bucket{le="+Inf"}')).toBe(3);
    await follower.body?.cancel();
    await until(async () => (await scrape(base)).get('awaken_sse_connections') === 0, 'the stream that went away is no longer counted');
    const text = await (await fetch(`${base}/metrics`)).text();
    for (const [name, type] of [
      ['awaken_active_runs', 'gauge'],
      ['awaken_mailbox_queue_depth', 'gauge'],
      ['awaken_sse_connections', 'gauge'],
      ['awaken_http_requests_in_flight', 'gauge'],
      ['awaken_runs_total', 'counter'],
      ['awaken_run_duration_seconds', 'histogram'],
      ['awaken_errors_total', 'counter'],
      ['awaken_tokens_total', 'counter'],
      ['awaken_tool_calls_total', 'counter'],
    ]) {
      expect(text).toContain(`\n# TYPE ${name} ${type}\n`);
    }
  });

  it('counts a run while it goes and a suspension as its outcome; two apps have registries of their own', async () => {
    const s = testServer([{ tool_calls: [{ id: 'a1', name: 'approve', arguments: { what: 'x' } }] }]);
    const other = testServer([]);
    server = await listen(s.app, { port: 0 });
    const r = await fetch(`${server.url}/v1/runs`, json({ threadId: 'p1', messages: [{ role: 'user', content: 'go' }] }));
    await r.text();
    const m = await scrape(server.url);
    expect(m.get('awaken_active_runs')).toBe(1);
    expect(m.get('awaken_runs_total{outcome="suspended"}')).toBe(1);
    expect(m.get('awaken_tool_calls_total{status="suspended"}')).toBe(1);
    const second = await other.app.request('/metrics');
    expect(samples(await second.text()).get('awaken_runs_total{outcome="suspended"}')).toBe(0);
  });
});

describe('awaken_mailbox_queue_depth', () => {
  it('counts the jobs the mailbox has claimed while their runs go', async () => {
    const gate = gatedTool();
    const s = testServer([{ tool_calls: [{ id: 'g1', name: 'slow', arguments: { tag: 'a' } }] }, { text: 'done' }], { tools: [gate.tool] });
    // Real time: the lease renewal sleeps while the run waits at the gate.
    const mailbox = new Mailbox(s.store, s.registry, realEnv());
    const app = createHttpApp({ runtime: s.runtime, store: s.store, registry: s.registry, mailbox });
    const depth = async () => samples(await (await app.request('/metrics')).text()).get('awaken_mailbox_queue_depth');
    await mailbox.submit({ threadId: 'mq', agentId: 'agent', messages: [Messages.user('go', { id: 'u1' })] });
    expect(await depth()).toBe(0);
    await mailbox.dispatchOnce();
    await until(() => gate.started.length === 1, "the job's run is going");
    expect(await depth()).toBe(1);
    gate.open();
    await mailbox.drain();
    expect(await depth()).toBe(0);
  });
});

describe('GET /health/live', () => {
  it('answers 200 with an empty body without asking the store, and without a credential when tokens are configured', async () => {
    const store = new GatedStore();
    const s = testServer([], { store, http: { auth: { tokens: new Map([['alice-token-0123456789', 'alice']]) } } });
    server = await listen(s.app, { port: 0 });
    store.failing = true;
    const live = await fetch(`${server.url}/health/live`);
    expect({ status: live.status, body: await live.text() }).toEqual({ status: 200, body: '' });
    expect((await fetch(`${server.url}/health`)).status).toBe(503);
  });
});

describe('max_concurrent_requests', () => {
  it('answers one more request 503 overloaded with Retry-After: 1, while /health/live and /metrics answer', async () => {
    const store = new GatedStore();
    const s = testServer([], { store, http: { ops: { maxConcurrentRequests: 2 } } });
    server = await listen(s.app, { port: 0 });
    const base = server.url;
    const held = [fetch(`${base}/v1/threads/held`), fetch(`${base}/v1/threads/held`)];
    await until(() => store.waiting() === 2, 'two requests are held');
    const refused = await fetch(`${base}/v1/threads`);
    expect({ status: refused.status, retryAfter: refused.headers.get('retry-after'), body: await refused.json() }).toEqual({
      status: 503,
      retryAfter: '1',
      body: { error: 'the server is handling 2 requests (server.max_concurrent_requests): try again shortly', code: 'overloaded' },
    });
    expect((await fetch(`${base}/health/live`)).status).toBe(200);
    expect((await fetch(`${base}/health`)).status).toBe(200);
    const busy = await scrape(base);
    expect(busy.get('awaken_http_requests_in_flight')).toBe(2);
    expect(busy.get('awaken_errors_total{class="overloaded"}')).toBe(1);
    expect(busy.get('awaken_errors_total{class="http_5xx"}')).toBe(0);
    store.releaseAll();
    expect((await Promise.all(held)).map((r) => r.status)).toEqual([404, 404]);
    expect((await fetch(`${base}/v1/threads`)).status).toBe(200);
    expect((await scrape(base)).get('awaken_http_requests_in_flight')).toBe(0);
  });

  it('property: for any limit and any order of arrivals and ends, a request is taken iff fewer than the limit are handled, and the gauges follow', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4 }), fc.array(fc.boolean(), { maxLength: 24 }), async (limit, steps) => {
        const store = new GatedStore();
        const s = testServer([], { store, http: { ops: { maxConcurrentRequests: limit } } });
        const gauges = async () => {
          const m = samples(await (await s.app.request('/metrics')).text());
          return { inFlight: m.get('awaken_http_requests_in_flight'), overloaded: m.get('awaken_errors_total{class="overloaded"}') };
        };
        const held: Promise<Response>[] = [];
        let refused = 0;
        for (const arrive of steps) {
          if (arrive) {
            const answer = Promise.resolve(s.app.request('/v1/threads/held'));
            if (held.length < limit) {
              held.push(answer);
              await until(() => store.waiting() === held.length, 'the request is being handled');
            } else {
              expect((await answer).status).toBe(503);
              refused++;
            }
          } else if (held.length > 0) {
            store.releaseOldest();
            expect((await held.shift())?.status).toBe(404);
          }
          expect(await gauges()).toEqual({ inFlight: held.length, overloaded: refused });
        }
        store.releaseAll();
        await Promise.all(held);
        expect(await gauges()).toEqual({ inFlight: 0, overloaded: refused });
      }),
      { numRuns: 40 },
    );
  });

  it('does not count open event streams: with a limit of 1, requests go on beside two streams', async () => {
    const s = testServer([{ text: 'slow', delay_ms: 300 }], { http: { ops: { maxConcurrentRequests: 1 } } });
    server = await listen(s.app, { port: 0 });
    const base = server.url;
    expect((await fetch(`${base}/v1/threads`, json({ id: 'f1' }))).status).toBe(201);
    const follower = await fetch(`${base}/v1/threads/f1/stream`);
    const run = await fetch(`${base}/v1/runs`, json({ threadId: 'f1', messages: [{ role: 'user', content: 'go' }] }));
    expect(run.status).toBe(200);
    expect((await fetch(`${base}/v1/threads`)).status).toBe(200);
    expect((await fetch(`${base}/v1/threads/f1`)).status).toBe(200);
    const m = await scrape(base);
    expect({ sse: m.get('awaken_sse_connections'), inFlight: m.get('awaken_http_requests_in_flight') }).toEqual({ sse: 2, inFlight: 0 });
    // The run's stream ends with the run: counted until its body ends.
    expect(JSON.parse(parseSse(await run.text()).at(-1)?.data ?? '{}')).toMatchObject({ event_type: 'run_finish' });
    await until(async () => (await scrape(base)).get('awaken_sse_connections') === 1, 'the ended stream is no longer counted');
    await readFrames(follower, () => true, 100);
    await until(async () => (await scrape(base)).get('awaken_sse_connections') === 0, 'the cancelled stream is no longer counted');
  });
});

describe('event streams behind a Fetch handler (no Node response to watch)', () => {
  it('are counted until their body ends or its reader goes away', async () => {
    const s = testServer([{ text: 'slow', delay_ms: 100 }]);
    const gauge = async () => samples(await (await s.app.request('/metrics')).text()).get('awaken_sse_connections');
    expect((await s.app.request('/v1/threads', json({ id: 'fetch-1' }))).status).toBe(201);
    const follower = await s.app.request('/v1/threads/fetch-1/stream');
    const run = await s.app.request('/v1/runs', json({ threadId: 'fetch-1', messages: [{ role: 'user', content: 'go' }] }));
    expect(await gauge()).toBe(2);
    await run.text();
    expect(await gauge()).toBe(1);
    await follower.body?.cancel();
    expect(await gauge()).toBe(0);
  });
});

describe('/metrics with access control', () => {
  it('needs the admin token when tokens are configured: 401 without a credential, 403 for an API token', async () => {
    const admin = 'admin-token-0123456789';
    const s = testServer([], { http: { auth: { tokens: new Map([['alice-token-0123456789', 'alice']]) }, adminToken: admin } });
    server = await listen(s.app, { port: 0 });
    const without = await fetch(`${server.url}/metrics`);
    expect({ status: without.status, body: await without.json() }).toEqual({
      status: 401,
      body: { error: 'authentication required: Authorization: Bearer <token>', code: 'unauthorized', field: 'authorization' },
    });
    const alice = await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer alice-token-0123456789' } });
    expect({ status: alice.status, body: await alice.json() }).toEqual({
      status: 403,
      body: { error: '/metrics needs the admin token', code: 'forbidden', field: 'authorization' },
    });
    const m = await scrape(server.url, { authorization: `Bearer ${admin}` });
    expect(m.get('awaken_active_runs')).toBe(0);
  });

  it('is open on a server without tokens', async () => {
    const s = testServer([]);
    server = await listen(s.app, { port: 0 });
    expect((await scrape(server.url)).get('awaken_active_runs')).toBe(0);
  });
});

describe('docs/server.md → Operating the server', () => {
  const doc = readFileSync(join(import.meta.dirname, '../../docs/server.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Operating the server'), doc.indexOf('## Errors'));

  it('names every metric with its type, as /metrics has them', async () => {
    const s = testServer([]);
    const text = await (await s.app.request('/metrics')).text();
    const rows = [...section.matchAll(/^ {2}\| `(awaken_[a-z_]+)(?:\{[a-z]+\})?` \| ([a-z]+) \|/gm)].map((m) => [m[1], m[2]]);
    expect(rows.map(([name]) => name)).toEqual([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
    for (const [name, type] of rows) expect(text).toContain(`# TYPE ${name} ${type}\n`);
  });

  it('shows the answer to one request more than the default 100, and to an API token on /metrics, whole', async () => {
    const store = new GatedStore();
    const s = testServer([], {
      store,
      http: { ops: { maxConcurrentRequests: 100 }, auth: { tokens: new Map([['alice-token-0123456789', 'alice']]) }, adminToken: 'admin-token-0123456789' },
    });
    server = await listen(s.app, { port: 0 });
    const base = server.url;
    const auth = { authorization: 'Bearer admin-token-0123456789' };
    const held = Array.from({ length: 100 }, () => fetch(`${base}/v1/threads/held`, { headers: auth }));
    await until(() => store.waiting() === 100, 'a hundred requests are held');
    const refused = await fetch(`${base}/v1/threads`, { headers: auth });
    const shown = /```\n(HTTP\/1\.1 503[^`]*)```/.exec(section.replace(/^ {2}/gm, ''))?.[1] ?? '';
    expect(shown).toBe(`HTTP/1.1 ${refused.status} ${refused.statusText}\nretry-after: ${refused.headers.get('retry-after')}\n\n${await refused.text()}\n`);
    store.releaseAll();
    await Promise.all(held);
    const alice = await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer alice-token-0123456789' } });
    expect(section).toContain(`with an API\n  token 403 \`${await alice.text()}\``);
  });
});

describe('awaken_run_duration_seconds of a run that suspends and is resumed', () => {
  it('measures each segment from its own run_start: the wait for a decision is not run time', async () => {
    const metrics = new ServerMetrics({ activeRuns: () => 0 });
    const run = { runId: 'r1', threadId: 't1', agentId: 'a', startedAt: 0 };
    metrics.observe(run, { event_type: 'run_start', thread_id: 't1', run_id: 'r1' }, 0);
    metrics.observe(run, { event_type: 'run_finish', thread_id: 't1', run_id: 'r1', termination: { type: 'suspended' } }, 1_000);
    // An hour waiting for a person, then the resumed segment runs for two seconds.
    metrics.observe(run, { event_type: 'run_start', thread_id: 't1', run_id: 'r1' }, 3_601_000);
    metrics.observe(run, { event_type: 'run_finish', thread_id: 't1', run_id: 'r1', termination: { type: 'natural_end' } }, 3_603_000);
    const text = await metrics.text();
    expect(text).toContain('awaken_run_duration_seconds_sum 3\n');
    expect(text).toContain('awaken_run_duration_seconds_count 2\n');
  });
});
