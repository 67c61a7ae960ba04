/**
 * The glob dialect of tool patterns (permission rules, reminder rules, `~` conditions).
 *
 * `globMatch` is glob-match 0.2.1 (devongovett/glob-match, `src/lib.rs`, MIT, © Devon Govett)
 * translated line for line, without captures, over **code points** instead of UTF-8 bytes, so that
 * `?` and `[...]` see one character and a pattern with non-ASCII text matches its own literal text
 * (0.6 corrupts it: docs/parity.md). The separator is `/` only, on every platform. Linear in the
 * pattern times the path (https://research.swtch.com/glob); no regex.
 *
 * `wildcardMatch` is what rules use: a lone `*` first becomes `**`, so it crosses `/` as users
 * expect of `rm *` or `mcp__*`, unless it sits next to a `/**` segment.
 */

interface Wildcard {
  globIndex: number;
  pathIndex: number;
}

interface State {
  pathIndex: number;
  globIndex: number;
  wildcard: Wildcard;
  globstar: Wildcard;
}

const SLASH = 0x2f;
const STAR = 0x2a;
const BANG = 0x21;
const QUESTION = 0x3f;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const CARET = 0x5e;
const DASH = 0x2d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const COMMA = 0x2c;
const BACKSLASH = 0x5c;
/** Up to ten nested braces (as glob-match). */
const MAX_BRACES = 10;

const codePoints = (s: string): number[] => Array.from(s, (c) => c.codePointAt(0) as number);
const noWildcard = (): Wildcard => ({ globIndex: 0, pathIndex: 0 });
const freshState = (): State => ({ pathIndex: 0, globIndex: 0, wildcard: noWildcard(), globstar: noWildcard() });
const copyState = (s: State): State => ({ pathIndex: s.pathIndex, globIndex: s.globIndex, wildcard: { ...s.wildcard }, globstar: { ...s.globstar } });
const isSeparator = (c: number | undefined): boolean => c === SLASH;

/** Coalesces `/**` runs (skip_globstars). */
function skipGlobstars(glob: readonly number[], index: number): number {
  let i = index;
  while (i + 3 <= glob.length && glob[i] === SLASH && glob[i + 1] === STAR && glob[i + 2] === STAR) i += 3;
  return i;
}

/** Reads an escaped character at `index`: the character and the index it ends at, or undefined for a trailing `\`. */
function readEscaped(glob: readonly number[], index: number): { c: number; index: number } | undefined {
  const c = glob[index] as number;
  if (c !== BACKSLASH) return { c, index };
  const next = index + 1;
  if (next >= glob.length) return undefined;
  const e = glob[next] as number;
  // glob-match maps \a to 'a' (0x61), \b to backspace, \n, \r, \t to their controls.
  const mapped = e === 0x62 ? 0x08 : e === 0x6e ? 0x0a : e === 0x72 ? 0x0d : e === 0x74 ? 0x09 : e;
  return { c: mapped, index: next };
}

type BraceState = 'invalid' | 'comma' | 'end';

/** Skips to the end of the current brace group, or (stopOnComma) to its next option (skip_braces). */
function skipBraces(state: State, glob: readonly number[], stopOnComma: boolean): BraceState {
  let braces = 1;
  let inBrackets = false;
  while (state.globIndex < glob.length && braces > 0) {
    const c = glob[state.globIndex];
    if (c === OPEN_BRACE && !inBrackets) braces += 1;
    else if (c === CLOSE_BRACE && !inBrackets) braces -= 1;
    else if (c === COMMA && stopOnComma && braces === 1 && !inBrackets) {
      state.globIndex += 1;
      return 'comma';
    } else if ((c === STAR || c === QUESTION || c === OPEN_BRACKET) && !inBrackets) {
      if (c === OPEN_BRACKET) inBrackets = true;
      if (c === STAR && state.globIndex + 1 < glob.length && glob[state.globIndex + 1] === STAR) {
        state.globIndex = skipGlobstars(glob, state.globIndex + 2) - 2;
        state.globIndex += 1;
      }
    } else if (c === CLOSE_BRACKET) inBrackets = false;
    else if (c === BACKSLASH) state.globIndex += 1;
    state.globIndex += 1;
  }
  return braces !== 0 ? 'invalid' : 'end';
}

interface BraceStack {
  readonly stack: State[];
  longestBraceMatch: number;
}

