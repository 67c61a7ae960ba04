import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { bodyJson, gatedTool, json, parseSse, readFrames, testServer, type SseFrame, type TestServer } from '../support/server.ts';

/** The server under faults (dropped connections, slow clients, restarts), over real sockets on 127.0.0.1. */

const userRun = (text: string, extra: Record<string, unknown> = {}) => json({ messages: [{ role: 'user', content: text }], ...extra });
const dataOf = (f: SseFrame) => JSON.parse(f.data) as { event_type: string; termination?: { type: string }; run_id?: string };
const isFinish = (f: SseFrame) => f.event === undefined && dataOf(f).event_type === 'run_finish';
const until = async (cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 2));
  }
};

async function serve(s: TestServer): Promise<RunningServer> {
  return listen(s.app, { port: 0 });
}

describe('1. the client disconnects mid-run', () => {
  it('the run completes and its history is stored', async () => {
    const g = gatedTool();
    const s = testServer([{ tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: 'x' } }] }, { text: 'finished anyway' }], { tools: [g.tool] });
    const server = await serve(s);
    try {
      const abort = new AbortController();
      const r = await fetch(`${server.url}/v1/runs`, { ...userRun('go', { threadId: 'gone' }), signal: abort.signal });
      const runId = r.headers.get('x-awaken-run-id') as string;
      await readFrames(r, (fs) => fs.length >= 3);
      abort.abort();
      await until(() => g.started.length === 1);
      g.open();
      await until(() => s.registry.currentRun('gone') === undefined);
      const run = await bodyJson(fetch(`${server.url}/v1/runs/${runId}`));
      expect(run).toMatchObject({ status: 'done', termination: { type: 'natural_end' } });
      const messages = await bodyJson(fetch(`${server.url}/v1/threads/gone/messages`));
      expect(messages.messages.at(-1).content[0].text).toBe('finished anyway');
      expect(g.effects).toEqual(['x']);
    } finally {
      await server.close();
    }
  });
});

describe('2. reconnect with Last-Event-ID', () => {
  let s: TestServer;
  let server: RunningServer;
  let full: SseFrame[];
  beforeAll(async () => {
    const steps = Array.from({ length: 6 }, (_, i) => ({ text: ['a', 'b', 'c'], tool_calls: [{ id: `c${i}`, name: 'echo', arguments: { text: String(i) } }] }));
    s = testServer([...steps, { text: ['the', ' end'] }]);
    server = await serve(s);
    const r = await fetch(`${server.url}/v1/runs`, userRun('go', { threadId: 'rc' }));
    full = parseSse(await r.text());
  });
  afterAll(() => server.close());

  it('at any point, the frames after it are exactly the rest of the uninterrupted stream (≥ 100 points)', async () => {
    expect(full.length).toBeGreaterThan(40);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: full.length }), fc.boolean(), async (k, useHeader) => {
        const url = useHeader ? `${server.url}/v1/threads/rc/stream` : `${server.url}/v1/threads/rc/stream?since=${k}`;
        const r = await fetch(url, useHeader ? { headers: { 'last-event-id': String(k) } } : {});
        const rest = k === full.length ? [] : await readFrames(r, (fs) => fs.some(isFinish), 3000);
        if (k === full.length) await r.body?.cancel();
        expect(rest).toEqual(full.slice(k));
      }),
      { numRuns: 110 },
    );
  });

  it('a client that drops mid-run and reconnects from its last id sees no gap and no duplicate', async () => {
    const g = gatedTool();
    const live = testServer([{ text: 'x', tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: 't' } }] }, { text: ['y', 'z'] }], { tools: [g.tool] });
    const srv = await serve(live);
    try {
      const first = await fetch(`${srv.url}/v1/runs`, userRun('go', { threadId: 'live' }));
      const head = await readFrames(first, (fs) => fs.some((f) => dataOf(f).event_type === 'tool_call_ready'));
      const last = head.at(-1)?.id as string;
      g.open();
      const tail = await readFrames(await fetch(`${srv.url}/v1/threads/live/stream`, { headers: { 'last-event-id': last } }), (fs) => fs.some(isFinish));
      const all = [...head, ...tail];
      expect(all.map((f) => Number(f.id))).toEqual(all.map((_, i) => i + 1));
      expect(dataOf(all.at(-1) as SseFrame).termination?.type).toBe('natural_end');
    } finally {
      await srv.close();
    }
  });
});

