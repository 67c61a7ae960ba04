import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineStateKey, type StateKey } from '../../src/core/state/state-key.ts';
import { checkStateKeyLaws, describeKeyLaws } from '../../src/testing/state-laws.ts';
import { counterKey, logKey, registerKey, setKey } from '../support/keys.ts';

/** A "commutative" list push: the order of parallel writers shows in the value (the classic bug). */
const pushKey = (): StateKey<readonly string[], string> =>
  defineStateKey({
    key: 'broken.push',
    merge: 'commutative',
    init: () => [] as readonly string[],
    apply: (v: readonly string[], u: string) => [...v, u],
    codec: z.array(z.string()) as z.ZodType<readonly string[]>,
  });

describe('checkStateKeyLaws', () => {
  it('every law holds for well-made keys, commutative and exclusive, in both scopes', () => {
    for (const [key, update, options] of [
      [counterKey('c'), fc.integer({ min: -5, max: 5 }), {}],
      [setKey('s'), fc.string({ maxLength: 3 }), { scope: 'thread' as const }],
      [registerKey('r'), fc.string(), {}],
      [logKey('l'), fc.string({ maxLength: 2 }), { scope: 'thread' as const }],
    ] as const) {
      const report = checkStateKeyLaws(key as StateKey<unknown, unknown>, { update: update as fc.Arbitrary<unknown>, options, numRuns: 50 });
      expect(report.failures).toEqual([]);
      expect(report.checked).toEqual([key.merge === 'commutative' ? 'commutative' : 'exclusive', 'pure', 'codec', 'persistence']);
    }
  });

  it('a "commutative" list push is caught: the shrunk counterexample is two one-update batches whose order shows, with the seed that reproduces it', () => {
    const report = checkStateKeyLaws(pushKey(), { update: fc.string({ maxLength: 3 }), seed: 7 });
    expect(report.passed).toBe(false);
    const f = report.failures.find((x) => x.law === 'commutative');
    // Shrunk: the empty start, two small batches, and the two orders that disagree.
    const lines = f?.counterexample ?? [];
    expect(lines[0]).toBe('start:      []');
    expect(lines.filter((l) => /^batch \d: {4}update\(".?"\)(, update\(".?"\))?$/.test(l)).length).toBe(2);
    const [first, second] = lines.slice(-2).map((l) => /→ (.*)$/.exec(l)?.[1]);
    expect(lines.at(-2)).toMatch(/^merged in order 1, 2, one commit → /);
    expect(lines.at(-1)).toMatch(/^merged in order 2, 1(, committed after position 1)?(, one commit)? → /);
    expect(first).not.toBe(second);
    expect([...(first ?? '')].sort()).toEqual([...(second ?? '')].sort());
    expect(describeKeyLaws(report)).toContain(
      '✗ commutative: parallel batches give the same value in every order and grouping\n      start:      []\n      batch 1:    update(',
    );
    expect(describeKeyLaws(report)).toContain(`reproduce: seed 7, path "${f?.path ?? ''}"`);
    // The seed and path give the same counterexample again.
    const again = checkStateKeyLaws(pushKey(), { update: fc.string({ maxLength: 3 }), seed: 7, ...(f?.path !== undefined ? { path: f.path } : {}) });
    expect(again.failures.find((x) => x.law === 'commutative')?.counterexample).toEqual(f?.counterexample);
    expect(again.checked).toEqual(['commutative']);
    expect(f?.path).toMatch(/^commutative@[\d:]+$/);
  });

  it('an apply that changes the value it is given breaks purity', () => {
    const mutating = defineStateKey({
      key: 'broken.mutates',
      merge: 'commutative',
      init: () => ({ n: 0 }),
      apply: (v: { n: number }, u: number) => ((v.n += u), v),
      codec: z.object({ n: z.number() }),
    });
    const f = checkStateKeyLaws(mutating, { update: fc.integer({ min: 1, max: 3 }) }).failures.find((x) => x.law === 'pure');
    expect(f?.counterexample[0]).toBe('start:  {"n":0}');
    expect(f?.counterexample[1]).toMatch(/^update\(1\) changes the value it is given: Cannot assign to read only property 'n'/);
  });

  it('a codec that cannot read what encode writes, and one that reads it differently, break the codec law', () => {
    const rejects = defineStateKey({
      key: 'broken.codec',
      init: () => 0,
      apply: (v: number, u: number) => v + u,
      codec: z.number().max(3),
      merge: 'exclusive',
    });
    const r = checkStateKeyLaws(rejects, { update: fc.integer({ min: 0, max: 3 }) }).failures.find((x) => x.law === 'codec');
    expect(r?.counterexample.at(-1)).toMatch(/^reaches 4, which the codec rejects/);
    const lossy = defineStateKey({
      key: 'broken.lossy',
      init: () => 0,
      apply: (v: number, u: number) => v + u,
      codec: z.number().transform((n) => Math.min(n, 2)) as unknown as z.ZodType<number>,
    });
    const l = checkStateKeyLaws(lossy, { update: fc.integer({ min: 0, max: 3 }) }).failures.find((x) => x.law === 'codec');
    expect(l?.counterexample.slice(-2)).toEqual(['reaches 3', 'decoded back as 2']);
  });

  it('an encode the codec cannot restore breaks persistence for its scope', () => {
    // encode writes a Set as an object; the codec wants an array.
    const sets = defineStateKey({
      key: 'broken.set',
      init: () => new Set<string>(),
      apply: (v: Set<string>, u: string) => new Set([...v, u]),
      codec: z.array(z.string()).transform((a) => new Set(a)) as unknown as z.ZodType<Set<string>>,
      encode: (v) => Object.fromEntries([...v].map((x) => [x, true])),
    });
    const report = checkStateKeyLaws(sets, { update: fc.constantFrom('a', 'b'), options: { scope: 'thread' } });
    expect(report.failures.map((f) => f.law)).toEqual(['codec', 'persistence']);
    expect(report.failures[1]?.counterexample.at(-1)).toMatch(/^exported as \{.*\}, which does not restore: \{"code":"key_decode","key":"broken.set"/);
    // A key that is not persistent is never exported: the law is not checked.
    expect(checkStateKeyLaws(sets, { update: fc.constantFrom('a'), options: { persistent: false } }).checked).not.toContain('persistence');
  });

  it('a key whose merge strategy is misspelt (plain JavaScript) merges two writers without a conflict: the exclusive law names it', () => {
    const typo = { ...registerKey('broken.typo'), merge: 'Exclusive' } as unknown as StateKey<string, string>;
    const f = checkStateKeyLaws(typo, { update: fc.constant('x') }).failures.find((x) => x.law === 'exclusive');
    expect(f?.counterexample).toEqual(['writer 1: update("x")', 'writer 2: update("x")', 'merged in one GATHER round without a conflict']);
  });
});