function pushBrace(braces: BraceStack, state: State): State {
  braces.stack.push(copyState(state));
  return { pathIndex: state.pathIndex, globIndex: state.globIndex + 1, wildcard: noWildcard(), globstar: noWildcard() };
}

function popBrace(braces: BraceStack, state: State): State {
  const top = braces.stack.pop() as State;
  const next: State = { pathIndex: braces.longestBraceMatch, globIndex: state.globIndex, wildcard: { ...top.wildcard }, globstar: { ...top.globstar } };
  if (braces.stack.length === 0) braces.longestBraceMatch = 0;
  return next;
}

const lastBrace = (braces: BraceStack): State => braces.stack[braces.stack.length - 1] as State;

function backtrack(state: State): void {
  state.globIndex = state.wildcard.globIndex;
  state.pathIndex = state.wildcard.pathIndex;
}

/** glob-match 0.2.1's `glob_match`, over code points. */
export function globMatch(globText: string, pathText: string): boolean {
  const glob = codePoints(globText);
  const path = codePoints(pathText);
  let state = freshState();
  const braces: BraceStack = { stack: [], longestBraceMatch: 0 };

  // A leading '!' (repeatable) negates the whole pattern.
  let negated = false;
  while (state.globIndex < glob.length && glob[state.globIndex] === BANG) {
    negated = !negated;
    state.globIndex += 1;
  }

  while (state.globIndex < glob.length || state.pathIndex < path.length) {
    if (state.globIndex < glob.length) {
      const g = glob[state.globIndex] as number;
      const inPath = state.pathIndex < path.length;
      if (g === STAR) {
        const isGlobstar = state.globIndex + 1 < glob.length && glob[state.globIndex + 1] === STAR;
        if (isGlobstar) state.globIndex = skipGlobstars(glob, state.globIndex + 2) - 2;
        state.wildcard.globIndex = state.globIndex;
        state.wildcard.pathIndex = state.pathIndex + 1;
        // ** allows separators, * does not; ** must be a full path component (a/**/b, not a**b).
        if (isGlobstar) {
          state.globIndex += 2;
          if (glob.length === state.globIndex) {
            // A trailing ** without a following separator.
            state.globstar = { ...state.wildcard };
          } else if ((state.globIndex < 3 || glob[state.globIndex - 3] === SLASH) && glob[state.globIndex] === SLASH) {
            // A full /**/ segment: if the path's last character was a separator, skip the glob's, so a/**/b matches a/b.
            if (state.pathIndex === 0 || (state.pathIndex < path.length && isSeparator(path[state.pathIndex - 1]))) state.globIndex += 1;
            state.globstar = { ...state.wildcard };
          }
        } else {
          state.globIndex += 1;
        }
        // In a * segment at a separator: jump back to a previous ** or end the wildcard.
        if (state.globstar.pathIndex !== state.wildcard.pathIndex && state.pathIndex < path.length && isSeparator(path[state.pathIndex])) {
          // Not for a / at the end of the glob.
          if (state.globstar.pathIndex > 0 && state.pathIndex + 1 < path.length) {
            state.globIndex = state.globstar.globIndex;
            state.wildcard.globIndex = state.globstar.globIndex;
          } else {
            state.wildcard.pathIndex = 0;
          }
        }
        // Before a brace separator, skip to the end of the braces.
        if (braces.stack.length > 0 && state.globIndex < glob.length && (glob[state.globIndex] === COMMA || glob[state.globIndex] === CLOSE_BRACE)) {
          if (skipBraces(state, glob, false) === 'invalid') return false;
        }
        continue;
      } else if (g === QUESTION && inPath) {
        if (!isSeparator(path[state.pathIndex])) {
          state.globIndex += 1;
          state.pathIndex += 1;
          continue;
        }
      } else if (g === OPEN_BRACKET && inPath) {
        state.globIndex += 1;
        const c = path[state.pathIndex] as number;
        let classNegated = false;
        if (state.globIndex < glob.length && (glob[state.globIndex] === CARET || glob[state.globIndex] === BANG)) {
          classNegated = true;
          state.globIndex += 1;
        }
        let first = true;
        let isMatch = false;
        while (state.globIndex < glob.length && (first || glob[state.globIndex] !== CLOSE_BRACKET)) {
          const low = readEscaped(glob, state.globIndex);
          if (low === undefined) return false;
          state.globIndex = low.index + 1;
          let high = low.c;
          // A '-' not followed by ']' reads the end of a range.
          if (state.globIndex + 1 < glob.length && glob[state.globIndex] === DASH && glob[state.globIndex + 1] !== CLOSE_BRACKET) {
            state.globIndex += 1;
            const h = readEscaped(glob, state.globIndex);
            if (h === undefined) return false;
            state.globIndex = h.index + 1;
            high = h.c;
          }
          if (low.c <= c && c <= high) isMatch = true;
          first = false;
        }
        if (state.globIndex >= glob.length) return false;
        state.globIndex += 1;
        if (isMatch !== classNegated) {
          state.pathIndex += 1;
          continue;
        }
      } else if (g === OPEN_BRACE && inPath) {
        if (braces.stack.length >= MAX_BRACES) return false;
        state = pushBrace(braces, state);
        continue;
      } else if (g === CLOSE_BRACE && braces.stack.length > 0) {
        // The end of the braces: the last option matched.
        braces.longestBraceMatch = Math.max(braces.longestBraceMatch, state.pathIndex);
        state.globIndex += 1;
        state = popBrace(braces, state);
        continue;
      } else if (g === COMMA && braces.stack.length > 0) {
        // One option matched; the others may match longer.
        braces.longestBraceMatch = Math.max(braces.longestBraceMatch, state.pathIndex);
        state.pathIndex = lastBrace(braces).pathIndex;
        state.globIndex += 1;
        state.wildcard = noWildcard();
        state.globstar = noWildcard();
        continue;
      } else if (inPath) {
        // A literal (escapes included); also '?', '[' and '{' past the end of the path never get here.
        const lit = readEscaped(glob, state.globIndex);
        if (lit === undefined) return false;
        state.globIndex = lit.index;
        const isMatch = lit.c === SLASH ? isSeparator(path[state.pathIndex]) : path[state.pathIndex] === lit.c;
        if (isMatch) {
          if (braces.stack.length > 0 && state.globIndex > 0 && glob[state.globIndex - 1] === CLOSE_BRACE) {
            braces.longestBraceMatch = state.pathIndex;
            state = popBrace(braces, state);
          }
          state.globIndex += 1;
          state.pathIndex += 1;
          // Not a separator: lock in the previous globstar.
          if (lit.c !== SLASH) state.globstar.pathIndex = 0;
          continue;
        }
      }
    }

    // No match: go back to the last star.
    if (state.wildcard.pathIndex > 0 && state.wildcard.pathIndex <= path.length) {
      backtrack(state);
      continue;
    }

    if (braces.stack.length > 0) {
      // In braces: the next option, from where the '{' was seen.
      const next = skipBraces(state, glob, true);
      if (next === 'invalid') return false;
      if (next === 'comma') {
        state.pathIndex = lastBrace(braces).pathIndex;
        continue;
      }
      // The end: an earlier option matched, or restore and try a star before the braces.
      if (braces.longestBraceMatch > 0) {
        state = popBrace(braces, state);
        continue;
      }
      state = braces.stack.pop() as State;
      if (state.wildcard.pathIndex > 0 && state.wildcard.pathIndex <= path.length) {
        backtrack(state);
        continue;
      }
    }
    return negated;
  }
  return !negated;
}

/**
 * A lone `*` becomes `**` (crossing `/`) unless it is preceded by `**\/` or followed by `/**`;
 * runs of two or more are kept (normalize_wildcards, over code points).
 */
export function normalizeWildcards(pattern: string): string {
  const cs = Array.from(pattern);
  let out = '';
  let i = 0;
  while (i < cs.length) {
    if (cs[i] !== '*') {
      out += cs[i] as string;
      i += 1;
      continue;
    }
    const start = i;
    while (i < cs.length && cs[i] === '*') i += 1;
    const count = i - start;
    if (count >= 2) out += '*'.repeat(count);
    else {
      const precededByGlobstar = start >= 3 && cs[start - 3] === '*' && cs[start - 2] === '*' && cs[start - 1] === '/';
      const followedByGlobstar = i + 2 < cs.length && cs[i] === '/' && cs[i + 1] === '*' && cs[i + 2] === '*';
      out += precededByGlobstar || followedByGlobstar ? '*' : '**';
    }
  }
  return out;
}

/** The match rules use: `*` crosses `/` (`rm *` matches `rm -rf /`), `src/**\/*.rs` keeps its segments. */
export function wildcardMatch(pattern: string, value: string): boolean {
  return globMatch(normalizeWildcards(pattern), value);
}
