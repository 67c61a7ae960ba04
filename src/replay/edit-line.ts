import type { JsonValue } from '../contract/json.ts';

/**
 * An edit of a fork point as a person writes one, `PATH=JSON` (`awaken replay --edit`, a line of the
 * studio's fork form): the path up to the first `=`, then a JSON value; or what is wrong with it.
 */
export type EditLine =
  | { readonly ok: true; readonly path: string; readonly value: JsonValue }
  | { readonly ok: false; readonly path: string; readonly problem: 'no_equals' | 'not_json' };

export function readEditLine(text: string): EditLine {
  const eq = text.indexOf('=');
  if (eq < 0) return { ok: false, path: text, problem: 'no_equals' };
  const path = text.slice(0, eq);
  try {
    return { ok: true, path, value: JSON.parse(text.slice(eq + 1)) as JsonValue };
  } catch {
    return { ok: false, path, problem: 'not_json' };
  }
}
