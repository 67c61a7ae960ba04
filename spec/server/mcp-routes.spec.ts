import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { createHttpApp } from '../../src/server/http.ts';
import { listen } from '../../src/server/node.ts';
import { RunRegistry } from '../../src/server/run-registry.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { gatedTool, testServer } from '../support/server.ts';

/** MCP over Streamable HTTP at /v1/mcp, driven by the official MCP client over a real socket. */
describe('MCP Streamable HTTP, judged by @modelcontextprotocol/sdk', () => {
  it('lists the agent as a tool and answers a call with progress, on its own thread', async () => {
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'Answer over HTTP.' }]);
    const server = await listen(s.app, { port: 0 });
    const client = new Client({ name: 'awaken-spec', version: '0.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/v1/mcp`)));
      expect(client.getServerVersion()?.name).toBe('awaken-mcp');
      const tools = await client.listTools();
      expect(tools.tools.map((t) => t.name)).toEqual(['agent']);
      const progress: Progress[] = [];
      const result = await client.callTool({ name: 'agent', arguments: { message: 'go' } }, CallToolResultSchema, { onprogress: (p) => void progress.push(p) });
      expect(result.isError).toBe(false);
      expect(result.content).toEqual([{ type: 'text', text: 'Answer over HTTP.' }]);
      expect(progress.length).toBeGreaterThan(0);
      const threads = (await (await fetch(`${server.url}/v1/threads`)).json()) as { items: { id: string }[] };
      expect(threads.items[0]?.id).toMatch(/^mcp-/);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('refuses a foreign Host or Origin (DNS rebinding) and an unknown session', async () => {
    const s = testServer([]);
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const post = (headers: Record<string, string>) =>
      s.app.request('http://127.0.0.1/v1/mcp', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(init),
      });
    expect((await post({ host: 'evil.example' })).status).toBe(403);
    expect((await post({ host: '127.0.0.1:3000', origin: 'http://evil.example' })).status).toBe(403);
    expect((await post({ host: '127.0.0.1:3000', origin: 'http://localhost:5173' })).status).toBe(200);
    const unknown = await post({ host: 'localhost:3000', 'mcp-session-id': 'nope' });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32001 } });
  });

  it('reads a body as every route does: nested deeper than 128 levels is a parse error naming the limit, before the SDK sees it', async () => {
    const s = testServer([]);
    const server = await listen(s.app, { port: 0 });
    try {
      const deep = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":${'['.repeat(5000)}${']'.repeat(5000)}}`;
      const post = (body: string) =>
        fetch(`${server.url}/v1/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body });
      const refused = await post(deep);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toEqual({
        jsonrpc: '2.0',
        error: { code: -32700, message: 'Parse error: the JSON body nests deeper than 128 levels' },
        id: null,
      });
      const broken = await post('{"jsonrpc":');
      expect(broken.status).toBe(400);
      expect(await broken.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32700 }, id: null });
    } finally {
      await server.close();
    }
  });
});

describe('MCP Streamable HTTP transport: priming, retry, cancellation', () => {
  /** A session opened by hand, so the test sees the wire. */
  async function session(url: string): Promise<(body: unknown, headers?: Record<string, string>) => Promise<Response>> {
    const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
    const init = await fetch(url, {
      method: 'POST',
      headers: base,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    });
    const id = init.headers.get('mcp-session-id') ?? '';
    await init.text();
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(url, { method: 'POST', headers: { ...base, 'mcp-session-id': id, ...headers }, body: JSON.stringify(body) });
    await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).text();
    return post;
  }

  it('a tools/call stream opens with a priming event (id, empty data, retry)', async () => {
    const s = testServer([{ text: 'primed' }]);
    const server = await listen(s.app, { port: 0 });
    try {
      const post = await session(`${server.url}/v1/mcp`);
      const body = await (await post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'agent', arguments: { message: 'hi' } } })).text();
      const first = body.split('\n\n')[0] ?? '';
      expect(first).toMatch(/^id: \S+\nretry: 1000\ndata: $/);
      expect(body).toContain('primed');
    } finally {
      await server.close();
    }
  });

  it('notifications/cancelled ends the request’s stream and its run; resuming that stream gets nothing', async () => {
    const g = gatedTool();
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'slow', arguments: { tag: 't' } }] }, { text: 'never' }], { tools: [g.tool] });
    const server = await listen(s.app, { port: 0 });
    try {
      const url = `${server.url}/v1/mcp`;
      const post = await session(url);
      const call = await post({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'agent', arguments: { message: 'slow' }, _meta: { progressToken: 'p' } },
      });
      const reader = (call.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let text = '';
      while (!text.includes('id: ')) text += decoder.decode((await reader.read()).value);
      const lastEventId = /id: (\S+)/.exec(text)?.[1] ?? '';
      await expect.poll(() => g.started.length).toBe(1);
      await (await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'user' } })).text();
      g.open();
      // The stream ends within the bound (without the fix it stays open on keep-alives).
      const ended = await Promise.race([
        (async () => {
          for (;;) {
            const next = await reader.read();
            if (next.done) return true;
            text += decoder.decode(next.value);
          }
        })(),
        new Promise<false>((r) => setTimeout(() => r(false), 3000)),
      ]);
      expect(ended).toBe(true);
      expect(text).not.toContain('"result"');
      const runs = (await (await fetch(`${server.url}/v1/runs`)).json()) as { items: { status: string; termination?: { type: string } }[] };
      expect(runs.items[0]?.termination?.type).toBe('cancelled');
      const resume = await fetch(url, {
        headers: { accept: 'text/event-stream', 'mcp-session-id': call.headers.get('mcp-session-id') ?? '', 'last-event-id': lastEventId },
      });
      expect(resume.status).toBe(204);
    } finally {
      g.open();
      await server.close();
    }
  });
});

describe('an agent with an MCP default message (section mcp.default_message)', () => {
  it('offers its message as optional and runs on the default when a call sends none', async () => {
    const llm = new ScriptedLlm([{ text: 'Ran on the default.' }]);
    const store = new MemoryStore();
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('scripted', llm)
      .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
      .withThreadRunStore(store)
      .withAgentSpec({ id: 'briefing', model: 'm', system_prompt: 'Brief me.', sections: { mcp: { default_message: 'What happened today?' } } })
      .build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    const app = createHttpApp({ runtime: built.value, store, registry: new RunRegistry(built.value, store) });
    const server = await listen(app, { port: 0 });
    const client = new Client({ name: 'awaken-spec', version: '0.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/v1/mcp`)));
      const [tool] = (await client.listTools()).tools;
      expect(tool?.inputSchema.required ?? []).toEqual([]);
      const result = await client.callTool({ name: 'briefing', arguments: {} });
      expect(result).toMatchObject({ isError: false, content: [{ type: 'text', text: 'Ran on the default.' }] });
      expect(llm.requests[0]?.messages.at(-1)?.content).toEqual([{ type: 'text', text: 'What happened today?' }]);
    } finally {
      await client.close();
      await server.close();
    }
  });
});
