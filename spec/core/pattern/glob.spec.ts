import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { globMatch, normalizeWildcards, wildcardMatch } from '../../../src/core/pattern/glob.ts';

const repo = resolve(import.meta.dirname, '../../..');
const vectors = JSON.parse(readFileSync(resolve(repo, 'fixtures/patterns/glob-match-0.2.1.json'), 'utf8')) as {
  cases: { glob: string; path: string; expected: boolean }[];
};

describe('globMatch: glob-match 0.2.1, over code points', () => {
  it('passes every test vector of glob-match 0.2.1 (1,232, fixtures/patterns/glob-match-0.2.1.json)', () => {
    expect(vectors.cases.length).toBe(1232);
    const wrong = vectors.cases.filter((c) => globMatch(c.glob, c.path) !== c.expected);
    expect(wrong).toEqual([]);
  });

  it('a non-ASCII pattern matches its own literal text, and ? and [..] take one character (0.6 matches bytes)', () => {
    expect(globMatch('データ/*.txt', 'データ/a.txt')).toBe(true);
    expect(wildcardMatch('rm データ*', 'rm データ/x')).toBe(true);
    expect(globMatch('?', 'é')).toBe(true);
    expect(globMatch('??', 'é')).toBe(false);
    expect(globMatch('[é]', 'é')).toBe(true);
    expect(globMatch('[à-ü]x', 'éx')).toBe(true);
    expect(globMatch('a?b', 'a😀b')).toBe(true);
  });

  it('a literal pattern (no special characters) matches exactly itself', () => {
    const literal = fc.string({ unit: 'grapheme', maxLength: 12 }).filter((s) => !/[*?[\]{}!\\,/]/.test(s));
    fc.assert(
      fc.property(literal, literal, (a, b) => {
        expect(globMatch(a, a)).toBe(true);
        expect(globMatch(a, b)).toBe(a === b);
      }),
    );
  });
});

describe('wildcardMatch: a lone * crosses /', () => {
  it.each([
    ['rm *', 'rm -rf /', true],
    ['curl *', 'curl https://example.com', true],
    ['npm *', 'npm install', true],
    ['mcp__*', 'mcp__github__create', true],
    ['rm **', 'rm -rf /', true],
    ['src/**/*.rs', 'src/main.rs', true],
    ['src/**/*.rs', 'src/sub/lib.rs', true],
    ['src/**/*.rs', 'tests/test.rs', false],
    ['*/**/*.rs', 'src/sub/lib.rs', true],
    ['***', 'anything', true],
  ])('%s ~ %s is %s (the Rust original)', (pattern, value, expected) => {
    expect(wildcardMatch(pattern, value)).toBe(expected);
  });

  it.each([
    ['a*b', 'a**b'],
    ['**/*.rs', '**/*.rs'],
    ['*/**', '*/**'],
    ['***', '***'],
    ['é*', 'é**'],
  ])('normalizes %s to %s', (pattern, normalized) => {
    expect(normalizeWildcards(pattern)).toBe(normalized);
  });

  it('prefix* matches every extension of the prefix, across any separator', () => {
    const text = fc.string({ unit: 'grapheme', maxLength: 10 }).filter((s) => !/[*?[\]{}!\\,]/.test(s));
    fc.assert(fc.property(text, fc.string({ maxLength: 10 }), (prefix, rest) => wildcardMatch(`${prefix}*`, prefix + rest)));
  });
});
