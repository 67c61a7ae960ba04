import { z } from 'zod';

const I32 = z.number().int().min(-2147483648).max(2147483647);

/** Token usage of one inference. Every absent field is omitted on the wire (book: 事件 → TokenUsage). */
export const TokenUsageSchema = z.object({
  prompt_tokens: I32.optional(),
  completion_tokens: I32.optional(),
  total_tokens: I32.optional(),
  cache_read_tokens: I32.optional(),
  cache_creation_tokens: I32.optional(),
  thinking_tokens: I32.optional(),
});
export type TokenUsage = z.infer<typeof TokenUsageSchema>;
