import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { AgentSpecSchema, RunRecoverySchema, WrittenAgentSpecSchema, type AgentSpec, type PluginConfigKey } from '../contract/agent-spec.ts';
import { bracketPath, fieldIssues, type FieldIssue } from '../contract/issue-line.ts';
import { whyUnreadable } from '../contract/unreadable.ts';
import { PLUGIN_CATALOG } from '../plugins/catalog.ts';
import { RUNTIME_CONFIG_KEYS, type RuntimePlugin } from '../runtime/resolve.ts';
import { DEFAULT_API_KEY_ENV_ALLOW, ModelConfigSchema, ProviderConfigSchema } from '../server/config-routes.ts';
import { envFieldProblem, SERVER_CREDENTIAL_ENVS } from '../server/config-guard.ts';
import { operatorOutbound } from '../runtime/outbound.ts';
import { LOG_FORMATS, LOG_LEVELS } from '../server/log.ts';
import { CliFailure, closest } from './args.ts';
import { McpServerConfigSchema } from '../plugins/mcp-tools.ts';
import { EXIT } from './exit.ts';

/** A provider that answers from a script file (docs/scripted-models.md), each conversation from its start. */
export const ScriptedProviderSchema = z.object({ kind: z.literal('scripted'), file: z.string().min(1) }).strict();

/**
 * `awaken serve --config awaken.yaml`: server settings (flags win over them), and agents, models and
 * providers added to the built-in `demo` agent. Keys are read from the environment (`api_key_env`).
 */
/** A sandboxed call's limits, where a config sets them (`skills.scripts`, `tools[].sandbox`); docs/sandbox.md's defaults where not given. */
const SANDBOX_LIMITS = {
  wall_ms: z.number().int().min(1).optional(),
  memory_bytes: z.number().int().min(1).optional(),
  output_bytes: z.number().int().min(1).optional(),
  cpu_seconds: z.number().int().min(1).optional(),
};

