import { betaCdf, betaQuantile } from './beta.ts';
import { resolveMode, type DeferredToolsConfig, type DiscBetaParams, type ToolLoadMode } from './config.ts';

/** Discounted Beta posterior over "the tool is used in a turn", with the tool's schema costs. */
export interface DiscBetaEntry {
  readonly alpha: number;
  readonly beta_param: number;
  readonly last_used_turn?: number;
  /** Tokens of the full schema. */
  readonly c: number;
  /** Tokens of the name only (what a deferred tool costs). */
  readonly c_bar: number;
}

/** `alpha = max(p·n0, 0.01)`, `beta = max((1−p)·n0, 0.01)`. */
export const newDiscBetaEntry = (p: number, n0: number, c: number, c_bar: number): DiscBetaEntry => ({
  alpha: Math.max(p * n0, 0.01),
  beta_param: Math.max((1 - p) * n0, 0.01),
  c,
  c_bar,
});

/** One turn: every count decays by ω, then a used tool gains a success, an unused one a failure. */
export function observeTurn(
  entries: Readonly<Record<string, DiscBetaEntry>>,
  omega: number,
  currentTurn: number,
  used: ReadonlySet<string>,
): Record<string, DiscBetaEntry> {
  return Object.fromEntries(
    Object.entries(entries).map(([id, e]) => {
      const hit = used.has(id);
      const next: DiscBetaEntry = {
        ...e,
        alpha: e.alpha * omega + (hit ? 1 : 0),
        beta_param: e.beta_param * omega + (hit ? 0 : 1),
        ...(hit ? { last_used_turn: currentTurn } : {}),
      };
      return [id, next];
    }),
  );
}

export function posteriorMean(e: Pick<DiscBetaEntry, 'alpha' | 'beta_param'>): number {
  const total = e.alpha + e.beta_param;
  return total < 1e-10 ? 0 : e.alpha / total;
}

/** 0.6's upper bound: mean + z·sd, z = 1.645 (≥ 0.95), 1.282 (≥ 0.90) or 1, capped at 1. */
export function normalUpperBound(e: Pick<DiscBetaEntry, 'alpha' | 'beta_param'>, confidence: number): number {
  const total = e.alpha + e.beta_param;
  if (total < 1e-10) return 1;
  const mean = e.alpha / total;
  const variance = (e.alpha * e.beta_param) / (total * total * (total + 1));
  const z = confidence >= 0.95 ? 1.645 : confidence >= 0.9 ? 1.282 : 1;
  return Math.min(mean + z * Math.sqrt(variance), 1);
}

/**
 * The exact upper bound: the `confidence` quantile of Beta(α, β), and never below the posterior mean.
 * (A heavily decayed, never-used tool has α ≪ 1, where the 90 % quantile can fall below the mean; a
 * tool whose expected use is above break-even is then still kept.)
 */
export const exactUpperBound = (e: Pick<DiscBetaEntry, 'alpha' | 'beta_param'>, confidence: number): number =>
  Math.max(posteriorMean(e), betaQuantile(confidence, e.alpha, e.beta_param));

/** `(c − c_bar) / gamma`: the use frequency above which keeping the schema in every request pays. */
export function breakevenP(e: Pick<DiscBetaEntry, 'c' | 'c_bar'>, gamma: number): number {
  const saving = e.c - e.c_bar;
  return saving <= 0 || gamma <= 0 ? Number.POSITIVE_INFINITY : saving / gamma;
}

/** Completed turns since the tool was last used (its own turn not counted); every turn when never used. */
export const idleTurns = (e: Pick<DiscBetaEntry, 'last_used_turn'>, currentTurn: number): number =>
  e.last_used_turn === undefined ? currentTurn : Math.max(0, currentTurn - e.last_used_turn - 1);

/** The credible bound is below `threshold` (90 %: `P(p ≤ threshold) > 0.9` exactly, or 0.6's normal bound). */
export function upperBoundBelow(e: DiscBetaEntry, threshold: number, method: DiscBetaParams['upper_bound']): boolean {
  if (method === 'normal') return normalUpperBound(e, 0.9) < threshold;
  // q₀.₉ < t ⟺ F(t) > 0.9 (F strictly increasing): one CDF evaluation instead of a quantile search.
  return posteriorMean(e) < threshold && betaCdf(threshold, e.alpha, e.beta_param) > 0.9;
}

/**
 * Promoted tools to defer again (core-spec §6.5, all conditions): currently eager, not configured
 * always-eager, idle at least `defer_after` turns, a finite break-even, and the 90 % upper bound of its
 * use probability below `breakeven_p × thresh_mult`. Ids in sorted order.
 */
export function toolsToDefer(
  entries: Readonly<Record<string, DiscBetaEntry>>,
  modes: Readonly<Record<string, ToolLoadMode>>,
  config: Pick<DeferredToolsConfig, 'rules' | 'default_mode' | 'disc_beta'>,
  currentTurn: number,
): string[] {
  const params = config.disc_beta;
  const out: string[] = [];
  for (const id of Object.keys(entries).sort()) {
    const e = entries[id] as DiscBetaEntry;
    if (modes[id] !== 'eager') continue;
    if (resolveMode(config, id) === 'eager') continue;
    if (idleTurns(e, currentTurn) < params.defer_after) continue;
    const breakeven = breakevenP(e, params.gamma);
    if (!Number.isFinite(breakeven)) continue;
    if (upperBoundBelow(e, breakeven * params.thresh_mult, params.upper_bound)) out.push(id);
  }
  return out;
}
