import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  CallToolResultSchema,
  JSONRPCMessageSchema,
  ServerNotificationSchema,
  type CallToolResult,
  type Progress,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/**
 * The official judge of one MCP `tools/call` exchange, as the server sends it (NDJSON of JSON-RPC
 * messages; conformance-plan §5): every line through `JSONRPCMessageSchema`, notifications through
 * `ServerNotificationSchema`, the response through `CallToolResultSchema`; then the same progress and
 * result are sent again through the SDK's own `McpServer` to its `Client` (in memory), which must
 * deliver them unchanged. Its blind spots are checked here: a result without `content` (the schema
 * defaults it), progress that does not increase or names another token, and exactly one response,
 * last.
 */
export interface McpVerdict {
  /** What the official client received: its progress callbacks and the call's result. */
  readonly progress: Progress[];
  readonly result: CallToolResult | undefined;
  readonly problems: string[];
}

export async function judgeMcp(body: string, requestId: number | string = 1, progressToken: number | string = requestId): Promise<McpVerdict> {
  const problems: string[] = [];
  const lines = body.split('\n');
  if (lines.at(-1) !== '') problems.push('the body does not end with a newline');
  const sent: { progress: number; total?: number; message?: string }[] = [];
  let raw: Record<string, unknown> | undefined;
  let responses = 0;
  let last = 0;
  const messages = lines.filter((l) => l !== '');
  messages.forEach((line, i) => {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      problems.push(`line ${i + 1} is not JSON`);
      return;
    }
    const m = JSONRPCMessageSchema.safeParse(value);
    if (!m.success) {
      problems.push(`line ${i + 1}: JSONRPCMessageSchema rejects it: ${m.error.message.slice(0, 200)}`);
      return;
    }
    const msg = value as { id?: unknown; method?: string; params?: { progressToken?: unknown; progress?: number; total?: number; message?: string }; result?: unknown };
    if (msg.method !== undefined) {
      if ('id' in msg) problems.push(`line ${i + 1}: the server sends a request (${msg.method}) during a tools/call`);
      const n = ServerNotificationSchema.safeParse({ method: msg.method, params: msg.params });
      if (!n.success) problems.push(`line ${i + 1}: ServerNotificationSchema rejects it: ${n.error.message.slice(0, 200)}`);
      if (responses > 0) problems.push(`line ${i + 1}: a notification after the response`);
      if (msg.method === 'notifications/progress' && msg.params !== undefined) {
        if (msg.params.progressToken !== progressToken) problems.push(`line ${i + 1}: progress for token ${JSON.stringify(msg.params.progressToken)}`);
        const p = msg.params.progress ?? 0;
        if (p <= last) problems.push(`line ${i + 1}: progress ${p} does not increase`);
        last = p;
        sent.push({ progress: p, ...(msg.params.total !== undefined ? { total: msg.params.total } : {}), ...(msg.params.message !== undefined ? { message: msg.params.message } : {}) });
      }
      return;
    }
    responses++;
    if (msg.id !== requestId) problems.push(`line ${i + 1}: a response to ${JSON.stringify(msg.id)}, not ${JSON.stringify(requestId)}`);
    if (typeof msg.result !== 'object' || msg.result === null) return;
    raw = msg.result as Record<string, unknown>;
    if (!('content' in raw)) problems.push('the result has no content');
    const r = CallToolResultSchema.safeParse(raw);
    if (!r.success) problems.push(`CallToolResultSchema rejects the result: ${r.error.message.slice(0, 200)}`);
    if (i !== messages.length - 1) problems.push('the response is not the last message');
  });
  if (responses !== 1) problems.push(`${responses} responses, not exactly one`);

  // The same exchange through the SDK's own server and client.
  const progress: Progress[] = [];
  let result: CallToolResult | undefined;
  if (raw !== undefined && problems.length === 0) {
    const answer = raw as CallToolResult;
    const server = new McpServer({ name: 'awaken-judge', version: '0.0.0' });
    server.registerTool('agent', { description: 'replays one recorded run', inputSchema: { message: z.string() } }, async (_args, extra) => {
      for (const p of sent) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: extra._meta?.progressToken ?? 0, ...p } });
      return answer;
    });
    const client = new Client({ name: 'awaken-judge-client', version: '0.0.0' });
    const [a, b] = InMemoryTransport.createLinkedPair();
    try {
      await Promise.all([server.connect(a), client.connect(b)]);
      const r = await client.callTool({ name: 'agent', arguments: { message: 'go' } }, CallToolResultSchema, { onprogress: (p) => void progress.push(p) });
      result = r as CallToolResult;
    } catch (e) {
      problems.push(`the official client rejects the exchange: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      await client.close();
      await server.close();
    }
  }
  return { progress, result, problems };
}
