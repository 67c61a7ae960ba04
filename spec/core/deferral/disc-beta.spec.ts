import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  breakevenP,
  DeferredToolsConfigSchema,
  exactUpperBound,
  idleTurns,
  newDiscBetaEntry,
  normalUpperBound,
  observeTurn,
  posteriorMean,
  toolsToDefer,
  upperBoundBelow,
  type DiscBetaEntry,
} from '../../../src/core/deferral/index.ts';

const RUNS = { numRuns: 250 };
const params = {
  omega: fc.double({ min: 0.5, max: 1, noNaN: true }),
  n0: fc.double({ min: 0.5, max: 20, noNaN: true }),
  p: fc.double({ min: 0, max: 1, noNaN: true }),
};
const history = fc.array(fc.boolean(), { maxLength: 40 });

/** One tool observed over `uses` (true: used that turn). */
function run(uses: readonly boolean[], omega: number, n0: number, p: number): DiscBetaEntry {
  let entries: Record<string, DiscBetaEntry> = { t: newDiscBetaEntry(p, n0, 400, 2) };
  uses.forEach((used, turn) => {
    entries = observeTurn(entries, omega, turn, new Set(used ? ['t'] : []));
  });
  return entries['t'] as DiscBetaEntry;
}

describe('DiscBeta (book: 配置自动重新延迟)', () => {
  it('property: the exact test is the 90 % credible bound, pinned at the boundary — below(e, t) ⇔ q₀.₉(e) < t (and the mean below t)', () => {
    fc.assert(
      fc.property(params.omega, params.n0, params.p, history, fc.double({ min: -0.02, max: 0.02, noNaN: true }), (omega, n0, p, uses, shift) => {
        const e = run(uses, omega, n0, p);
        const q = exactUpperBound(e, 0.9);
        // Thresholds just around the bound (relative shifts of up to 2 %), where a credible level of
        // 0.8 or 0.95 instead of 0.9 would answer differently.
        const t = q * (1 + shift);
        if (!(t > 0 && t < 1) || Math.abs(t - q) < 1e-9 * Math.max(q, 1e-12)) return;
        expect(upperBoundBelow(e, t, 'exact')).toBe(q < t && posteriorMean(e) < t);
      }),
      { numRuns: 2_000 },
    );
  });

  it('initialises α = max(p·n0, 0.01), β = max((1 − p)·n0, 0.01)', () => {
    expect(newDiscBetaEntry(0.2, 5, 40, 2)).toEqual({ alpha: 1, beta_param: 4, c: 40, c_bar: 2 });
    expect(newDiscBetaEntry(0, 5, 40, 2)).toMatchObject({ alpha: 0.01, beta_param: 5 });
  });

  it('decays every count by ω, then adds the turn', () => {
    const e = observeTurn({ a: newDiscBetaEntry(0.2, 5, 40, 2), b: newDiscBetaEntry(0.2, 5, 40, 2) }, 0.5, 7, new Set(['a', 'ghost']));
    expect(e['a']).toEqual({ alpha: 1.5, beta_param: 2, last_used_turn: 7, c: 40, c_bar: 2 });
    expect(e['b']).toEqual({ alpha: 0.5, beta_param: 3, c: 40, c_bar: 2 });
    expect(Object.keys(e)).toEqual(['a', 'b']);
  });

  it('the posterior mean stays in [0, 1]', () => {
    fc.assert(
      fc.property(history, params.omega, params.n0, params.p, (uses, omega, n0, p) => {
        const m = posteriorMean(run(uses, omega, n0, p));
        expect(m).toBeGreaterThanOrEqual(0);
        expect(m).toBeLessThanOrEqual(1);
      }),
      RUNS,
    );
    expect(posteriorMean({ alpha: 0, beta_param: 0 })).toBe(0);
  });

  it('the upper bound is at least the mean, exact and normal', () => {
    fc.assert(
      fc.property(history, params.omega, params.n0, params.p, (uses, omega, n0, p) => {
        const e = run(uses, omega, n0, p);
        expect(exactUpperBound(e, 0.9)).toBeGreaterThanOrEqual(posteriorMean(e));
        expect(normalUpperBound(e, 0.9)).toBeGreaterThanOrEqual(posteriorMean(e));
      }),
      RUNS,
    );
    expect(normalUpperBound({ alpha: 0, beta_param: 0 }, 0.9)).toBe(1);
  });

  it('more uses never lower the bound', () => {
    fc.assert(
      fc.property(history, fc.nat(), params.omega, params.n0, params.p, (uses, at, omega, n0, p) => {
        if (uses.length === 0) return;
        const i = at % uses.length;
        const more = uses.map((u, j) => (j === i ? true : u));
        expect(exactUpperBound(run(more, omega, n0, p), 0.9)).toBeGreaterThanOrEqual(exactUpperBound(run(uses, omega, n0, p), 0.9) - 1e-9);
        expect(normalUpperBound(run(more, omega, n0, p), 0.9)).toBeGreaterThanOrEqual(normalUpperBound(run(uses, omega, n0, p), 0.9) - 1e-9);
      }),
      RUNS,
    );
  });

  it('the exact bound and 0.6’s normal approximation disagree on a decayed, rarely used tool', () => {
    // Beta(0.05, 4.9): the exact 90 % quantile is ≈ 0.0171, the normal bound ≈ 0.0627.
    const e: DiscBetaEntry = { alpha: 0.05, beta_param: 4.9, c: 162, c_bar: 2 };
    expect(exactUpperBound(e, 0.9)).toBeCloseTo(0.01706, 4);
    expect(normalUpperBound(e, 0.9)).toBeCloseTo(0.06266, 4);
    const threshold = breakevenP(e, 2000) * 0.5; // 0.04
    expect(upperBoundBelow(e, threshold, 'exact')).toBe(true);
    expect(upperBoundBelow(e, threshold, 'normal')).toBe(false);
  });

  it('break-even is (c − c_bar) / gamma, infinite when nothing is saved', () => {
    expect(breakevenP({ c: 402, c_bar: 2 }, 2000)).toBe(0.2);
    expect(breakevenP({ c: 2, c_bar: 2 }, 2000)).toBe(Number.POSITIVE_INFINITY);
    expect(breakevenP({ c: 20, c_bar: 2 }, 0)).toBe(Number.POSITIVE_INFINITY);
  });

  it('counts idle turns without the turn of use', () => {
    expect(idleTurns({ last_used_turn: 4 }, 5)).toBe(0);
    expect(idleTurns({ last_used_turn: 4 }, 9)).toBe(4);
    expect(idleTurns({}, 3)).toBe(3);
  });
});