describe('3. behind the buffer', () => {
  it('a resync frame with the current messages, then the live tail', async () => {
    const g = gatedTool();
    const s = testServer([{ text: ['1', '2', '3', '4', '5'], tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: 'q' } }] }, { text: 'after' }], {
      tools: [g.tool],
      registry: { replayBufferCapacity: 4 },
    });
    const server = await serve(s);
    try {
      const r = await fetch(`${server.url}/v1/runs`, userRun('go', { threadId: 'behind' }));
      await until(() => g.started.length === 1);
      const stream = await fetch(`${server.url}/v1/threads/behind/stream?since=1`);
      const pending = readFrames(stream, (fs) => fs.some(isFinish));
      await new Promise((res) => setTimeout(res, 20));
      g.open();
      const frames = await pending;
      expect(frames[0]?.event).toBe('resync');
      const resync = JSON.parse(frames[0]?.data ?? '{}');
      expect(resync.messages.map((m: { role: string }) => m.role)).toEqual(['user']);
      const ids = frames.slice(1).map((f) => Number(f.id));
      expect(ids[0]).toBe(Number(frames[0]?.id) + 1);
      expect(ids).toEqual(ids.map((_, i) => (ids[0] as number) + i));
      expect(isFinish(frames.at(-1) as SseFrame)).toBe(true);
      await r.body?.cancel();
    } finally {
      await server.close();
    }
  });
});

describe('4. concurrent submits to one thread', () => {
  it('reject: of 100 concurrent submits exactly one starts, 99 get 409', async () => {
    const g = gatedTool();
    const s = testServer([{ tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: 'one' } }] }, { text: 'done' }], { tools: [g.tool] });
    const server = await serve(s);
    try {
      const responses = await Promise.all(Array.from({ length: 100 }, (_, i) => fetch(`${server.url}/v1/runs`, userRun(`n${i}`, { threadId: 'hot' }))));
      const ok = responses.filter((r) => r.status === 200);
      const conflicts = responses.filter((r) => r.status === 409);
      expect(ok).toHaveLength(1);
      expect(conflicts).toHaveLength(99);
      const runId = ok[0]?.headers.get('x-awaken-run-id');
      for (const c of conflicts) expect(await c.json()).toMatchObject({ code: 'thread_busy', run_id: runId });
      g.open();
      await readFrames(ok[0] as Response, (fs) => fs.some(isFinish));
    } finally {
      await server.close();
    }
  });

  it('supersede: the old run ends cancelled, the new one completes', async () => {
    const g = gatedTool();
    const s = testServer([{ tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: 'old' } }] }, { text: 'new' }], {
      tools: [g.tool],
      registry: { policy: 'supersede' },
    });
    const server = await serve(s);
    try {
      const old = await fetch(`${server.url}/v1/runs`, userRun('first', { threadId: 'sup' }));
      await until(() => g.started.length === 1);
      const next = fetch(`${server.url}/v1/runs`, userRun('second', { threadId: 'sup' }));
      // The gate opens once the second request has cancelled the first (not after a guess of time).
      await until(() => g.aborted.length === 1);
      g.open();
      const oldFrames = await readFrames(old, (fs) => fs.some(isFinish));
      expect(dataOf(oldFrames.at(-1) as SseFrame).termination?.type).toBe('cancelled');
      const newFrames = await readFrames(await next, (fs) => fs.some(isFinish));
      expect(dataOf(newFrames.at(-1) as SseFrame).termination?.type).toBe('natural_end');
    } finally {
      await server.close();
    }
  });
});

