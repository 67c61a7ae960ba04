import { err, ok, type Result } from '../../contract/result.ts';
import { compileRegex } from './regex.ts';
import {
  OP_TOKENS,
  type ArgMatcher,
  type FieldCondition,
  type MatchOp,
  type PathSegment,
  type PatternParseError,
  type ToolCallPattern,
  type ToolMatcher,
} from './types.ts';

/**
 * Parses a tool-call pattern (core-spec §8.1):
 *
 * ```text
 * Bash                          exact tool, any arguments
 * Bash(*)                       any arguments, explicitly
 * Bash(npm *)                   a glob over the primary argument
 * Edit(file_path ~ "src/**")    a field glob
 * Bash(command =~ "(?i)rm")     a field regex
 * mcp__github__*                a glob tool name
 * /mcp__(gh|gl)__.*\/            a regex tool name
 * Tool(a.b[*].c ~ "x")          a nested path
 * Tool(f1 ~ "a", f2 = "b")      every condition (AND)
 * ```
 *
 * Values are double-quoted (`\"` and `\\` escape; any other `\c` is kept). Every regex, of the tool
 * or of a condition, must compile. Positions are offsets into `input` as given.
 */
export function parsePattern(input: string): Result<ToolCallPattern, PatternParseError> {
  const text = input.trimEnd();
  let pos = input.length - input.trimStart().length;
  const fail = (message: string, at = pos): Result<never, PatternParseError> => err({ message, position: at });
  const peek = (): string | undefined => text[pos];
  const isWs = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v';
  const skipWs = (): void => {
    while (isWs(peek())) pos += 1;
  };
  const found = (): string => (pos < text.length ? `'${String.fromCodePoint(text.codePointAt(pos) as number)}'` : 'end of input');
  const expect = (ch: string): PatternParseError | undefined => {
    skipWs();
    if (peek() === ch) {
      pos += 1;
      return undefined;
    }
    return { message: `expected '${ch}', found ${found()}`, position: pos };
  };

  function toolPart(): Result<ToolMatcher, PatternParseError> {
    if (peek() === '/') {
      pos += 1;
      const start = pos;
      let depth = 0;
      while (pos < text.length) {
        const c = peek();
        if (c === '\\') pos += pos + 1 < text.length ? 2 : 1;
        else if (c === '(') (depth += 1), (pos += 1);
        else if (c === ')') (depth = Math.max(0, depth - 1)), (pos += 1);
        else if (c === '/' && depth === 0) break;
        else pos += 1;
      }
      const source = text.slice(start, pos);
      if (source === '') return fail('empty regex pattern');
      const closed = expect('/');
      if (closed !== undefined) return err(closed);
      const re = compileRegex(source);
      if (!re.ok) return fail(`invalid regex: ${re.message}`, start);
      return ok({ kind: 'regex', source });
    }
    const start = pos;
    while (pos < text.length && peek() !== '(' && !isWs(peek())) pos += 1;
    const name = text.slice(start, pos);
    if (name === '') return fail('empty tool name');
    return ok(/[*?[]/.test(name) ? { kind: 'glob', pattern: name } : { kind: 'exact', name });
  }

  function argPart(): Result<ArgMatcher, PatternParseError> {
    skipWs();
    if (peek() === '*') {
      let after = pos + 1;
      while (isWs(text[after])) after += 1;
      if (after >= text.length || text[after] === ')') {
        pos = after;
        return ok({ kind: 'any' });
      }
    }
    return looksLikeFieldConditions(text.slice(pos)) ? fieldConditions() : primary();
  }

  function fieldConditions(): Result<ArgMatcher, PatternParseError> {
    const conditions: FieldCondition[] = [];
    for (;;) {
      skipWs();
      const path = fieldPath();
      if (!path.ok) return path;
      skipWs();
      const op = matchOp();
      if (!op.ok) return op;
      skipWs();
      const value = quoted();
      if (!value.ok) return value;
      if (op.value === 'regex' || op.value === 'not_regex') {
        const re = compileRegex(value.value.text);
        if (!re.ok) return fail(`invalid regex: ${re.message}`, value.value.start);
      }
      conditions.push({ path: path.value, op: op.value, value: value.value.text });
      skipWs();
      if (peek() !== ',') break;
      pos += 1;
    }
    return ok({ kind: 'fields', conditions });
  }

  function fieldPath(): Result<PathSegment[], PatternParseError> {
    const segments: PathSegment[] = [];
    for (;;) {
      skipWs();
      if (peek() === '*') {
        pos += 1;
        segments.push({ kind: 'wildcard' });
      } else {
        const start = pos;
        while (pos < text.length && /[A-Za-z0-9_-]/.test(peek() as string)) pos += 1;
        if (pos === start) return fail('expected identifier');
        segments.push({ kind: 'field', name: text.slice(start, pos) });
      }
      while (peek() === '[') {
        pos += 1;
        skipWs();
        if (peek() === '*') {
          pos += 1;
          segments.push({ kind: 'any_index' });
        } else {
          const start = pos;
          while (pos < text.length && /[0-9]/.test(peek() as string)) pos += 1;
          const digits = text.slice(start, pos);
          const index = Number(digits);
          if (digits === '' || !Number.isSafeInteger(index)) return fail(`invalid index: '${digits}'`);
          segments.push({ kind: 'index', index });
        }
        const closed = expect(']');
        if (closed !== undefined) return err(closed);
      }
      if (peek() !== '.') return ok(segments);
      pos += 1;
    }
  }

  function matchOp(): Result<MatchOp, PatternParseError> {
    for (const [token, op] of OP_TOKENS) {
      if (text.startsWith(token, pos)) {
        pos += token.length;
        return ok(op);
      }
    }
    return fail('expected operator: ~, =, =~, !~, !=, or !=~');
  }

  function quoted(): Result<{ text: string; start: number }, PatternParseError> {
    skipWs();
    if (peek() !== '"') return fail("expected '\"' to start value");
    pos += 1;
    const start = pos;
    let value = '';
    for (;;) {
      const c = peek();
      if (c === undefined) return fail('unterminated string literal');
      if (c === '"') {
        pos += 1;
        return ok({ text: value, start });
      }
      if (c === '\\') {
        pos += 1;
        const e = peek();
        if (e === undefined) return fail('unterminated escape sequence');
        value += e === '"' || e === '\\' ? e : `\\${e}`;
        pos += 1;
        continue;
      }
      value += c;
      pos += 1;
    }
  }

  function primary(): Result<ArgMatcher, PatternParseError> {
    skipWs();
    const start = pos;
    let depth = 0;
    while (pos < text.length) {
      const c = peek();
      if (c === '(') depth += 1;
      else if (c === ')') {
        if (depth === 0) break;
        depth -= 1;
      }
      pos += 1;
    }
    const value = text.slice(start, pos).trim();
    if (value === '') return fail('empty primary pattern');
    return ok({ kind: 'primary', value });
  }

  const tool = toolPart();
  if (!tool.ok) return tool;
  skipWs();
  let args: ArgMatcher = { kind: 'any' };
  if (peek() === '(') {
    pos += 1;
    const parsed = argPart();
    if (!parsed.ok) return parsed;
    const closed = expect(')');
    if (closed !== undefined) return err(closed);
    args = parsed.value;
  }
  skipWs();
  if (pos < text.length) return fail(`unexpected trailing: '${text.slice(pos)}'`);
  return ok({ tool: tool.value, args });
}

/**
 * Whether the argument text reads as `path op …`: path segments (an identifier, or `*` at the start
 * of a segment) joined by `.` with `[..]` groups, then whitespace, then an operator. 0.6 reads
 * identifiers with `-` and a lone `*` segment only as a primary, which its own printer then writes
 * as conditions that no longer parse the same (docs/parity.md).
 */
export function looksLikeFieldConditions(s: string): boolean {
  const t = s.trim();
  let i = 0;
  let segmentStart = true;
  while (i < t.length) {
    const c = t[i] as string;
    if (/[A-Za-z0-9_-]/.test(c)) (i += 1), (segmentStart = false);
    else if (c === '.') (i += 1), (segmentStart = true);
    else if (c === '[') {
      const close = t.indexOf(']', i);
      i = close < 0 ? t.length : close + 1;
      segmentStart = false;
    } else if (c === '*' && segmentStart) (i += 1), (segmentStart = false);
    else break;
  }
  while (i < t.length && /\s/.test(t[i] as string)) i += 1;
  const rest = t.slice(i);
  return rest.startsWith('~') || rest.startsWith('=') || rest.startsWith('!~') || rest.startsWith('!=');
}
