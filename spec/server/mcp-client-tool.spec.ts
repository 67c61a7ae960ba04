import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import type { ToolDescriptor } from '../../src/contract/tool.ts';
import { clientTool } from '../../src/runtime/client-tool.ts';
import { listen } from '../../src/server/node.ts';
import { bodyJson, testServer } from '../support/server.ts';

/**
 * A client tool (`clientTool`, an app's tool without `execute`) called in a run an MCP `tools/call`
 * started on `/v1/mcp`, driven by the official MCP client over a real socket. A tool call's result
 * cannot carry the call's result back, so the call answers at once with an error saying the run was
 * suspended waiting for its client to run that tool, and the run is cancelled rather than left waiting for an answer that cannot come.
 */

const pickColor: ToolDescriptor = {
  id: 'pick_color',
  name: 'pick_color',
  description: 'Asks the user to pick a colour',
  parameters: { type: 'object', properties: { palette: { type: 'string' } }, required: ['palette'] },
};

describe('MCP: a call to a client tool', () => {
  it('answers the tools/call at once, an error naming the tool its client is to run; its progress names the tool; the run is cancelled', async () => {
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'pick_color', arguments: { palette: 'warm' } }] }, { text: 'never read' }], {
      tools: [clientTool(pickColor)],
    });
    const server = await listen(s.app, { port: 0 });
    const client = new Client({ name: 'awaken-spec', version: '0.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/v1/mcp`)));
      const progress: Progress[] = [];
      const result = await client.callTool({ name: 'agent', arguments: { message: 'pick a colour' } }, CallToolResultSchema, {
        onprogress: (p) => void progress.push(p),
      });
      expect(result.isError).toBe(true);
      expect(result.content).toEqual([
        { type: 'text', text: 'agent run suspended: it waits for its client to run pick_color, whose result a tools/call cannot carry' },
      ]);
      expect(result.structuredContent).toMatchObject({ termination: { type: 'suspended' } });
      expect(progress.map((p) => p.message)).toContain('tool pick_color suspended');
      expect(s.llm.requests).toHaveLength(1);

      // Not parked for a day waiting for a result no MCP caller can send: the run behind the call ends cancelled.
      const runId = (result.structuredContent as { runId: string }).runId;
      await expect.poll(async () => (await bodyJson(fetch(`${server.url}/v1/runs/${runId}`))).status).toBe('done');
      const run = await bodyJson(fetch(`${server.url}/v1/runs/${runId}`));
      expect(run.termination).toEqual({ type: 'cancelled' });
    } finally {
      await client.close();
      await server.close();
    }
  });
});
