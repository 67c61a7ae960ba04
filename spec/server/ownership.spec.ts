import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { listen } from '../../src/server/node.ts';
import { bodyJson, testServer } from '../support/server.ts';

/**
 * API tokens, principals and thread owners (issue: the server under faults, finding 5): with tokens
 * configured nothing but health and the public card answers without one, and another principal's
 * thread is not there — on every surface that reaches a thread.
 */
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789';
const ADMIN = 'admin-token-0123456789';
const as = (token: string | undefined, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { ...(init.headers as Record<string, string> | undefined), ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) },
});
const post = (token: string | undefined, body: unknown): RequestInit =>
  as(token, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const empty = (token: string | undefined): RequestInit => as(token, { method: 'POST', headers: { 'content-type': 'application/json' } });

/** Alice's thread `a1` waits on an approval; `a2` is finished. */
async function world() {
  const s = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }] }, { text: 'done' }, { text: 'second' }], {
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
  const first = await s.app.request('/v1/runs', post(ALICE, { threadId: 'a1', messages: [{ role: 'user', content: 'ship it' }] }));
  expect(first.status).toBe(200);
  const runId = first.headers.get('x-awaken-run-id') as string;
  await first.text();
  return { s, runId };
}

describe('with API tokens configured', () => {
  it("every route but health and the public agent card needs a token: 401 in the route's shape, with WWW-Authenticate", async () => {
    const { s } = await world();
    for (const [path, init] of [
      ['/v1/threads', {}],
      ['/v1/runs', {}],
      ['/v1/threads/a1/stream', {}],
      ['/v1/ai-sdk/chat', post(undefined, {})],
      ['/v1/ag-ui/run', post(undefined, {})],
      ['/v1/a2a/message:send', post(undefined, {})],
      ['/v1/a2a/jsonrpc', post(undefined, {})],
      ['/v1/a2a/tasks', {}],
      ['/v1/capabilities', {}],
    ] as const) {
      const r = await s.app.request(path, init);
      expect(r.status, path).toBe(401);
      expect(r.headers.get('www-authenticate'), path).toBe('Bearer');
      expect(await r.json(), path).toMatchObject({ code: 'unauthorized', field: 'authorization' });
    }
    const mcp = await s.app.request('/v1/mcp', post(undefined, { jsonrpc: '2.0', id: 1, method: 'ping' }));
    expect(mcp.status).toBe(401);
    expect(await mcp.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    expect((await s.app.request('/v1/threads', as('not-a-token'))).status).toBe(401);
    expect((await s.app.request('/health')).status).toBe(200);
    expect((await s.app.request('/health/ready')).status).toBe(200);
    expect((await s.app.request('/.well-known/agent-card.json')).status).toBe(200);
    // A browser's preflight carries no credentials; it is told Authorization and Last-Event-ID may be sent.
    const pre = await s.app.request('/v1/threads/a1/stream', {
      method: 'OPTIONS',
      headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization,last-event-id' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('authorization');
    expect(pre.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('last-event-id');
  });

  it('REST: another principal gets 404 on the thread, its messages, stream, runs, decision, cancel, inputs and delete, and does not see it listed', async () => {
    const { s, runId } = await world();
    const bobSees = async (path: string, init: RequestInit = {}) => (await s.app.request(path, as(BOB, init))).status;
    expect(await bobSees('/v1/threads/a1')).toBe(404);
    expect(await bobSees('/v1/threads/a1/messages')).toBe(404);
    expect(await bobSees('/v1/threads/a1/stream')).toBe(404);
    expect(await bobSees(`/v1/runs/${runId}`)).toBe(404);
    expect(await bobSees(`/v1/runs/${runId}/decision`, post(undefined, { toolCallId: 'c1', action: 'resume' }))).toBe(404);
    expect(await bobSees(`/v1/runs/${runId}/cancel`, empty(undefined))).toBe(404);
    expect(await bobSees(`/v1/runs/${runId}/inputs`, post(undefined, { messages: [{ role: 'user', content: 'mine now' }] }))).toBe(404);
    expect(await bobSees('/v1/threads/a1', { method: 'DELETE' })).toBe(404);
    expect(await bobSees('/v1/runs', post(undefined, { threadId: 'a1', messages: [{ role: 'user', content: 'hijack' }] }))).toBe(404);
    expect((await bodyJson(s.app.request('/v1/threads', as(BOB)))).items).toEqual([]);
    expect((await bodyJson(s.app.request('/v1/runs', as(BOB)))).items).toEqual([]);
    expect((await bodyJson(s.app.request('/v1/threads/a1/mailbox', as(BOB)))).items).toEqual([]);
    // Alice has it all; the admin token sees every thread.
    expect((await bodyJson(s.app.request('/v1/threads', as(ALICE)))).items.map((t: { id: string }) => t.id)).toEqual(['a1']);
    expect((await bodyJson(s.app.request(`/v1/runs/${runId}`, as(ALICE)))).status).toBe('waiting');
    expect((await bodyJson(s.app.request('/v1/threads', as(ADMIN)))).items.map((t: { id: string }) => t.id)).toEqual(['a1']);
    expect((await s.app.request(`/v1/runs/${runId}/decision`, as(ALICE, post(undefined, { toolCallId: 'c1', action: 'resume' })))).status).toBe(202);
    // Bob's own thread is his.
    const own = await s.app.request('/v1/runs', post(BOB, { threadId: 'b1', messages: [{ role: 'user', content: 'mine' }] }));
    expect(own.status).toBe(200);
    await own.text();
    expect((await bodyJson(s.app.request('/v1/threads', as(BOB)))).items.map((t: { id: string }) => t.id)).toEqual(['b1']);
  });

  it('AI SDK and AG-UI: another principal cannot post to, reattach to, read or interrupt the thread', async () => {
    const { s } = await world();
    const chat = await s.app.request(
      '/v1/ai-sdk/chat',
      post(BOB, { id: 'a1', messages: [{ id: 'x1', role: 'user', parts: [{ type: 'text', text: 'hijack' }] }] }),
    );
    expect(chat.status).toBe(404);
    expect((await s.app.request('/v1/ai-sdk/threads/a1/messages', as(BOB))).status).toBe(404);
    expect((await s.app.request('/v1/ai-sdk/chat/a1/stream', as(BOB))).status).toBe(204);
    const agui = await s.app.request(
      '/v1/ag-ui/run',
      post(BOB, {
        threadId: 'a1',
        runId: 'r',
        messages: [{ id: 'x2', role: 'user', content: 'hijack' }],
        tools: [],
        context: [],
        state: {},
        forwardedProps: {},
      }),
    );
    expect(agui.status).toBe(404);
    expect((await s.app.request('/v1/ag-ui/threads/a1/messages', as(BOB))).status).toBe(404);
    expect((await s.app.request('/v1/ag-ui/threads/a1/interrupt', as(BOB, empty(undefined)))).status).toBe(404);
    expect((await s.app.request('/v1/ai-sdk/threads/a1/messages', as(ALICE))).status).toBe(200);
  });

  it('every other way to name the thread or its run: a run route given the thread id, a filter, a path, a context id — nothing is there, nothing is written', async () => {
    const { s, runId } = await world();
    const bobSees = async (path: string, init: RequestInit = {}) => s.app.request(path, as(BOB, init));
    // REST: the thread id where a run id goes (runs are found by run or thread), a list filter, a create.
    expect((await bobSees('/v1/runs/a1/cancel', empty(undefined))).status).toBe(404);
    expect((await bobSees('/v1/runs/a1/decision', post(undefined, { toolCallId: 'c1', action: 'resume' }))).status).toBe(404);
    expect((await bobSees('/v1/runs/a1/inputs', post(undefined, { messages: [{ role: 'user', content: 'mine now' }] }))).status).toBe(404);
    expect(await bodyJson(bobSees('/v1/runs?thread_id=a1'))).toEqual({ items: [], total: 0, has_more: false });
    expect(await bodyJson(bobSees('/v1/threads', post(undefined, { id: 'a1', title: 'mine' })))).toEqual({
      error: 'thread already exists: a1',
      code: 'already_exists',
    });
    // AI SDK and AG-UI: the other reattach path, the thread in the path, an agent's runs on the thread.
    expect((await bobSees('/v1/ai-sdk/threads/a1/stream')).status).toBe(204);
    const agUi = (id: string) => ({
      threadId: 'a1',
      runId: 'r',
      messages: [{ id, role: 'user', content: 'hijack' }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    });
    expect((await bobSees('/v1/ag-ui/threads/a1/runs', post(undefined, agUi('x3')))).status).toBe(404);
    expect((await bobSees('/v1/ag-ui/agents/agent/runs', post(undefined, agUi('x4')))).status).toBe(404);
    // A2A: the thread as a context, the task under an agent's path, the JSON-RPC subscribe and reply.
    const inContext = await bobSees(
      '/v1/a2a/message:send',
      post(undefined, { message: { messageId: 'u3', role: 'ROLE_USER', contextId: 'a1', parts: [{ text: 'hijack' }] } }),
    );
    // The context is somebody else's: not found, as an unknown one is (not "busy", which would say it exists).
    expect(inContext.status).toBe(404);
    expect(await inContext.json()).toMatchObject({
      error: { code: 404, status: 'NOT_FOUND', message: 'thread not found: a1', details: [{ reason: 'CONTEXT_NOT_FOUND', metadata: { contextId: 'a1' } }] },
    });
    const rpc = async (method: string, params: unknown) => bodyJson(s.app.request('/v1/a2a/jsonrpc', post(BOB, { jsonrpc: '2.0', id: 1, method, params })));
    expect((await rpc('SendMessage', { message: { messageId: 'u4', role: 'ROLE_USER', contextId: 'a1', parts: [{ text: 'hijack' }] } })).error).toMatchObject({
      code: -32001,
      message: 'thread not found: a1',
    });
    expect(
      (await rpc('SendMessage', { message: { messageId: 'u5', role: 'ROLE_USER', taskId: runId, parts: [{ data: { approved: true } }] } })).error.code,
    ).toBe(-32001);
    expect((await rpc('SubscribeToTask', { id: runId })).error.code).toBe(-32001);
    expect((await rpc('ListTasks', { contextId: 'a1' })).result.totalSize).toBe(0);
    expect((await bodyJson(bobSees('/v1/a2a/tasks?contextId=a1'))).totalSize).toBe(0);
    expect((await bobSees(`/v1/a2a/agent/tasks/${runId}`)).status).toBe(404);
    // Alice's thread is as she left it: her one message, her run still waiting, no other model call.
    expect(
      (await bodyJson(s.app.request('/v1/threads/a1/messages', as(ALICE)))).messages.map((m: { content: { text: string }[] }) => m.content[0]?.text),
    ).toEqual(['ship it']);
    expect(await bodyJson(s.app.request('/v1/threads/a1', as(ALICE)))).toMatchObject({ id: 'a1', active_run_id: runId, active_run_status: 'waiting' });
    expect(s.llm.requests).toHaveLength(1);
  });

  it('A2A, both bindings: another principal cannot get, list, subscribe to, cancel or write to the task', async () => {
    const { s } = await world();
    const sent = await bodyJson(
      s.app.request('/v1/a2a/message:send', post(ALICE, { message: { messageId: 'u1', role: 'ROLE_USER', parts: [{ text: 'pay' }] } })),
    );
    const taskId = sent.task.id as string;
    const contextId = sent.task.contextId as string;
    expect((await s.app.request(`/v1/a2a/tasks/${taskId}`, as(BOB))).status).toBe(404);
    expect((await bodyJson(s.app.request('/v1/a2a/tasks', as(BOB)))).totalSize).toBe(0);
    expect((await s.app.request(`/v1/a2a/tasks/${taskId}:subscribe`, as(BOB, empty(undefined)))).status).toBe(404);
    expect((await s.app.request(`/v1/a2a/tasks/${taskId}:cancel`, as(BOB, empty(undefined)))).status).toBe(404);
    const write = await s.app.request(
      '/v1/a2a/message:send',
      post(BOB, { message: { messageId: 'u2', role: 'ROLE_USER', taskId, contextId, parts: [{ data: { approved: true } }] } }),
    );
    expect(write.status).toBe(404);
    const rpc = async (method: string, params: unknown) => bodyJson(s.app.request('/v1/a2a/jsonrpc', post(BOB, { jsonrpc: '2.0', id: 1, method, params })));
    expect((await rpc('GetTask', { id: taskId })).error.code).toBe(-32001);
    expect((await rpc('ListTasks', {})).result.totalSize).toBe(0);
    expect((await rpc('CancelTask', { id: taskId })).error.code).toBe(-32001);
    expect((await s.app.request(`/v1/a2a/tasks/${taskId}`, as(ALICE))).status).toBe(200);
  });

  it('MCP: a tool call needs a token and its thread belongs to that principal', async () => {
    const { s } = await world();
    const server = await listen(s.app, { port: 0 });
    try {
      const connect = async (token: string) => {
        const client = new Client({ name: 'spec', version: '1' });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${server.url}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
        );
        return client;
      };
      const bob = await connect(BOB);
      const tools = await bob.listTools();
      const tool = tools.tools[0]?.name as string;
      await bob.callTool({ name: tool, arguments: { message: 'hello' } });
      await bob.close();
      const bobs = (await bodyJson(fetch(`${server.url}/v1/threads`, as(BOB)))).items.map((t: { id: string }) => t.id);
      expect(bobs.some((id: string) => id.startsWith('mcp-'))).toBe(true);
      const alices = (await bodyJson(fetch(`${server.url}/v1/threads`, as(ALICE)))).items.map((t: { id: string }) => t.id);
      expect(alices).toEqual(['a1']);
    } finally {
      await server.close();
    }
  });
});
