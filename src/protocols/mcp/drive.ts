import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { DriveFailure, tappedFetch, type Capture, type Scenario } from '../findings.ts';

export interface McpScenario extends Scenario {
  /** The tool to call (default: the first the server lists). */
  readonly tool?: string;
}

/** The arguments a tool takes a message in: its one string property (`message`, `prompt`, …), or `message`. */
function argumentsFor(tool: { inputSchema?: { properties?: Record<string, { type?: unknown }>; required?: string[] } }, text: string): Record<string, string> {
  const props = Object.entries(tool.inputSchema?.properties ?? {}).filter(([, p]) => p.type === 'string');
  const required = props.filter(([k]) => tool.inputSchema?.required?.includes(k) === true);
  const name = (required[0] ?? props[0])?.[0] ?? 'message';
  return { [name]: text };
}

/**
 * The scenario through the MCP SDK's `Client` over Streamable HTTP: `tools/list`, then a `tools/call`
 * with progress for the message (and another for the second message). MCP has no approval for a
 * tool call; `decision` does not apply. A turn is what the server sent for one call, as NDJSON of
 * JSON-RPC messages — its notifications, then its response — with that call's request id.
 */
export async function driveMcp(s: McpScenario): Promise<Capture> {
  const transport = new StreamableHTTPClientTransport(new URL(s.url), { fetch: tappedFetch([], s.headers, () => false) });
  const client = new Client({ name: 'awaken-judge', version: '0.0.0' });
  await client.connect(transport);
  let received: JSONRPCMessage[] = [];
  let sentId: number | string | undefined;
  const onmessage = transport.onmessage;
  transport.onmessage = (m: JSONRPCMessage) => {
    received.push(m);
    onmessage?.(m);
  };
  const send = transport.send.bind(transport);
  transport.send = async (m, options) => {
    if ('method' in m && m.method === 'tools/call' && 'id' in m) sentId = m.id;
    return send(m, options);
  };
  try {
    const tools = (await client.listTools()).tools;
    const tool = s.tool !== undefined ? tools.find((t) => t.name === s.tool) : tools[0];
    if (tool === undefined)
      throw new DriveFailure(
        s.tool !== undefined ? `the server has no tool ${s.tool} (it lists ${tools.map((t) => t.name).join(', ') || 'none'})` : 'the server lists no tool',
      );
    const bodies: string[] = [];
    const requestIds: (number | string)[] = [];
    for (const text of [s.message, ...(s.then !== undefined ? [s.then] : [])]) {
      received = [];
      await client
        .callTool({ name: tool.name, arguments: argumentsFor(tool as never, text) }, CallToolResultSchema, { onprogress: () => undefined })
        .catch(() => undefined);
      const id = sentId ?? 0;
      bodies.push(
        received
          .filter((m) => !('id' in m) || m.id === id)
          .map((m) => `${JSON.stringify(m)}\n`)
          .join(''),
      );
      requestIds.push(id);
    }
    // A tools/call never asks for an approval.
    return { bodies, requestIds, asked: false };
  } finally {
    await client.close();
  }
}
