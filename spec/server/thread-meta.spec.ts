import { afterEach, describe, expect, it } from 'vitest';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { SqliteStore } from '../../src/stores/sqlite.ts';
import { testServer } from '../support/server.ts';

/**
 * Thread metadata over HTTP (docs/server.md → Threads): `resource_id`, `parent_thread_id` and
 * `custom` at creation, `PATCH /v1/threads/:id` (and `/metadata`) with null clearing a field, and
 * `GET /v1/threads/summaries`. Over a socket; the ownership specs with two principals.
 */
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789';

const open: RunningServer[] = [];
afterEach(async () => {
  for (const server of open.splice(0)) await server.close();
});

const call = (url: string, token: string | undefined, method: string, path: string, body?: unknown): Promise<Response> =>
  fetch(`${url}${path}`, {
    method,
    headers: { ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}), 'content-type': 'application/json' },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });

/** Status and JSON body of a call. */
async function answer(r: Promise<Response>): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await r;
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function serve(options: Parameters<typeof testServer>[1] = {}, script: Parameters<typeof testServer>[0] = [{ text: 'ok' }]) {
  const s = testServer(script, options);
  const server = await listen(s.app, { port: 0 });
  open.push(server);
  return { s, url: server.url };
}

const twoPrincipals = {
  http: {
    auth: {
      tokens: new Map([
        [ALICE, 'alice'],
        [BOB, 'bob'],
      ]),
    },
  },
};

