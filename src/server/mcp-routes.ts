import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { Hono, type Context } from 'hono';
import type { AgentEvent } from '../contract/event.ts';
import { Messages } from '../contract/message.ts';
import { describeAgent } from '../protocols/a2a/card.ts';
import type { ServerParts } from './http-support.ts';
import { mcpServer, type AgentHost } from './mcp-host.ts';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** The host name of a `Host` header or an origin URL, lower-cased, without the port. */
function hostnameOf(value: string): string | undefined {
  try {
    return new URL(value.includes('://') ? value : `http://${value}`).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

const jsonRpcError = (c: Context, status: 400 | 403 | 404, code: number, message: string): Response =>
  c.json({ jsonrpc: '2.0', error: { code, message }, id: null }, status);

export interface McpHttpOptions {
  /** Host names (besides the loopback ones) a request may name in `Host` (for a server bound beyond 127.0.0.1). */
  readonly allowedHosts?: readonly string[];
}

/**
 * MCP over Streamable HTTP at `/v1/mcp` (book: MCP HTTP 路由): the SDK's web-standard transport, one
 * session per `initialize` (`Mcp-Session-Id`), each agent a tool (`mcpServer`). Every call runs
 * through the run registry on a thread of its own. DNS-rebinding protection: `Host` must be a
 * loopback name or an allowed host, and an `Origin`, when sent, must be loopback or the `Host` itself
 * — otherwise 403.
 */
export function mcpRoutes(parts: ServerParts, options: McpHttpOptions & { readonly version: string }): Hono {
  const { runtime, registry } = parts;
  const env = runtime.env;
  const allowed = new Set([...LOOPBACK, ...(options.allowedHosts ?? []).map((h) => h.toLowerCase())]);
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();

  const host: AgentHost = {
    agents: runtime.agentIds().map((id) => {
      const resolved = runtime.resolve(id);
      return { id, description: resolved.ok ? describeAgent(resolved.value.spec) : `Awaken agent: ${id}` };
    }),
    async run(agentId, message, emit, signal) {
      const threadId = `mcp-${env.ids.next('thread')}`;
      const started = await registry.start({ threadId, agentId, messages: [Messages.user(message, { id: env.ids.next('message') })] });
      if (!started.ok) {
        emit({ event_type: 'error', message: started.error.message, code: started.error.code });
        return;
      }
      const runId = started.value.runId;
      const onAbort = (): void => void registry.cancel(runId);
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        const termination = await new Promise<AgentEvent>((resolveEnd) => {
          let off: (() => void) | undefined;
          let ended = false;
          void registry
            .subscribe(
              threadId,
              started.value.fromSeq,
              (item) => {
                if (ended || item.kind !== 'frame' || item.runId !== runId) return;
                emit(item.event);
                if (item.event.event_type === 'run_finish') {
                  ended = true;
                  off?.();
                  resolveEnd(item.event);
                }
              },
              { scope: 'run' },
            )
            .then((unsubscribe) => {
              off = unsubscribe;
              if (ended) unsubscribe();
            });
        });
        // An MCP caller cannot answer a suspension: the parked run is cancelled, not left waiting.
        if (termination.event_type === 'run_finish' && termination.termination.type === 'suspended') registry.cancel(runId);
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    },
  };

  const app = new Hono();
  app.use('/v1/mcp', async (c, next) => {
    const hostHeader = c.req.header('host') ?? '';
    const hostName = hostnameOf(hostHeader);
    if (hostName === undefined || !allowed.has(hostName)) return jsonRpcError(c, 403, -32000, `host not allowed: ${hostHeader}`);
    const origin = c.req.header('origin');
    if (origin !== undefined) {
      const originHost = hostnameOf(origin);
      if (originHost === undefined || (!LOOPBACK.has(originHost) && originHost !== hostName)) return jsonRpcError(c, 403, -32000, `origin not allowed: ${origin}`);
    }
    await next();
    return undefined;
  });

  app.all('/v1/mcp', async (c) => {
    const sessionId = c.req.header('mcp-session-id');
    if (sessionId !== undefined) {
      const transport = sessions.get(sessionId);
      if (transport === undefined) return jsonRpcError(c, 404, -32001, 'session not found');
      return transport.handleRequest(c.req.raw);
    }
    if (c.req.method !== 'POST') return jsonRpcError(c, 400, -32000, 'Mcp-Session-Id header is required');
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => env.ids.next('session'),
      onsessioninitialized: (id) => void sessions.set(id, transport),
      onsessionclosed: (id) => void sessions.delete(id),
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await mcpServer(host, { name: 'awaken-mcp', version: options.version }).connect(transport);
    return transport.handleRequest(c.req.raw);
  });
  return app;
}
