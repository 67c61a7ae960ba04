import { RE2JS } from 're2js';

/**
 * Regexes of tool patterns run on RE2JS, a pure-JavaScript port of RE2: matching is linear in the
 * input whatever the pattern, so a hostile `/(a+)+$/` cannot hang a run and the core needs no clock
 * (docs/adr/0030-linear-time-regex.md). The syntax is RE2's, which is the Rust original's `regex`
 * crate's (`(?i)`, classes, alternation; no backreferences or lookaround).
 */
export type RegexTest = (input: string) => boolean;

/** Compiles `source` for an unanchored search, or says why it is not a regex. */
export function compileRegex(source: string): { readonly ok: true; readonly test: RegexTest } | { readonly ok: false; readonly message: string } {
  try {
    const re = RE2JS.compile(source);
    return { ok: true, test: (input) => re.test(input) };
  } catch (e) {
    return { ok: false, message: e instanceof Error ? e.message : String(e) };
  }
}