describe('thread metadata', () => {
  it('POST /v1/threads takes resource_id, parent_thread_id and custom; GET /v1/threads/:id and the list return them', async () => {
    const { url } = await serve({ store: new SqliteStore(':memory:') });
    expect((await answer(call(url, undefined, 'POST', '/v1/threads', { id: 'root', title: 'Root' }))).status).toBe(201);
    const created = await answer(
      call(url, undefined, 'POST', '/v1/threads', {
        id: 'child',
        title: 'Child',
        resource_id: 'doc-7',
        parent_thread_id: 'root',
        custom: { tags: ['a'], n: 1 },
      }),
    );
    expect(created).toEqual({
      status: 201,
      body: {
        id: 'child',
        title: 'Child',
        resource_id: 'doc-7',
        parent_thread_id: 'root',
        custom: { tags: ['a'], n: 1 },
        created_at: expect.any(Number),
        updated_at: expect.any(Number),
      },
    });
    expect(await answer(call(url, undefined, 'GET', '/v1/threads/child'))).toEqual({ status: 200, body: created.body });
    const list = await answer(call(url, undefined, 'GET', '/v1/threads'));
    expect(list.body['items']).toContainEqual(created.body);
  });

  it('POST /v1/threads refuses a missing parent, bad ids, a custom that is not an object and one over 16 KiB, naming the field', async () => {
    const { url } = await serve();
    const refused = async (body: unknown) => answer(call(url, undefined, 'POST', '/v1/threads', body));
    expect(await refused({ id: 'x', parent_thread_id: 'ghost' })).toEqual({
      status: 400,
      body: { error: 'parent thread not found: ghost', code: 'parent_thread_not_found', field: 'parent_thread_id' },
    });
    expect(await refused({ id: 'x', parent_thread_id: 'x' })).toMatchObject({ status: 400, body: { code: 'thread_cycle', field: 'parent_thread_id' } });
    expect(await refused({ id: 'x', resource_id: '../etc' })).toEqual({
      status: 400,
      body: { error: 'invalid resource id', code: 'invalid_id', field: 'resource_id' },
    });
    expect(await refused({ id: 'x', parent_thread_id: 'a/b' })).toMatchObject({ status: 400, body: { code: 'invalid_id', field: 'parent_thread_id' } });
    expect(await refused({ id: 'x', custom: [1, 2] })).toMatchObject({ status: 400, body: { code: 'invalid_request', field: 'custom' } });
    expect(await refused({ id: 'x', custom: 'text' })).toMatchObject({ status: 400, body: { code: 'invalid_request', field: 'custom' } });
    expect(await refused({ id: 'x', title: 't'.repeat(501) })).toMatchObject({ status: 400, body: { field: 'title' } });
    expect(await refused({ id: 'x', owner: 'me' })).toMatchObject({ status: 400, body: { field: 'owner' } });
    const big = await refused({ id: 'x', custom: { blob: 'x'.repeat(16 * 1024) } });
    expect(big).toEqual({
      status: 413,
      body: { error: `custom is ${16 * 1024 + 11} bytes of JSON; at most 16384 are kept`, code: 'custom_too_large', field: 'custom' },
    });
    // Exactly 16 KiB is kept.
    expect((await refused({ id: 'x', custom: { blob: 'x'.repeat(16 * 1024 - 11) } })).status).toBe(201);
    expect((await answer(call(url, undefined, 'GET', '/v1/threads/ghost'))).status).toBe(404);
  });

  it('PATCH /v1/threads/:id replaces the fields given, clears those given as null, keeps the rest; /metadata is the same route', async () => {
    // A clock that moves a second at each reading: every change is later than the one before.
    const { url } = await serve({ env: deterministicEnv({ tick: 1000 }) });
    await call(url, undefined, 'POST', '/v1/threads', { id: 'p1' });
    await call(url, undefined, 'POST', '/v1/threads', { id: 'p2' });
    await call(url, undefined, 'POST', '/v1/threads', { id: 't', title: 'old', resource_id: 'r1', parent_thread_id: 'p1', custom: { a: 1 } });
    const first = await answer(call(url, undefined, 'PATCH', '/v1/threads/t', { title: 'new', custom: { b: 2 } }));
    expect(first).toEqual({
      status: 200,
      body: {
        id: 't',
        title: 'new',
        resource_id: 'r1',
        parent_thread_id: 'p1',
        custom: { b: 2 },
        created_at: expect.any(Number),
        updated_at: expect.any(Number),
      },
    });
    const second = await answer(call(url, undefined, 'PATCH', '/v1/threads/t/metadata', { resource_id: null, parent_thread_id: 'p2' }));
    expect(second.body).toEqual({
      id: 't',
      title: 'new',
      parent_thread_id: 'p2',
      custom: { b: 2 },
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
    });
    const third = await answer(call(url, undefined, 'PATCH', '/v1/threads/t', { parent_thread_id: null, resource_id: 'r9' }));
    expect(third.body).toEqual({ id: 't', title: 'new', resource_id: 'r9', custom: { b: 2 }, created_at: expect.any(Number), updated_at: expect.any(Number) });
    expect(first.body['updated_at']).toBeGreaterThan(first.body['created_at'] as number);
    expect(third.body['updated_at']).toBeGreaterThan(second.body['updated_at'] as number);
    expect(second.body['updated_at']).toBeGreaterThan(first.body['updated_at'] as number);
    expect((await answer(call(url, undefined, 'GET', '/v1/threads/t'))).body).toEqual(third.body);
  });

  it('PATCH refuses: an unknown thread 404, a cycle 400, a missing parent 400, bad fields 400 naming them, custom over 16 KiB 413', async () => {
    const { url } = await serve();
    await call(url, undefined, 'POST', '/v1/threads', { id: 'a' });
    await call(url, undefined, 'POST', '/v1/threads', { id: 'b', parent_thread_id: 'a' });
    await call(url, undefined, 'POST', '/v1/threads', { id: 'c', parent_thread_id: 'b' });
    const patch = (id: string, body: unknown) => answer(call(url, undefined, 'PATCH', `/v1/threads/${id}`, body));
    expect(await patch('nope', { title: 'x' })).toEqual({ status: 404, body: { error: 'thread not found: nope', code: 'thread_not_found' } });
    expect(await patch('a', { parent_thread_id: 'c' })).toEqual({
      status: 400,
      body: { error: 'thread c cannot be the parent of a: it would be its own ancestor', code: 'thread_cycle', field: 'parent_thread_id' },
    });
    expect(await patch('a', { parent_thread_id: 'a' })).toMatchObject({ status: 400, body: { code: 'thread_cycle', field: 'parent_thread_id' } });
    expect(await patch('a', { parent_thread_id: 'ghost' })).toMatchObject({
      status: 400,
      body: { code: 'parent_thread_not_found', field: 'parent_thread_id' },
    });
    expect(await patch('a', { resource_id: 'bad id' })).toMatchObject({ status: 400, body: { code: 'invalid_id', field: 'resource_id' } });
    expect(await patch('a', { resource_id: 5 })).toMatchObject({ status: 400, body: { code: 'invalid_request', field: 'resource_id' } });
    expect(await patch('a', { custom: null })).toMatchObject({ status: 400, body: { code: 'invalid_request', field: 'custom' } });
    expect(await patch('a', { title: null })).toMatchObject({ status: 400, body: { code: 'invalid_request', field: 'title' } });
    expect(await patch('a', { id: 'other' })).toMatchObject({ status: 400, body: { field: 'id' } });
    expect(await patch('a', { custom: { blob: 'x'.repeat(20_000) } })).toMatchObject({ status: 413, body: { code: 'custom_too_large', field: 'custom' } });
    expect(await patch('bad%20id', { title: 'x' })).toMatchObject({ status: 400, body: { code: 'invalid_id', field: 'id' } });
    // Nothing refused changed anything.
    expect((await answer(call(url, undefined, 'GET', '/v1/threads/a'))).body).toEqual({
      id: 'a',
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
    });
    // A chain without the thread in it is a parent like any other.
    expect(await patch('c', { parent_thread_id: 'a' })).toMatchObject({ status: 200, body: { parent_thread_id: 'a' } });
  });

  it('GET /v1/threads/summaries: id, resource, parent, title, updated_at and the agent of the latest run, every field present; paged as GET /v1/threads', async () => {
    const { url } = await serve();
    await call(url, undefined, 'POST', '/v1/threads', { id: 'quiet', title: 'Nothing ran', resource_id: 'doc-1' });
    const run = await call(url, undefined, 'POST', '/v1/runs', { threadId: 'busy', messages: [{ role: 'user', content: 'hi' }] });
    await run.text();
    await call(url, undefined, 'PATCH', '/v1/threads/busy', { parent_thread_id: 'quiet' });
    const all = await answer(call(url, undefined, 'GET', '/v1/threads/summaries'));
    expect(all).toEqual({
      status: 200,
      body: {
        items: [
          { id: 'busy', resource_id: null, parent_thread_id: 'quiet', title: null, updated_at: expect.any(Number), agent_id: 'agent' },
          { id: 'quiet', resource_id: 'doc-1', parent_thread_id: null, title: 'Nothing ran', updated_at: expect.any(Number), agent_id: null },
        ],
        offset: 0,
        limit: 50,
        total: 2,
        has_more: false,
      },
    });
    const threads = await answer(call(url, undefined, 'GET', '/v1/threads?offset=1&limit=1'));
    const page = await answer(call(url, undefined, 'GET', '/v1/threads/summaries?offset=1&limit=1'));
    expect(page.body).toMatchObject({ offset: 1, limit: 1, total: 2, has_more: false });
    expect((page.body['items'] as { id: string }[]).map((t) => t.id)).toEqual((threads.body['items'] as { id: string }[]).map((t) => t.id));
    expect(await answer(call(url, undefined, 'GET', '/v1/threads/summaries?limit=ten'))).toMatchObject({
      status: 400,
      body: { code: 'invalid_query', field: 'limit' },
    });
  });
});