describe('re-deferral', () => {
  const config = DeferredToolsConfigSchema.parse({ rules: [{ tool: 'pinned_*', mode: 'eager' }], disc_beta: { defer_after: 2 } });
  const cold = (last?: number): DiscBetaEntry => ({ alpha: 0.05, beta_param: 6, c: 2000, c_bar: 2, ...(last !== undefined ? { last_used_turn: last } : {}) });

  it('defers an idle, promoted, rarely used tool, and only such a tool', () => {
    const entries = { a: cold(0), b: cold(0), pinned_x: cold(0), fresh: cold(9), free: { ...cold(0), c: 2 } };
    const modes = { a: 'eager', b: 'deferred', pinned_x: 'eager', fresh: 'eager', free: 'eager' } as const;
    expect(toolsToDefer(entries, modes, config, 10)).toEqual(['a']);
  });

  it('never defers a tool configured always-eager', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.001, max: 50, noNaN: true }), fc.double({ min: 0.001, max: 50, noNaN: true }), fc.nat(100), (alpha, beta_param, turn) => {
        const entries = { pinned_tool: { alpha, beta_param, c: 5000, c_bar: 1 } };
        expect(toolsToDefer(entries, { pinned_tool: 'eager' }, config, turn)).toEqual([]);
      }),
      RUNS,
    );
  });

  it('never defers a tool used every turn', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), params.omega, params.n0, params.p, fc.integer({ min: 1, max: 10 }), (turns, omega, n0, p, deferAfter) => {
        let entries: Record<string, DiscBetaEntry> = { t: newDiscBetaEntry(p, n0, 9000, 1) };
        const cfg = DeferredToolsConfigSchema.parse({ disc_beta: { defer_after: deferAfter, omega, n0, gamma: 100 } });
        for (let turn = 0; turn < turns; turn++) {
          expect(toolsToDefer(entries, { t: 'eager' }, cfg, turn)).toEqual([]);
          entries = observeTurn(entries, omega, turn, new Set(['t']));
        }
      }),
      RUNS,
    );
  });
});
