import type { JsonValue } from '../contract/json.ts';

/** One difference between two JSON values: where, and the value on each side (absent: undefined). */
export interface JsonChange {
  readonly path: string;
  readonly expected?: JsonValue;
  readonly actual?: JsonValue;
}

const isObject = (v: JsonValue | undefined): v is { [k: string]: JsonValue } => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every leaf-level difference, in key order of the expected side then the actual side. */
export function jsonChanges(expected: JsonValue | undefined, actual: JsonValue | undefined, path = ''): JsonChange[] {
  if (JSON.stringify(expected) === JSON.stringify(actual)) return [];
  if (isObject(expected) && isObject(actual)) {
    const keys = [...new Set([...Object.keys(expected), ...Object.keys(actual)])];
    return keys.flatMap((k) => jsonChanges(expected[k], actual[k], path === '' ? k : `${path}.${k}`));
  }
  if (Array.isArray(expected) && Array.isArray(actual)) {
    const n = Math.max(expected.length, actual.length);
    const out: JsonChange[] = [];
    for (let i = 0; i < n; i++) out.push(...jsonChanges(expected[i], actual[i], `${path}[${i}]`));
    return out;
  }
  return [{ path: path === '' ? '(root)' : path, ...(expected !== undefined ? { expected } : {}), ...(actual !== undefined ? { actual } : {}) }];
}

/** `- path: expected` / `+ path: actual` lines, as a unified diff reads. */
export function renderChanges(changes: readonly JsonChange[], limit = 20): string[] {
  const out: string[] = [];
  for (const c of changes.slice(0, limit)) {
    if (c.expected !== undefined) out.push(`- ${c.path}: ${JSON.stringify(c.expected)}`);
    if (c.actual !== undefined) out.push(`+ ${c.path}: ${JSON.stringify(c.actual)}`);
  }
  if (changes.length > limit) out.push(`… ${changes.length - limit} more`);
  return out;
}
