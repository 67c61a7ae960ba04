import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deterministicEnv, type Env } from '../../src/runtime/env.ts';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { failOnConsole } from '../support/console.ts';
import { ALICE_TOKEN, BOB_TOKEN, bodyJson, gatedTool, json, testServer, twoPrincipals, type TestServer } from '../support/server.ts';

/**
 * CopilotKit's `/threads` routes under `/v1/copilotkit`, as `@copilotkit/core`'s thread store (what
 * `useThreads` runs) calls them: the list of the caller's threads of one agent, paged by a cursor;
 * rename, archive, unarchive and delete. Kept in the thread's metadata (its title, its `archived`
 * mark); another principal's thread is not there.
 */

process.env['COPILOTKIT_TELEMETRY_DISABLED'] = '1';
failOnConsole(['warn', 'error']);

const T0 = Date.UTC(2026, 0, 1, 9);
const MINUTE = 60_000;
const iso = (t: number): string => new Date(t).toISOString();

/** An env whose clock stands where the spec puts it. */
function settableClock(): { env: Env; set: (t: number) => void } {
  let now = T0;
  return { env: { ...deterministicEnv(), clock: { now: () => now } }, set: (t) => (now = t) };
}

const run = async (s: TestServer, threadId: string, agentId: string): Promise<void> => {
  const r = await s.app.request('/v1/runs', json({ threadId, agentId, messages: [{ role: 'user', content: 'hi' }] }));
  expect(r.status).toBe(200);
  await r.text();
};

const item = (id: string, agentId: string, at: number, extra: Record<string, unknown> = {}) => ({
  id,
  agentId,
  name: null,
  archived: false,
  createdAt: iso(at),
  updatedAt: iso(at),
  lastRunAt: iso(at),
  ...extra,
});

