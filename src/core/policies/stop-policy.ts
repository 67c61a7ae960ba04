import type { StopConditionSpec } from '../../contract/lifecycle.ts';
import { unreachable } from '../../contract/never.ts';

/** What the stop policies see after each inference (core-spec §7, `StopPolicyStats`). */
export interface StopPolicyStats {
  readonly stepCount: number;
  readonly totalInputTokens: number;
  readonly totalOutputTokens: number;
  readonly elapsedMs: number;
  readonly consecutiveErrors: number;
  readonly lastToolNames: readonly string[];
  readonly lastResponseText: string;
  readonly recentResponseTexts: readonly string[];
}

export type StopDecision = { readonly stop: false } | { readonly stop: true; readonly code: string; readonly detail: string };

/** A stop policy: pure, evaluated after every inference, first `stop` wins. */
export interface StopPolicy {
  readonly id: string;
  evaluate(stats: StopPolicyStats): StopDecision;
}

const CONTINUE: StopDecision = Object.freeze({ stop: false });
const stop = (code: string, detail: string): StopDecision => ({ stop: true, code, detail });

/** Texts kept for loop detection (0.6 `MAX_RESPONSE_HISTORY`). */
export const MAX_RESPONSE_HISTORY = 64;

export const maxRoundsPolicy = (max: number): StopPolicy => ({
  id: 'max_rounds',
  evaluate: (s) => (max > 0 && s.stepCount >= max ? stop('max_rounds', `reached ${max} rounds`) : CONTINUE),
});

export const tokenBudgetPolicy = (maxTotal: number): StopPolicy => ({
  id: 'token_budget',
  evaluate: (s) => {
    const total = s.totalInputTokens + s.totalOutputTokens;
    return maxTotal > 0 && total > maxTotal ? stop('token_budget', `token usage ${total} exceeds budget ${maxTotal}`) : CONTINUE;
  },
});

export const timeoutPolicy = (maxMs: number): StopPolicy => ({
  id: 'timeout',
  evaluate: (s) => (maxMs > 0 && s.elapsedMs > maxMs ? stop('timeout', `elapsed ${s.elapsedMs}ms exceeds limit ${maxMs}ms`) : CONTINUE),
});

export const consecutiveErrorsPolicy = (max: number): StopPolicy => ({
  id: 'consecutive_errors',
  evaluate: (s) =>
    max > 0 && s.consecutiveErrors >= max ? stop('consecutive_errors', `${s.consecutiveErrors} consecutive inference errors (limit ${max})`) : CONTINUE,
});

export const stopOnToolPolicy = (toolName: string): StopPolicy => ({
  id: 'stop_on_tool',
  evaluate: (s) => (toolName !== '' && s.lastToolNames.includes(toolName) ? stop('stop_on_tool', `tool ${toolName} was requested before execution`) : CONTINUE),
});

/**
 * Rust `regex` syntax is approximated by JS `RegExp`; a leading inline `(?i)`/`(?s)`/`(?m)` group is
 * turned into flags. An invalid pattern stops at once with `content_match_invalid_regex`.
 */
export const contentMatchPolicy = (pattern: string): StopPolicy => {
  let compiled: RegExp | string;
  try {
    const inline = /^\(\?([ims]+)\)/.exec(pattern);
    compiled = inline === null ? new RegExp(pattern, 'u') : new RegExp(pattern.slice(inline[0].length), `u${inline[1]}`);
  } catch (e) {
    compiled = (e as Error).message;
  }
  return {
    id: 'content_match',
    evaluate: (s) => {
      if (pattern === '') return CONTINUE;
      if (typeof compiled === 'string') {
        return stop('content_match_invalid_regex', `content_match stop condition has invalid regex ${pattern}: ${compiled}`);
      }
      return compiled.test(s.lastResponseText) ? stop('content_match', `response matched stop regex ${pattern}`) : CONTINUE;
    },
  };
};

export const loopDetectionPolicy = (window: number): StopPolicy => ({
  id: 'loop_detection',
  evaluate: (s) => {
    if (window < 2 || s.recentResponseTexts.length < window) return CONTINUE;
    const last = s.recentResponseTexts.slice(-window);
    const first = last[0] as string;
    return first !== '' && last.every((t) => t === first) ? stop('loop_detection', `same response repeated for ${window} steps`) : CONTINUE;
  },
});

/** One policy per declarative spec, in order. */
export function policyFromSpec(spec: StopConditionSpec): StopPolicy {
  switch (spec.type) {
    case 'max_rounds':
      return maxRoundsPolicy(spec.rounds);
    case 'timeout':
      return timeoutPolicy(Math.min(spec.seconds * 1000, Number.MAX_SAFE_INTEGER));
    case 'token_budget':
      return tokenBudgetPolicy(spec.max_total);
    case 'consecutive_errors':
      return consecutiveErrorsPolicy(spec.max);
    case 'stop_on_tool':
      return stopOnToolPolicy(spec.tool_name);
    case 'content_match':
      return contentMatchPolicy(spec.pattern);
    case 'loop_detection':
      return loopDetectionPolicy(spec.window);
    default:
      return unreachable(spec);
  }
}

/** The first policy (in order) that says stop, or continue. */
export function evaluateStopPolicies(policies: readonly StopPolicy[], stats: StopPolicyStats): StopDecision {
  for (const policy of policies) {
    const decision = policy.evaluate(stats);
    if (decision.stop) return decision;
  }
  return CONTINUE;
}

/** What one inference boundary reports to the stats. */
export type InferenceObservation =
  | {
      readonly ok: true;
      readonly inputTokens: number;
      readonly outputTokens: number;
      readonly text: string;
      readonly toolNames: readonly string[];
    }
  | { readonly ok: false };

export const initialStopStats = (): StopPolicyStats => ({
  stepCount: 0,
  totalInputTokens: 0,
  totalOutputTokens: 0,
  elapsedMs: 0,
  consecutiveErrors: 0,
  lastToolNames: [],
  lastResponseText: '',
  recentResponseTexts: [],
});

/** Folds one inference into the stats (token counts clamp at 0; 0.6 wraps negatives ⟂). */
export function observeInference(stats: StopPolicyStats, observation: InferenceObservation, elapsedMs: number): StopPolicyStats {
  if (!observation.ok) {
    return { ...stats, stepCount: stats.stepCount + 1, elapsedMs, consecutiveErrors: stats.consecutiveErrors + 1, lastToolNames: [], lastResponseText: '' };
  }
  const recent = observation.text === '' ? stats.recentResponseTexts : [...stats.recentResponseTexts, observation.text].slice(-MAX_RESPONSE_HISTORY);
  return {
    stepCount: stats.stepCount + 1,
    totalInputTokens: stats.totalInputTokens + Math.max(0, observation.inputTokens),
    totalOutputTokens: stats.totalOutputTokens + Math.max(0, observation.outputTokens),
    elapsedMs,
    consecutiveErrors: 0,
    lastToolNames: observation.toolNames,
    lastResponseText: observation.text,
    recentResponseTexts: recent,
  };
}
