import { describe, expect, it } from 'vitest';
import { bodyJson, eventTypes, gatedTool, json, parseSse, readFrames, testServer } from '../support/server.ts';

const userRun = (text: string, extra: Record<string, unknown> = {}) => json({ messages: [{ role: 'user', content: text }], ...extra });

describe('HTTP API: health, threads, runs', () => {
  it('reports health', async () => {
    const s = testServer([]);
    const r = await s.app.request('/health');
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: 'healthy', components: { store: 'ok', runtime: 'ok' } });
  });

  it('POST /v1/runs streams the run as SSE frames with id: <seq>, and stores the thread', async () => {
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'hi' } }] }, { text: 'done' }]);
    const r = await s.app.request('/v1/runs', userRun('hello', { threadId: 'th1' }));
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/event-stream');
    const frames = parseSse(await r.text());
    expect(eventTypes(frames)[0]).toBe('run_start');
    expect(eventTypes(frames).at(-1)).toBe('run_finish');
    expect(frames.map((f) => Number(f.id))).toEqual(frames.map((_, i) => i + 1));
    const runId = r.headers.get('x-awaken-run-id') as string;
    const run = await bodyJson(s.app.request(`/v1/runs/${runId}`));
    expect(run).toMatchObject({ run_id: runId, thread_id: 'th1', status: 'done', termination: { type: 'natural_end' } });
    const messages = await bodyJson(s.app.request('/v1/threads/th1/messages'));
    expect(messages.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const threads = await bodyJson(s.app.request('/v1/threads'));
    expect(threads).toMatchObject({ total: 1, items: [{ id: 'th1', latest_run_id: runId }] });
    const runs = await bodyJson(s.app.request('/v1/runs?status=done'));
    expect(runs.items.map((x: { run_id: string }) => x.run_id)).toEqual([runId]);
  });

  it('creates, reads and deletes threads; pages messages with a cursor and a clamped limit', async () => {
    const s = testServer([{ text: 'a' }, { text: 'b' }]);
    const created = await s.app.request('/v1/threads', json({ id: 'tt', title: 'Title' }));
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ id: 'tt', title: 'Title' });
    expect((await s.app.request('/v1/threads', json({ id: 'tt' }))).status).toBe(409);
    await (await s.app.request('/v1/runs', userRun('one', { threadId: 'tt' }))).text();
    await (await s.app.request('/v1/runs', userRun('two', { threadId: 'tt' }))).text();
    const page = await bodyJson(s.app.request('/v1/threads/tt/messages?limit=0'));
    expect(page).toMatchObject({ total: 4, has_more: true, next_cursor: '1' });
    expect(page.messages).toHaveLength(1);
    const next = await bodyJson(s.app.request(`/v1/threads/tt/messages?cursor=${page.next_cursor}&limit=500`));
    expect(next.messages).toHaveLength(3);
    expect(next.has_more).toBe(false);
    expect((await s.app.request('/v1/threads/tt', { method: 'DELETE' })).status).toBe(204);
    expect((await s.app.request('/v1/threads/tt')).status).toBe(404);
  });
});

