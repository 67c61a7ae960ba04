import { z } from 'zod';
import type { StateError } from './errors.ts';
import { ReasoningEffortSchema, type ReasoningEffort } from './inference.ts';
import { issueLine } from './issue-line.ts';
import { JsonObjectSchema, JsonValueSchema, type JsonValue } from './json.ts';
import { StopConditionSpecSchema } from './lifecycle.ts';
import { err, ok, type Result } from './result.ts';
import { ToolIdPatternSchema } from './tool-id-pattern.ts';

const USize = z.number().int().nonnegative();

export const ContextCompactionModeSchema = z.enum(['keep_recent_raw_suffix', 'compact_to_safe_frontier']);
export type ContextCompactionMode = z.infer<typeof ContextCompactionModeSchema>;

/** Context window and auto-compaction policy; defaults are 0.6's (core-spec §5.1). */
export const ContextWindowPolicySchema = z.object({
  max_context_tokens: USize.default(200_000),
  max_output_tokens: USize.default(16_384),
  min_recent_messages: USize.default(10),
  enable_prompt_cache: z.boolean().default(true),
  autocompact_threshold: USize.optional(),
  compaction_mode: ContextCompactionModeSchema.default('keep_recent_raw_suffix'),
  compaction_raw_suffix_messages: USize.default(2),
});
export type ContextWindowPolicy = z.infer<typeof ContextWindowPolicySchema>;

export const RemoteAuthSchema = z.looseObject({ type: z.string() });
export type RemoteAuth = z.infer<typeof RemoteAuthSchema>;

export const RemoteEndpointSchema = z.object({
  backend: z.string(),
  base_url: z.string(),
  auth: RemoteAuthSchema.optional(),
  target: z.string().optional(),
  timeout_ms: USize.default(300_000),
  options: JsonObjectSchema.default({}),
});
export type RemoteEndpoint = z.infer<typeof RemoteEndpointSchema>;

/**
 * What the next start does with a run its process left running (killed, crashed): `resume` it from
 * its last durable point, or `interrupt` it (it ends with the error `interrupted: …`).
 */
export const RunRecoverySchema = z.enum(['resume', 'interrupt']);
export type RunRecovery = z.infer<typeof RunRecoverySchema>;

/** A serialisable agent definition (book: 配置 → AgentSpec). `active_hook_filter` is a set: kept sorted, unique. */
export const AgentSpecSchema = z.object({
  id: z.string().min(1),
  /** What the agent does, as a delegating agent's model reads it (its `agent_run_<id>` tool); default: the first line of the system prompt. */
  description: z.string().optional(),
  model: z.string().default(''),
  system_prompt: z.string().default(''),
  max_rounds: USize.default(16),
  max_continuation_retries: USize.default(2),
  context_policy: ContextWindowPolicySchema.optional(),
  reasoning_effort: ReasoningEffortSchema.optional(),
  plugin_ids: z.array(z.string()).default([]),
  active_hook_filter: z
    .array(z.string())
    .default([])
    .transform((ids) => [...new Set(ids)].sort()),
  /** Tool-id patterns (`*` any run, `\x` a literal x; anchored): only the tools one matches are offered. */
  allowed_tools: z.array(ToolIdPatternSchema).optional(),
  /** Tool-id patterns: the tools one matches are not offered (applied after `allowed_tools`). */
  excluded_tools: z.array(ToolIdPatternSchema).optional(),
  endpoint: RemoteEndpointSchema.optional(),
  delegates: z.array(z.string()).default([]),
  sections: JsonObjectSchema.default({}),
  registry: z.string().optional(),
  /** Extra stop conditions beside `max_rounds` (0.6 `stop_conditions`). */
  stop_conditions: z.array(StopConditionSpecSchema).optional(),
  /** What the next start does with a run of this agent its process left running; unset: what the server says. */
  recovery: RunRecoverySchema.optional(),
  /**
   * The state keys this agent shares with its clients (AG-UI `state`, CopilotKit's shared state):
   * the only keys a client is shown and the only ones it may set. Each is a thread-scoped JSON key.
   */
  client_state: z
    .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]*$/, 'a client state key is letters, digits, `_` and `-`, not starting with a digit or `-`'))
    .optional(),
});
export type AgentSpec = z.infer<typeof AgentSpecSchema>;

/**
 * An agent as a person writes one — in a config file or through the config API: every field known,
 * nested ones too, so a misspelt field is refused instead of dropped. (`AgentSpecSchema` reads what
 * a program or a transcript gives.) An endpoint's `auth` and `options` are its backend's to read.
 */
export const WrittenAgentSpecSchema = AgentSpecSchema.extend({
  context_policy: ContextWindowPolicySchema.strict().optional(),
  endpoint: RemoteEndpointSchema.strict().optional(),
}).strict();
export type AgentSpecInput = z.input<typeof AgentSpecSchema>;

