import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runMealy } from '../../src/core/mealy.ts';

describe('runMealy', () => {
  it('property: emits each step’s outputs in order, then what the final state owes', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -5, max: 5 })), (xs) => {
        // A running sum that emits the sum after each positive input and, at the end, the total.
        const out = runMealy(
          0,
          (sum: number, x: number) => [sum + x, x > 0 ? [sum + x] : []] as const,
          (sum) => [sum, -1],
          xs,
        );
        const expected: number[] = [];
        let sum = 0;
        for (const x of xs) {
          sum += x;
          if (x > 0) expected.push(sum);
        }
        expect(out).toEqual([...expected, sum, -1]);
      }),
    );
  });
});
