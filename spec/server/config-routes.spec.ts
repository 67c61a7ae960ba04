import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OutboundGuard } from '../../src/runtime/outbound.ts';
import { savedConfig } from '../../src/server/config-routes.ts';
import { createLogger } from '../../src/server/log.ts';
import { createHttpApp } from '../../src/server/http.ts';
import { SqliteStore } from '../../src/stores/sqlite.ts';
import { bodyJson, json, parseSse, testServer } from '../support/server.ts';

const put = (body: unknown, token?: string): RequestInit => ({
  method: 'PUT',
  headers: { 'content-type': 'application/json', ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) },
  body: JSON.stringify(body),
});

describe('config and capabilities (book: Config 与 Capabilities)', () => {
  it('lists capabilities and reads the config namespaces', async () => {
    const s = testServer([]);
    const caps = await bodyJson(s.app.request('/v1/capabilities'));
    expect(caps).toMatchObject({
      agents: ['agent'],
      models: ['m'],
      providers: ['scripted'],
      tools: ['approve', 'echo'],
      store: 'memory',
      config_writes: false,
    });
    const agents = await bodyJson(s.app.request('/v1/config/agents'));
    expect(agents.items.map((i: { id: string }) => i.id)).toEqual(['agent']);
    expect((await bodyJson(s.app.request('/v1/config/models/m'))).value).toMatchObject({ provider: 'scripted', model_name: 'scripted-model' });
    expect((await s.app.request('/v1/config/nope')).status).toBe(404);
    expect((await s.app.request('/v1/config/agents/ghost')).status).toBe(404);
  });

  it('writes need the admin bearer token; without a configured token they are refused', async () => {
    const s = testServer([]);
    const open = await s.app.request('/v1/config/agents/x', put({ id: 'x', model: 'm' }));
    expect(open.status).toBe(401);
    expect((await bodyJson(open)).code).toBe('unauthorized');
    const app = createHttpApp({ runtime: s.runtime, store: s.store, registry: s.registry }, { adminToken: 'sekrit' });
    expect((await app.request('/v1/config/agents/x', put({ id: 'x', model: 'm' }))).status).toBe(401);
    expect((await app.request('/v1/config/agents/x', put({ id: 'x', model: 'm' }, 'wrong'))).status).toBe(401);
    expect((await app.request('/v1/config/agents/x', put({ id: 'x', model: 'm' }, 'sekrit'))).status).toBe(200);
  });

  it('an agent written with a field the spec does not have is refused naming it, as the config file refuses it (nothing is stored)', async () => {
    const s = testServer([]);
    const app = createHttpApp({ runtime: s.runtime, store: s.store, registry: s.registry }, { adminToken: 'sekrit' });
    const bogus = await app.request('/v1/config/agents/x', put({ id: 'x', model: 'm', bogus_field: 1 }, 'sekrit'));
    expect(bogus.status).toBe(400);
    // The answer docs/server.md → Config and capabilities shows, whole.
    const documented = /`(\{"error":"bogus_field: unknown field"[^`]*)`/.exec(readFileSync(join(import.meta.dirname, '../../docs/server.md'), 'utf8'))?.[1];
    expect(await bodyJson(bogus)).toEqual(JSON.parse(documented ?? 'null'));
    const nested = await app.request(
      '/v1/config/agents/x',
      put({ id: 'x', model: 'm', endpoint: { backend: 'a2a', base_url: 'https://reports.example.com/v1/a2a', tokn: 'x' } }, 'sekrit'),
    );
    expect(await bodyJson(nested)).toEqual({ error: 'endpoint.tokn: unknown field', code: 'invalid_request', field: 'endpoint.tokn' });
    expect((await app.request('/v1/config/agents/x')).status).toBe(404);
  });

  it('validates, publishes and persists: a new agent runs at once and survives a restart', async () => {
    const store = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'awaken-config-')), 'c.db'));
    const s = testServer([{ text: 'from the new agent' }], { store });
    // The operator pairs LOCAL_API_KEY with the local provider's origin, and lets config writes reach loopback addresses.
    const configGuard = { outbound: new OutboundGuard(), credentialOrigins: { LOCAL_API_KEY: ['http://127.0.0.1:9'] } };
    const app = createHttpApp({ runtime: s.runtime, store, registry: s.registry }, { adminToken: 't', configGuard });
    const bad = await app.request('/v1/config/agents/helper', put({ id: 'helper', model: 'm', max_rounds: -1 }, 't'));
    expect(bad.status).toBe(400);
    expect((await bodyJson(bad)).field).toBe('max_rounds');
    const unresolvable = await app.request('/v1/config/agents/helper', put({ id: 'helper', model: 'no-such-model' }, 't'));
    expect(unresolvable.status).toBe(400);
    expect((await bodyJson(unresolvable)).code).toBe('config_rejected');
    expect((await app.request('/v1/config/agents/helper', put({ id: 'other', model: 'm' }, 't'))).status).toBe(400);
    expect((await app.request('/v1/config/agents/helper', put({ id: 'helper', model: 'm', system_prompt: 'I help.' }, 't'))).status).toBe(200);
    const run = await app.request('/v1/runs', json({ agentId: 'helper', messages: [{ role: 'user', content: 'hi' }] }));
    expect(JSON.parse(parseSse(await run.text()).at(-1)?.data ?? '{}')).toMatchObject({ termination: { type: 'natural_end' } });
    expect(s.llm.requests[0]?.messages[0]).toMatchObject({ role: 'system', content: [{ type: 'text', text: 'I help.' }] });
    // A provider that a model then uses; deleting the model an agent needs is refused.
    expect(
      (
        await app.request(
          '/v1/config/providers/local',
          put({ kind: 'openai-compatible', base_url: 'http://127.0.0.1:9/v1', api_key_env: 'LOCAL_API_KEY' }, 't'),
        )
      ).status,
    ).toBe(200);
    expect((await app.request('/v1/config/models/local-m', put({ provider: 'local', model_name: 'x' }, 't'))).status).toBe(200);
    expect((await app.request('/v1/config/models/m', { method: 'DELETE', headers: { authorization: 'Bearer t' } })).status).toBe(400);
    expect((await bodyJson(app.request('/v1/capabilities'))).agents).toEqual(['agent', 'helper']);

    const saved = await savedConfig(store);
    const restarted = testServer([], { store });
    const again = createHttpApp({ runtime: restarted.runtime, store, registry: restarted.registry }, { savedConfig: saved, adminToken: 't', configGuard });
    expect((await bodyJson(again.request('/v1/capabilities'))).agents).toEqual(['agent', 'helper']);
    expect((await bodyJson(again.request('/v1/config/providers/local', { headers: { authorization: 'Bearer t' } }))).value).toEqual({
      kind: 'openai-compatible',
      base_url: 'http://127.0.0.1:9/v1',
      api_key_env: 'LOCAL_API_KEY',
    });
    // Saved documents are held to today's rules: without the pairing, the provider is left out, and said so.
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', format: 'json', write: (l) => void lines.push(l), now: () => 0 });
    const unpaired = testServer([], { store });
    const third = createHttpApp({ runtime: unpaired.runtime, store, registry: unpaired.registry }, { savedConfig: saved, logger });
    expect((await bodyJson(third.request('/v1/capabilities'))).providers).toEqual(['scripted']);
    expect(lines.map((l) => JSON.parse(l)).filter((l) => l.msg !== 'request')).toEqual([
      {
        time: '1970-01-01T00:00:00.000Z',
        level: 'warn',
        msg: 'saved config entry left out',
        namespace: 'providers',
        id: 'local',
        field: 'api_key_env',
        reason: "'LOCAL_API_KEY' is sent only to the origins the server's config names for it (none), not to http://127.0.0.1:9",
      },
    ]);
    await store.close();
  });
});

describe('mcp-servers: configured MCP servers become tools', () => {
  it('connects, lists the server’s tools as <server>__<tool>, and an agent calls them', async () => {
    const { listen } = await import('../../src/server/node.ts');
    const remote = testServer([{ text: 'remote says hi' }]);
    const remoteServer = await listen(remote.app, { port: 0 });
    try {
      const local = testServer([{ tool_calls: [{ id: 'c1', name: 'mcp__remote__agent', arguments: { message: 'hello' } }] }, { text: 'relayed' }]);
      const app = createHttpApp(
        { runtime: local.runtime, store: local.store, registry: local.registry },
        { adminToken: 't', configGuard: { outbound: new OutboundGuard() } },
      );
      const unreachable = await app.request('/v1/config/mcp-servers/down', put({ url: 'http://127.0.0.1:9/v1/mcp' }, 't'));
      expect({ status: unreachable.status, body: await bodyJson(unreachable) }).toEqual({
        status: 400,
        body: { error: "cannot reach MCP server 'down' at http://127.0.0.1:9/v1/mcp: cannot connect (ECONNREFUSED)", code: 'config_rejected' },
      });
      // A server that is not an MCP one: said in the server's words, nothing of its answer repeated.
      const notMcp = await app.request('/v1/config/mcp-servers/nope', put({ url: `${remoteServer.url}/v1/nope` }, 't'));
      expect(await bodyJson(notMcp)).toEqual({
        error: `cannot reach MCP server 'nope' at ${remoteServer.url}/v1/nope: it answered HTTP 404, not as an MCP server`,
        code: 'config_rejected',
      });
      // The write connects to the server at once, and its answer says so, with the tools it found.
      const written = await app.request('/v1/config/mcp-servers/remote', put({ url: `${remoteServer.url}/v1/mcp` }, 't'));
      expect(await bodyJson(written)).toEqual({ id: 'remote', value: { url: `${remoteServer.url}/v1/mcp` }, connected: true, tools: ['mcp__remote__agent'] });
      const caps = await bodyJson(app.request('/v1/capabilities'));
      expect(caps.tools).toContain('mcp__remote__agent');
      expect(caps.mcp_servers).toEqual(['remote']);
      const run = await app.request('/v1/runs', json({ messages: [{ role: 'user', content: 'ask the remote agent' }] }));
      const frames = parseSse(await run.text()).map((f) => JSON.parse(f.data));
      const done = frames.find((e) => e.event_type === 'tool_call_done');
      expect(done).toMatchObject({ outcome: 'succeeded', result: { data: { text: 'remote says hi' } } });
      expect(frames.at(-1)).toMatchObject({ termination: { type: 'natural_end' } });
      // Removing the server removes its tools.
      expect((await app.request('/v1/config/mcp-servers/remote', { method: 'DELETE', headers: { authorization: 'Bearer t' } })).status).toBe(204);
      expect((await bodyJson(app.request('/v1/capabilities'))).tools).not.toContain('mcp__remote__agent');
    } finally {
      await remoteServer.close();
    }
  });
});

describe('credentials in the config: reads redact them, a read written back keeps them', () => {
  const agent = (base_url: string, token: string) => ({ id: 'far', endpoint: { backend: 'a2a', base_url, auth: { type: 'bearer', token }, timeout_ms: 1000 } });

  it('a literal token reads as [redacted] for everyone; written back as read, it keeps the token for the same origin only', async () => {
    const s = testServer([]);
    const app = createHttpApp(
      { runtime: s.runtime, store: s.store, registry: s.registry },
      { adminToken: 't', configGuard: { outbound: new OutboundGuard() } },
    );
    expect((await app.request('/v1/config/agents/far', put(agent('http://127.0.0.1:7/v1/a2a', 'the-remote-token-123'), 't'))).status).toBe(200);
    const read = (await bodyJson(app.request('/v1/config/agents/far', { headers: { authorization: 'Bearer t' } }))).value;
    expect(read.endpoint.auth).toEqual({ type: 'bearer', token: '[redacted]' });
    expect((await app.request('/v1/config/agents/far', put({ ...read, description: 'Changed' }, 't'))).status).toBe(200);
    expect((s.runtime.registries.agents.get('far')!.endpoint!.auth as { token?: string }).token).toBe('the-remote-token-123');
    const moved = await app.request('/v1/config/agents/far', put({ ...read, endpoint: { ...read.endpoint, base_url: 'http://127.0.0.2:7/v1/a2a' } }, 't'));
    expect({ status: moved.status, body: await bodyJson(moved) }).toEqual({
      status: 400,
      body: {
        error: "endpoint.auth.token: '[redacted]' stands for the token agent 'far' has, and it has none for http://127.0.0.2:7/v1/a2a",
        code: 'invalid_request',
        field: 'endpoint.auth.token',
      },
    });
  });

  it('a credential variable goes only to the origins the operator pairs it with (the words of docs/server.md)', async () => {
    const s = testServer([]);
    const app = createHttpApp(
      { runtime: s.runtime, store: s.store, registry: s.registry },
      { adminToken: 't', configGuard: { credentialOrigins: { REPORTS_API_KEY: ['https://reports.example/v1/a2a'] } } },
    );
    const far = {
      id: 'far',
      endpoint: { backend: 'a2a', base_url: 'https://elsewhere.example/v1/a2a', auth: { type: 'bearer', token_env: 'REPORTS_API_KEY' } },
    };
    const r = await app.request('/v1/config/agents/far', put(far, 't'));
    expect({ status: r.status, body: await bodyJson(r) }).toEqual({
      status: 400,
      body: {
        error:
          "endpoint.auth.token_env: 'REPORTS_API_KEY' is sent only to the origins the server's config names for it (https://reports.example), not to https://elsewhere.example",
        code: 'invalid_request',
        field: 'endpoint.auth.token_env',
      },
    });
  });

  it('URL passwords and credential query parameters read as [redacted]; variable names only with the admin token', async () => {
    const s = testServer([]);
    const app = createHttpApp(
      { runtime: s.runtime, store: s.store, registry: s.registry },
      { adminToken: 't', configGuard: { outbound: new OutboundGuard(), credentialOrigins: { LOCAL_API_KEY: ['http://user:pw-secret-1@127.0.0.1:9'] } } },
    );
    const value = { kind: 'openai-compatible', base_url: 'http://user:pw-secret-1@127.0.0.1:9/v1?api_key=q-secret-2&x=1', api_key_env: 'LOCAL_API_KEY' };
    expect((await app.request('/v1/config/providers/local', put(value, 't'))).status).toBe(200);
    expect((await bodyJson(app.request('/v1/config/providers/local'))).value).toEqual({
      kind: 'openai-compatible',
      base_url: 'http://user:[redacted]@127.0.0.1:9/v1?api_key=[redacted]&x=1',
      api_key_env: '[redacted]',
    });
    expect((await bodyJson(app.request('/v1/config/providers/local', { headers: { authorization: 'Bearer t' } }))).value.api_key_env).toBe('LOCAL_API_KEY');
  });
});
