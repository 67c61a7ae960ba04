import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { betaCdf, betaQuantile, logGamma } from '../../../src/core/deferral/index.ts';

const shape = fc.double({ min: 0.01, max: 60, noNaN: true });
const unit = fc.double({ min: 1e-6, max: 1 - 1e-6, noNaN: true });

describe('the Beta distribution, exactly', () => {
  it('log-gamma matches factorials and Γ(½) = √π', () => {
    expect(logGamma(5)).toBeCloseTo(Math.log(24), 12);
    expect(logGamma(0.5)).toBeCloseTo(Math.log(Math.sqrt(Math.PI)), 12);
    expect(logGamma(0.01)).toBeCloseTo(4.599479878042022, 10);
  });

  it('the CDF matches the closed forms I_x(a,1) = xᵃ, I_x(1,b) = 1 − (1 − x)ᵇ, I_x(2,2) = 3x² − 2x³', () => {
    fc.assert(
      fc.property(unit, shape, (x, a) => {
        expect(betaCdf(x, a, 1)).toBeCloseTo(x ** a, 9);
        expect(betaCdf(x, 1, a)).toBeCloseTo(1 - (1 - x) ** a, 9);
        expect(betaCdf(x, 2, 2)).toBeCloseTo(3 * x * x - 2 * x ** 3, 12);
      }),
      { numRuns: 300 },
    );
    expect(betaCdf(0, 2, 3)).toBe(0);
    expect(betaCdf(1, 2, 3)).toBe(1);
  });

  it('is symmetric: I_x(a, b) = 1 − I_{1−x}(b, a)', () => {
    fc.assert(
      fc.property(unit, shape, shape, (x, a, b) => {
        expect(betaCdf(x, a, b)).toBeCloseTo(1 - betaCdf(1 - x, b, a), 9);
      }),
      { numRuns: 300 },
    );
  });

  it('the quantile inverts the CDF', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.01, max: 0.99, noNaN: true }),
        fc.double({ min: 0.3, max: 60, noNaN: true }),
        fc.double({ min: 0.3, max: 60, noNaN: true }),
        (q, a, b) => {
          expect(betaCdf(betaQuantile(q, a, b), a, b)).toBeCloseTo(q, 9);
        },
      ),
      { numRuns: 300 },
    );
    expect(betaQuantile(0.9, 1, 20)).toBeCloseTo(1 - 0.1 ** (1 / 20), 12);
    expect(betaQuantile(0, 2, 2)).toBe(0);
    expect(betaQuantile(1, 2, 2)).toBe(1);
  });
});
