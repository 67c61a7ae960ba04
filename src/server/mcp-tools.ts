import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JsonValue } from '../contract/json.ts';
import { ToolResults } from '../contract/tool.ts';
import type { Tool } from '../runtime/tool.ts';
import { ToolFailure } from '../runtime/tool.ts';

/** A connected MCP server and the tools it offers, as runtime tools. */
export interface McpToolSource {
  readonly tools: readonly Tool[];
  close(): Promise<void>;
}

/** Tool ids of an MCP server's tools: `<server>__<tool>`, kept to what model APIs accept. */
export const mcpToolId = (server: string, tool: string): string => `${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);

/**
 * Connects to an MCP server over Streamable HTTP (book: 配置 → mcp-servers) and wraps each of its
 * tools: the tool's input schema is the descriptor's parameters, a call is `tools/call`, its text
 * content becomes the result's `text` (with `structured` when the server sends structured content),
 * and `isError` a tool error.
 */
export async function connectMcpServer(name: string, url: string, version: string, timeoutMs = 10_000): Promise<McpToolSource> {
  const client = new Client({ name: 'awaken', version });
  // A server that accepts the connection and never answers is given up on, never waited on for ever.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  let listed: Awaited<ReturnType<typeof client.listTools>>;
  try {
    listed = await Promise.race([
      (async () => {
        await client.connect(new StreamableHTTPClientTransport(new URL(url)), { timeout: timeoutMs });
        return client.listTools(undefined, { timeout: timeoutMs });
      })(),
      timeout,
    ]);
  } catch (e) {
    await client.close().catch(() => undefined);
    throw e;
  } finally {
    clearTimeout(timer);
  }
  const tools: Tool[] = listed.tools.map((t) => {
    const id = mcpToolId(name, t.name);
    return {
      descriptor: { id, name: id, description: t.description ?? `${t.name} (MCP server ${name})`, parameters: t.inputSchema as JsonValue },
      execute: async (args, ctx) => {
        let result: Awaited<ReturnType<typeof client.callTool>>;
        try {
          result = await client.callTool({ name: t.name, arguments: (args ?? {}) as Record<string, unknown> }, undefined, { signal: ctx.signal });
        } catch (e) {
          throw new ToolFailure({ code: 'execution_failed', message: `MCP server ${name}: ${e instanceof Error ? e.message : String(e)}` });
        }
        const text = ((result.content ?? []) as { type: string; text?: string }[]).flatMap((c) => (c.type === 'text' && c.text !== undefined ? [c.text] : [])).join('\n');
        if (result.isError === true) return ToolResults.error(id, text === '' ? 'the MCP tool failed' : text);
        const structured = result.structuredContent as JsonValue | undefined;
        return ToolResults.success(id, structured === undefined ? { text } : { text, structured });
      },
    };
  });
  return { tools, close: () => client.close() };
}