export const ServeConfigSchema = z
  .object({
    server: z
      .object({
        port: z.number().int().min(0).max(65535).optional(),
        host: z.string().min(1).optional(),
        store: z.string().min(1).optional(),
        policy: z.enum(['reject', 'supersede']).optional(),
        /** A run a previous process left running: `resume` it from its last durable point (default) or `interrupt` it, as `--recovery`; an agent's own `recovery` wins. */
        recovery: RunRecoverySchema.optional(),
        lease_ms: z.number().int().min(10).optional(),
        sweep_ms: z.number().int().min(10).optional(),
        /** The demo agent's model, as `--model`: `provider:model`, `scripted:FILE` or `transcript:FILE`. */
        model: z
          .string()
          .regex(/^[a-z][a-z0-9-]*:.+/, 'provider:model (openai:gpt-4o-mini), scripted:FILE or transcript:FILE')
          .optional(),
        cors: z
          .object({ origins: z.array(z.string().min(1)).default([]) })
          .strict()
          .optional(),
        allowed_hosts: z.array(z.string().min(1)).optional(),
        /** API tokens, each read from an environment variable and standing for a principal (docs/server.md → Access control). */
        auth: z
          .object({
            tokens: z
              .array(
                z
                  .object({ principal: z.string().min(1).max(200), token_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name') })
                  .strict(),
              )
              .min(1),
          })
          .strict()
          .optional(),
        /** Patterns every `*_env` field that sends a credential (a provider's `api_key_env`, a remote agent's `endpoint.auth.token_env`) must match (default `*_API_KEY`), here and in config writes. */
        api_key_env_allow: z
          .array(z.string().regex(/^[A-Za-z0-9_*]+$/, 'a variable name pattern: letters, digits, _ and *'))
          .min(1)
          .optional(),
        /** What URLs written through the config API may reach: `config_api_private` lets them reach loopback and private addresses (docs/server.md → Outbound settings). */
        outbound: z.object({ config_api_private: z.boolean().optional() }).strict().optional(),
        /** Bytes a stream's client may leave unread before it is dropped (default 1 MiB). */
        max_follower_bytes: z.number().int().min(4096).optional(),
        /** Quiet time (ms) after the last run ended or stream closed before a full collection gives memory back; 0: never (default 1000). */
        idle_gc_ms: z.number().int().min(0).optional(),
        /** An OTLP/HTTP traces endpoint: every agent's spans exported there, its metrics to the same base's /v1/metrics (`--otel`; docs/observability.md). */
        otel: z.url({ protocol: /^https?$/ }).optional(),
        log: z
          .object({ level: z.enum(LOG_LEVELS).optional(), format: z.enum(LOG_FORMATS).optional() })
          .strict()
          .optional(),
        /** Whether X-Forwarded-Host / -Proto name the server's public address (the A2A agent card): only behind a proxy that sets them. */
        trust_proxy: z.boolean().optional(),
        /** How long a connection may take to send a request's headers (default 10000), and the whole request (default 60000). */
        headers_timeout_ms: z.number().int().min(100).optional(),
        request_timeout_ms: z.number().int().min(100).optional(),
        /** Connections held open at once; beyond them a new one is closed at once (default 1000). */
        max_connections: z.number().int().min(1).optional(),
        /** Requests handled at once; one more is answered 503 `overloaded` (default 100; streams count until their response starts). */
        max_concurrent_requests: z.number().int().min(1).optional(),
        /** Frames each thread keeps for a client that reconnects with Last-Event-ID (default 1024). */
        replay_buffer_capacity: z.number().int().min(1).optional(),
        /** SIGINT/SIGTERM: how long the whole shutdown may take before the process exits anyway (default 15). */
        shutdown: z
          .object({ timeout_secs: z.number().int().min(1).max(3600).optional() })
          .strict()
          .optional(),
        /** Whether OpenTelemetry spans carry messages, tool arguments and results (`--otel-content`). */
        otel_content: z.boolean().optional(),
        // The original's per-stream channel of frames has no counterpart here: a stream is bounded by
        // the bytes its client leaves unread. Refused with that said rather than read and ignored.
        sse_buffer_size: z
          .unknown()
          .refine(() => false, { message: 'not read by this server: a stream is bounded by the bytes its client leaves unread (server.max_follower_bytes)' })
          .optional(),
      })
      .strict()
      .default({}),
    /** MCP servers whose tools the agents are offered (`mcp__<server>__<tool>`): a URL, or a command to start over stdio (relative to the config file). */
    mcp_servers: z.record(z.string().regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and -'), McpServerConfigSchema).optional(),
    /** Directories of skills (each skill a directory with its SKILL.md), for agents naming skills-discovery; and what a run may read of their resources. */
    skills: z
      .object({
        dirs: z.array(z.string().min(1)).min(1).optional(),
        /** The largest resource a read returns (default 262144 bytes). */
        max_resource_bytes: z.number().int().min(1).optional(),
        /** How many resources a run may read (default 16). */
        max_resource_reads: z.number().int().min(1).optional(),
        /** Present: the skills' scripts run in the sandbox (`skill_script`), under these limits (docs/sandbox.md's defaults where not given). */
        scripts: z.object(SANDBOX_LIMITS).strict().optional(),
      })
      .strict()
      .optional(),
    /**
     * Tools the config registers, each on the sandbox (a config has no code to run beside the
     * runtime): `command` is run contained, its arguments (checked by `parameters`, a JSON Schema) as
     * JSON on stdin; a path starting `./` or `../` is relative to the config file.
     */
    tools: z
      .array(
        z
          .object({
            id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and -, at most 64'),
            description: z.string().min(1),
            parameters: z.record(z.string(), z.unknown()).default({ type: 'object' }),
            sandbox: z.object({ command: z.array(z.string().min(1)).min(1), ...SANDBOX_LIMITS }).strict(),
          })
          .strict(),
      )
      .optional(),
    /** The mailbox's timing and retries (book: MailboxConfig); each key set wins over what `server.lease_ms` and `server.sweep_ms` derive. */
    mailbox: z
      .object({
        lease_ms: z.number().int().min(1).optional(),
        suspended_lease_ms: z.number().int().min(1).optional(),
        lease_renewal_interval_ms: z.number().int().min(1).optional(),
        sweep_interval_ms: z.number().int().min(1).optional(),
        gc_interval_ms: z.number().int().min(1).optional(),
        gc_ttl_ms: z.number().int().min(1).optional(),
        default_max_attempts: z.number().int().min(1).optional(),
        default_retry_delay_ms: z.number().int().min(0).optional(),
        max_retry_delay_ms: z.number().int().min(0).optional(),
        /** How long a run waits on a call the client runs before the call ends with an error the model reads (24 h). */
        client_tool_timeout_ms: z.number().int().min(1).optional(),
      })
      .strict()
      .optional(),
    // A field the agent does not have is refused: a plugin's settings belong in its sections.
    agents: z.array(WrittenAgentSpecSchema).default([]),
    models: z.record(z.string(), ModelConfigSchema).default({}),
    providers: z.record(z.string(), z.union([ProviderConfigSchema, ScriptedProviderSchema])).default({}),
  })
  .strict();
export type ServeConfig = z.output<typeof ServeConfigSchema>;

/** A field's path as a user writes it: `agents[1].model`, `server.cors.origins[0]`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  return bracketPath(path) || '(top level)';
}

/** The sections the runtime reads, and those the plugins of `plugins` read, by section name. */
function sectionReaders(plugins: ReadonlyMap<string, RuntimePlugin>): Map<string, { readonly plugin: string; readonly key: PluginConfigKey<unknown> }> {
  const readers = new Map<string, { readonly plugin: string; readonly key: PluginConfigKey<unknown> }>();
  for (const [id, plugin] of plugins) for (const key of plugin.configKeys ?? []) readers.set(key.key, { plugin: id, key });
  for (const key of RUNTIME_CONFIG_KEYS) readers.set(key.key, { plugin: 'runtime', key });
  return readers;
}

/** Why a field of the file is refused: an unknown field of an agent says where it may belong. */
function reasonOf(issue: FieldIssue, sections: ReadonlyMap<string, unknown>): string {
  const [top, index, field] = issue.path;
  if (issue.unknown !== true || top !== 'agents' || typeof index !== 'number' || typeof field !== 'string' || issue.path.length !== 3) return issue.message;
  if (sections.has(field)) return `unknown field (a plugin's settings go in sections: sections.${field})`;
  const guess = closest(field, Object.keys(AgentSpecSchema.shape));
  return guess !== undefined ? `unknown field (did you mean ${guess}?)` : issue.message;
}

/**
 * Why the sections of a local agent cannot be read, if they cannot: each section is checked with
 * the schema of the plugin (or the runtime) that reads it, so a mistake is named by its field in the
 * file; a section none of the agent's plugins reads would be ignored, so it is refused too (unless
 * the agent names a plugin not in `plugins`, whose sections are not known here).
 */
function sectionProblem(
  agent: AgentSpec,
  at: number,
  plugins: ReadonlyMap<string, RuntimePlugin>,
  active: readonly string[],
): { readonly field: string; readonly reason: string } | undefined {
  const ids = [...new Set([...agent.plugin_ids, ...active])];
  const own = sectionReaders(
    new Map(
      ids.flatMap((id) => {
        const p = plugins.get(id);
        return p !== undefined ? [[id, p] as const] : [];
      }),
    ),
  );
  const everyPluginKnown = ids.every((id) => plugins.has(id));
  const all = sectionReaders(plugins);
  for (const [section, value] of Object.entries(agent.sections)) {
    const reader = own.get(section);
    if (reader !== undefined) {
      const parsed = reader.key.schema.safeParse(value);
      const issue = parsed.success ? undefined : fieldIssues(parsed.error)[0];
      if (issue !== undefined) return { field: fieldPath(['agents', at, 'sections', section, ...issue.path]), reason: issue.message };
      continue;
    }
    if (!everyPluginKnown) continue;
    const elsewhere = all.get(section);
    const guess = closest(section, [...all.keys()]);
    return {
      field: fieldPath(['agents', at, 'sections', section]),
      reason:
        elsewhere !== undefined
          ? `no plugin of this agent reads it (name ${elsewhere.plugin} in plugin_ids)`
          : `no plugin reads it${guess !== undefined ? ` (did you mean ${guess}?)` : ''}`,
    };
  }
  return undefined;
}

/**
 * Reads and validates a config file. A file that cannot be read is missing input; one that is not
 * YAML, has a field of the wrong shape or one no one reads, or names an agent, model or provider
 * that is not there is bad data: a `CliFailure` naming the file, the field and the reason. An
 * agent's sections are checked against the plugins it names among `plugins` (and those of `active`,
 * which every agent runs with).
 */
export function loadServeConfig(
  path: string,
  plugins: ReadonlyMap<string, RuntimePlugin> = PLUGIN_CATALOG,
  active: readonly string[] = [],
  app?: { readonly agents: readonly string[]; readonly models: readonly string[]; readonly providers: readonly string[] },
): ServeConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new CliFailure(`cannot read the config file ${path}: ${whyUnreadable(e)}`, EXIT.noInput);
  }
  const bad = (field: string, reason: string): CliFailure => new CliFailure(`${path}: ${field}: ${reason}`, EXIT.data);
  let data: unknown;
  try {
    data = parseYaml(text) ?? {};
  } catch (e) {
    const pos = (e as { linePos?: readonly { line: number; col: number }[] }).linePos?.[0];
    throw new CliFailure(
      `${path}${pos !== undefined ? `:${pos.line}:${pos.col}` : ''}: not valid YAML: ${((e instanceof Error ? e.message : String(e)).split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '')}`,
      EXIT.data,
    );
  }
  const parsed = ServeConfigSchema.safeParse(data);
  if (!parsed.success) {
    const first = fieldIssues(parsed.error)[0];
    throw bad(fieldPath(first?.path ?? []), first !== undefined ? reasonOf(first, sectionReaders(plugins)) : 'invalid');
  }
  const config = parsed.data;
  // Beside an app, the app's agents, models and providers are there and the built-in demo is not
  // (an id both define is refused by the app's check, naming both places).
  const builtIn = app === undefined ? ['demo'] : [];
  const ids = new Set<string>(builtIn);
  (config.agents as AgentSpec[]).forEach((a, i) => {
    if (ids.has(a.id)) throw bad(`agents[${i}].id`, `duplicate agent id '${a.id}'${a.id === 'demo' ? ' (the built-in agent is demo)' : ''}`);
    ids.add(a.id);
  });
  for (const id of app?.agents ?? []) ids.add(id);
  // What the models and agents name must be there (the built-in demo model and provider are).
  const providers = [...builtIn, ...Object.keys(config.providers), ...(app?.providers ?? [])];
  for (const [id, m] of Object.entries(config.models)) {
    if (!providers.includes(m.provider)) throw bad(`models.${id}.provider`, `no provider '${m.provider}' (providers: ${providers.join(', ')})`);
  }
  const allow = config.server.api_key_env_allow ?? DEFAULT_API_KEY_ENV_ALLOW;
  // A credential variable: on the allow-list, and never one of the server's own tokens (whatever the patterns say).
  const own = [...SERVER_CREDENTIAL_ENVS, ...(config.server.auth?.tokens ?? []).map((t) => t.token_env)];
  const checkEnv = (field: string, variable: string | undefined): void => {
    const problem = variable === undefined ? undefined : envFieldProblem(variable, allow, own, '; server.api_key_env_allow sets the patterns');
    if (problem !== undefined) throw bad(field, problem);
  };
  // Every URL the file names: link-local and metadata addresses never (host names are checked when connected).
  const checkUrl = (field: string, url: string | undefined): void => {
    const verdict = url === undefined ? undefined : operatorOutbound.checkStatic(url);
    if (verdict !== undefined && !verdict.ok) throw bad(field, verdict.reason);
  };
  checkUrl('server.otel', config.server.otel);
  for (const [id, p] of Object.entries(config.providers)) {
    if ('api_key_env' in p) checkEnv(`providers.${id}.api_key_env`, p.api_key_env);
    if ('base_url' in p) checkUrl(`providers.${id}.base_url`, p.base_url);
  }
  for (const [name, m] of Object.entries(config.mcp_servers ?? {})) if ('url' in m) checkUrl(`mcp_servers.${name}.url`, m.url);
  const models = [...builtIn, ...Object.keys(config.models), ...(app?.models ?? [])];
  (config.agents as AgentSpec[]).forEach((a, i) => {
    // A remote agent (an endpoint) runs elsewhere: its model is the remote server's business.
    if (a.endpoint === undefined && !models.includes(a.model)) throw bad(`agents[${i}].model`, `no model '${a.model}' (models: ${models.join(', ')})`);
    if (a.endpoint !== undefined && a.endpoint.backend !== 'a2a')
      throw bad(`agents[${i}].endpoint.backend`, `'${a.endpoint.backend}' is not a backend this server reaches (a2a)`);
    const auth = a.endpoint?.auth;
    if (auth !== undefined && (auth.type !== 'bearer' || (typeof auth['token'] !== 'string' && typeof auth['token_env'] !== 'string'))) {
      throw bad(`agents[${i}].endpoint.auth`, 'a bearer with token_env (the variable holding the token) or token');
    }
    if (a.endpoint !== undefined) {
      checkEnv(`agents[${i}].endpoint.auth.token_env`, typeof auth?.['token_env'] === 'string' ? auth['token_env'] : undefined);
      checkUrl(`agents[${i}].endpoint.base_url`, a.endpoint.base_url);
    }
    a.delegates.forEach((d, j) => {
      if (!ids.has(d)) throw bad(`agents[${i}].delegates[${j}]`, `no agent '${d}' (agents: ${[...ids].join(', ')})`);
    });
    const problem = a.endpoint === undefined ? sectionProblem(a, i, plugins, active) : undefined;
    if (problem !== undefined) throw bad(problem.field, problem.reason);
  });
  // Files the config names are relative to the config file.
  const here = (file: string): string => resolve(dirname(path), file);
  const model = config.server.model;
  return {
    ...config,
    server: {
      ...config.server,
      ...(model !== undefined ? { model: model.replace(/^(scripted|transcript):(.+)$/, (_m, kind: string, file: string) => `${kind}:${here(file)}`) } : {}),
    },
    providers: Object.fromEntries(Object.entries(config.providers).map(([id, p]) => [id, p.kind === 'scripted' ? { ...p, file: here(p.file) } : p])),
    ...(config.skills !== undefined
      ? { skills: { ...config.skills, ...(config.skills.dirs !== undefined ? { dirs: config.skills.dirs.map(here) } : {}) } }
      : {}),
    ...(config.tools !== undefined
      ? {
          tools: config.tools.map((t) => ({
            ...t,
            sandbox: { ...t.sandbox, command: t.sandbox.command.map((a) => (a.startsWith('./') || a.startsWith('../') ? here(a) : a)) },
          })),
        }
      : {}),
    // A stdio server starts in the config file's directory unless it names its own.
    ...(config.mcp_servers !== undefined
      ? {
          mcp_servers: Object.fromEntries(
            Object.entries(config.mcp_servers).map(([n, c]) => [
              n,
              'command' in c ? { ...c, cwd: c.cwd !== undefined ? here(c.cwd) : dirname(resolve(path)) } : c,
            ]),
          ),
        }
      : {}),
  };
}
