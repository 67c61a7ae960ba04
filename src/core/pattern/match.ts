import type { JsonValue } from '../../contract/json.ts';
import { wildcardMatch } from './glob.ts';
import { compileRegex, type RegexTest } from './regex.ts';
import { opPrecision, type FieldCondition, type MatchOp, type PathSegment, type Specificity, type ToolCallPattern } from './types.ts';
import { unreachable } from '../../contract/never.ts';

/** A compiled pattern: the specificity of the match, or undefined when the call does not match. */
export type PatternMatcher = (toolId: string, args: JsonValue) => Specificity | undefined;

const isObject = (v: JsonValue | undefined): v is { readonly [k: string]: JsonValue } => typeof v === 'object' && v !== null && !Array.isArray(v);
const sortedKeys = (o: { readonly [k: string]: JsonValue }): string[] => Object.keys(o).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

/** Every value the path reaches (existential: `[*]` and `*` fan out; object values in key order). */
export function resolvePath(value: JsonValue, path: readonly PathSegment[]): JsonValue[] {
  if (path.length === 0) return [value];
  const [head, ...tail] = path as [PathSegment, ...PathSegment[]];
  switch (head.kind) {
    case 'field':
      return isObject(value) && Object.hasOwn(value, head.name) ? resolvePath(value[head.name] as JsonValue, tail) : [];
    case 'index':
      return Array.isArray(value) && head.index < value.length ? resolvePath(value[head.index] as JsonValue, tail) : [];
    case 'any_index':
      return Array.isArray(value) ? value.flatMap((v: JsonValue) => resolvePath(v, tail)) : [];
    case 'wildcard':
      return isObject(value) ? sortedKeys(value).flatMap((k) => resolvePath(value[k] as JsonValue, tail)) : [];
    default:
      return unreachable(head);
  }
}

/** Compact JSON with object keys sorted, so that the text does not depend on key order. */
export function canonicalJson(v: JsonValue): string {
  if (Array.isArray(v)) return `[${v.map((x: JsonValue) => canonicalJson(x)).join(',')}]`;
  if (isObject(v))
    return `{${sortedKeys(v)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k] as JsonValue)}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

/** A value as matched: a string as itself, null as "", booleans and numbers as written, the rest as canonical JSON. */
export function valueToString(v: JsonValue): string {
  if (typeof v === 'string') return v;
  if (v === null) return '';
  if (typeof v === 'boolean' || typeof v === 'number') return String(v);
  return canonicalJson(v);
}

/** The primary argument: the single value of a one-key object, else all the arguments. */
export function primaryValue(args: JsonValue): string {
  if (isObject(args)) {
    const keys = Object.keys(args);
    if (keys.length === 1) return valueToString(args[keys[0] as string] as JsonValue);
  }
  return valueToString(args);
}

/** One operator, compiled: regexes once, up front. A regex that does not compile is refused by the parser. */
export function compileOp(op: MatchOp, pattern: string): (value: string) => boolean {
  switch (op) {
    case 'glob':
      return (v) => wildcardMatch(pattern, v);
    case 'not_glob':
      return (v) => !wildcardMatch(pattern, v);
    case 'exact':
      return (v) => v === pattern;
    case 'not_exact':
      return (v) => v !== pattern;
    case 'regex':
    case 'not_regex': {
      const re = compileRegex(pattern);
      // Unreachable from parsed patterns; a hand-built one with a bad regex matches nothing (both polarities).
      const test: RegexTest = re.ok ? re.test : () => op === 'not_regex';
      return op === 'regex' ? test : (v) => !test(v);
    }
    default:
      return unreachable(op);
  }
}

function compileCondition(cond: FieldCondition): (args: JsonValue) => boolean {
  const test = compileOp(cond.op, cond.value);
  // A path that reaches nothing is false for every operator, the negated ones too.
  return (args) => resolvePath(args, cond.path).some((v) => test(valueToString(v)));
}

const saturate = (n: number): number => Math.min(255, n);

/** Compiles a pattern once (regexes included); the matcher is pure and may be called any number of times. */
export function compilePattern(pattern: ToolCallPattern): PatternMatcher {
  const { tool, args } = pattern;
  let toolKind: 1 | 2 | 3;
  let toolTest: (id: string) => boolean;
  if (tool.kind === 'exact') (toolKind = 3), (toolTest = (id) => id === tool.name);
  else if (tool.kind === 'glob') (toolKind = 2), (toolTest = (id) => wildcardMatch(tool.pattern, id));
  else {
    const re = compileRegex(tool.source);
    toolKind = 1;
    toolTest = re.ok ? re.test : () => false;
  }
  if (args.kind === 'any') {
    const s: Specificity = { toolKind, hasArgs: false, fieldCount: 0, fieldPrecision: 0 };
    return (id) => (toolTest(id) ? s : undefined);
  }
  if (args.kind === 'primary') {
    const s: Specificity = { toolKind, hasArgs: true, fieldCount: 1, fieldPrecision: 2 };
    return (id, a) => (toolTest(id) && wildcardMatch(args.value, primaryValue(a)) ? s : undefined);
  }
  const conditions = args.conditions.map(compileCondition);
  const s: Specificity = {
    toolKind,
    hasArgs: true,
    fieldCount: saturate(args.conditions.length),
    fieldPrecision: saturate(args.conditions.reduce((n, c) => n + opPrecision(c.op), 0)),
  };
  return (id, a) => (toolTest(id) && conditions.every((c) => c(a)) ? s : undefined);
}

/** Matches one call against a pattern (compiling it: use `compilePattern` for a pattern used twice). */
export const patternMatches = (pattern: ToolCallPattern, toolId: string, args: JsonValue): Specificity | undefined => compilePattern(pattern)(toolId, args);
