import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema, JSONRPCMessageSchema, ServerNotificationSchema, type CallToolResult, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { describeFinding, finding, ndjsonFrames, schemaProblem, type Finding } from '../findings.ts';

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
  /** What was found, check by check, with the line at fault. */
  readonly findings: Finding[];
  readonly problems: string[];
}

export async function judgeMcp(body: string, requestId: number | string = 1, progressToken: number | string = requestId): Promise<McpVerdict> {
  const findings: Finding[] = [];
  if (!body.endsWith('\n')) findings.push(finding('terminal', 'the body does not end with a newline'));
  const sent: { progress: number; total?: number; message?: string }[] = [];
  let raw: Record<string, unknown> | undefined;
  let responses = 0;
  let last = 0;
  const lines = ndjsonFrames(body);
  for (const line of lines) {
    let value: unknown;
    try {
      value = JSON.parse(line.text);
    } catch {
      findings.push(finding('schema', 'not JSON', line));
      continue;
    }
    const m = JSONRPCMessageSchema.safeParse(value);
    if (!m.success) {
      findings.push(finding('schema', `JSONRPCMessageSchema rejects it: ${schemaProblem(m.error)}`, line));
      continue;
    }
    const msg = value as {
      id?: unknown;
      method?: string;
      params?: { progressToken?: unknown; progress?: number; total?: number; message?: string };
      result?: unknown;
    };
    if (msg.method !== undefined) {
      if ('id' in msg) findings.push(finding('ordering', `the server sends a request (${msg.method}) during a tools/call`, line));
      const n = ServerNotificationSchema.safeParse({ method: msg.method, params: msg.params });
      if (!n.success) findings.push(finding('schema', `ServerNotificationSchema rejects it: ${schemaProblem(n.error)}`, line));
      if (responses > 0) findings.push(finding('ordering', 'a notification after the response', line));
      if (msg.method === 'notifications/progress' && msg.params !== undefined) {
        if (msg.params.progressToken !== progressToken)
          findings.push(finding('ordering', `progress for token ${JSON.stringify(msg.params.progressToken)}, not ${JSON.stringify(progressToken)}`, line));
        const p = msg.params.progress ?? 0;
        if (p <= last) findings.push(finding('ordering', `progress ${p} does not increase (was ${last})`, line));
        last = p;
        sent.push({
          progress: p,
          ...(msg.params.total !== undefined ? { total: msg.params.total } : {}),
          ...(msg.params.message !== undefined ? { message: msg.params.message } : {}),
        });
      }
      continue;
    }
    responses++;
    if (responses > 1) findings.push(finding('terminal', 'a second response', line));
    if (msg.id !== requestId) findings.push(finding('ordering', `a response to ${JSON.stringify(msg.id)}, not ${JSON.stringify(requestId)}`, line));
    if (typeof msg.result !== 'object' || msg.result === null) continue;
    raw = msg.result as Record<string, unknown>;
    if (!('content' in raw)) findings.push(finding('schema', 'the result has no content (the schema would default it)', line));
    const r = CallToolResultSchema.safeParse(raw);
    if (!r.success) findings.push(finding('schema', `CallToolResultSchema rejects the result: ${schemaProblem(r.error)}`, line));
    if (line !== lines.at(-1)) findings.push(finding('terminal', 'the response is not the last message', line));
  }
  if (responses === 0) findings.push(finding('terminal', 'no response to the call'));
  const problems: string[] = [];

  // The same exchange through the SDK's own server and client.
  const progress: Progress[] = [];
  let result: CallToolResult | undefined;
  if (raw !== undefined && findings.length === 0) {
    const answer = raw as CallToolResult;
    const server = new McpServer({ name: 'awaken-judge', version: '0.0.0' });
    server.registerTool('agent', { description: 'replays one recorded run', inputSchema: { message: z.string() } }, async (_args, extra) => {
      for (const p of sent)
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: extra._meta?.progressToken ?? 0, ...p } });
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
  findings.push(...problems.map((p) => finding('client', p)));
  return { progress, result, findings, problems: findings.map(describeFinding) };
}

/** The calls of one session, in order, each against its request id. */
export async function judgeMcpTurns(
  bodies: readonly string[],
  requestIds: readonly (number | string)[] = [],
): Promise<{ readonly findings: Finding[]; readonly frames: number[] }> {
  const findings: Finding[] = [];
  const frames: number[] = [];
  for (const [i, body] of bodies.entries()) {
    const v = await judgeMcp(body, requestIds[i] ?? 1);
    findings.push(...v.findings.map((f) => ({ ...f, turn: i + 1 })));
    frames.push(ndjsonFrames(body).length);
  }
  return { findings, frames };
}
