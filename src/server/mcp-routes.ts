import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { Hono, type Context } from 'hono';
import type { AgentEvent } from '../contract/event.ts';
import { Messages } from '../contract/message.ts';
import { HttpError, readJson, type ServerParts } from './http-support.ts';
import { McpEventStore } from './mcp-event-store.ts';
import { agentToolsOf, mcpServer, type AgentHost } from './mcp-host.ts';
import { currentPrincipal } from './principal.ts';
import { initialMcpState, transcodeMcp, waitsOnSchedule } from '../protocols/mcp/encoder.ts';

/** How long an MCP client waits before it resumes a stream that ended early (the SSE `retry:`). */
const RETRY_MS = 1000;

const jsonRpcError = (c: Context, status: 400 | 404, code: number, message: string): Response =>
  c.json({ jsonrpc: '2.0', error: { code, message }, id: null }, status);

/**
 * MCP over Streamable HTTP at `/v1/mcp` (book: MCP HTTP 路由): the SDK's web-standard transport, one
 * session per `initialize` (`Mcp-Session-Id`), each agent a tool (`mcpServer`). Every call runs
 * through the run registry on a thread of its own. DNS-rebinding protection is the API's own
 * (`accessControl`): a `Host` that is not allowed, or an `Origin` that is not, gets a 403.
 *
 * A session belongs to the principal that opened it (none on an open server or for the admin
 * token): to anyone else its id names nothing, and every method answers as for an unknown session
 * (404), so a leaked id lets no one call, follow, replay or close it.
 */
export function mcpRoutes(parts: ServerParts, options: { readonly version: string }): Hono {
  const { runtime, registry } = parts;
  const env = runtime.env;
  const sessions = new Map<
    string,
    { readonly transport: WebStandardStreamableHTTPServerTransport; readonly events: McpEventStore; readonly principal: string | undefined }
  >();

  const host: AgentHost = {
    agents: agentToolsOf(runtime),
    wakesScheduled: true,
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
        let seen = initialMcpState({ serverWakes: true });
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
                seen = transcodeMcp(seen, item.event)[0];
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
        // An MCP caller cannot answer a suspension: the parked run is cancelled, not left waiting —
        // unless it waits on scheduled calls only, which the mailbox wakes.
        if (termination.event_type === 'run_finish' && termination.termination.type === 'suspended' && !waitsOnSchedule(seen)) registry.cancel(runId);
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    },
  };

  const app = new Hono();
  app.all('/v1/mcp', async (c) => {
    // The body is read as every route reads one (its nesting bounded) before the SDK parses anything.
    let parsedBody: unknown;
    if (c.req.method === 'POST') {
      try {
        parsedBody = await readJson(c);
      } catch (e) {
        if (e instanceof HttpError) return jsonRpcError(c, 400, -32700, `Parse error: ${e.message}`);
        throw e;
      }
    }
    const handle = (transport: WebStandardStreamableHTTPServerTransport): Promise<Response> =>
      transport.handleRequest(c.req.raw, parsedBody !== undefined ? { parsedBody } : undefined);
    const sessionId = c.req.header('mcp-session-id');
    if (sessionId !== undefined) {
      const session = sessions.get(sessionId);
      if (session === undefined || session.principal !== currentPrincipal()) return jsonRpcError(c, 404, -32001, 'session not found');
      // A stream closed because its request was cancelled has nothing to resume: no content, so the
      // client does not reconnect again.
      const lastEventId = c.req.header('last-event-id');
      if (c.req.method === 'GET' && lastEventId !== undefined && session.events.closedAt(lastEventId)) return c.body(null, 204);
      return handle(session.transport);
    }
    if (c.req.method !== 'POST') return jsonRpcError(c, 400, -32000, 'Mcp-Session-Id header is required');
    // Every POST stream opens with a priming event (an id, empty data, `retry`), so a client that
    // loses it resumes with Last-Event-ID.
    const events = new McpEventStore();
    const principal = currentPrincipal();
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => env.ids.next('session'),
      eventStore: events,
      retryInterval: RETRY_MS,
      onsessioninitialized: (id) => void sessions.set(id, { transport, events, principal }),
      onsessionclosed: (id) => void sessions.delete(id),
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    const onCancelled = (requestId: string | number): void => {
      // The transport keeps a cancelled request's stream open for an answer that never comes: end it.
      const streamId = (transport as unknown as { _requestToStreamMapping: Map<string | number, string> })._requestToStreamMapping.get(requestId);
      if (streamId !== undefined) events.close(streamId);
      transport.closeSSEStream(requestId);
    };
    await mcpServer(host, { name: 'awaken-mcp', version: options.version }, { onCancelled }).connect(transport);
    return handle(transport);
  });
  return app;
}
