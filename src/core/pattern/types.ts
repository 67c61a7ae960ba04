/**
 * Tool-call patterns (core-spec §8): which tool (exact, glob, `/regex/`) and which arguments (any,
 * a primary glob, or field conditions). Plain data: `parsePattern` makes them, `formatPattern`
 * prints them back, `compilePattern` turns one into a matcher.
 */

export type ToolMatcher =
  | { readonly kind: 'exact'; readonly name: string }
  | { readonly kind: 'glob'; readonly pattern: string }
  | { readonly kind: 'regex'; readonly source: string };

export type MatchOp = 'glob' | 'exact' | 'regex' | 'not_glob' | 'not_exact' | 'not_regex';

/** The operators as written, longest first (the order the parser tries them). */
export const OP_TOKENS: readonly (readonly [string, MatchOp])[] = [
  ['!=~', 'not_regex'],
  ['!=', 'not_exact'],
  ['!~', 'not_glob'],
  ['=~', 'regex'],
  ['~', 'glob'],
  ['=', 'exact'],
];

export type PathSegment =
  | { readonly kind: 'field'; readonly name: string }
  | { readonly kind: 'index'; readonly index: number }
  | { readonly kind: 'any_index' }
  | { readonly kind: 'wildcard' };

export interface FieldCondition {
  readonly path: readonly PathSegment[];
  readonly op: MatchOp;
  readonly value: string;
}

/**
 * `any` (no parentheses, or `(*)`); `primary` (a glob over the single argument, or over all of them
 * stringified); `fields` (every condition holds). The primary is always a glob: 0.6's other
 * primary operators cannot be written, so they are not representable (docs/parity.md).
 */
export type ArgMatcher =
  | { readonly kind: 'any' }
  | { readonly kind: 'primary'; readonly value: string }
  | { readonly kind: 'fields'; readonly conditions: readonly FieldCondition[] };

export interface ToolCallPattern {
  readonly tool: ToolMatcher;
  readonly args: ArgMatcher;
}

/**
 * How specific a match is, compared lexicographically: tool kind (exact 3 > glob 2 > regex 1), then
 * whether arguments were constrained, then the number of conditions (≤ 255), then the sum of their
 * operators' precision (exact 3, glob 2, regex 1; saturating at 255).
 */
export interface Specificity {
  readonly toolKind: 1 | 2 | 3;
  readonly hasArgs: boolean;
  readonly fieldCount: number;
  readonly fieldPrecision: number;
}

export function compareSpecificity(a: Specificity, b: Specificity): number {
  return a.toolKind - b.toolKind || Number(a.hasArgs) - Number(b.hasArgs) || a.fieldCount - b.fieldCount || a.fieldPrecision - b.fieldPrecision;
}

export function opPrecision(op: MatchOp): 1 | 2 | 3 {
  return op === 'exact' || op === 'not_exact' ? 3 : op === 'glob' || op === 'not_glob' ? 2 : 1;
}

/** A parse error: what is wrong and where (a UTF-16 offset into the text as given). */
export interface PatternParseError {
  readonly message: string;
  readonly position: number;
}

export const describeParseError = (e: PatternParseError): string => `parse error at ${e.position}: ${e.message}`;
