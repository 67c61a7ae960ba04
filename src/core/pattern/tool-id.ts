/**
 * The anchored tool-id dialect of `allowed_tools` / `excluded_tools` (tool_id.rs): only `*` is
 * special (any run, `/` and `:` included) and `\x` is a literal x (a trailing lone `\` is a literal
 * backslash); `? [ { !` are literal. Pinned by the 30 vectors of fixtures/patterns/catalog-glob-parity.json.
 * Over code points; one backtrack point (as the Rust original), so at most pattern × id steps.
 */
export function toolIdMatch(pattern: string, toolId: string): boolean {
  const p = Array.from(pattern);
  const v = Array.from(toolId);
  let pi = 0;
  let vi = 0;
  let starP = -1;
  let starV = 0;
  while (vi < v.length) {
    if (pi < p.length) {
      const c = p[pi];
      if (c === '\\' && pi + 1 < p.length) {
        if (p[pi + 1] === v[vi]) {
          pi += 2;
          vi += 1;
          continue;
        }
      } else if (c === '*') {
        starP = pi;
        starV = vi;
        pi += 1;
        continue;
      } else if (c === v[vi]) {
        pi += 1;
        vi += 1;
        continue;
      }
    }
    if (starP < 0) return false;
    pi = starP + 1;
    starV += 1;
    vi = starV;
  }
  while (pi < p.length && p[pi] === '*') pi += 1;
  return pi === p.length;
}

export { toolIdPatternError, type ToolIdPatternError } from '../../contract/tool-id-pattern.ts';
