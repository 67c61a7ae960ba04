import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolResults } from '../../src/contract/tool.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { failOnConsole } from '../support/console.ts';
import { ALICE_TOKEN, BOB_TOKEN, bodyJson, json, parseSse, testServer, twoPrincipals, type TestServer } from '../support/server.ts';

/**
 * `POST /v1/copilotkit/agent/:id/suggest`, as `@copilotkit/core`'s suggestion engine calls it when
 * `/info` says `suggestions: true`: the page's conversation, the instruction, and `copilotkitSuggest`
 * as the only tool (its choice forced by `forwardedProps.toolChoice`). One inference of the agent's
 * model, answered as AG-UI events; no thread, no run, no store write, no tool run.
 */

process.env['COPILOTKIT_TELEMETRY_DISABLED'] = '1';
failOnConsole(['warn', 'error']);

/** What the client offers (`SUGGEST_TOOL` of `@copilotkit/core`). */
const SUGGEST_TOOL = {
  name: 'copilotkitSuggest',
  description: 'Suggest what the user could say next',
  parameters: {
    type: 'object',
    properties: {
      suggestions: {
        type: 'array',
        items: { type: 'object', properties: { title: { type: 'string' }, message: { type: 'string' } }, required: ['title', 'message'] },
      },
    },
    required: ['suggestions'],
  },
};

const suggestions = [
  { title: 'Oslo', message: 'Plan a weekend in Oslo.' },
  { title: 'Bergen', message: 'Plan a weekend in Bergen.' },
];
const suggestStep = { tool_calls: [{ id: 's1', name: 'copilotkitSuggest', arguments: { suggestions } }] };

const input = (extra: Record<string, unknown> = {}) => ({
  threadId: 'sugg-1',
  runId: 'sugg-run',
  messages: [
    { id: 'u1', role: 'user', content: 'plan a trip' },
    {
      id: 'a1',
      role: 'assistant',
      content: 'Where to?',
      toolCalls: [{ id: 'c1', type: 'function', function: { name: 'pick_city', arguments: '{"region":"north"}' } }],
    },
    { id: 't1', role: 'tool', toolCallId: 'c1', content: '{"city":"unknown"}' },
    { id: 'sugg-1', role: 'user', content: 'Suggest what the user could say next.' },
  ],
  state: {},
  tools: [SUGGEST_TOOL],
  context: [{ description: 'page', value: '/trips' }],
  forwardedProps: { toolChoice: { type: 'function', function: { name: 'copilotkitSuggest' } } },
  ...extra,
});

const events = async (r: Response) => parseSse(await r.text()).map((f) => JSON.parse(f.data) as Record<string, unknown>);

async function nothingStored(s: TestServer): Promise<void> {
  expect((await s.store.listThreads({ offset: 0, limit: 10 })).total).toBe(0);
  expect((await s.store.listRuns({ offset: 0, limit: 10 })).total).toBe(0);
}

