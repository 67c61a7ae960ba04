import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/contract/json.ts';
import { MAX_JSON_DEPTH, nestsDeeper } from '../../src/server/http-support.ts';

/** How deep arrays and objects nest in a value: 0 for a scalar, 1 for `[]` or `{}`. */
const depthOf = (v: JsonValue): number =>
  typeof v !== 'object' || v === null ? 0 : 1 + Math.max(0, ...(Array.isArray(v) ? v : Object.values(v)).map(depthOf));

describe('the depth bound of JSON bodies', () => {
  it('nestsDeeper(JSON text of v, d) exactly when v nests deeper than d, however it is spaced, brackets and quotes in strings included', () => {
    const text = fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', 'a', ' ', '\u00e9') });
    const value = fc.letrec<{ v: JsonValue }>((tie) => ({
      v: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.constant(null),
        fc.integer(),
        text,
        fc.array(tie('v'), { maxLength: 3 }),
        fc.dictionary(text, tie('v'), { maxKeys: 3 }),
      ),
    })).v;
    fc.assert(
      fc.property(value, fc.integer({ min: 0, max: 8 }), fc.boolean(), (v, d, spaced) => {
        const json = spaced ? JSON.stringify(v, null, 2) : JSON.stringify(v);
        expect(nestsDeeper(json, d)).toBe(depthOf(v) > d);
      }),
      { numRuns: 500, seed: 33 },
    );
  });

  it('the bound is 128, and a text of any length is scanned, not parsed', () => {
    expect(MAX_JSON_DEPTH).toBe(128);
    expect(nestsDeeper(`${'['.repeat(128)}${']'.repeat(128)}`, MAX_JSON_DEPTH)).toBe(false);
    expect(nestsDeeper(`${'['.repeat(129)}${']'.repeat(129)}`, MAX_JSON_DEPTH)).toBe(true);
    // Not JSON at all (an unclosed string) is for the parser to refuse.
    expect(nestsDeeper(`"${'['.repeat(1_000_000)}`, MAX_JSON_DEPTH)).toBe(false);
  });
});
