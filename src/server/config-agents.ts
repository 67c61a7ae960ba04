import { Hono, type Context } from 'hono';
import { displayDescription, type AgentSpec } from '../contract/agent-spec.ts';
import type { AgentRuntime } from '../runtime/agent-runtime.ts';
import { HttpError } from './http-support.ts';
import { hideUrlCredentials } from './log.ts';

/**
 * `GET /v1/agents` and `GET /v1/agents/:id`: the agents the server runs now — the server's own, an
 * app's, and those written through the config API — as the runtime resolves them. A summary, not
 * the document (that is `GET /v1/config/agents/:id`): no system prompt, no credential.
 */

/** One agent as the list shows it. */
export interface AgentSummary {
  readonly id: string;
  /** What the agent does: its `description`, else the first line of its prompt, else its id. */
  readonly description: string;
  /** The model registry id it runs on (empty for a remote agent). */
  readonly model: string;
  readonly plugin_ids: readonly string[];
  /** The agents it may delegate to. */
  readonly delegates: readonly string[];
  /** The tools it is offered, after its allow and exclude lists (a local agent's). */
  readonly tools?: readonly string[];
  /** Where a remote agent runs (its URL's credentials hidden). */
  readonly remote?: { readonly backend: string; readonly base_url: string };
}

/** The summary of one agent of the runtime. */
export function agentSummary(runtime: AgentRuntime, spec: AgentSpec): AgentSummary {
  const base = { id: spec.id, description: displayDescription(spec), model: spec.model, plugin_ids: spec.plugin_ids, delegates: spec.delegates };
  if (spec.endpoint !== undefined) return { ...base, remote: { backend: spec.endpoint.backend, base_url: hideUrlCredentials(spec.endpoint.base_url) } };
  // Publishing resolved every local agent; one that no longer does is listed without its tools.
  const resolved = runtime.resolve(spec.id);
  return resolved.ok ? { ...base, tools: [...resolved.value.tools.keys()].sort() } : base;
}

/** `offset` and `limit` of a list (defaults 0 and 50, limit at most 200); garbage is a 400 naming the parameter. */
export function pageOf(c: Context): { readonly offset: number; readonly limit: number } {
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = c.req.query(name);
    if (raw === undefined || raw === '') return fallback;
    if (!/^-?\d{1,15}$/.test(raw)) throw new HttpError(400, 'invalid_query', `${name} must be an integer`, name);
    return Math.min(max, Math.max(min, Number(raw)));
  };
  return { offset: int('offset', 0, 0, Number.MAX_SAFE_INTEGER), limit: int('limit', 50, 1, 200) };
}

/** The agent routes: reads, guarded as the config reads are (any credential the server takes, or none when it takes none). */
export function agentRoutes(runtime: AgentRuntime): Hono {
  const app = new Hono();
  app.get('/v1/agents', (c) => {
    const { offset, limit } = pageOf(c);
    const ids = runtime.agentIds();
    const agents = runtime.registries.agents;
    const items = ids.slice(offset, offset + limit).flatMap((id) => {
      const spec = agents.get(id);
      return spec !== undefined ? [agentSummary(runtime, spec)] : [];
    });
    return c.json({ items, offset, limit, total: ids.length, has_more: offset + items.length < ids.length });
  });
  app.get('/v1/agents/:id', (c) => {
    const id = c.req.param('id') ?? '';
    const spec = runtime.registries.agents.get(id);
    if (spec === undefined) throw new HttpError(404, 'agent_not_found', `agent not found: ${id}`);
    return c.json(agentSummary(runtime, spec));
  });
  return app;
}
