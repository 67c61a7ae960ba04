import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { displayDescription } from '../contract/agent-spec.ts';
import { A2UI_SURFACE_ACTIVITY } from '../contract/a2ui.ts';
import type { JsonValue } from '../contract/json.ts';
import { unreachable } from '../contract/never.ts';
import { CLIENT_TOOL_ACTION } from '../contract/tool.ts';
import { AG_UI_STREAM_HEADERS, frameAgUi, sharedOf, waitingInterrupt, type AgUiEvent } from '../protocols/ag-ui/encoder.ts';
import { isValidId } from '../runtime/store.ts';
import { HttpError, readJson, type ServerParts } from './http-support.ts';
import { serveSuggest } from './copilotkit-suggest.ts';
import { copilotkitThreadReads } from './copilotkit-thread-reads.ts';
import { copilotkitThreadRoutes, THREAD_ENDPOINTS } from './copilotkit-threads.ts';
import { interruptThread } from './interrupt.ts';
import { OPEN_GENERATIVE_UI_PLUGIN_ID } from '../plugins/open-generative-ui.ts';
import { mayReach } from './principal.ts';
import { agentSpecOf, serveAgUi, threadView, toAgUiMessages } from './protocol-routes.ts';

/** Where CopilotKit's front end finds this server (its `runtimeUrl`). */
export const COPILOTKIT_BASE = '/v1/copilotkit';

const METHODS = ['info', 'agent/run', 'agent/connect', 'agent/stop'] as const;

/** The single route's envelope: `{method, params?, body?}` (`resource/request` is not served: `/info` does not offer it). */
const EnvelopeSchema = z.looseObject({
  method: z.enum(METHODS),
  params: z.looseObject({ agentId: z.string().optional(), threadId: z.string().optional() }).optional(),
  body: z.unknown().optional(),
});

/** What `connect` reads of its `RunAgentInput`: the thread, and the run id the client names the replay by. */
const ConnectSchema = z.looseObject({ threadId: z.string().min(1), runId: z.string().min(1).optional() });

/**
 * CopilotKit's runtime routes, served natively (seed 001 §5.2), as `@copilotkit/core`'s
 * `ProxiedCopilotRuntimeAgent` calls them with its `runtimeUrl` at `COPILOTKIT_BASE`:
 *
 * - `GET /info`: the agents, a map by id (the page looks its chat's agent up by id), `mode: "sse"`;
 * - `POST /agent/:id/run`: an AG-UI run, exactly as `/v1/ag-ui/agents/:id/runs`;
 * - `POST /agent/:id/connect`: the thread's messages and shared state (`connect`);
 * - `POST /agent/:id/stop/:threadId`: the client does not abort its own stream, so the server ends
 *   the thread's run (`cancelled`: open messages closed, then `RUN_FINISHED`), as an interrupt does;
 * - `POST /agent/:id/suggest`: one inference of the agent's model with `copilotkitSuggest` alone,
 *   nothing stored (`copilotkit-suggest.ts`);
 * - `/threads`: the caller's threads of an agent, renamed, archived and deleted (`copilotkit-threads.ts`);
 * - `POST /` with `{method, params, body}`: the same four as one route (`info`, `agent/run`,
 *   `agent/connect`, `agent/stop`), which the client uses when told to or when `GET /info` fails.
 */
export function copilotkitRoutes(parts: ServerParts, options: { readonly heartbeatMs: number }): Hono {
  const app = new Hono();
  app.get(`${COPILOTKIT_BASE}/info`, (c) => c.json(infoOf(parts)));
  app.post(`${COPILOTKIT_BASE}/agent/:agent_id/run`, (c) => serveAgUi(c, parts, options.heartbeatMs, { agentId: agentParam(parts, c) }));
  app.post(`${COPILOTKIT_BASE}/agent/:agent_id/connect`, async (c) => connect(parts, agentParam(parts, c), await readJson(c)));
  app.post(`${COPILOTKIT_BASE}/agent/:agent_id/stop/:thread_id`, async (c) => {
    agentParam(parts, c);
    return c.json(await stop(parts, c.req.param('thread_id') ?? '', 'thread_id'), 202);
  });
  app.post(`${COPILOTKIT_BASE}/agent/:agent_id/suggest`, (c) => serveSuggest(c, parts, agentParam(parts, c)));
  app.route('/', copilotkitThreadRoutes(parts, COPILOTKIT_BASE));
  app.route('/', copilotkitThreadReads(parts, COPILOTKIT_BASE));
  // The single route (the client's `transport: "single"`, and its fallback when `GET /info` fails).
  app.post(COPILOTKIT_BASE, async (c) => {
    const parsed = EnvelopeSchema.safeParse(await readJson(c));
    if (!parsed.success) throw new HttpError(400, 'invalid_request', `method: one of ${METHODS.join(', ')}`, 'method');
    const { method, params, body } = parsed.data;
    if (method === 'info') return c.json(infoOf(parts));
    const agentId = params?.agentId ?? '';
    if (!parts.runtime.agentIds().includes(agentId)) throw new HttpError(404, 'agent_not_found', `agent not found: ${agentId}`, 'params.agentId');
    switch (method) {
      case 'agent/run':
        return serveAgUi(c, parts, options.heartbeatMs, { agentId }, { value: body });
      case 'agent/connect':
        return connect(parts, agentId, body);
      case 'agent/stop':
        return c.json(await stop(parts, params?.threadId ?? '', 'params.threadId'), 202);
      default:
        return unreachable(method);
    }
  });
  return app;
}

