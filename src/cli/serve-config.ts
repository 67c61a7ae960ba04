import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { AgentSpecSchema, type AgentSpec } from '../contract/agent-spec.ts';
import { issuesOf } from '../contract/wire.ts';
import { ModelConfigSchema, ProviderConfigSchema } from '../server/config-routes.ts';

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
        /** The demo agent's model: `scripted:FILE` or `transcript:FILE` (as `--model`). */
        model: z.string().regex(/^(scripted|transcript):.+/, 'scripted:FILE or transcript:FILE').optional(),
        cors: z.object({ origins: z.array(z.string().min(1)).default([]) }).strict().optional(),
        allowed_hosts: z.array(z.string().min(1)).optional(),
      })
      .strict()
      .default({}),
    agents: z.array(AgentSpecSchema).default([]),
    models: z.record(z.string(), ModelConfigSchema).default({}),
    providers: z.record(z.string(), z.union([ProviderConfigSchema, ScriptedProviderSchema])).default({}),
  })
  .strict();
export type ServeConfig = z.output<typeof ServeConfigSchema>;

/** Reads and validates a config file; an error message names the file and the field. */
export function readServeConfig(path: string): ServeConfig | string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    return `cannot read ${path}: ${e instanceof Error ? e.message : String(e)}`;
  }
  let data: unknown;
  try {
    data = parseYaml(text) ?? {};
  } catch (e) {
    return `${path}: not YAML: ${e instanceof Error ? e.message : String(e)}`;
  }
  const parsed = ServeConfigSchema.safeParse(data);
  if (!parsed.success) {
    const [first] = issuesOf(parsed.error);
    return `${path}: ${first?.path || '(root)'}: ${first?.message ?? 'invalid'}`;
  }
  const ids = new Set<string>();
  for (const a of parsed.data.agents as AgentSpec[]) {
    if (ids.has(a.id) || a.id === 'demo') return `${path}: agents: duplicate agent id '${a.id}'`;
    ids.add(a.id);
  }
  // Files the config names are relative to the config file.
  const here = (file: string): string => resolve(dirname(path), file);
  const config = parsed.data;
  const model = config.server.model;
  return {
    ...config,
    server: { ...config.server, ...(model !== undefined ? { model: model.replace(/^(scripted|transcript):(.+)$/, (_m, kind: string, file: string) => `${kind}:${here(file)}`) } : {}) },
    providers: Object.fromEntries(Object.entries(config.providers).map(([id, p]) => [id, p.kind === 'scripted' ? { ...p, file: here(p.file) } : p])),
  };
}
