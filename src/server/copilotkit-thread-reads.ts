import { Hono } from 'hono';
import type { JsonValue } from '../contract/json.ts';
import { messageText } from '../contract/message.ts';
import { sharedOf } from '../protocols/ag-ui/encoder.ts';
import type { ServerParts } from './http-support.ts';
import { notFound, threadIdParam } from './copilotkit-threads.ts';
import { agentSpecOf, threadView } from './protocol-routes.ts';

/**
 * CopilotKit's per-thread reads (seed 001 §9.17; what its inspector loads a thread with when `/info`
 * says `threadEndpoints.inspect`), on the caller's view of the store — another principal's thread is
 * not found, as one that does not exist:
 *
 * - `GET /threads/:id/messages` → `{messages}`: the server's history (§7.3), tool calls flat as
 *   `{id, name, args}` (the thread list's shape, not the event stream's), a paused thread's waiting
 *   message with its text and calls;
 * - `GET /threads/:id/state` → `{state}`: the keys the agent of its latest run shares with clients.
 */
export function copilotkitThreadReads(parts: ServerParts, base: string): Hono {
  const app = new Hono();
  app.get(`${base}/threads/:id/messages`, async (c) => {
    const id = threadIdParam(c);
    const thread = await parts.store.loadThread(id);
    if (thread === undefined) throw notFound(id);
    const waiting = (await parts.registry.waitingAnywhere(id))?.calls ?? [];
    const messages = threadView(thread, waiting).map(
      (m): JsonValue => ({
        id: m.id ?? '',
        role: m.role,
        content: messageText(m),
        ...(m.tool_calls !== undefined && m.tool_calls.length > 0
          ? { toolCalls: m.tool_calls.map((t) => ({ id: t.id, name: t.name, args: t.arguments })) }
          : {}),
        ...(m.tool_call_id !== undefined ? { toolCallId: m.tool_call_id } : {}),
      }),
    );
    return c.json({ messages });
  });
  app.get(`${base}/threads/:id/state`, async (c) => {
    const id = threadIdParam(c);
    const thread = await parts.store.loadThread(id);
    if (thread === undefined) throw notFound(id);
    const record = await parts.store.getThread(id);
    const run = record?.latest_run_id === undefined ? undefined : await parts.store.getRun(record.latest_run_id);
    const shared = run === undefined ? [] : (agentSpecOf(parts, run.agent_id)?.client_state ?? []);
    return c.json({ state: sharedOf(thread.threadState?.extensions ?? {}, shared) });
  });
  return app;
}