/** How an agent describes itself to one that delegates to it: `description`, else the first line of its prompt (≤ 100 characters), else its id (0.6 `display_description`). */
export function displayDescription(spec: Pick<AgentSpec, 'id' | 'description' | 'system_prompt'>): string {
  const own = spec.description?.trim();
  if (own !== undefined && own !== '') return own;
  const line = spec.system_prompt
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '');
  return line !== undefined ? [...line].slice(0, 100).join('') : spec.id;
}

/** `AgentSpec::new(id)` with every default filled in. */
export const newAgentSpec = (id: string, fields: Omit<AgentSpecInput, 'id'> = {}): AgentSpec => AgentSpecSchema.parse({ ...fields, id });

/** The book's `AgentSpec` builder methods, as pure functions returning a new spec. */
export const AgentSpecs = {
  new: (id: string): AgentSpec => newAgentSpec(id),
  withModel: (spec: AgentSpec, model: string): AgentSpec => ({ ...spec, model }),
  withSystemPrompt: (spec: AgentSpec, system_prompt: string): AgentSpec => ({ ...spec, system_prompt }),
  withMaxRounds: (spec: AgentSpec, max_rounds: number): AgentSpec => ({ ...spec, max_rounds }),
  withReasoningEffort: (spec: AgentSpec, reasoning_effort: ReasoningEffort): AgentSpec => ({ ...spec, reasoning_effort }),
  withHookFilter: (spec: AgentSpec, pluginId: string): AgentSpec => ({
    ...spec,
    active_hook_filter: [...new Set([...spec.active_hook_filter, pluginId])].sort(),
  }),
  withDelegate: (spec: AgentSpec, agentId: string): AgentSpec => ({ ...spec, delegates: [...spec.delegates, agentId] }),
  withEndpoint: (spec: AgentSpec, endpoint: RemoteEndpoint): AgentSpec => ({ ...spec, endpoint }),
  withSection: (spec: AgentSpec, key: string, value: JsonValue): AgentSpec => ({ ...spec, sections: { ...spec.sections, [key]: value } }),
} as const;

/**
 * Binds a config section name to its typed config (book: 配置 → PluginConfigKey). `schema` validates
 * the section; `defaults` is what a missing section reads as.
 */
export interface PluginConfigKey<C> {
  readonly key: string;
  readonly schema: z.ZodType<C>;
  readonly defaults: () => C;
}

export const definePluginConfigKey = <C>(key: string, schema: z.ZodType<C>, defaults: () => C): PluginConfigKey<C> => Object.freeze({ key, schema, defaults });

/** Typed access to a section: missing → `defaults()`, present but invalid → `key_decode`. */
export function readPluginConfig<C>(spec: AgentSpec, configKey: PluginConfigKey<C>): Result<C, StateError> {
  if (!Object.hasOwn(spec.sections, configKey.key)) return ok(configKey.defaults());
  const parsed = configKey.schema.safeParse(spec.sections[configKey.key]);
  if (!parsed.success) return err({ code: 'key_decode', key: configKey.key, message: issueLine(parsed.error) });
  return ok(parsed.data);
}

/** `with_config::<K>(config)`: validates the config and stores it as the section; invalid → `key_encode`. */
export function withPluginConfig<C>(spec: AgentSpec, configKey: PluginConfigKey<C>, config: C): Result<AgentSpec, StateError> {
  const parsed = configKey.schema.safeParse(config);
  if (!parsed.success) return err({ code: 'key_encode', key: configKey.key, message: issueLine(parsed.error) });
  // Sections are JSON: a value JSON cannot carry (NaN, a Date, undefined) is refused, not coerced.
  const section = JsonValueSchema.safeParse(parsed.data);
  if (!section.success) return err({ code: 'key_encode', key: configKey.key, message: section.error.message });
  return ok(AgentSpecs.withSection(spec, configKey.key, section.data));
}

/**
 * What a handoff changes of the run's agent (book: 使用 Agent Handoff → AgentOverlay): its system
 * prompt, its model (a model registry id), and which tools it is offered. Unknown fields are refused
 * (0.6 too; the book's `model` field is `model_id`).
 */
export const AgentOverlaySchema = z
  .object({
    system_prompt: z.string().optional(),
    model_id: z.string().min(1).optional(),
    allowed_tools: z.array(ToolIdPatternSchema).optional(),
    excluded_tools: z.array(ToolIdPatternSchema).optional(),
  })
  .strict();
export type AgentOverlay = z.infer<typeof AgentOverlaySchema>;

/** The agent with the overlay applied (an absent field keeps the agent's own). */
export function applyOverlay(spec: AgentSpec, overlay: AgentOverlay): AgentSpec {
  return {
    ...spec,
    ...(overlay.system_prompt !== undefined ? { system_prompt: overlay.system_prompt } : {}),
    ...(overlay.model_id !== undefined ? { model: overlay.model_id } : {}),
    ...(overlay.allowed_tools !== undefined ? { allowed_tools: overlay.allowed_tools } : {}),
    ...(overlay.excluded_tools !== undefined ? { excluded_tools: overlay.excluded_tools } : {}),
  };
}