describe('POST /v1/copilotkit/agent/:id/suggest', () => {
  it('answers one inference as AG-UI events: the copilotkitSuggest call; the model saw the conversation and that tool alone; nothing is stored', async () => {
    const s = testServer([suggestStep]);
    const r = await s.app.request('/v1/copilotkit/agent/agent/suggest', json(input()));
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/event-stream');
    expect(await events(r)).toEqual([
      { type: 'RUN_STARTED', threadId: 'sugg-1', runId: 'sugg-run' },
      { type: 'TOOL_CALL_START', toolCallId: 's1', toolCallName: 'copilotkitSuggest', parentMessageId: expect.any(String) },
      { type: 'TOOL_CALL_ARGS', toolCallId: 's1', delta: JSON.stringify({ suggestions }) },
      { type: 'TOOL_CALL_END', toolCallId: 's1' },
      { type: 'RUN_FINISHED', threadId: 'sugg-1', runId: 'sugg-run', outcome: { type: 'success' } },
    ]);

    expect(s.llm.requests).toHaveLength(1);
    const [request] = s.llm.requests;
    expect(request?.model).toBe('scripted-model');
    // The page's forwardedProps.toolChoice forces the call.
    expect(request?.requiredTool).toBe('copilotkitSuggest');
    expect(request?.tools).toEqual([
      { id: 'copilotkitSuggest', name: 'copilotkitSuggest', description: SUGGEST_TOOL.description, parameters: SUGGEST_TOOL.parameters },
    ]);
    expect(request?.messages).toEqual([
      { role: 'system', content: [{ type: 'text', text: 'be brief' }] },
      { role: 'system', content: [{ type: 'text', text: 'What the client says of its page:\n- page: /trips' }] },
      { id: 'u1', role: 'user', content: [{ type: 'text', text: 'plan a trip' }] },
      {
        id: 'a1',
        role: 'assistant',
        content: [{ type: 'text', text: 'Where to?' }],
        tool_calls: [{ id: 'c1', name: 'pick_city', arguments: { region: 'north' } }],
      },
      { id: 't1', role: 'tool', content: [{ type: 'text', text: '{"city":"unknown"}' }], tool_call_id: 'c1' },
      { id: 'sugg-1', role: 'user', content: [{ type: 'text', text: 'Suggest what the user could say next.' }] },
    ]);
    await nothingStored(s);
  });

  it('runs no tool: a call the model makes to one of the agent’s tools is only shown', async () => {
    const ran: unknown[] = [];
    const note = defineTool({
      id: 'note',
      description: 'writes a note',
      args: z.object({ text: z.string() }),
      execute: (args) => {
        ran.push(args);
        return ToolResults.success('note', { ok: true });
      },
    });
    const s = testServer([{ tool_calls: [{ id: 'n1', name: 'note', arguments: { text: 'x' } }] }], { tools: [note] });
    const got = await events(await s.app.request('/v1/copilotkit/agent/agent/suggest', json(input())));
    expect(got.map((e) => e['type'])).toEqual(['RUN_STARTED', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'RUN_FINISHED']);
    expect(s.llm.requests[0]?.tools.map((t) => t.name)).toEqual(['copilotkitSuggest']);
    expect(ran).toEqual([]);
    expect(s.llm.requests).toHaveLength(1);
    await nothingStored(s);
  });

  it('a failed inference ends the stream with RUN_ERROR; there is no second one', async () => {
    const s = testServer([{ error: 'overloaded' }, suggestStep]);
    const got = await events(await s.app.request('/v1/copilotkit/agent/agent/suggest', json(input())));
    expect(got).toEqual([
      { type: 'RUN_STARTED', threadId: 'sugg-1', runId: 'sugg-run' },
      { type: 'RUN_ERROR', message: 'provider error: overloaded', code: 'provider' },
    ]);
    expect(s.llm.requests).toHaveLength(1);
    await nothingStored(s);
  });

  it('bad input is a 4xx naming the field, before the model is asked', async () => {
    const s = testServer([suggestStep]);
    const post = async (path: string, body: unknown) => {
      const r = await s.app.request(path, json(body));
      return { status: r.status, body: await r.json() };
    };
    expect(await post('/v1/copilotkit/agent/agent/suggest', input({ tools: [{ name: 'other' }] }))).toEqual({
      status: 400,
      body: { error: 'tools: a suggest request offers copilotkitSuggest, the tool its answer is read from', code: 'invalid_request', field: 'tools' },
    });
    expect(await post('/v1/copilotkit/agent/agent/suggest', input({ tools: undefined }))).toMatchObject({ status: 400, body: { field: 'tools' } });
    expect(await post('/v1/copilotkit/agent/agent/suggest', input({ threadId: undefined }))).toEqual({
      status: 400,
      body: { error: 'threadId: Invalid input: expected string, received undefined', code: 'invalid_request', field: 'threadId' },
    });
    expect(await post('/v1/copilotkit/agent/nobody/suggest', input())).toEqual({
      status: 404,
      body: { error: 'agent not found: nobody', code: 'agent_not_found', field: 'agent_id' },
    });
    expect(s.llm.requests).toEqual([]);
  });

  it('/info says suggestions: true', async () => {
    const s = testServer([]);
    expect(await bodyJson(s.app.request('/v1/copilotkit/info'))).toMatchObject({ suggestions: true });
  });
});