const call = (s: TestServer, method: string, path: string, body?: unknown) =>
  s.app.request(`/v1/copilotkit${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });

const answer = async (r: Response | Promise<Response>) => {
  const res = await r;
  return { status: res.status, body: await res.json() };
};

describe('GET /v1/copilotkit/threads', () => {
  let s: TestServer;
  let clock: ReturnType<typeof settableClock>;
  beforeAll(async () => {
    clock = settableClock();
    s = testServer([], { env: clock.env, agents: [{ id: 'planner', model: 'm', system_prompt: 'You plan.' }] });
    clock.set(T0);
    await run(s, 'a1', 'agent');
    clock.set(T0 + MINUTE);
    await run(s, 'p1', 'planner');
    clock.set(T0 + 2 * MINUTE);
    await run(s, 'a2', 'agent');
    clock.set(T0 + 3 * MINUTE);
    await run(s, 'a3', 'agent');
    // A thread no run wrote to has no agent: it is in no agent's list.
    expect((await s.app.request('/v1/threads', json({ id: 'empty', title: 'nothing yet' }))).status).toBe(201);
  });

  it("lists the agent's threads newest first, each as CopilotKit's thread (ISO times), and nextCursor null at the end", async () => {
    expect(await answer(call(s, 'GET', '/threads?agentId=agent&limit=20'))).toEqual({
      status: 200,
      body: {
        threads: [item('a3', 'agent', T0 + 3 * MINUTE), item('a2', 'agent', T0 + 2 * MINUTE), item('a1', 'agent', T0)],
        nextCursor: null,
      },
    });
    expect(await bodyJson(call(s, 'GET', '/threads?agentId=planner'))).toEqual({ threads: [item('p1', 'planner', T0 + MINUTE)], nextCursor: null });
  });

  it("a thread's agent is the agent of its latest run", async () => {
    clock.set(T0 + 4 * MINUTE);
    await run(s, 'p1', 'agent');
    try {
      const ids = async (agentId: string) => ((await bodyJson(call(s, 'GET', `/threads?agentId=${agentId}`))).threads as { id: string }[]).map((t) => t.id);
      expect(await ids('agent')).toEqual(['p1', 'a3', 'a2', 'a1']);
      expect(await ids('planner')).toEqual([]);
    } finally {
      clock.set(T0 + 5 * MINUTE);
      await run(s, 'p1', 'planner');
    }
  });

  it('pages by the cursor it hands out; the last page says nextCursor null', async () => {
    const first = await bodyJson(call(s, 'GET', '/threads?agentId=agent&limit=2'));
    expect(first.threads.map((t: { id: string }) => t.id)).toEqual(['a3', 'a2']);
    expect(typeof first.nextCursor).toBe('string');
    const second = await bodyJson(call(s, 'GET', `/threads?agentId=agent&limit=2&cursor=${encodeURIComponent(first.nextCursor)}`));
    expect(second).toEqual({ threads: [item('a1', 'agent', T0)], nextCursor: null });
    // A page that ends exactly at the last thread has no next one.
    const exact = await bodyJson(call(s, 'GET', '/threads?agentId=agent&limit=3'));
    expect(exact.threads).toHaveLength(3);
    expect(exact.nextCursor).toBeNull();
  });

  it('the cursor names the last thread handed out: a thread deleted or begun before it moves no later thread past the next page', async () => {
    const clock = settableClock();
    const own = testServer([], { env: clock.env });
    for (const i of [0, 1, 2, 3, 4]) {
      clock.set(T0 + i * MINUTE);
      await run(own, `t${i}`, 'agent');
    }
    const page = async (cursor?: string) => {
      const body = await bodyJson(call(own, 'GET', `/threads?agentId=agent&limit=2${cursor !== undefined ? `&cursor=${encodeURIComponent(cursor)}` : ''}`));
      return { ids: (body.threads as { id: string }[]).map((t) => t.id), next: body.nextCursor as string | null };
    };
    const first = await page();
    expect(first.ids).toEqual(['t4', 't3']);
    expect((await call(own, 'DELETE', '/threads/t4', { agentId: 'agent' })).status).toBe(200);
    const second = await page(first.next ?? undefined);
    expect(second.ids).toEqual(['t2', 't1']);
    clock.set(T0 + 10 * MINUTE);
    await run(own, 'new', 'agent');
    const third = await page(second.next ?? undefined);
    expect(third).toEqual({ ids: ['t0'], next: null });
    // The same cursor again names the same place.
    expect((await page(first.next ?? undefined)).ids).toEqual(['t2', 't1']);
    // Opaque to the client: not a number it could compute or edit.
    expect(first.next).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(first.next).not.toMatch(/^\d+$/);
  });

  it('bad input is a 400 naming the parameter; an agent this server does not run is 404', async () => {
    expect(await answer(call(s, 'GET', '/threads'))).toEqual({
      status: 400,
      body: { error: 'agentId: the agent whose threads are listed', code: 'invalid_query', field: 'agentId' },
    });
    expect(await answer(call(s, 'GET', '/threads?agentId=agent&limit=many'))).toEqual({
      status: 400,
      body: { error: 'limit must be an integer', code: 'invalid_query', field: 'limit' },
    });
    const b64 = (text: string) => Buffer.from(text).toString('base64url');
    for (const cursor of [
      'abc',
      '2',
      '',
      b64('{"u":1'),
      b64('[1,"a1"]'),
      b64('{"u":-1,"id":"a1"}'),
      b64('{"u":1,"id":"../x"}'),
      b64('{"u":1,"id":"a1","x":1}'),
      'e30=',
    ]) {
      expect({ cursor, got: await answer(call(s, 'GET', `/threads?agentId=agent&cursor=${encodeURIComponent(cursor)}`)) }).toEqual({
        cursor,
        got: { status: 400, body: { error: 'cursor: not a cursor this server handed out', code: 'invalid_query', field: 'cursor' } },
      });
    }
    expect(await answer(call(s, 'GET', '/threads?agentId=agent&includeArchived=yes'))).toEqual({
      status: 400,
      body: { error: 'includeArchived: true or false', code: 'invalid_query', field: 'includeArchived' },
    });
    expect(await answer(call(s, 'GET', '/threads?agentId=nobody'))).toEqual({
      status: 404,
      body: { error: 'agent not found: nobody', code: 'agent_not_found', field: 'agentId' },
    });
  });
});

describe('rename, archive, unarchive and delete', () => {
  it('PATCH {agentId, name} renames (the thread’s title); POST …/archive hides it unless includeArchived; PATCH {archived: false} brings it back; DELETE removes it', async () => {
    const clock = settableClock();
    const s = testServer([], { env: clock.env });
    await run(s, 'n1', 'agent');
    clock.set(T0 + MINUTE);
    await run(s, 'n2', 'agent');

    clock.set(T0 + 2 * MINUTE);
    expect(await answer(call(s, 'PATCH', '/threads/n1', { agentId: 'agent', name: 'Groceries' }))).toEqual({
      status: 200,
      body: item('n1', 'agent', T0, { name: 'Groceries', updatedAt: iso(T0 + 2 * MINUTE) }),
    });
    expect((await s.store.getThread('n1'))?.title).toBe('Groceries');

    expect(await answer(call(s, 'POST', '/threads/n2/archive', { agentId: 'agent' }))).toEqual({
      status: 200,
      body: { threadId: 'n2', archived: true },
    });
    expect((await s.store.getThread('n2'))?.archived).toBe(true);
    const list = async (q = '') =>
      ((await bodyJson(call(s, 'GET', `/threads?agentId=agent${q}`))).threads as { id: string; archived: boolean }[]).map((t) => [t.id, t.archived]);
    expect(await list()).toEqual([['n1', false]]);
    expect(await list('&includeArchived=true')).toEqual([
      ['n1', false],
      ['n2', true],
    ]);
    expect(await list('&includeArchived=false')).toEqual([['n1', false]]);

    clock.set(T0 + 3 * MINUTE);
    expect(await answer(call(s, 'PATCH', '/threads/n2', { agentId: 'agent', archived: false }))).toEqual({
      status: 200,
      body: item('n2', 'agent', T0 + MINUTE, { updatedAt: iso(T0 + 3 * MINUTE) }),
    });
    expect((await s.store.getThread('n2'))?.archived).toBeUndefined();
    expect(await list()).toEqual([
      ['n2', false],
      ['n1', false],
    ]);

    expect(await answer(call(s, 'DELETE', '/threads/n2', { agentId: 'agent' }))).toEqual({ status: 200, body: { threadId: 'n2', deleted: true } });
    expect(await s.store.getThread('n2')).toBeUndefined();
    expect((await s.store.listRuns({ offset: 0, limit: 10, threadId: 'n2' })).total).toBe(0);
    expect(await list()).toEqual([['n1', false]]);
    expect(await answer(call(s, 'DELETE', '/threads/n2', { agentId: 'agent' }))).toEqual({
      status: 404,
      body: { error: 'thread not found: n2', code: 'thread_not_found' },
    });
  });

  it('a thread of another agent is not found under this one; a thread with a run in flight is not deleted (409)', async () => {
    const gate = gatedTool();
    const s = testServer([{ tool_calls: [{ id: 'g1', name: 'slow', arguments: { tag: 'held' } }] }], {
      tools: [gate.tool],
      agents: [{ id: 'planner', model: 'm', system_prompt: 'You plan.' }],
    });
    const server = await listen(s.app, { port: 0 });
    try {
      const going = fetch(`${server.url}/v1/runs`, json({ threadId: 'busy', agentId: 'agent', messages: [{ role: 'user', content: 'go' }] }));
      for (let i = 0; i < 200 && gate.started.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      const mutate = (method: string, path: string, body: unknown) =>
        answer(fetch(`${server.url}/v1/copilotkit${path}`, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }));
      const notFound = { status: 404, body: { error: 'thread not found: busy', code: 'thread_not_found' } };
      expect(await mutate('PATCH', '/threads/busy', { agentId: 'planner', name: 'x' })).toEqual(notFound);
      expect(await mutate('POST', '/threads/busy/archive', { agentId: 'planner' })).toEqual(notFound);
      expect(await mutate('DELETE', '/threads/busy', { agentId: 'planner' })).toEqual(notFound);
      const busy = await mutate('DELETE', '/threads/busy', { agentId: 'agent' });
      expect(busy.status).toBe(409);
      expect(busy.body).toMatchObject({ code: 'thread_busy', error: expect.stringMatching(/^thread busy has an active run: /) });
      gate.open();
      await (await going).text();
      expect(await s.store.getThread('busy')).toBeDefined();
    } finally {
      await server.close();
    }
  });

  it('bad bodies are a 400 naming the field; keys CopilotKit does not send are refused', async () => {
    const s = testServer([]);
    await run(s, 'b1', 'agent');
    const refused = (error: unknown, field: string, code = 'invalid_request') => ({ status: 400, body: { error, code, field } });
    const cases: [string, string, unknown, { status: number; body: unknown }][] = [
      ['PATCH', '/threads/b1', { name: 'x' }, refused('agentId: the agent whose thread this is', 'agentId')],
      ['PATCH', '/threads/b1', { agentId: 'agent' }, refused('name or archived: the change to make', 'name')],
      ['PATCH', '/threads/b1', { agentId: 'agent', name: 7 }, refused('name: Invalid input: expected string, received number', 'name')],
      ['PATCH', '/threads/b1', { agentId: 'agent', archived: 'no' }, refused('archived: Invalid input: expected boolean, received string', 'archived')],
      ['PATCH', '/threads/b1', { agentId: 'agent', name: 'x', pinned: true }, refused('pinned: not a field of this request', 'pinned')],
      ['POST', '/threads/b1/archive', {}, refused('agentId: the agent whose thread this is', 'agentId')],
      ['POST', '/threads/b1/archive', { agentId: 'agent', now: true }, refused('now: not a field of this request', 'now')],
      ['DELETE', '/threads/b1', { agentId: 42 }, refused('agentId: the agent whose thread this is', 'agentId')],
      ['DELETE', '/threads/b1', 'null', refused('(body): Invalid input: expected object, received null', '(body)')],
      ['PATCH', '/threads/b1', '[]', refused('(body): Invalid input: expected object, received array', '(body)')],
      ['POST', '/threads/b1/archive', '"agent"', refused('(body): Invalid input: expected object, received string', '(body)')],
      ['DELETE', '/threads/b1', '{"agentId":', refused(expect.stringMatching(/^malformed JSON/), '(body)', 'invalid_json')],
      [
        'PATCH',
        '/threads/b1',
        { agentId: 'nobody', name: 'x' },
        { status: 404, body: { error: 'agent not found: nobody', code: 'agent_not_found', field: 'agentId' } },
      ],
      ['PATCH', '/threads/bad%20id', { agentId: 'agent', name: 'x' }, refused('invalid thread id', 'id', 'invalid_id')],
    ];
    for (const [method, path, body, expected] of cases) {
      expect({ method, path, body, got: await answer(call(s, method, path, body)) }).toEqual({ method, path, body, got: expected });
    }
    expect(await s.store.getThread('b1')).toMatchObject({ id: 'b1' });
    expect((await s.store.getThread('b1'))?.title).toBeUndefined();
  });

  it('/info tells the client the list, the per-thread reads and the mutations are served (no live updates)', async () => {
    const s = testServer([]);
    const info = await bodyJson(s.app.request('/v1/copilotkit/info'));
    expect(info.threadEndpoints).toEqual({ list: true, inspect: true, mutations: true, realtimeMetadata: false });
    const single = await bodyJson(s.app.request('/v1/copilotkit', json({ method: 'info' })));
    expect(single.threadEndpoints).toEqual(info.threadEndpoints);
  });
});

describe('two principals', () => {
  it("each lists only its own threads; Bob's rename, archive and delete of Alice's thread are 404 and change nothing", async () => {
    const s = testServer([]);
    const p = await twoPrincipals(s);
    try {
      const runAs = async (token: string, threadId: string) => {
        const r = await p.call(token, 'POST', '/v1/runs', { threadId, agentId: 'agent', messages: [{ role: 'user', content: 'hi' }] });
        expect(r.status).toBe(200);
        await r.text();
      };
      await runAs(ALICE_TOKEN, 'alice-1');
      await runAs(BOB_TOKEN, 'bob-1');
      const ids = async (token: string, q = '') =>
        ((await bodyJson(p.call(token, 'GET', `/v1/copilotkit/threads?agentId=agent${q}`))).threads as { id: string }[]).map((t) => t.id);
      expect(await ids(ALICE_TOKEN)).toEqual(['alice-1']);
      expect(await ids(BOB_TOKEN)).toEqual(['bob-1']);
      // Without a token there is nobody to list for.
      expect((await fetch(`${p.url}/v1/copilotkit/threads?agentId=agent`)).status).toBe(401);

      const notFound = { status: 404, body: { error: 'thread not found: alice-1', code: 'thread_not_found' } };
      expect(await answer(p.call(BOB_TOKEN, 'PATCH', '/v1/copilotkit/threads/alice-1', { agentId: 'agent', name: 'mine now' }))).toEqual(notFound);
      expect(await answer(p.call(BOB_TOKEN, 'PATCH', '/v1/copilotkit/threads/alice-1', { agentId: 'agent', archived: true }))).toEqual(notFound);
      expect(await answer(p.call(BOB_TOKEN, 'POST', '/v1/copilotkit/threads/alice-1/archive', { agentId: 'agent' }))).toEqual(notFound);
      expect(await answer(p.call(BOB_TOKEN, 'DELETE', '/v1/copilotkit/threads/alice-1', { agentId: 'agent' }))).toEqual(notFound);
      expect(await s.store.getThread('alice-1')).toMatchObject({ id: 'alice-1' });
      expect((await s.store.getThread('alice-1'))?.title).toBeUndefined();
      expect((await s.store.getThread('alice-1'))?.archived).toBeUndefined();
      expect(await ids(ALICE_TOKEN)).toEqual(['alice-1']);
      expect(await ids(BOB_TOKEN, '&includeArchived=true')).toEqual(['bob-1']);

      // Alice reaches her own.
      expect((await p.call(ALICE_TOKEN, 'PATCH', '/v1/copilotkit/threads/alice-1', { agentId: 'agent', name: 'Mine' })).status).toBe(200);
      expect((await p.call(ALICE_TOKEN, 'POST', '/v1/copilotkit/threads/alice-1/archive', { agentId: 'agent' })).status).toBe(200);
      expect(await ids(ALICE_TOKEN)).toEqual([]);
      expect(await ids(ALICE_TOKEN, '&includeArchived=true')).toEqual(['alice-1']);
      expect((await p.call(ALICE_TOKEN, 'DELETE', '/v1/copilotkit/threads/alice-1', { agentId: 'agent' })).status).toBe(200);
      expect(await s.store.getThread('alice-1')).toBeUndefined();
      expect(await ids(BOB_TOKEN)).toEqual(['bob-1']);
    } finally {
      await p.close();
    }
  });
});

describe("@copilotkit/core's thread store (what useThreads runs) against these routes", () => {
  let s: TestServer;
  let server: RunningServer;
  beforeAll(async () => {
    const clock = settableClock();
    s = testServer([], { env: clock.env });
    for (const [i, id] of ['c1', 'c2', 'c3'].entries()) {
      clock.set(T0 + i * MINUTE);
      await run(s, id, 'agent');
    }
    server = await listen(s.app, { port: 0 });
  });
  afterAll(async () => {
    await server.close();
  });

  async function threadStore(context: { limit?: number; includeArchived?: boolean } = {}) {
    const { ɵcreateThreadStore } = await import('@copilotkit/core');
    const store = ɵcreateThreadStore({ fetch: (input: string | URL | Request, init?: RequestInit) => fetch(input, init) });
    store.start();
    store.setContext({ runtimeUrl: `${server.url}/v1/copilotkit`, headers: {}, agentId: 'agent', ...context });
    await settled(store);
    return store;
  }
  type ThreadStore = Awaited<ReturnType<typeof import('@copilotkit/core').ɵcreateThreadStore>>;
  async function settled(store: ThreadStore) {
    for (let i = 0; i < 200 && (store.getState().isLoading || store.getState().isFetchingNextPage); i++) await new Promise((r) => setTimeout(r, 10));
    expect(store.getState().error).toBeNull();
  }
  const shown = (store: ThreadStore) => store.getState().threads.map((t) => [t.id, t.name, t.archived]);

  it('lists, pages, renames, archives, unarchives and deletes as a page would', async () => {
    const store = await threadStore({ limit: 2 });
    try {
      expect(shown(store)).toEqual([
        ['c3', null, false],
        ['c2', null, false],
      ]);
      expect(store.getState().nextCursor).not.toBeNull();
      store.fetchNextPage();
      await settled(store);
      expect(shown(store).map(([id]) => id)).toEqual(['c3', 'c2', 'c1']);
      expect(store.getState().nextCursor).toBeNull();

      await store.renameThread('c1', 'Trip plans');
      await store.archiveThread('c2');
      store.refetchThreads();
      await settled(store);
      expect(shown(store)).toEqual([
        ['c3', null, false],
        ['c1', 'Trip plans', false],
      ]);

      const archived = await threadStore({ includeArchived: true });
      expect(shown(archived)).toEqual([
        ['c3', null, false],
        ['c2', null, true],
        ['c1', 'Trip plans', false],
      ]);
      await archived.unarchiveThread('c2');
      await archived.deleteThread('c3');
      archived.refetchThreads();
      await settled(archived);
      expect(shown(archived)).toEqual([
        ['c2', null, false],
        ['c1', 'Trip plans', false],
      ]);
      archived.stop();
      expect(await s.store.getThread('c3')).toBeUndefined();
      expect((await s.store.getThread('c1'))?.title).toBe('Trip plans');
    } finally {
      store.stop();
    }
  });

  it("a mutation the server refuses rejects the client's promise (and a delete is rolled back)", async () => {
    const store = await threadStore();
    try {
      await expect(store.deleteThread('no-such-thread')).rejects.toThrow('Request failed: 404');
    } finally {
      store.stop();
    }
  });
});