/** The agent a route names: one this server runs, else 404. */
function agentParam(parts: ServerParts, c: Context): string {
  const id = c.req.param('agent_id') ?? '';
  if (!parts.runtime.agentIds().includes(id)) throw new HttpError(404, 'agent_not_found', `agent not found: ${id}`, 'agent_id');
  return id;
}

/**
 * Whether an agent draws A2UI v0.9 surfaces: it is offered a tool that reports them — the
 * generative-ui plugin's, unless its settings merged with the agent's section say v0.8, or one's own.
 */
function drawsA2uiV09(parts: ServerParts, id: string): boolean {
  const resolved = parts.runtime.resolve(id);
  if (!resolved.ok) return false;
  for (const tool of resolved.value.tools.values()) if (tool.activityTypes?.includes(A2UI_SURFACE_ACTIVITY) === true) return true;
  return false;
}

/**
 * What `/info` says: the agents by id (an agent reached only as a delegate is not one a page runs),
 * SSE, `/suggest` served (the client asks it only over the routes, not the single one: there it runs
 * the agent itself), and the thread routes served (the client reads `threadEndpoints`, not the single
 * route's `singleRoute`, which is not offered: its thread requests come to `/threads` as they are),
 * `a2ui` naming the agents that draw A2UI v0.9, and `openGenerativeUIEnabled` when an agent runs
 * the Open Generative UI plugin.
 */
function infoOf(parts: ServerParts): JsonValue {
  const agents: Record<string, JsonValue> = {};
  let openGenerativeUi = false;
  const a2ui: string[] = [];
  for (const id of parts.runtime.agentIds()) {
    const spec = parts.runtime.registries.agents.get(id);
    if (spec === undefined || spec.endpoint !== undefined) continue;
    agents[id] = { name: id, description: displayDescription(spec), capabilities: { humanInTheLoop: true } };
    openGenerativeUi ||= spec.plugin_ids.includes(OPEN_GENERATIVE_UI_PLUGIN_ID);
    if (drawsA2uiV09(parts, id)) a2ui.push(id);
  }
  return {
    agents,
    mode: 'sse',
    suggestions: true,
    threadEndpoints: { ...THREAD_ENDPOINTS },
    // The page renders `a2ui-surface` activities (and tells those agents its catalog) only when told
    // an agent here draws them; it declares its `generateSandboxedUi` tool only when told an agent
    // streams it (a flag of the whole runtime in CopilotKit's `/info`).
    ...(a2ui.length > 0 ? { a2ui: { enabled: true, agents: a2ui } } : {}),
    ...(openGenerativeUi ? { openGenerativeUIEnabled: true } : {}),
  };
}

/**
 * What a page opening a thread aligns to (seed 001 §7.3: the server's history is the history):
 * `MESSAGES_SNAPSHOT` of the thread and `STATE_SNAPSHOT` of the keys its agent shares, between
 * `RUN_STARTED` and `RUN_FINISHED`; a thread the caller cannot reach, or that does not exist yet,
 * is an empty one.
 */
async function connect(parts: ServerParts, agentId: string, raw: unknown): Promise<Response> {
  const parsed = ConnectSchema.safeParse(raw);
  if (!parsed.success) throw new HttpError(400, 'invalid_request', 'threadId: a connect names the thread it opens', 'threadId');
  const threadId = parsed.data.threadId;
  if (!isValidId(threadId)) throw new HttpError(400, 'invalid_id', 'invalid thread id', 'threadId');
  const reachable = await mayReach(parts.store, threadId, 'read');
  const thread = reachable ? await parts.store.loadThread(threadId) : undefined;
  const snapshot = sharedOf(thread?.threadState?.extensions ?? {}, agentSpecOf(parts, agentId)?.client_state ?? []);
  const runId = parsed.data.runId ?? parts.runtime.env.ids.next('run');
  // A paused thread: the calls its run waits on are shown with the assistant message that made them
  // (threadView), and the interrupts to answer (a client's call among them
  // only beside another; alone, the page runs it as it would have).
  const waiting = reachable ? ((await parts.registry.waitingAnywhere(threadId))?.calls ?? []) : [];
  const asked = waiting.filter((w) => w.suspension?.action !== CLIENT_TOOL_ACTION);
  const outcome: JsonValue =
    asked.length === 0
      ? { type: 'success' }
      : { type: 'interrupt', interrupts: [...asked, ...waiting.filter((w) => !asked.includes(w))].map(waitingInterrupt) };
  const events: AgUiEvent[] = [
    { type: 'RUN_STARTED', threadId, runId },
    { type: 'MESSAGES_SNAPSHOT', messages: toAgUiMessages(threadView(thread, waiting)) as JsonValue[] },
    { type: 'STATE_SNAPSHOT', snapshot },
    { type: 'RUN_FINISHED', threadId, runId, outcome },
  ];
  return new Response(frameAgUi(events), { headers: { ...AG_UI_STREAM_HEADERS } });
}

/** The thread's interrupt (the client does not abort its own stream, so the server ends the run). */
function stop(parts: ServerParts, threadId: string, field: string): ReturnType<typeof interruptThread> {
  if (!isValidId(threadId)) throw new HttpError(400, 'invalid_id', 'invalid thread id', field);
  return interruptThread(parts.store, parts.registry, parts.runtime.env.clock.now(), threadId);
}
