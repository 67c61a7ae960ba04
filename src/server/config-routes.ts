import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { AgentSpecSchema, WrittenAgentSpecSchema } from '../contract/agent-spec.ts';
import { fieldIssues } from '../contract/issue-line.ts';
import { JsonObjectSchema, type JsonValue } from '../contract/json.ts';
import { aiSdkExecutor } from '../providers/ai-sdk.ts';
import type { LlmExecutor } from '../runtime/llm.ts';
import { ModelEntrySchema, type ModelEntry, type Registries } from '../runtime/resolve.ts';
import { isValidId } from '../runtime/store.ts';
import { OutboundGuard, OutboundRefusal, operatorOutbound, originOf as originOfUrl } from '../runtime/outbound.ts';
import { agentRoutes, pageOf } from './config-agents.ts';
import { bearerCheck, bodyOf, HttpError, type ServerParts } from './http-support.ts';
import { connectMcpServer, McpHttpServerSchema, type McpToolSource } from '../plugins/mcp-tools.ts';
import {
  bindingProblem,
  credentialOriginsOf,
  credentialUsesOf,
  credentialValuesOf,
  DEFAULT_ANTHROPIC_KEY_ENV,
  envFieldProblem,
  redactConfig,
  SERVER_CREDENTIAL_ENVS,
  urlFieldsOf,
} from './config-guard.ts';
import { hideUrlCredentials, REDACTED, silentLogger, type Logger, type SecretValues } from './log.ts';

/** A model id's provider and provider-side name, and its limits (book: ModelSpec). */
export const ModelConfigSchema = ModelEntrySchema;

/** A provider the server can build. Secrets never go in the config: `api_key_env` names the variable. */
export const ProviderConfigSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('openai-compatible'), base_url: z.string().url(), api_key_env: z.string().min(1).optional() }).strict(),
  z.object({ kind: z.literal('anthropic'), api_key_env: z.string().min(1).optional(), base_url: z.string().url().optional() }).strict(),
]);
export type ProviderConfig = z.infer<typeof ProviderConfigSchema>;

/** HTTP only: a config write must never start a program (stdio servers are connected from code). */
export const McpServerConfigSchema = McpHttpServerSchema;

const NAMESPACES = {
  agents: WrittenAgentSpecSchema,
  models: ModelConfigSchema,
  providers: ProviderConfigSchema,
  'mcp-servers': McpServerConfigSchema,
} as const satisfies Record<string, z.ZodType>;
type Namespace = keyof typeof NAMESPACES;

/** The `id` of a create request (`POST /v1/config/:namespace`); the rest is the namespace's to validate. */
const CreateIdSchema = z.looseObject({ id: z.string({ error: (issue) => (issue.input === undefined ? 'required' : 'must be a string') }) });

/**
 * A namespace's schema as JSON Schema (2020-12), for what a writer sends: defaults make fields
 * optional, and a JSON object field (`sections`, an endpoint's `options`) is an object.
 */
function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    override: (ctx) => {
      if ((ctx.zodSchema as unknown) === JsonObjectSchema) ctx.jsonSchema.type = 'object';
    },
  }) as Record<string, unknown>;
}

/** Each namespace's JSON Schema, built when first asked for. */
const SCHEMAS = new Map<Namespace, Record<string, unknown>>();
function schemaOf(ns: Namespace): Record<string, unknown> {
  const known = SCHEMAS.get(ns);
  if (known !== undefined) return known;
  const built = jsonSchemaOf(NAMESPACES[ns] as z.ZodType);
  SCHEMAS.set(ns, built);
  return built;
}

/** The names `api_key_env` may take when none are configured: provider keys, not any secret of the process. */
export const DEFAULT_API_KEY_ENV_ALLOW: readonly string[] = ['*_API_KEY'];

/** What follows the refusal of a loopback or private address in a config write. */
export const CONFIG_API_PRIVATE_HINT =
  ": config writes reach loopback and private addresses only at the origins of the server's config file, or with server.outbound.config_api_private: true";

/**
 * Builds an executor for a configured provider (the model name comes with each request); its
 * requests go through `fetchImpl` (default: the operator's outbound guard).
 */