describe('thread metadata, two principals over a socket', () => {
  it("bob cannot read, PATCH or see in summaries alice's thread; alice's thread as his parent is refused as if it did not exist", async () => {
    const { url } = await serve(twoPrincipals);
    expect(
      (await call(url, ALICE, 'POST', '/v1/threads', { id: 'alice-t', title: 'alice secret', resource_id: 'alice-doc', custom: { k: 'secret' } })).status,
    ).toBe(201);
    expect((await call(url, BOB, 'POST', '/v1/threads', { id: 'bob-t', title: 'bob' })).status).toBe(201);

    expect(await answer(call(url, BOB, 'GET', '/v1/threads/alice-t'))).toMatchObject({ status: 404, body: { code: 'thread_not_found' } });
    for (const path of ['/v1/threads/alice-t', '/v1/threads/alice-t/metadata']) {
      expect(await answer(call(url, BOB, 'PATCH', path, { title: 'taken' }))).toEqual({
        status: 404,
        body: { error: 'thread not found: alice-t', code: 'thread_not_found' },
      });
    }
    // A refusal of a field says nothing about whether the thread exists: the thread is looked up first.
    expect(await answer(call(url, BOB, 'PATCH', '/v1/threads/alice-t', { parent_thread_id: 'bob-t' }))).toMatchObject({ status: 404 });

    // Alice's thread as a parent: the same answer as a thread that does not exist.
    const asParent = await answer(call(url, BOB, 'POST', '/v1/threads', { id: 'bob-child', parent_thread_id: 'alice-t' }));
    const ghostParent = await answer(call(url, BOB, 'POST', '/v1/threads', { id: 'bob-child', parent_thread_id: 'ghost-t' }));
    expect(asParent.status).toBe(400);
    expect(asParent.body).toEqual({ ...ghostParent.body, error: 'parent thread not found: alice-t' });
    expect(await answer(call(url, BOB, 'PATCH', '/v1/threads/bob-t', { parent_thread_id: 'alice-t' }))).toEqual({
      status: 400,
      body: { error: 'parent thread not found: alice-t', code: 'parent_thread_not_found', field: 'parent_thread_id' },
    });

    const bobs = await answer(call(url, BOB, 'GET', '/v1/threads/summaries'));
    expect(bobs.body).toMatchObject({ total: 1, items: [{ id: 'bob-t', title: 'bob' }] });
    expect(JSON.stringify(bobs.body)).not.toContain('alice');
    const alices = await answer(call(url, ALICE, 'GET', '/v1/threads/summaries'));
    expect(alices.body).toMatchObject({ total: 1, items: [{ id: 'alice-t', resource_id: 'alice-doc', title: 'alice secret' }] });

    // Alice's thread is unchanged, and hers to change.
    expect((await answer(call(url, ALICE, 'GET', '/v1/threads/alice-t'))).body).toMatchObject({ title: 'alice secret', custom: { k: 'secret' } });
    expect(await answer(call(url, ALICE, 'PATCH', '/v1/threads/alice-t', { title: 'renamed' }))).toMatchObject({ status: 200, body: { title: 'renamed' } });
    // Her own thread as a parent is accepted.
    expect((await call(url, ALICE, 'POST', '/v1/threads', { id: 'alice-child', parent_thread_id: 'alice-t' })).status).toBe(201);
  });

  it("a cycle through a thread of another principal (a link the admin made) is refused all the same, naming only the caller's threads", async () => {
    const ADMIN = 'admin-token-0123456789';
    const { url } = await serve({
      http: {
        auth: {
          tokens: new Map([
            [ALICE, 'alice'],
            [BOB, 'bob'],
          ]),
        },
        adminToken: ADMIN,
      },
    });
    expect((await call(url, ALICE, 'POST', '/v1/threads', { id: 'a1' })).status).toBe(201);
    expect((await call(url, BOB, 'POST', '/v1/threads', { id: 'b1' })).status).toBe(201);
    expect((await call(url, ADMIN, 'PATCH', '/v1/threads/b1', { parent_thread_id: 'a1' })).status).toBe(200);
    expect((await call(url, ALICE, 'POST', '/v1/threads', { id: 'a3' })).status).toBe(201);
    expect((await call(url, ADMIN, 'PATCH', '/v1/threads/a3', { parent_thread_id: 'b1' })).status).toBe(200);
    // a1 under a3 would close a3 → b1 → a1: b1 is bob's, and the cycle is found all the same.
    expect(await answer(call(url, ALICE, 'PATCH', '/v1/threads/a1', { parent_thread_id: 'a3' }))).toEqual({
      status: 400,
      body: { error: 'thread a3 cannot be the parent of a1: it would be its own ancestor', code: 'thread_cycle', field: 'parent_thread_id' },
    });
  });

  it("summaries of runs: bob does not see the agent of alice's run, nor her thread", async () => {
    const { url } = await serve(twoPrincipals, [{ text: 'for alice' }, { text: 'for bob' }]);
    await (await call(url, ALICE, 'POST', '/v1/runs', { threadId: 'alice-run', messages: [{ role: 'user', content: 'a' }] })).text();
    await (await call(url, BOB, 'POST', '/v1/runs', { threadId: 'bob-run', messages: [{ role: 'user', content: 'b' }] })).text();
    expect((await answer(call(url, BOB, 'GET', '/v1/threads/summaries'))).body).toEqual({
      items: [{ id: 'bob-run', resource_id: null, parent_thread_id: null, title: null, updated_at: expect.any(Number), agent_id: 'agent' }],
      offset: 0,
      limit: 50,
      total: 1,
      has_more: false,
    });
  });
});
