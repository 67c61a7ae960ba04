import { z } from 'zod';
import type { ContextWindowPolicy } from '../../contract/agent-spec.ts';

/** What the model itself allows (book: ModelSpec); both optional. */
export interface ModelLimits {
  readonly context_window?: number;
  readonly max_output_tokens?: number;
}

/**
 * The policy a run uses (core-spec §5.1 `effective_policy`): limits clamped to the model's, output
 * never above context, and an auto-compaction threshold that fits in what is left for input.
 */
export function effectivePolicy(policy: ContextWindowPolicy, model: ModelLimits = {}): ContextWindowPolicy {
  let maxContext = policy.max_context_tokens;
  let maxOutput = policy.max_output_tokens;
  if (model.context_window !== undefined) maxContext = Math.min(maxContext, model.context_window);
  if (model.max_output_tokens !== undefined) maxOutput = Math.min(maxOutput, model.max_output_tokens);
  maxOutput = Math.min(maxOutput, maxContext);
  const { autocompact_threshold: threshold, ...rest } = policy;
  const out: ContextWindowPolicy = { ...rest, max_context_tokens: maxContext, max_output_tokens: maxOutput };
  if (threshold === undefined) return out;
  const usable = Math.max(0, maxContext - maxOutput);
  return usable === 0 ? out : { ...out, autocompact_threshold: Math.min(threshold, usable) };
}

/** `max_context_tokens − max_output_tokens − tool_schema_tokens`, never below zero. */
export const historyBudget = (policy: ContextWindowPolicy, toolTokens: number): number =>
  Math.max(0, policy.max_context_tokens - policy.max_output_tokens - toolTokens);

const AtLeastOne = (field: string) =>
  z
    .number()
    .int()
    .min(1, { message: `artifact_compaction.${field} must be >= 1` });

/** Previews of oversized tool results (core-spec §5.5); every field ≥ 1. */
export const ArtifactCompactionConfigSchema = z
  .object({
    threshold_tokens: AtLeastOne('threshold_tokens').default(2048),
    preview_max_chars: AtLeastOne('preview_max_chars').default(1600),
    preview_max_lines: AtLeastOne('preview_max_lines').default(24),
  })
  .strict();
export type ArtifactCompactionConfig = z.output<typeof ArtifactCompactionConfigSchema>;
export const DEFAULT_ARTIFACT_COMPACTION: ArtifactCompactionConfig = Object.freeze(ArtifactCompactionConfigSchema.parse({}));

/** Section `context_transform`: `{artifact_compaction}`. */
export const ContextTransformConfigSchema = z.object({ artifact_compaction: ArtifactCompactionConfigSchema.default(DEFAULT_ARTIFACT_COMPACTION) }).strict();
export type ContextTransformConfig = z.output<typeof ContextTransformConfigSchema>;

export const DEFAULT_SUMMARIZER_SYSTEM_PROMPT =
  'You are a conversation summarizer. Preserve all key facts, decisions, tool results, and action items. Be concise but complete.';
export const DEFAULT_SUMMARIZER_USER_PROMPT =
  'Update the cumulative conversation summary.\n\n<existing-summary>\n{previous_summary}\n</existing-summary>\n\n<new-conversation>\n{messages}\n</new-conversation>';
/** Below this many tokens before the boundary a summary is not worth a model call (0.6's constant). */
export const MIN_COMPACTION_GAIN_TOKENS = 1024;

/** Section `compaction` (book: CompactionConfig). */
export const CompactionConfigSchema = z
  .object({
    summarizer_system_prompt: z.string().default(DEFAULT_SUMMARIZER_SYSTEM_PROMPT),
    summarizer_user_prompt: z.string().default(DEFAULT_SUMMARIZER_USER_PROMPT),
    summary_max_tokens: z.number().int().positive().optional(),
    summary_model: z.string().optional(),
    min_savings_ratio: z.number().min(0).max(1).default(0.3),
    /** Tokens the summarised part must hold at least (0.6: the constant 1024). */
    min_gain_tokens: z.number().int().nonnegative().default(MIN_COMPACTION_GAIN_TOKENS),
  })
  .strict();
export type CompactionConfig = z.output<typeof CompactionConfigSchema>;
