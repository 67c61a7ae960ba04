import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { listen } from '../../src/server/node.ts';
import { testServer } from '../support/server.ts';

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
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    const post = (headers: Record<string, string>) =>
      s.app.request('http://127.0.0.1/v1/mcp', { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(init) });
    expect((await post({ host: 'evil.example' })).status).toBe(403);
    expect((await post({ host: '127.0.0.1:3000', origin: 'http://evil.example' })).status).toBe(403);
    expect((await post({ host: '127.0.0.1:3000', origin: 'http://localhost:5173' })).status).toBe(200);
    const unknown = await post({ host: 'localhost:3000', 'mcp-session-id': 'nope' });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32001 } });
  });
});
