import { z } from 'zod';
import { JsonValueSchema } from './json.ts';
import { ReasoningEffortSchema } from './inference.ts';

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
  options: z.record(z.string(), JsonValueSchema).default({}),
});
export type RemoteEndpoint = z.infer<typeof RemoteEndpointSchema>;

/** A serialisable agent definition (book: 配置 → AgentSpec). `active_hook_filter` is a set: kept sorted, unique. */
export const AgentSpecSchema = z.object({
  id: z.string().min(1),
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
  allowed_tools: z.array(z.string()).optional(),
  excluded_tools: z.array(z.string()).optional(),
  endpoint: RemoteEndpointSchema.optional(),
  delegates: z.array(z.string()).default([]),
  sections: z.record(z.string(), JsonValueSchema).default({}),
  registry: z.string().optional(),
});
export type AgentSpec = z.infer<typeof AgentSpecSchema>;
export type AgentSpecInput = z.input<typeof AgentSpecSchema>;

/** `AgentSpec::new(id)` with every default filled in. */
export const newAgentSpec = (id: string, fields: Omit<AgentSpecInput, 'id'> = {}): AgentSpec =>
  AgentSpecSchema.parse({ ...fields, id });
