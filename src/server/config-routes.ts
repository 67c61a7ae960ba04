import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { AgentSpecSchema } from '../contract/agent-spec.ts';
import type { JsonValue } from '../contract/json.ts';
import { aiSdkExecutor } from '../providers/ai-sdk.ts';
import type { LlmExecutor } from '../runtime/llm.ts';
import type { ModelEntry, Registries } from '../runtime/resolve.ts';
import { isValidId } from '../runtime/store.ts';
import { bearerCheck, bodyOf, HttpError, type ServerParts } from './http-support.ts';
import { connectMcpServer, McpHttpServerSchema, type McpToolSource } from '../plugins/mcp-tools.ts';

/** A model id's provider and provider-side name, and its limits (book: ModelSpec). */
export const ModelConfigSchema = z
  .object({
    provider: z.string().min(1),
    model_name: z.string().min(1),
    context_window: z.number().int().positive().optional(),
    max_output_tokens: z.number().int().positive().optional(),
  })
  .strict();

/** A provider the server can build. Secrets never go in the config: `api_key_env` names the variable. */
export const ProviderConfigSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('openai-compatible'), base_url: z.string().url(), api_key_env: z.string().min(1).optional() }).strict(),
  z.object({ kind: z.literal('anthropic'), api_key_env: z.string().min(1).optional(), base_url: z.string().url().optional() }).strict(),
]);
export type ProviderConfig = z.infer<typeof ProviderConfigSchema>;

/** HTTP only: a config write must never start a program (stdio servers are connected from code). */
export const McpServerConfigSchema = McpHttpServerSchema;

const NAMESPACES = {
  agents: AgentSpecSchema,
  models: ModelConfigSchema,
  providers: ProviderConfigSchema,
  'mcp-servers': McpServerConfigSchema,
} as const satisfies Record<string, z.ZodType>;
type Namespace = keyof typeof NAMESPACES;

/** The names `api_key_env` may take when none are configured: provider keys, not any secret of the process. */
export const DEFAULT_API_KEY_ENV_ALLOW: readonly string[] = ['*_API_KEY'];

/**
 * Whether an environment variable name matches one of the allow-list's patterns (`*` stands for any
 * run of letters, digits and `_`; the rest matches exactly). A config write can then not point a
 * provider at the admin token, a database URL or any other secret the server holds.
 */
export function apiKeyEnvAllowed(name: string, patterns: readonly string[] = DEFAULT_API_KEY_ENV_ALLOW): boolean {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return false;
  return patterns.some((p) => new RegExp(`^${p.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[A-Za-z0-9_]*')}$`).test(name));
}

/** Builds an executor for a configured provider (the model name comes with each request). */
export function providerOf(config: ProviderConfig, env: NodeJS.ProcessEnv): LlmExecutor {
  const key = config.api_key_env !== undefined ? env[config.api_key_env] : undefined;
  if (config.kind === 'anthropic') {
    const anthropic = createAnthropic({ ...(key !== undefined ? { apiKey: key } : {}), ...(config.base_url !== undefined ? { baseURL: config.base_url } : {}) });
    return perModel((name) => aiSdkExecutor(anthropic(name)));
  }
  const openai = createOpenAICompatible({ name: 'configured', baseURL: config.base_url, ...(key !== undefined ? { apiKey: key } : {}), includeUsage: true });
  return perModel((name) => aiSdkExecutor(openai(name)));
}

/** An executor choosing the AI SDK model by the request's model name. */
function perModel(make: (name: string) => LlmExecutor): LlmExecutor {
  const cache = new Map<string, LlmExecutor>();
  return {
    name: 'configured',
    stream: (request) => {
      let e = cache.get(request.model);
      if (e === undefined) {
        e = make(request.model);
        cache.set(request.model, e);
      }
      return e.stream(request);
    },
  };
}

/** The configuration documents, by namespace and id. */
export type ConfigDocs = { [N in Namespace]: Record<string, JsonValue> };
const PROFILE_OWNER = '__config';

/**
 * `/v1/capabilities` and `/v1/config/*` (book: Config 与 Capabilities): reads are open; writes need
 * `Authorization: Bearer <admin token>` (401 without it, and always when no token is configured),
 * are validated with the namespace's schema, then published — the runtime's registries are replaced
 * only when every agent still resolves — and persisted in the store's profiles.
 */
