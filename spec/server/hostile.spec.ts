import { describe, expect, it } from 'vitest';
import { OutboundGuard } from '../../src/runtime/outbound.ts';
import { json, testServer } from '../support/server.ts';

/** What a hostile or careless client can no longer do over HTTP (issue: the server under faults, findings 5 and 6). */
describe('requests a page on another site could send without a preflight', () => {
  const forms: [string, Record<string, string>, string | undefined][] = [
    ['a form post', { 'content-type': 'application/x-www-form-urlencoded' }, 'a=1'],
    ['a multipart form', { 'content-type': 'multipart/form-data; boundary=x' }, '--x--'],
    ['text/plain', { 'content-type': 'text/plain' }, '{}'],
    ['no body and no type', {}, undefined],
  ];
  for (const [name, headers, body] of forms) {
    it(`${name} cannot cancel a run or interrupt an AG-UI thread: 415 naming the content type`, async () => {
      const s = testServer([]);
      for (const path of ['/v1/runs/r1/cancel', '/v1/ag-ui/threads/t1/interrupt', '/v1/a2a/tasks/x:cancel', '/v1/runs']) {
        const r = await s.app.request(path, { method: 'POST', headers, ...(body !== undefined ? { body } : {}) });
        expect(r.status, path).toBe(415);
        expect(await r.json(), path).toMatchObject({ code: 'unsupported_media_type', field: 'content-type' });
      }
    });
  }

  it('a body-less POST with a JSON type, or with X-Awaken-Request, reaches the route', async () => {
    const s = testServer([]);
    expect((await s.app.request('/v1/runs/r1/cancel', { method: 'POST', headers: { 'content-type': 'application/json' } })).status).toBe(404);
    expect((await s.app.request('/v1/runs/r1/cancel', { method: 'POST', headers: { 'x-awaken-request': '1' } })).status).toBe(404);
    expect((await s.app.request('/v1/runs/r1/cancel', { method: 'POST', headers: { 'content-type': 'application/vnd.api+json; charset=utf-8' } })).status).toBe(
      404,
    );
  });
});

describe('following a thread', () => {
  it('a stream on a thread that does not exist is a 404, not an open stream', async () => {
    const s = testServer([]);
    const r = await s.app.request('/v1/threads/nobody/stream');
    expect(r.status).toBe(404);
    expect(await r.json()).toMatchObject({ code: 'thread_not_found' });
  });

  it('a thread created but not yet run, or one with a run starting, can be followed', async () => {
    const s = testServer([{ text: 'hi' }]);
    expect((await s.app.request('/v1/threads', json({ id: 'made' }))).status).toBe(201);
    const r = await s.app.request('/v1/threads/made/stream');
    expect(r.status).toBe(200);
    await r.body?.cancel();
  });
});

describe('what an admin can make the server do', () => {
  const put = (body: unknown): RequestInit => ({
    method: 'PUT',
    headers: { 'content-type': 'application/json', authorization: 'Bearer admin-token' },
    body: JSON.stringify(body),
  });

  it("a provider's api_key_env must match the allow-list (default *_API_KEY): the admin token cannot be sent to any URL", async () => {
    const s = testServer([], { http: { adminToken: 'admin-token' } });
    for (const name of ['AWAKEN_ADMIN_TOKEN', 'PATH', 'DATABASE_URL', 'X_API_KEY_OR_NOT', 'lower_api_key']) {
      const r = await s.app.request('/v1/config/providers/evil', put({ kind: 'openai-compatible', base_url: 'http://evil.example/v1', api_key_env: name }));
      expect(r.status, name).toBe(400);
      expect(await r.json(), name).toMatchObject({ code: 'invalid_request', field: 'api_key_env' });
    }
    expect((await s.app.request('/v1/config/providers/ok', put({ kind: 'anthropic', api_key_env: 'ANTHROPIC_API_KEY' }))).status).toBe(200);
    // A variable the allow-list admits goes only where the operator pairs it (spec/cli/serve-outbound.spec.ts).
    const custom = testServer([], {
      http: { adminToken: 'admin-token', apiKeyEnvAllow: ['LOCAL_*'], configGuard: { credentialOrigins: { LOCAL_KEY: ['https://api.anthropic.com'] } } },
    });
    expect((await custom.app.request('/v1/config/providers/l', put({ kind: 'anthropic', api_key_env: 'LOCAL_KEY' }))).status).toBe(200);
    expect((await custom.app.request('/v1/config/providers/m', put({ kind: 'anthropic', api_key_env: 'OPENAI_API_KEY' }))).status).toBe(400);
  });

  it('an MCP server whose URL never answers is refused after the connect timeout, not waited on for ever', async () => {
    const { createServer } = await import('node:net');
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    const port = (silent.address() as { port: number }).port;
    try {
      // A loopback address: reached only when the guard allows it (as server.outbound.config_api_private does).
      const s = testServer([], { http: { adminToken: 'admin-token', mcpConnectTimeoutMs: 300, configGuard: { outbound: new OutboundGuard() } } });
      const started = Date.now();
      const r = await s.app.request('/v1/config/mcp-servers/hang', put({ url: `http://127.0.0.1:${port}/mcp` }));
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: string }).error).toMatch(/did not answer within 300 ms/);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      silent.close();
    }
  });
});

describe('a server shutting down', () => {
  it('starts no new run: 503 shutting_down, on every surface that starts one', async () => {
    const s = testServer([{ text: 'never' }]);
    await s.registry.shutdown();
    const r = await s.app.request('/v1/runs', json({ threadId: 'late', messages: [{ role: 'user', content: 'hi' }] }));
    expect(r.status).toBe(503);
    expect(await r.json()).toMatchObject({ code: 'shutting_down' });
    const chat = await s.app.request('/v1/ai-sdk/chat', json({ id: 'late2', messages: [{ id: 'u', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] }));
    expect(chat.status).toBe(503);
  });
});
