import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { AgentSpecSchema, type AgentSpec } from '../contract/agent-spec.ts';
import { issuesOf } from '../contract/wire.ts';
import { ModelConfigSchema, ProviderConfigSchema } from '../server/config-routes.ts';

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
    providers: z.record(z.string(), ProviderConfigSchema).default({}),
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
  return parsed.data;
}