export function configRoutes(
  parts: ServerParts,
  options: {
    readonly adminToken?: string;
    readonly env?: NodeJS.ProcessEnv;
    readonly base: Registries;
    readonly saved?: Partial<ConfigDocs>;
    readonly version?: string;
    /** Patterns `api_key_env` must match (default `DEFAULT_API_KEY_ENV_ALLOW`). */
    readonly apiKeyEnvAllow?: readonly string[];
    /** How long an MCP server may take to answer its connection (default 10 s). */
    readonly mcpConnectTimeoutMs?: number;
  },
): Hono {
  const { runtime, store } = parts;
  const app = new Hono();
  const docs: ConfigDocs = { agents: {}, models: {}, providers: {}, 'mcp-servers': {} };
  for (const [id, spec] of options.base.agents) docs.agents[id] = spec as unknown as JsonValue;
  for (const [id, m] of options.base.models) docs.models[id] = m as unknown as JsonValue;

  const namespaceOf = (c: Context): Namespace => {
    const ns = c.req.param('namespace') ?? '';
    if (!(ns in NAMESPACES)) throw new HttpError(404, 'not_found', `unknown config namespace: ${ns} (agents, models, providers, mcp-servers)`);
    return ns as Namespace;
  };

  const authorize = (c: Context): void => {
    const token = options.adminToken;
    if (token === undefined || token === '') throw new HttpError401('admin authentication is not configured (set AWAKEN_ADMIN_TOKEN)');
    const check = bearerCheck(c, token);
    if (check === 'missing') throw new HttpError401('admin authentication required: Authorization: Bearer <token>');
    if (check === 'wrong') throw new HttpError401('invalid admin bearer token');
  };

  /** The registries the documents describe, on top of the server's own (tools, plugins, built-in providers). */
  /** Connected MCP servers, by config id, with the URL they were connected for. */
  const mcp = new Map<string, { readonly url: string; readonly source: McpToolSource }>();

  const registriesOf = (d: ConfigDocs, sources: ReadonlyMap<string, { readonly source: McpToolSource }> = mcp): Registries => {
    const providers = new Map(options.base.providers);
    for (const [id, p] of Object.entries(d.providers)) providers.set(id, providerOf(ProviderConfigSchema.parse(p), options.env ?? process.env));
    const tools = new Map(options.base.tools);
    for (const [id, { source }] of sources) if (Object.hasOwn(d['mcp-servers'], id)) for (const t of source.tools) tools.set(t.descriptor.id, t);
    return {
      ...options.base,
      agents: new Map(Object.entries(d.agents).map(([id, a]) => [id, AgentSpecSchema.parse(a)] as const)),
      models: new Map(Object.entries(d.models).map(([id, m]) => [id, ModelConfigSchema.parse(m) as ModelEntry] as const)),
      providers,
      tools,
    };
  };

  /** Connects the MCP servers the documents name (and not yet connected for that URL). */
  const connectAll = async (d: ConfigDocs): Promise<Map<string, { readonly url: string; readonly source: McpToolSource }>> => {
    const next = new Map(mcp);
    for (const [id, raw] of Object.entries(d['mcp-servers'])) {
      const { url } = McpServerConfigSchema.parse(raw);
      if (next.get(id)?.url === url) continue;
      try {
        next.set(id, { url, source: await connectMcpServer(id, url, options.version ?? '0.0.0', options.mcpConnectTimeoutMs ?? 10_000) });
      } catch (e) {
        throw new HttpError(400, 'config_rejected', `cannot reach MCP server '${id}' at ${url}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    for (const id of [...next.keys()]) if (!Object.hasOwn(d['mcp-servers'], id)) next.delete(id);
    return next;
  };

  const change = async (ns: Namespace, id: string, value: JsonValue | undefined): Promise<void> => {
    const next: ConfigDocs = { ...docs, [ns]: { ...docs[ns] } };
    if (value === undefined) delete next[ns][id];
    else next[ns][id] = value;
    const sources = ns === 'mcp-servers' ? await connectAll(next) : mcp;
    const published = runtime.publish(registriesOf(next, sources));
    if (!published.ok) throw new HttpError(400, 'config_rejected', 'message' in published.error ? String(published.error.message) : published.error.code);
    for (const [sid, entry] of mcp) if (sources.get(sid) !== entry) void entry.source.close().catch(() => undefined);
    mcp.clear();
    for (const [sid, entry] of sources) mcp.set(sid, entry);
    docs[ns] = next[ns];
    await store.write(PROFILE_OWNER, ns, docs[ns]);
  };

  // Configuration saved by earlier writes is published on top of the server's own, when it still resolves;
  // saved MCP servers are connected in the background and their tools published once they answer.
  if (options.saved !== undefined) {
    const merged: ConfigDocs = { ...docs };
    for (const ns of Object.keys(NAMESPACES) as Namespace[]) merged[ns] = { ...docs[ns], ...(options.saved[ns] ?? {}) };
    try {
      if (runtime.publish(registriesOf(merged)).ok) Object.assign(docs, merged);
    } catch {
      // A saved document that no longer parses is left out; the server's own configuration stands.
    }
    if (Object.keys(docs['mcp-servers']).length > 0) {
      void connectAll(docs)
        .then((sources) => {
          if (runtime.publish(registriesOf(docs, sources)).ok) for (const [sid, entry] of sources) mcp.set(sid, entry);
        })
        .catch(() => undefined);
    }
  }

  app.get('/v1/capabilities', (c) => {
    const r = runtime.registries;
    return c.json({
      agents: [...r.agents.keys()].sort(),
      models: [...r.models.keys()].sort(),
      providers: [...r.providers.keys()].sort(),
      tools: [...r.tools.keys()].sort(),
      plugins: [...r.plugins.keys()].sort(),
      mcp_servers: Object.keys(docs['mcp-servers']).sort(),
      protocols: ['ai-sdk-v6', 'ag-ui', 'a2a', 'mcp'],
      store: store.kind,
      config_writes: options.adminToken !== undefined && options.adminToken !== '',
    });
  });

  app.get('/v1/config/:namespace', (c) => {
    const ns = namespaceOf(c);
    return c.json({ namespace: ns, items: Object.entries(docs[ns]).map(([id, v]) => ({ id, value: v })) });
  });
  app.get('/v1/config/:namespace/:id', (c) => {
    const ns = namespaceOf(c);
    const id = c.req.param('id') ?? '';
    if (!Object.hasOwn(docs[ns], id)) throw new HttpError(404, 'not_found', `no ${ns} entry: ${id}`);
    return c.json({ id, value: docs[ns][id] });
  });
  app.put('/v1/config/:namespace/:id', async (c) => {
    authorize(c);
    const ns = namespaceOf(c);
    const id = c.req.param('id') ?? '';
    if (!isValidId(id)) throw new HttpError(400, 'invalid_id', 'invalid config id', 'id');
    const value = (await bodyOf(c, NAMESPACES[ns] as z.ZodType)) as Record<string, JsonValue>;
    const keyEnv = value['api_key_env'];
    const allow = options.apiKeyEnvAllow ?? DEFAULT_API_KEY_ENV_ALLOW;
    if (ns === 'providers' && typeof keyEnv === 'string' && !apiKeyEnvAllowed(keyEnv, allow)) {
      throw new HttpError(400, 'invalid_request', `api_key_env: '${keyEnv}' is not an allowed key variable (allowed: ${allow.join(', ')})`, 'api_key_env');
    }
    if (ns === 'agents' && value['id'] !== id) throw new HttpError(400, 'invalid_request', 'id: must equal the id in the path', 'id');
    await change(ns, id, value as JsonValue);
    return c.json({ id, value });
  });
  app.delete('/v1/config/:namespace/:id', async (c) => {
    authorize(c);
    const ns = namespaceOf(c);
    const id = c.req.param('id') ?? '';
    if (!Object.hasOwn(docs[ns], id)) throw new HttpError(404, 'not_found', `no ${ns} entry: ${id}`);
    await change(ns, id, undefined);
    return c.body(null, 204);
  });
  return app;
}

/** The configuration documents saved in a store by earlier writes. */
export async function savedConfig(store: ServerParts['store']): Promise<Partial<ConfigDocs>> {
  const out: Partial<ConfigDocs> = {};
  for (const ns of Object.keys(NAMESPACES) as Namespace[]) {
    const doc = await store.read(PROFILE_OWNER, ns);
    if (doc !== undefined && doc !== null && typeof doc === 'object' && !Array.isArray(doc)) out[ns] = doc as Record<string, JsonValue>;
  }
  return out;
}

/** 401 with the JSON error shape. */
class HttpError401 extends HttpError {
  constructor(message: string) {
    super(401 as never, 'unauthorized', message);
  }
}