describe('5. stop while a tool runs', () => {
  it('the terminal is cancelled and the tool’s side effect still happens (cooperative cancellation)', async () => {
    const g = gatedTool();
    const s = testServer([{ tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: 'effect' } }] }, { text: 'never' }], { tools: [g.tool] });
    const server = await serve(s);
    try {
      const r = await fetch(`${server.url}/v1/runs`, userRun('go', { threadId: 'stop' }));
      const runId = r.headers.get('x-awaken-run-id') as string;
      await until(() => g.started.length === 1);
      const cancel = await fetch(`${server.url}/v1/runs/${runId}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } });
      expect(cancel.status).toBe(202);
      g.open();
      const frames = await readFrames(r, (fs) => fs.some(isFinish));
      expect(dataOf(frames.at(-1) as SseFrame).termination?.type).toBe('cancelled');
      expect(frames.filter(isFinish)).toHaveLength(1);
      expect(g.effects).toEqual(['effect']);
      expect(s.llm.requests).toHaveLength(1);
    } finally {
      await server.close();
    }
  });
});

describe('7. a suspended run decided from another connection', () => {
  it('finishes, and the subscriber sees both segments on one continuous seq', async () => {
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }] }, { text: 'shipped' }]);
    const server = await serve(s);
    try {
      expect((await fetch(`${server.url}/v1/threads`, json({ id: 'h' }))).status).toBe(201);
      const watcher = fetch(`${server.url}/v1/threads/h/stream?since=0`);
      const first = await fetch(`${server.url}/v1/runs`, userRun('ship it', { threadId: 'h' }));
      const runId = first.headers.get('x-awaken-run-id') as string;
      await readFrames(first, (fs) => fs.some(isFinish));
      const decision = await fetch(`${server.url}/v1/runs/${runId}/decision`, json({ toolCallId: 'c1', action: 'resume' }));
      expect(decision.status).toBe(202);
      const seen = await readFrames(await watcher, (fs) => fs.filter(isFinish).length === 2);
      expect(seen.map((f) => Number(f.id))).toEqual(seen.map((_, i) => i + 1));
      expect(seen.filter(isFinish).map((f) => dataOf(f).termination?.type)).toEqual(['suspended', 'natural_end']);
      expect(new Set(seen.map((f) => dataOf(f).run_id).filter((x) => x !== undefined))).toEqual(new Set([runId]));
    } finally {
      await server.close();
    }
  });
});

describe('8. malformed requests', () => {
  it('1,000 generated malformed requests: no 5xx, no crash, still healthy', async () => {
    const s = testServer([]);
    const server = await serve(s);
    const path = fc.constantFrom(
      '/v1/runs',
      '/v1/threads',
      '/v1/runs/r1/inputs',
      '/v1/runs/r1/decision',
      '/v1/runs/r1/cancel',
      '/v1/threads/t1/messages',
      '/v1/ai-sdk/chat',
      '/v1/ag-ui/run',
      '/v1/threads/%2e%2e/messages',
      '/v1/runs/..%2f..%2fetc',
    );
    const body = fc.oneof(
      fc.json(),
      fc.string(),
      fc.jsonValue().map((v) => JSON.stringify({ messages: v })),
      fc.jsonValue().map((v) => JSON.stringify({ messages: [{ role: 'user', content: v }], threadId: v })),
      fc.constant('{"messages":[{"role":"user","content":"x"}],"threadId":"../../x"}'),
    );
    const type = fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', '');
    try {
      const statuses: number[] = [];
      await fc.assert(
        fc.asyncProperty(path, body, type, fc.constantFrom('POST', 'PUT', 'DELETE', 'GET'), async (p, b, t, method) => {
          const r = await fetch(`${server.url}${p}`, { method, headers: t === '' ? {} : { 'content-type': t }, ...(method === 'GET' ? {} : { body: b }) });
          await r.body?.cancel();
          statuses.push(r.status);
          expect(r.status).toBeLessThan(500);
        }),
        { numRuns: 1000 },
      );
      expect(statuses.length).toBeGreaterThanOrEqual(1000);
      const health = await fetch(`${server.url}/health`);
      expect(health.status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
