import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { AgentSpecSchema, type AgentSpec } from '../contract/agent-spec.ts';
import { apiKeyEnvAllowed, DEFAULT_API_KEY_ENV_ALLOW, ModelConfigSchema, ProviderConfigSchema } from '../server/config-routes.ts';
import { LOG_FORMATS, LOG_LEVELS } from '../server/log.ts';
import { CliFailure } from './args.ts';
import { McpServerConfigSchema } from '../plugins/mcp-tools.ts';
import { EXIT } from './exit.ts';

/** A provider that answers from a script file (docs/scripted-models.md), each conversation from its start. */
export const ScriptedProviderSchema = z.object({ kind: z.literal('scripted'), file: z.string().min(1) }).strict();

/**
 * `awaken serve --config awaken.yaml`: server settings (flags win over them), and agents, models and
 * providers added to the built-in `demo` agent. Keys are read from the environment (`api_key_env`).
 */
export const ServeConfigSchema = z
  .object({
    server: z
      .object({
        port: z.number().int().min(0).max(65535).optional(),
        host: z.string().min(1).optional(),
        store: z.string().min(1).optional(),
        policy: z.enum(['reject', 'supersede']).optional(),
        lease_ms: z.number().int().min(10).optional(),
        sweep_ms: z.number().int().min(10).optional(),
        /** The demo agent's model, as `--model`: `provider:model`, `scripted:FILE` or `transcript:FILE`. */
        model: z.string().regex(/^[a-z][a-z0-9-]*:.+/, 'provider:model (openai:gpt-4o-mini), scripted:FILE or transcript:FILE').optional(),
        cors: z.object({ origins: z.array(z.string().min(1)).default([]) }).strict().optional(),
        allowed_hosts: z.array(z.string().min(1)).optional(),
        /** API tokens, each read from an environment variable and standing for a principal (docs/server.md → Access control). */
        auth: z
          .object({ tokens: z.array(z.object({ principal: z.string().min(1).max(200), token_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name') }).strict()).min(1) })
          .strict()
          .optional(),
        /** Patterns a provider's `api_key_env` must match (default `*_API_KEY`), here and in config writes. */
        api_key_env_allow: z.array(z.string().regex(/^[A-Za-z0-9_*]+$/, 'a variable name pattern: letters, digits, _ and *')).min(1).optional(),
        /** Bytes a stream's client may leave unread before it is dropped (default 1 MiB). */
        max_follower_bytes: z.number().int().min(4096).optional(),
        /** Quiet time (ms) after the last run ended or stream closed before a full collection gives memory back; 0: never (default 1000). */
        idle_gc_ms: z.number().int().min(0).optional(),
        /** An OTLP/HTTP traces endpoint: every agent's spans exported there (`--otel`; docs/observability.md). */
        otel: z.url({ protocol: /^https?$/ }).optional(),
        log: z.object({ level: z.enum(LOG_LEVELS).optional(), format: z.enum(LOG_FORMATS).optional() }).strict().optional(),
      })
      .strict()
      .default({}),
    /** MCP servers whose tools the agents are offered (`mcp__<server>__<tool>`): a URL, or a command to start over stdio (relative to the config file). */
    mcp_servers: z.record(z.string().regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and -'), McpServerConfigSchema).optional(),
    /** Directories of skills (each skill a directory with its SKILL.md), for agents naming skills-discovery. */
    skills: z.object({ dirs: z.array(z.string().min(1)).min(1) }).strict().optional(),
    agents: z.array(AgentSpecSchema).default([]),
    models: z.record(z.string(), ModelConfigSchema).default({}),
    providers: z.record(z.string(), z.union([ProviderConfigSchema, ScriptedProviderSchema])).default({}),
  })
  .strict();
export type ServeConfig = z.output<typeof ServeConfigSchema>;

/** A field's path as a user writes it: `agents[1].model`, `server.cors.origins[0]`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : `${out === '' ? '' : '.'}${String(key)}`;
  return out === '' ? '(top level)' : out;
}

/**
 * Reads and validates a config file. A file that cannot be read is missing input; one that is not
 * YAML, has a field of the wrong shape, or names an agent, model or provider that is not there is
 * bad data: a `CliFailure` naming the file, the field and the reason.
 */
export function loadServeConfig(path: string): ServeConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as { code?: string }).code;
    throw new CliFailure(`cannot read the config file ${path}${code === 'ENOENT' ? ': no such file' : `: ${e instanceof Error ? e.message : String(e)}`}`, EXIT.noInput);
  }
  const bad = (field: string, reason: string): CliFailure => new CliFailure(`${path}: ${field}: ${reason}`, EXIT.data);
  let data: unknown;
  try {
    data = parseYaml(text) ?? {};
  } catch (e) {
    const pos = (e as { linePos?: readonly { line: number; col: number }[] }).linePos?.[0];
    throw new CliFailure(`${path}${pos !== undefined ? `:${pos.line}:${pos.col}` : ''}: not valid YAML: ${((e instanceof Error ? e.message : String(e)).split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '')}`, EXIT.data);
  }
  const parsed = ServeConfigSchema.safeParse(data);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw bad(fieldPath(first?.path ?? []), first?.message ?? 'invalid');
  }
  const config = parsed.data;
  const ids = new Set<string>(['demo']);
  (config.agents as AgentSpec[]).forEach((a, i) => {
    if (ids.has(a.id)) throw bad(`agents[${i}].id`, `duplicate agent id '${a.id}'${a.id === 'demo' ? ' (the built-in agent is demo)' : ''}`);
    ids.add(a.id);
  });
  // What the models and agents name must be there (the built-in demo model and provider are).
  const providers = ['demo', ...Object.keys(config.providers)];
  for (const [id, m] of Object.entries(config.models)) {
    if (!providers.includes(m.provider)) throw bad(`models.${id}.provider`, `no provider '${m.provider}' (providers: ${providers.join(', ')})`);
  }
  const allow = config.server.api_key_env_allow ?? DEFAULT_API_KEY_ENV_ALLOW;
  for (const [id, p] of Object.entries(config.providers)) {
    if ('api_key_env' in p && p.api_key_env !== undefined && !apiKeyEnvAllowed(p.api_key_env, allow)) {
      throw bad(`providers.${id}.api_key_env`, `'${p.api_key_env}' is not an allowed key variable (allowed: ${allow.join(', ')}; server.api_key_env_allow sets the patterns)`);
    }
  }
  const models = ['demo', ...Object.keys(config.models)];
  (config.agents as AgentSpec[]).forEach((a, i) => {
    // A remote agent (an endpoint) runs elsewhere: its model is the remote server's business.
    if (a.endpoint === undefined && !models.includes(a.model)) throw bad(`agents[${i}].model`, `no model '${a.model}' (models: ${models.join(', ')})`);
    if (a.endpoint !== undefined && a.endpoint.backend !== 'a2a') throw bad(`agents[${i}].endpoint.backend`, `'${a.endpoint.backend}' is not a backend this server reaches (a2a)`);
    const auth = a.endpoint?.auth;
    if (auth !== undefined && (auth.type !== 'bearer' || (typeof auth['token'] !== 'string' && typeof auth['token_env'] !== 'string'))) {
      throw bad(`agents[${i}].endpoint.auth`, 'a bearer with token_env (the variable holding the token) or token');
    }
    a.delegates.forEach((d, j) => {
      if (!ids.has(d)) throw bad(`agents[${i}].delegates[${j}]`, `no agent '${d}' (agents: ${[...ids].join(', ')})`);
    });
  });
  // Files the config names are relative to the config file.
  const here = (file: string): string => resolve(dirname(path), file);
  const model = config.server.model;
  return {
    ...config,
    server: { ...config.server, ...(model !== undefined ? { model: model.replace(/^(scripted|transcript):(.+)$/, (_m, kind: string, file: string) => `${kind}:${here(file)}`) } : {}) },
    providers: Object.fromEntries(Object.entries(config.providers).map(([id, p]) => [id, p.kind === 'scripted' ? { ...p, file: here(p.file) } : p])),
    ...(config.skills !== undefined ? { skills: { dirs: config.skills.dirs.map(here) } } : {}),
    // A stdio server starts in the config file's directory unless it names its own.
    ...(config.mcp_servers !== undefined
      ? { mcp_servers: Object.fromEntries(Object.entries(config.mcp_servers).map(([n, c]) => [n, 'command' in c ? { ...c, cwd: c.cwd !== undefined ? here(c.cwd) : dirname(resolve(path)) } : c])) }
      : {}),
  };
}
