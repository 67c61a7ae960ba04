import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoAndSlow, type ServeProcess } from '../support/serve-process.ts';
import { parseSse } from '../support/server.ts';

/**
 * `GET /v1/threads/:id/stream?until=idle` over a real socket to an `awaken serve` process: the
 * stream sends what the cursor asks for and then ends — at once on an idle thread, with the
 * run_finish frame of a run in flight — so `curl` returns. Without it the stream follows the thread
 * until the client hangs up.
 */
let server: ServeProcess;

beforeAll(async () => {
  server = await startDemoAndSlow();
});
afterAll(async () => {
  await server?.stop();
});

const post = (path: string, body: unknown): Promise<Response> =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** The whole body of a stream that must end by itself within `ms` (else the test fails, naming the stream). */
async function whole(path: string, init: RequestInit = {}, ms = 5000): Promise<{ status: number; text: string }> {
  const r = await fetch(`${server.url}${path}`, { ...init, signal: AbortSignal.timeout(ms) });
  return { status: r.status, text: await r.text().catch((e: unknown) => `the stream did not end: ${String(e)}`) };
}

const types = (text: string): string[] => parseSse(text).map((f) => f.event ?? (JSON.parse(f.data) as { event_type: string }).event_type);
const ids = (text: string): string[] => parseSse(text).map((f) => f.id ?? '');

describe('GET /v1/threads/:id/stream?until=idle', () => {
  it('on an idle thread: the frames after the cursor, then the end', async () => {
    const run = await (await post('/v1/runs', { threadId: 'idle-1', messages: [{ role: 'user', content: 'weather in Oslo?' }] })).text();
    const last = ids(run).at(-1) as string;
    const all = await whole('/v1/threads/idle-1/stream?until=idle', { headers: { 'last-event-id': '3' } });
    expect(all.status).toBe(200);
    expect(ids(all.text)).toEqual(ids(run).slice(3));
    expect(types(all.text).at(-1)).toBe('run_finish');
    // The same with ?since=, and from the log's start.
    expect((await whole('/v1/threads/idle-1/stream?since=3&until=idle')).text).toBe(all.text);
    expect(ids((await whole('/v1/threads/idle-1/stream?since=0&until=idle')).text)).toEqual(ids(run));
    // A client that holds the last frame, or gave no cursor (only new frames), gets an empty stream.
    expect(await whole(`/v1/threads/idle-1/stream?since=${last}&until=idle`)).toEqual({ status: 200, text: '' });
    expect(await whole('/v1/threads/idle-1/stream?until=idle')).toEqual({ status: 200, text: '' });
  });

  it('a cursor ahead of the log: the resync frame, then the end', async () => {
    await (await post('/v1/runs', { threadId: 'idle-2', messages: [{ role: 'user', content: 'weather in Oslo?' }] })).text();
    const ahead = await whole('/v1/threads/idle-2/stream?since=999&until=idle');
    expect(types(ahead.text)).toEqual(['resync']);
  });

  it('with a run in flight: its frames as they come, ending with its run_finish frame', async () => {
    const started = await post('/v1/runs', { threadId: 'busy-1', agentId: 'slow', messages: [{ role: 'user', content: 'take your time' }] });
    const runStream = started.text();
    // The slow agent takes two seconds: the run is in flight when the stream is asked for.
    await expect
      .poll(async () => ((await (await fetch(`${server.url}/v1/threads/busy-1`)).json()) as { active_run_status?: string }).active_run_status)
      .toBe('running');
    const followed = await whole('/v1/threads/busy-1/stream?since=0&until=idle');
    const run = await runStream;
    expect(followed.text).toBe(run);
    expect(types(followed.text).at(-1)).toBe('run_finish');
  });

  it('a run that suspends for a decision: the stream ends with its suspended segment', async () => {
    await (await post('/v1/runs', { threadId: 'wait-1', messages: [{ role: 'user', content: 'weather in Oslo?' }] })).text();
    const second = await (await post('/v1/runs', { threadId: 'wait-1', messages: [{ role: 'user', content: 'delete the branch' }] })).text();
    const finish = JSON.parse(parseSse(second).at(-1)?.data ?? '{}') as { termination?: { type: string } };
    expect(finish.termination?.type).toBe('suspended');
    const all = await whole('/v1/threads/wait-1/stream?since=0&until=idle');
    expect(ids(all.text)).toEqual([...ids(all.text).keys()].map((i) => String(i + 1)));
    expect(all.text.endsWith(second)).toBe(true);
  });

  it('any other value of until is refused, naming the field', async () => {
    await (await post('/v1/runs', { threadId: 'idle-3', messages: [{ role: 'user', content: 'weather in Oslo?' }] })).text();
    const r = await fetch(`${server.url}/v1/threads/idle-3/stream?until=done`);
    expect({ status: r.status, body: await r.json() }).toEqual({
      status: 400,
      body: { error: "invalid until: done (the one value is 'idle')", code: 'invalid_query', field: 'until' },
    });
  });
});