describe('HTTP API: every client mistake is a 4xx naming the problem', () => {
  const s = testServer([]);
  const cases: [string, string, RequestInit | undefined, number, string][] = [
    ['malformed JSON', '/v1/runs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"messages": [' }, 400, 'invalid_json'],
    ['wrong type', '/v1/runs', json({ messages: 'hi' }), 400, 'invalid_request'],
    ['missing messages', '/v1/runs', json({}), 400, 'invalid_request'],
    ['empty messages', '/v1/runs', json({ messages: [] }), 400, 'invalid_request'],
    ['unknown field', '/v1/runs', json({ messages: [{ role: 'user', content: 'x' }], surprise: 1 }), 400, 'invalid_request'],
    ['unknown agent', '/v1/runs', json({ agentId: 'nobody', messages: [{ role: 'user', content: 'x' }] }), 404, 'agent_not_found'],
    ['bad thread id', '/v1/runs', json({ threadId: '../etc', messages: [{ role: 'user', content: 'x' }] }), 400, 'invalid_id'],
    ['wrong content type', '/v1/runs', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' }, 415, 'unsupported_media_type'],
    ['unknown thread', '/v1/threads/nope/messages', undefined, 404, 'not_found'],
    ['unknown run', '/v1/runs/nope', undefined, 404, 'run_not_found'],
    ['cancel unknown run', '/v1/runs/nope/cancel', { method: 'POST', headers: { 'content-type': 'application/json' } }, 404, 'run_not_found'],
    ['bad status filter', '/v1/runs?status=sleeping', undefined, 400, 'invalid_query'],
    ['bad limit', '/v1/threads?limit=ten', undefined, 400, 'invalid_query'],
    ['bad cursor', '/v1/threads/x/messages?cursor=abc', undefined, 400, 'invalid_cursor'],
    ['bad decision action', '/v1/runs/r/decision', json({ toolCallId: 'c', action: 'maybe' }), 400, 'invalid_request'],
    ['unknown route', '/v2/nothing', undefined, 404, 'not_found'],
  ];
  it.each(cases)('%s', async (_name, path, init, status, code) => {
    const r = await s.app.request(path, init);
    expect(r.status).toBe(status);
    const body = await bodyJson(r);
    expect(body.code).toBe(code);
    expect(typeof body.error).toBe('string');
  });

  it('names the field of a schema violation', async () => {
    const r = await s.app.request('/v1/runs', json({ messages: [{ role: 'robot', content: 'x' }] }));
    expect((await bodyJson(r)).field).toMatch(/^messages\.0/);
  });

  it('refuses a body over the limit with 413', async () => {
    const small = testServer([], { http: { bodyLimit: 100 } });
    const r = await small.app.request('/v1/runs', userRun('x'.repeat(500)));
    expect(r.status).toBe(413);
    expect((await bodyJson(r)).code).toBe('body_too_large');
  });
});

describe('run registry over HTTP', () => {
  it('rejects a second run on a busy thread with 409 and the running run id', async () => {
    const g = gatedTool();
    const s = testServer([{ tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: 'a' } }] }, { text: 'done' }], { tools: [g.tool] });
    const first = await s.app.request('/v1/runs', userRun('go', { threadId: 'busy' }));
    const runId = first.headers.get('x-awaken-run-id');
    const second = await s.app.request('/v1/runs', userRun('again', { threadId: 'busy' }));
    expect(second.status).toBe(409);
    expect(await bodyJson(second)).toMatchObject({ code: 'thread_busy', run_id: runId });
    g.open();
    expect(eventTypes(parseSse(await first.text())).at(-1)).toBe('run_finish');
  });

  it('supersede: the old run ends cancelled (never error), the new one runs', async () => {
    const g = gatedTool();
    const s = testServer([{ tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: 'old' } }] }, { text: 'new answer' }], {
      tools: [g.tool],
      registry: { policy: 'supersede' },
    });
    const first = await s.app.request('/v1/runs', userRun('go', { threadId: 'sup' }));
    while (g.started.length === 0) await new Promise((r) => setTimeout(r, 1));
    const secondP = s.app.request('/v1/runs', userRun('instead', { threadId: 'sup' }));
    await new Promise((r) => setTimeout(r, 5));
    g.open();
    const second = await secondP;
    const firstFrames = parseSse(await first.text());
    const last = JSON.parse(firstFrames.at(-1)?.data ?? '{}');
    expect(last).toMatchObject({ event_type: 'run_finish', termination: { type: 'cancelled' } });
    expect(g.effects).toEqual(['old']);
    expect(second.status).toBe(200);
    expect(JSON.parse(parseSse(await second.text()).at(-1)?.data ?? '{}')).toMatchObject({ termination: { type: 'natural_end' } });
  });

  it('a suspended run is decided from another request; the thread stream shows both segments on one seq', async () => {
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'deploy' } }] }, { text: 'deployed' }]);
    const first = await s.app.request('/v1/runs', userRun('deploy it', { threadId: 'hitl' }));
    const firstFrames = parseSse(await first.text());
    const runId = first.headers.get('x-awaken-run-id') as string;
    expect(JSON.parse(firstFrames.at(-1)?.data ?? '{}')).toMatchObject({ termination: { type: 'suspended' } });
    expect((await bodyJson(s.app.request(`/v1/runs/${runId}`))).status).toBe('waiting');
    const paused = await s.app.request('/v1/runs', userRun('something else', { threadId: 'hitl' }));
    expect(paused.status).toBe(409);
    expect((await bodyJson(paused)).code).toBe('thread_paused');
    expect((await s.app.request(`/v1/runs/${runId}/decision`, json({ toolCallId: 'nope', action: 'resume' }))).status).toBe(404);
    const decided = await s.app.request(`/v1/runs/${runId}/decision`, json({ toolCallId: 'c1', action: 'resume', payload: { ok: true } }));
    expect(decided.status).toBe(202);
    // The run resumes in the background; the thread stream from the start holds both segments.
    const all = await readFrames(
      await s.app.request('/v1/threads/hitl/stream?since=0'),
      (fs) => fs.filter((f) => JSON.parse(f.data).event_type === 'run_finish').length === 2,
    );
    const ids = all.map((f) => Number(f.id));
    expect(ids).toEqual(ids.map((_, i) => i + 1));
    const starts = all.filter((f) => JSON.parse(f.data).event_type === 'run_start').map((f) => JSON.parse(f.data).run_id);
    expect(starts).toEqual([runId, runId]);
    expect(JSON.parse(all.at(-1)?.data ?? '{}')).toMatchObject({ termination: { type: 'natural_end' } });
  });
});

