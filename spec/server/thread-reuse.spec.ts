import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { PostgresBus } from '../../src/stores/postgres-bus.ts';
import { PostgresStore } from '../../src/stores/postgres.ts';
import { dropPrefix, PG_URL } from '../support/postgres.ts';
import { namedEnv } from '../support/runtime.ts';
import { bodyJson, readFor, testServer } from '../support/server.ts';

/**
 * A thread id is a name, and names are reused: a thread deleted by one principal may be created
 * again by another. What the server keeps by thread id beyond the store — the thread log's replay
 * ring, its open streams — belongs to the thread that was deleted, not to the new one of the same
 * name. Two principals over a socket.
 */
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789';

const open: RunningServer[] = [];
afterEach(async () => {
  for (const server of open.splice(0)) await server.close();
});

const call = (url: string, token: string, method: string, path: string, body?: unknown): Promise<Response> =>
  fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

const textFor = async (r: Response, ms: number): Promise<string> => (await readFor(r, ms)).text;

/** Reads an SSE response in the background: what arrived so far, waiting for a text to arrive, and stopping. */
function follow(r: Response) {
  const reader = (r.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  const reading = (async () => {
    for (;;) {
      const next = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (next.done) return;
      text += decoder.decode(next.value, { stream: true });
    }
  })();
  return {
    text: () => text,
    async until(wanted: string, ms: number): Promise<string> {
      const deadline = Date.now() + ms;
      while (!text.includes(wanted) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 10));
      return text;
    },
    async stop(): Promise<void> {
      await reader.cancel().catch(() => undefined);
      await reading;
    },
  };
}

describe('a thread id deleted by one principal and created again by another', () => {
  it("the new owner's stream replays nothing of the old thread; the old owner's open stream sees nothing of the new one", async () => {
    const s = testServer([{ text: 'alice secret answer' }, { text: 'bob answer' }], {
      http: {
        auth: {
          tokens: new Map([
            [ALICE, 'alice'],
            [BOB, 'bob'],
          ]),
        },
      },
    });
    const server = await listen(s.app, { port: 0 });
    open.push(server);
    const first = await call(server.url, ALICE, 'POST', '/v1/runs', {
      threadId: 'shared-name',
      messages: [{ role: 'user', content: 'alice secret question' }],
    });
    expect(first.status).toBe(200);
    expect(await first.text()).toContain('alice secret answer');
    // Alice keeps following her thread, then deletes it.
    const aliceFollows = await call(server.url, ALICE, 'GET', '/v1/threads/shared-name/stream');
    expect(aliceFollows.status).toBe(200);
    expect((await call(server.url, ALICE, 'DELETE', '/v1/threads/shared-name')).status).toBe(204);
    // Her stream, open on the thread she deleted, ends with it: whatever runs on the name next is another thread.
    expect(await readFor(aliceFollows, 5000)).toEqual({ text: '', ended: true });

    expect((await call(server.url, BOB, 'POST', '/v1/threads', { id: 'shared-name' })).status).toBe(201);
    const replay = await call(server.url, BOB, 'GET', '/v1/threads/shared-name/stream?since=0');
    expect(replay.status).toBe(200);
    const bobRuns = await call(server.url, BOB, 'POST', '/v1/runs', { threadId: 'shared-name', messages: [{ role: 'user', content: 'bob question' }] });
    expect(await bobRuns.text()).toContain('bob answer');

    const replayed = await textFor(replay, 300);
    expect(replayed).not.toContain('alice secret');
    expect(replayed).toContain('bob answer');
    expect((await bodyJson(call(server.url, ALICE, 'GET', '/v1/threads'))).items).toEqual([]);
  });
});

describe('the same, with two instances sharing the thread log on PostgreSQL', () => {
  const prefix = `reuse${process.pid}`;
  const closers: { close(): Promise<void> }[] = [];
  afterAll(async () => {
    for (const c of closers.reverse()) await c.close().catch(() => undefined);
    await dropPrefix(prefix);
  });
  async function instance(name: string, script: Parameters<typeof testServer>[0]) {
    const store = PostgresStore.withPrefix(PG_URL, prefix);
    const bus = new PostgresBus(PG_URL, { prefix });
    closers.push(store, bus);
    const s = testServer(script, {
      store,
      env: namedEnv(name),
      registry: { bus, leases: { owner: name } },
      http: {
        auth: {
          tokens: new Map([
            [ALICE, 'alice'],
            [BOB, 'bob'],
          ]),
        },
      },
    });
    await s.registry.attachBus();
    const server = await listen(s.app, { port: 0 });
    open.push(server);
    return { s, url: server.url };
  }

  it('the shared log replays nothing of the deleted thread; a stream open on another instance sees nothing of the new one', async () => {
    const a = await instance('a', [{ text: 'alice secret answer' }, { text: 'bob answer' }]);
    const b = await instance('b', []);
    const first = await call(a.url, ALICE, 'POST', '/v1/runs', { threadId: 'shared-pg', messages: [{ role: 'user', content: 'alice secret question' }] });
    expect(await first.text()).toContain('alice secret answer');
    // Alice follows her thread on B (the shared log); once its replay reached her, she deletes it on A.
    const aliceStream = await call(b.url, ALICE, 'GET', '/v1/threads/shared-pg/stream?since=0');
    expect(aliceStream.status).toBe(200);
    const aliceFollows = follow(aliceStream);
    expect(await aliceFollows.until('alice secret answer', 5000)).toContain('alice secret answer');
    expect((await call(a.url, ALICE, 'DELETE', '/v1/threads/shared-pg')).status).toBe(204);

    expect((await call(a.url, BOB, 'POST', '/v1/threads', { id: 'shared-pg' })).status).toBe(201);
    const replay = await call(b.url, BOB, 'GET', '/v1/threads/shared-pg/stream?since=0');
    expect(replay.status).toBe(200);
    const bobRuns = await call(a.url, BOB, 'POST', '/v1/runs', { threadId: 'shared-pg', messages: [{ role: 'user', content: 'bob question' }] });
    expect(await bobRuns.text()).toContain('bob answer');

    const replayed = await textFor(replay, 1000);
    expect(replayed).not.toContain('alice secret');
    expect(replayed).toContain('bob answer');
    await new Promise((res) => setTimeout(res, 500));
    await aliceFollows.stop();
    expect(aliceFollows.text()).toContain('alice secret answer');
    expect(aliceFollows.text()).not.toContain('bob');
    await a.s.registry.shutdown();
    await b.s.registry.shutdown();
  });
});
