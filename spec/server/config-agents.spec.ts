import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolResults } from '../../src/contract/tool.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { createHttpApp, type HttpOptions } from '../../src/server/http.ts';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { RunRegistry } from '../../src/server/run-registry.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { approvalTool, echoTool } from '../support/runtime.ts';

/** `GET /v1/agents` and `GET /v1/agents/:id`: the agents a server runs, over a socket. */
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789';

const open: RunningServer[] = [];
afterEach(async () => {
  for (const server of open.splice(0)) await server.close();
});

/** A plugin that brings a tool of its own. */
const notesPlugin: RuntimePlugin = {
  name: 'notes',
  register: (r) =>
    r.registerTool(defineTool({ id: 'take_note', description: 'Takes a note', args: z.object({}), execute: () => ToolResults.success('take_note', null) })),
};

/** A server of four agents: two local ones with their own tools, one delegating, one remote. */
async function serve(http: HttpOptions = {}) {
  const store = new MemoryStore();
  const built = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('scripted', new ScriptedLlm([]))
    .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
    .withThreadRunStore(store)
    .withTool(echoTool)
    .withTool(approvalTool)
    .withPlugin('notes', notesPlugin)
    .withAgentSpec({ id: 'writer', model: 'm', description: 'Writes reports', plugin_ids: ['notes'], excluded_tools: ['approve'] })
    .withAgentSpec({ id: 'reader', model: 'm', system_prompt: 'Reads files.\nCarefully.', allowed_tools: ['echo'] })
    .withAgentSpec({ id: 'lead', model: 'm', system_prompt: 'Leads.', allowed_tools: ['agent_run_*'], delegates: ['writer', 'far'] })
    .withAgentSpec({
      id: 'far',
      endpoint: { backend: 'a2a', base_url: 'https://user:pw-secret@reports.example/v1/a2a', auth: { type: 'bearer', token: 'remote-secret' } },
    })
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  const registry = new RunRegistry(built.value, store);
  const server = await listen(createHttpApp({ runtime: built.value, store, registry }, { adminToken: 't', ...http }), { port: 0 });
  open.push(server);
  return server.url;
}

const get = async (url: string, path: string, token?: string) => {
  const r = await fetch(`${url}${path}`, token !== undefined ? { headers: { authorization: `Bearer ${token}` } } : {});
  // An agent, a page of agents or an error.
  return { status: r.status, body: (await r.json()) as { items?: { id: string }[]; offset?: number; limit?: number; total?: number; has_more?: boolean } };
};

const WRITER = { id: 'writer', description: 'Writes reports', model: 'm', plugin_ids: ['notes'], delegates: [], tools: ['echo', 'take_note'] };
const READER = { id: 'reader', description: 'Reads files.', model: 'm', plugin_ids: [], delegates: [], tools: ['echo'] };
const LEAD = { id: 'lead', description: 'Leads.', model: 'm', plugin_ids: [], delegates: ['writer', 'far'], tools: ['agent_run_far', 'agent_run_writer'] };
const FAR = {
  id: 'far',
  description: 'far',
  model: '',
  plugin_ids: [],
  delegates: [],
  remote: { backend: 'a2a', base_url: 'https://user:[redacted]@reports.example/v1/a2a' },
};