export function providerOf(config: ProviderConfig, env: NodeJS.ProcessEnv, fetchImpl: typeof fetch = operatorOutbound.fetch): LlmExecutor {
  // The key is always given, from the variable the config names (or ANTHROPIC_API_KEY for an
  // anthropic provider without one: what the guard checks): an SDK left without one reads the
  // process environment itself, past every check of where a key may go.
  const variable = config.api_key_env ?? (config.kind === 'anthropic' ? DEFAULT_ANTHROPIC_KEY_ENV : undefined);
  const key = variable !== undefined ? (env[variable] ?? '') : undefined;
  if (config.kind === 'anthropic') {
    const anthropic = createAnthropic({ apiKey: key ?? '', ...(config.base_url !== undefined ? { baseURL: config.base_url } : {}), fetch: fetchImpl });
    // The facts name where requests go: the configured URL, else the one the SDK reads itself, else its default.
    const baseURL = config.base_url ?? env['ANTHROPIC_BASE_URL'] ?? 'https://api.anthropic.com/v1';
    return perModel((name) => aiSdkExecutor(anthropic(name), { baseURL }));
  }
  const openai = createOpenAICompatible({
    name: 'configured',
    baseURL: config.base_url,
    ...(key !== undefined ? { apiKey: key } : {}),
    includeUsage: true,
    fetch: fetchImpl,
  });
  return perModel((name) => aiSdkExecutor(openai(name), { providerName: 'openai', baseURL: config.base_url }));
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

/** What config writes may make the server send (docs/server.md → Outbound settings). */
export interface ConfigGuardOptions {
  /** The guard every URL a write names is checked by and reached through (default: loopback and private addresses refused). */
  readonly outbound?: OutboundGuard;
  /** Where each credential variable may be sent (URLs, by variable), besides the providers' own hosts: the pairings of the operator's config. */
  readonly credentialOrigins?: Readonly<Record<string, readonly string[]>>;
  /** Variables holding the server's own credentials, never named by a `*_env` field (default `SERVER_CREDENTIAL_ENVS`). */
  readonly ownCredentialEnvs?: readonly string[];
  /** Told of every credential a write names (its value, or the value of its variable): no log line shows them. */
  readonly secrets?: SecretValues;
}

/** The configuration documents, by namespace and id. */
export type ConfigDocs = { [N in Namespace]: Record<string, JsonValue> };
const PROFILE_OWNER = '__config';

/** Why an MCP server could not be connected, in words of this server's own: nothing the target answered is repeated. */
function mcpFailure(e: unknown): string {
  if (e instanceof OutboundRefusal) return e.reason;
  const within = / did not answer within (\d+) ms$/.exec(e instanceof Error ? e.message : '');
  if (within !== null) return `it did not answer within ${within[1]} ms`;
  for (let c: unknown = e, i = 0; c instanceof Error && i < 5; c = c.cause, i++) {
    if (c instanceof OutboundRefusal) return c.reason;
    const code = (c as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return `cannot connect (${code})`;
  }
  const status = (e as { code?: unknown }).code;
  if (typeof status === 'number' && status >= 300 && status <= 599) return `it answered HTTP ${status}, not as an MCP server`;
  return 'it did not answer as an MCP server';
}

/**
 * `/v1/capabilities`, `/v1/config/*` (book: Config 与 Capabilities) and `/v1/agents`: reads are open
 * (a namespace's documents, its JSON Schema, the agents the runtime runs); writes — create, replace,
 * delete — need `Authorization: Bearer <admin token>` (401 without it, and always when no token is
 * configured), are validated with the namespace's schema, then published — the runtime's
 * registries are replaced only when every agent still resolves — and persisted in the store's
 * profiles, one write at a time.
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
    /** The MCP servers the server's own configuration connected (listed beside those of config writes). */
    readonly mcpServers?: readonly string[];
    /** Told of a saved document left out at start. */
    readonly logger?: Logger;
    /** Why writes are refused (409), when they are. */
    readonly writesRefused?: string;
  } & ConfigGuardOptions,
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

  const processEnv = options.env ?? process.env;
  const outbound = options.outbound ?? new OutboundGuard({ privateAddresses: 'trusted', privateHint: CONFIG_API_PRIVATE_HINT });
  const allow = options.apiKeyEnvAllow ?? DEFAULT_API_KEY_ENV_ALLOW;
  const own = options.ownCredentialEnvs ?? SERVER_CREDENTIAL_ENVS;
  const origins = credentialOriginsOf(
    Object.entries(options.credentialOrigins ?? {}).flatMap(([variable, urls]) => urls.map((url) => ({ field: '', variable, url }))),
    processEnv,
  );

  /** The first thing a document may not make the server send, named by its field, found without the network. */
  const credentialProblem = (ns: Namespace, doc: unknown): { readonly field: string; readonly message: string } | undefined => {
    if (ns === 'models') return undefined;
    for (const use of credentialUsesOf(ns, doc)) {
      const problem = envFieldProblem(use.variable, allow, own) ?? bindingProblem(use, origins);
      if (problem !== undefined) return { field: use.field, message: problem };
    }
    return undefined;
  };
  /** The first URL of a document the guard refuses without resolving it (a scheme, an address). */
  const staticUrlProblem = (ns: Namespace, doc: unknown): { readonly field: string; readonly message: string } | undefined => {
    if (ns === 'models') return undefined;
    for (const { field, url } of urlFieldsOf(ns, doc)) {
      const verdict = outbound.checkStatic(url);
      if (!verdict.ok) return { field, message: verdict.reason };
    }
    return undefined;
  };
  /** The credentials a document names, for the log's scrubbing. */
  const remember = (doc: unknown, ns: Namespace): void => {
    if (ns === 'models') return;
    options.secrets?.add(...credentialValuesOf(ns, doc, processEnv));
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
    for (const [id, p] of Object.entries(d.providers)) providers.set(id, providerOf(ProviderConfigSchema.parse(p), processEnv, outbound.fetch));
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
        next.set(id, { url, source: await connectMcpServer(id, url, options.version ?? '0.0.0', options.mcpConnectTimeoutMs ?? 10_000, outbound.fetch) });
      } catch (e) {
        throw new HttpError(400, 'config_rejected', `cannot reach MCP server '${id}' at ${hideUrlCredentials(url)}: ${mcpFailure(e)}`);
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
    for (const ns of Object.keys(NAMESPACES) as Namespace[]) {
      const saved: Record<string, JsonValue> = {};
      // A saved document is held to today's rules: one the allow-list, the credential pairings or the guard now refuse is left out.
      for (const [id, doc] of Object.entries(options.saved[ns] ?? {})) {
        const problem = credentialProblem(ns, doc) ?? staticUrlProblem(ns, doc);
        if (problem !== undefined)
          (options.logger ?? silentLogger).warn('saved config entry left out', { namespace: ns, id, field: problem.field, reason: problem.message });
        else {
          saved[id] = doc;
          remember(doc, ns);
        }
      }
      merged[ns] = { ...docs[ns], ...saved };
    }
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
      mcp_servers: [...new Set([...(options.mcpServers ?? []), ...Object.keys(docs['mcp-servers'])])].sort(),
      protocols: ['ai-sdk-v6', 'ag-ui', 'a2a', 'mcp'],
      store: store.kind,
      config_writes: options.adminToken !== undefined && options.adminToken !== '' && options.writesRefused === undefined,
    });
  });

  // Reads show no credential to anyone; the names of the variables holding them only to the admin token.
  const shown = (c: Context, value: JsonValue): JsonValue =>
    redactConfig(value, { names: options.adminToken !== undefined && options.adminToken !== '' && bearerCheck(c, options.adminToken) === 'ok' });
  app.get('/v1/config/:namespace', (c) => {
    const ns = namespaceOf(c);
    const { offset, limit } = pageOf(c);
    const entries = Object.entries(docs[ns]).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const items = entries.slice(offset, offset + limit).map(([id, v]) => ({ id, value: shown(c, v) }));
    return c.json({ namespace: ns, items, offset, limit, total: entries.length, has_more: offset + items.length < entries.length });
  });
  /** What a document of the namespace may be (the schema writes are validated with), as JSON Schema 2020-12. */
  app.get('/v1/config/:namespace/$schema', (c) => c.json(schemaOf(namespaceOf(c))));
  app.get('/v1/config/:namespace/:id', (c) => {
    const ns = namespaceOf(c);
    const id = c.req.param('id') ?? '';
    if (!Object.hasOwn(docs[ns], id)) throw new HttpError(404, 'not_found', `no ${ns} entry: ${id}`);
    return c.json({ id, value: shown(c, docs[ns][id] as JsonValue) });
  });
  /**
   * A create request's id and document, validated with the namespace's schema (the one PUT uses):
   * the whole body for an agent, the body without `id` for the others. 400 naming the field.
   */
  const createBodyOf = async (c: Context, ns: Namespace): Promise<{ readonly id: string; readonly value: Record<string, JsonValue> }> => {
    const { id, ...rest } = await bodyOf(c, CreateIdSchema);
    if (!isValidId(id)) throw new HttpError(400, 'invalid_id', 'invalid config id', 'id');
    const parsed = (NAMESPACES[ns] as z.ZodType).safeParse(ns === 'agents' ? { id, ...rest } : rest);
    if (!parsed.success) {
      const [first] = fieldIssues(parsed.error);
      const field = first === undefined || first.path.length === 0 ? '(body)' : first.path.map(String).join('.');
      throw new HttpError(400, 'invalid_request', `${field}: ${first?.message ?? 'invalid'}`, field);
    }
    return { id, value: parsed.data as Record<string, JsonValue> };
  };
  /**
   * Config writes, one at a time: each decides on the documents the one before it left — a
   * create's conflict, a document built on another — though it waits on the network (the outbound
   * guard's checks, an MCP server's connection) before it publishes.
   */
  let writing: Promise<unknown> = Promise.resolve();
  const serially = <T>(work: () => Promise<T>): Promise<T> => {
    const done = writing.then(work);
    writing = done.catch(() => undefined);
    return done;
  };
  const writable = (): void => {
    if (options.writesRefused !== undefined) throw new HttpError(409, 'config_writes_refused', options.writesRefused);
  };
  /**
   * Validates a document for `ns`/`id` as every write does, checks what it would make the server
   * send, then publishes and saves it: PUT and POST share it, so both take the same documents.
   */
  const write = async (ns: Namespace, id: string, value: Record<string, JsonValue>): Promise<Record<string, JsonValue>> => {
    if (ns === 'agents' && value['id'] !== id) throw new HttpError(400, 'invalid_request', 'id: must equal the id in the path', 'id');
    // Credentials first (no network), then every URL against the guard (host names resolved; nothing connects).
    const credential = credentialProblem(ns, value);
    if (credential !== undefined) throw new HttpError(400, 'invalid_request', `${credential.field}: ${credential.message}`, credential.field);
    if (ns !== 'models') {
      for (const { field, url } of urlFieldsOf(ns, value)) {
        const verdict = await outbound.check(url);
        if (!verdict.ok) throw new HttpError(400, 'outbound_refused', `${field}: ${verdict.reason}`, field);
      }
    }
    remember(value, ns);
    await change(ns, id, value as JsonValue);
    // An MCP server is connected by the write itself (its tools listed): the answer says so.
    const tools = ns === 'mcp-servers' ? (mcp.get(id)?.source.tools ?? []).map((t) => t.descriptor.id).sort() : undefined;
    return { id, value: redactConfig(value, { names: true }), ...(tools !== undefined ? { connected: true, tools } : {}) };
  };
  app.put('/v1/config/:namespace/:id', async (c) => {
    authorize(c);
    writable();
    const ns = namespaceOf(c);
    const id = c.req.param('id') ?? '';
    if (!isValidId(id)) throw new HttpError(400, 'invalid_id', 'invalid config id', 'id');
    const value = (await bodyOf(c, NAMESPACES[ns] as z.ZodType)) as Record<string, JsonValue>;
    return c.json(await serially(() => write(ns, id, keepToken(ns, id, value))));
  });
  /**
   * Creates an entry: the body is the document with its `id` (an agent's own field; beside the
   * document in the other namespaces), 201 with `Location`, 409 when the id is taken.
   */
  app.post('/v1/config/:namespace', async (c) => {
    authorize(c);
    writable();
    const ns = namespaceOf(c);
    const { id, value } = await createBodyOf(c, ns);
    const written = await serially(() => {
      if (Object.hasOwn(docs[ns], id))
        throw new HttpError(409, 'config_conflict', `${ns} entry already exists: ${id} (PUT /v1/config/${ns}/${id} replaces it)`, 'id');
      return write(ns, id, keepToken(ns, id, value));
    });
    // Relative to the request's own URL, so it is right under any mount path.
    c.header('Location', `${ns}/${encodeURIComponent(id)}`);
    return c.json(written, 201);
  });
  /**
   * A remote agent's `token: "[redacted]"` (what a read shows) keeps the token the agent has, when it
   * is sent to the same origin; a read, changed and written back, so keeps working.
   */
  const keepToken = (ns: Namespace, id: string, value: Record<string, JsonValue>): Record<string, JsonValue> => {
    const endpoint = value['endpoint'] as Record<string, JsonValue> | undefined;
    const auth = endpoint?.['auth'] as Record<string, JsonValue> | undefined;
    if (ns !== 'agents' || auth?.['token'] !== REDACTED) return value;
    const before = (docs.agents[id] as { endpoint?: { base_url?: unknown; auth?: { token?: unknown } } } | undefined)?.endpoint;
    const same =
      typeof before?.base_url === 'string' && typeof endpoint?.['base_url'] === 'string' && originOfUrl(before.base_url) === originOfUrl(endpoint['base_url']);
    if (!same || typeof before?.auth?.token !== 'string') {
      throw new HttpError(
        400,
        'invalid_request',
        `endpoint.auth.token: '${REDACTED}' stands for the token agent '${id}' has, and it has none for ${String(endpoint?.['base_url'])}`,
        'endpoint.auth.token',
      );
    }
    return { ...value, endpoint: { ...endpoint, auth: { ...auth, token: before.auth.token } } };
  };

  app.delete('/v1/config/:namespace/:id', async (c) => {
    authorize(c);
    writable();
    const ns = namespaceOf(c);
    const id = c.req.param('id') ?? '';
    await serially(async () => {
      if (!Object.hasOwn(docs[ns], id)) throw new HttpError(404, 'not_found', `no ${ns} entry: ${id}`);
      await change(ns, id, undefined);
    });
    return c.body(null, 204);
  });
  app.route('/', agentRoutes(runtime));
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