describe('two principals', () => {
  it("Bob's suggest naming Alice's thread id reads nothing of it and writes nothing to it; without a token it is 401", async () => {
    const s = testServer([{ text: 'Noted.' }, suggestStep]);
    const p = await twoPrincipals(s);
    try {
      const first = await p.call(ALICE_TOKEN, 'POST', '/v1/runs', { threadId: 'alice-1', messages: [{ role: 'user', content: 'my secret plan' }] });
      await first.text();
      const before = await s.store.loadThread('alice-1');
      const r = await p.call(BOB_TOKEN, 'POST', '/v1/copilotkit/agent/agent/suggest', input({ threadId: 'alice-1' }));
      expect(r.status).toBe(200);
      expect((await events(r)).map((e) => e['type'])).toContain('TOOL_CALL_END');
      expect(JSON.stringify(s.llm.requests[1]?.messages)).not.toContain('my secret plan');
      expect(await s.store.loadThread('alice-1')).toEqual(before);
      expect((await s.store.listRuns({ offset: 0, limit: 10 })).total).toBe(1);
      expect((await fetch(`${p.url}/v1/copilotkit/agent/agent/suggest`, json(input()))).status).toBe(401);
    } finally {
      await p.close();
    }
  });
});

describe("@copilotkit/core's suggestions against this server", () => {
  let s: TestServer;
  let server: RunningServer;
  beforeAll(async () => {
    s = testServer([suggestStep]);
    server = await listen(s.app, { port: 0 });
    (globalThis as { window?: unknown }).window = {
      location: { origin: server.url, href: `${server.url}/` },
      addEventListener: () => undefined,
      removeEventListener: () => undefined,
    };
  });
  afterAll(async () => {
    delete (globalThis as { window?: unknown }).window;
    await server.close();
  });

  it('a page with dynamic suggestions gets the model’s, from /agent/<id>/suggest, and no thread is stored', async () => {
    const { CopilotKitCore } = await import('@copilotkit/core');
    const paths: string[] = [];
    const original = globalThis.fetch;
    globalThis.fetch = (input, init) => {
      const url = String(input instanceof Request ? input.url : input);
      if (url.startsWith(server.url)) paths.push(`${init?.method ?? 'GET'} ${url.slice(server.url.length)}`);
      return original(input, init);
    };
    try {
      const core = new CopilotKitCore({
        runtimeUrl: `${server.url}/v1/copilotkit`,
        suggestionsConfig: [{ instructions: 'Suggest trips.', providerAgentId: 'agent', consumerAgentId: 'agent', available: 'always' }],
      });
      for (let i = 0; i < 200 && core.runtimeConnectionStatus !== 'connected'; i++) await new Promise((r) => setTimeout(r, 10));
      expect(core.suggestions).toBe(true);
      const agent = core.getAgent('agent');
      agent?.addMessage({ id: 'u1', role: 'user', content: 'plan a trip' });
      core.reloadSuggestions('agent');
      for (let i = 0; i < 200 && (core.getSuggestions('agent').isLoading || core.getSuggestions('agent').suggestions.length === 0); i++)
        await new Promise((r) => setTimeout(r, 10));
      expect(core.getSuggestions('agent')).toEqual({
        suggestions: suggestions.map((x) => ({ ...x, isLoading: false })),
        isLoading: false,
      });
      expect(paths).toContain('POST /v1/copilotkit/agent/agent/suggest');
      expect(paths.filter((p) => p.includes('/run'))).toEqual([]);
      expect(s.llm.requests).toHaveLength(1);
      expect(s.llm.requests[0]?.messages.at(-1)?.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('Suggest trips.') });
      await nothingStored(s);
    } finally {
      globalThis.fetch = original;
    }
  });
});
