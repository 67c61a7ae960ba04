import { z } from 'zod';

/** `"low"` etc., or `{"budget": n}` for an explicit thinking budget. */
export const ReasoningEffortSchema = z.union([
  z.enum(['none', 'low', 'medium', 'high', 'max']),
  z.object({ budget: z.number().int().nonnegative().max(4294967295) }).strict(),
]);
export type ReasoningEffort = z.infer<typeof ReasoningEffortSchema>;

/**
 * Per-inference parameter overrides (book: 配置 → InferenceOverride). Unknown fields are rejected.
 */
export const InferenceOverrideSchema = z
  .object({
    model: z.string().optional(),
    fallback_models: z.array(z.string()).optional(),
    temperature: z.number().optional(),
    max_tokens: z.number().int().nonnegative().max(4294967295).optional(),
    top_p: z.number().optional(),
    reasoning_effort: ReasoningEffortSchema.optional(),
  })
  .strict();
export type InferenceOverride = z.infer<typeof InferenceOverrideSchema>;

const FIELDS = ['model', 'fallback_models', 'temperature', 'max_tokens', 'top_p', 'reasoning_effort'] as const;

/** Per-field last writer wins: a field present in `next` replaces the one in `base`; absent never clears. */
export function mergeInferenceOverride(base: InferenceOverride, next: InferenceOverride): InferenceOverride {
  const out: Record<string, unknown> = {};
  for (const field of FIELDS) {
    const value = next[field] !== undefined ? next[field] : base[field];
    if (value !== undefined) out[field] = value;
  }
  return out as InferenceOverride;
}

export const isEmptyInferenceOverride = (o: InferenceOverride): boolean => FIELDS.every((f) => o[f] === undefined);