describe('GET /v1/agents', () => {
  it('lists every agent the server runs, sorted by id, with its model, plugins and the tools it is offered; no prompt, no credential', async () => {
    const url = await serve();
    const list = await get(url, '/v1/agents');
    expect(list).toEqual({ status: 200, body: { items: [FAR, LEAD, READER, WRITER], offset: 0, limit: 50, total: 4, has_more: false } });
    expect(JSON.stringify(list.body)).not.toMatch(/pw-secret|remote-secret|Carefully/);
    expect(await get(url, '/v1/agents/writer')).toEqual({ status: 200, body: WRITER });
    expect(await get(url, '/v1/agents/far')).toEqual({ status: 200, body: FAR });
  });

  it('pages with offset and limit; a bad one is a 400 naming it; an unknown agent is a 404', async () => {
    const url = await serve();
    expect(await get(url, '/v1/agents?offset=1&limit=2')).toEqual({
      status: 200,
      body: { items: [LEAD, READER], offset: 1, limit: 2, total: 4, has_more: true },
    });
    expect(await get(url, '/v1/agents?offset=3&limit=2')).toEqual({ status: 200, body: { items: [WRITER], offset: 3, limit: 2, total: 4, has_more: false } });
    expect(await get(url, '/v1/agents?limit=ten')).toEqual({ status: 400, body: { error: 'limit must be an integer', code: 'invalid_query', field: 'limit' } });
    expect(await get(url, '/v1/agents?offset=-')).toEqual({
      status: 400,
      body: { error: 'offset must be an integer', code: 'invalid_query', field: 'offset' },
    });
    expect(await get(url, '/v1/agents/ghost')).toEqual({ status: 404, body: { error: 'agent not found: ghost', code: 'agent_not_found' } });
  });

  it('pages walked from any offset with any limit give every agent from there once, in order (and so do the config lists)', async () => {
    const url = await serve();
    const all = ['far', 'lead', 'reader', 'writer'];
    const walk = async (path: string, start: number, limit: number): Promise<string[]> => {
      const seen: string[] = [];
      for (let offset = start; ; offset += limit) {
        const { body } = await get(url, `${path}?offset=${offset}&limit=${limit}`);
        expect({ offset: body.offset, limit: body.limit, total: body.total }).toEqual({ offset, limit, total: all.length });
        seen.push(...body.items!.map((a: { id: string }) => a.id));
        if (!body.has_more) return seen;
      }
    };
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 1, max: 5 }), async (start, limit) => {
        expect(await walk('/v1/agents', start, limit)).toEqual(all.slice(start));
        expect(await walk('/v1/config/agents', start, limit)).toEqual(all.slice(start));
      }),
      { numRuns: 30 },
    );
  });

  it('an agent created, changed or deleted through the config API is listed as the runtime runs it, at once', async () => {
    const url = await serve();
    const write = (method: string, path: string, body?: unknown) =>
      fetch(`${url}${path}`, {
        method,
        headers: { 'content-type': 'application/json', authorization: 'Bearer t' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    expect((await write('POST', '/v1/config/agents', { id: 'helper', model: 'm', plugin_ids: ['notes'], excluded_tools: ['echo'] })).status).toBe(201);
    const helper = { id: 'helper', description: 'helper', model: 'm', plugin_ids: ['notes'], delegates: [], tools: ['approve', 'take_note'] };
    expect((await get(url, '/v1/agents')).body.items!.map((a: { id: string }) => a.id)).toEqual(['far', 'helper', 'lead', 'reader', 'writer']);
    expect(await get(url, '/v1/agents/helper')).toEqual({ status: 200, body: helper });
    expect((await write('PUT', '/v1/config/agents/helper', { id: 'helper', model: 'm', description: 'Helps' })).status).toBe(200);
    expect(await get(url, '/v1/agents/helper')).toEqual({ status: 200, body: { ...helper, description: 'Helps', plugin_ids: [], tools: ['approve', 'echo'] } });
    expect((await write('DELETE', '/v1/config/agents/helper')).status).toBe(204);
    expect((await get(url, '/v1/agents/helper')).status).toBe(404);
  });

  it('with API tokens it is a read like the config reads: a credential is needed, and two principals see the same agents', async () => {
    const url = await serve({
      auth: {
        tokens: new Map([
          [ALICE, 'alice'],
          [BOB, 'bob'],
        ]),
      },
    });
    const refused = { status: 401, body: { error: 'authentication required: Authorization: Bearer <token>', code: 'unauthorized', field: 'authorization' } };
    expect(await get(url, '/v1/agents')).toEqual(refused);
    expect(await get(url, '/v1/agents/writer')).toEqual(refused);
    expect(await get(url, '/v1/config/agents')).toEqual(refused);
    expect((await get(url, '/v1/agents', 'wrong-token-0123456789')).status).toBe(401);
    const alice = await get(url, '/v1/agents', ALICE);
    const bob = await get(url, '/v1/agents', BOB);
    expect(alice).toEqual({ status: 200, body: { items: [FAR, LEAD, READER, WRITER], offset: 0, limit: 50, total: 4, has_more: false } });
    expect(bob).toEqual(alice);
    expect(await get(url, '/v1/agents/reader', BOB)).toEqual({ status: 200, body: READER });
    // The admin token reads them as well.
    expect((await get(url, '/v1/agents', 't')).body).toEqual(alice.body);
  });
});