describe('registry details', () => {
  it('sends a heartbeat comment while a stream is idle', async () => {
    const s = testServer([], { http: { heartbeatMs: 20 } });
    await s.store.createThread({ id: 'quiet', now: 1 });
    const r = await s.app.request('/v1/threads/quiet/stream');
    const reader = (r.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    await reader.cancel();
    expect(new TextDecoder().decode(first.value)).toBe(': heartbeat\n\n');
  });

  it('discardPause: a new message on a waiting thread cancels the waiting run and starts a new one', async () => {
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'x' } }] }, { text: 'fresh start' }]);
    const first = await s.app.request('/v1/runs', userRun('go', { threadId: 'dp' }));
    const firstId = first.headers.get('x-awaken-run-id') as string;
    await first.text();
    const second = await s.app.request('/v1/runs', userRun('never mind', { threadId: 'dp', discardPause: true }));
    expect(second.status).toBe(200);
    expect(JSON.parse(parseSse(await second.text()).at(-1)?.data ?? '{}')).toMatchObject({ termination: { type: 'natural_end' } });
    expect(await bodyJson(s.app.request(`/v1/runs/${firstId}`))).toMatchObject({ status: 'done', termination: { type: 'cancelled' } });
  });
});

describe('registry memory', () => {
  it('keeps a bounded number of idle thread logs; an evicted thread’s seq goes on where it stopped', async () => {
    const s = testServer([{ text: 'a' }, { text: 'b' }, { text: 'c' }, { text: 'd' }], { registry: { maxThreadLogs: 2 } });
    const lastIdOf = async (r: Response) => Number(parseSse(await r.text()).at(-1)?.id);
    const first = await lastIdOf(await s.app.request('/v1/runs', userRun('1', { threadId: 'e1' })));
    await (await s.app.request('/v1/runs', userRun('2', { threadId: 'e2' }))).text();
    await (await s.app.request('/v1/runs', userRun('3', { threadId: 'e3' }))).text();
    expect(s.registry.threadLogs).toBe(2);
    // e1 was the oldest idle log: evicted, yet its next run continues its sequence.
    const again = parseSse(await (await s.app.request('/v1/runs', userRun('4', { threadId: 'e1' }))).text());
    expect(Number(again[0]?.id)).toBe(first + 1);
    expect(s.registry.live(again[0] ? JSON.parse(again[0].data).run_id : '')).toBeUndefined();
  });
});
