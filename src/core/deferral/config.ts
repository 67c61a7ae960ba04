import { z } from 'zod';
import { wildcardMatch } from '../pattern/glob.ts';

export const ToolLoadModeSchema = z.enum(['eager', 'deferred']);
export type ToolLoadMode = z.infer<typeof ToolLoadModeSchema>;

export const DeferralRuleSchema = z.object({ tool: z.string().min(1), mode: ToolLoadModeSchema }).strict();
export type DeferralRule = z.infer<typeof DeferralRuleSchema>;

/** DiscBeta's parameters (book: 使用延迟加载工具 → DiscBetaParams); 0.6's defaults. */
export const DiscBetaParamsSchema = z
  .object({
    /** Discount per turn of the Beta counts (0 < ω ≤ 1). */
    omega: z.number().gt(0).max(1).default(0.95),
    /** Prior strength (pseudo-observations). */
    n0: z.number().positive().default(5),
    /** Turns without use before a promoted tool may be deferred again. */
    defer_after: z.number().int().nonnegative().default(5),
    thresh_mult: z.number().nonnegative().default(0.5),
    /** Tokens one ToolSearch round trip costs. */
    gamma: z.number().positive().default(2000),
    /** `exact` Beta quantile (default) or 0.6's `normal` approximation (kept for parity). */
    upper_bound: z.enum(['exact', 'normal']).default('exact'),
  })
  .strict();
export type DiscBetaParams = z.output<typeof DiscBetaParamsSchema>;

/** Section `deferred_tools` (book: DeferredToolsConfig). */
export const DeferredToolsConfigSchema = z
  .object({
    /** true / false, or absent for auto: enabled when the schema savings exceed `beta_overhead`. */
    enabled: z.boolean().optional(),
    rules: z.array(DeferralRuleSchema).default([]),
    default_mode: ToolLoadModeSchema.default('deferred'),
    beta_overhead: z.number().nonnegative().default(1136),
    /** Fixed priors of "used in a turn" per tool (learned priors from the profile store come first). */
    agent_priors: z.record(z.string(), z.number().min(0).max(1)).default({}),
    disc_beta: DiscBetaParamsSchema.default(DiscBetaParamsSchema.parse({})),
  })
  .strict();
export type DeferredToolsConfig = z.output<typeof DeferredToolsConfigSchema>;
export type DeferredToolsConfigInput = z.input<typeof DeferredToolsConfigSchema>;

/** The prior of a tool nobody has data on. */
export const DEFAULT_PRIOR = 0.01;

/**
 * The first rule whose pattern equals or matches the id wins (the rules' glob dialect, as the
 * permission and reminder rules: core/pattern/glob.ts); otherwise `default_mode`.
 */
export function resolveMode(config: Pick<DeferredToolsConfig, 'rules' | 'default_mode'>, id: string): ToolLoadMode {
  for (const rule of config.rules) if (rule.tool === id || wildcardMatch(rule.tool, id)) return rule.mode;
  return config.default_mode;
}

/** `enabled`, or (auto) whether the savings strictly exceed the overhead. */
export const shouldEnable = (config: Pick<DeferredToolsConfig, 'enabled' | 'beta_overhead'>, totalSavings: number): boolean =>
  config.enabled ?? totalSavings > config.beta_overhead;
