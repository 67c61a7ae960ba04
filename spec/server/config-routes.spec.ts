import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { savedConfig } from '../../src/server/config-routes.ts';
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
    expect(caps).toMatchObject({ agents: ['agent'], models: ['m'], providers: ['scripted'], tools: ['approve', 'echo'], store: 'memory', config_writes: false });
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

  it('validates, publishes and persists: a new agent runs at once and survives a restart', async () => {
    const store = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'awaken-config-')), 'c.db'));
    const s = testServer([{ text: 'from the new agent' }], { store });
    const app = createHttpApp({ runtime: s.runtime, store, registry: s.registry }, { adminToken: 't' });
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
    expect((await app.request('/v1/config/providers/local', put({ kind: 'openai-compatible', base_url: 'http://127.0.0.1:9/v1', api_key_env: 'LOCAL_API_KEY' }, 't'))).status).toBe(200);
    expect((await app.request('/v1/config/models/local-m', put({ provider: 'local', model_name: 'x' }, 't'))).status).toBe(200);
    expect((await app.request('/v1/config/models/m', { method: 'DELETE', headers: { authorization: 'Bearer t' } })).status).toBe(400);
    expect((await bodyJson(app.request('/v1/capabilities'))).agents).toEqual(['agent', 'helper']);

    const saved = await savedConfig(store);
    const restarted = testServer([], { store });
    const again = createHttpApp({ runtime: restarted.runtime, store, registry: restarted.registry }, { savedConfig: saved });
    expect((await bodyJson(again.request('/v1/capabilities'))).agents).toEqual(['agent', 'helper']);
    expect((await bodyJson(again.request('/v1/config/providers/local'))).value).toEqual({ kind: 'openai-compatible', base_url: 'http://127.0.0.1:9/v1', api_key_env: 'LOCAL_API_KEY' });
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
      const app = createHttpApp({ runtime: local.runtime, store: local.store, registry: local.registry }, { adminToken: 't' });
      const unreachable = await app.request('/v1/config/mcp-servers/down', put({ url: 'http://127.0.0.1:9/v1/mcp' }, 't'));
      expect(unreachable.status).toBe(400);
      expect((await bodyJson(unreachable)).error).toContain("cannot reach MCP server 'down'");
      expect((await app.request('/v1/config/mcp-servers/remote', put({ url: `${remoteServer.url}/v1/mcp` }, 't'))).status).toBe(200);
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
