import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InferenceOverrideSchema, isEmptyInferenceOverride, mergeInferenceOverride, type InferenceOverride } from '../../src/contract/inference.ts';
import * as arb from '../../src/testing/arbitraries.ts';

const FIELDS = ['model', 'fallback_models', 'temperature', 'max_tokens', 'top_p', 'reasoning_effort'] as const;

describe('InferenceOverride.merge (per-field last writer wins)', () => {
  it('takes each field from the later override when present, else keeps the earlier', () => {
    fc.assert(
      fc.property(arb.inferenceOverride(), arb.inferenceOverride(), (a, b) => {
        const m = mergeInferenceOverride(a, b);
        for (const f of FIELDS) expect(m[f]).toEqual(b[f] !== undefined ? b[f] : a[f]);
      }),
      { numRuns: 200 },
    );
  });

  it('is associative and has the empty override as identity', () => {
    fc.assert(
      fc.property(arb.inferenceOverride(), arb.inferenceOverride(), arb.inferenceOverride(), (a, b, c) => {
        expect(mergeInferenceOverride(mergeInferenceOverride(a, b), c)).toEqual(mergeInferenceOverride(a, mergeInferenceOverride(b, c)));
        expect(mergeInferenceOverride({}, a)).toEqual(a);
        expect(mergeInferenceOverride(a, {})).toEqual(a);
      }),
      { numRuns: 200 },
    );
  });

  it('never clears a field', () => {
    const merged = mergeInferenceOverride({ temperature: 0.2, max_tokens: 10 }, { max_tokens: 20 });
    expect(merged).toEqual({ temperature: 0.2, max_tokens: 20 });
  });

  it('is empty only when no field is set', () => {
    expect(isEmptyInferenceOverride({})).toBe(true);
    expect(isEmptyInferenceOverride({ top_p: 0 } satisfies InferenceOverride)).toBe(false);
  });

  it('rejects unknown fields', () => {
    expect(InferenceOverrideSchema.safeParse({ upstream_model: 'x' }).success).toBe(false);
  });
});
