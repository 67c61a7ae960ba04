import { afterEach, describe, expect, it } from 'vitest';
import { inspectorRoutes } from '../../src/inspector/routes.ts';
import type { Page, ThreadQuery, ThreadRecord } from '../../src/runtime/store.ts';
import { createHttpApp } from '../../src/server/http.ts';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { testServer } from '../support/server.ts';

/**
 * A store written before the owner was part of the thread query (its `listThreads` pages every
 * thread, whatever the query asks): under API tokens, `GET /v1/threads` still lists a principal's
 * own threads only (the page it answered is checked, and the owned threads read one by one), and
 * the studio's thread search refuses to answer rather than show another principal's thread.
 */
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789';

class OwnerBlindStore extends MemoryStore {
  override listThreads(q: ThreadQuery): Promise<Page<ThreadRecord>> {
    return super.listThreads({ offset: q.offset, limit: q.limit });
  }
}

let open: RunningServer | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

describe('a store that ignores the owner of a thread query', () => {
  it("never shows one principal's threads to another: the thread list falls back to the owned ones, the studio's search refuses", async () => {
    const store = new OwnerBlindStore();
    const s = testServer([], { store });
    const app = createHttpApp(
      { runtime: s.runtime, store, registry: s.registry },
      {
        auth: {
          tokens: new Map([
            [ALICE, 'alice'],
            [BOB, 'bob'],
          ]),
        },
      },
    );
    app.route('/', inspectorRoutes({ store }));
    const server = await listen(app, { port: 0 });
    open = server;
    const call = (token: string, method: string, path: string, body?: unknown): Promise<Response> =>
      fetch(`${server.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    expect((await call(ALICE, 'POST', '/v1/threads', { id: 'alice-1', title: 'Alice payroll' })).status).toBe(201);
    expect((await call(BOB, 'POST', '/v1/threads', { id: 'bob-1', title: 'Bob notes' })).status).toBe(201);
    const ids = async (token: string, path: string): Promise<string[]> =>
      ((await (await call(token, 'GET', path)).json()) as { items: { id: string }[] }).items.map((t) => t.id);
    expect(await ids(BOB, '/v1/threads')).toEqual(['bob-1']);
    expect(await ids(ALICE, '/v1/threads')).toEqual(['alice-1']);
    const found = await call(BOB, 'GET', '/v1/inspector/threads?q=payroll');
    const text = await found.text();
    expect(found.status).toBe(500);
    expect(text).not.toContain('alice');
  });
});
