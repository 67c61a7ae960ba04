import { z } from 'zod';

/** Any JSON value. Payloads (`data`, `arguments`, `content`, …) are opaque JSON and keep their key order. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** Deeper than this is refused rather than walked (no stack exhaustion on hostile input). */
export const MAX_JSON_DEPTH = 512;

/**
 * Whether `value` is JSON: finite numbers, plain objects and arrays, no cycles, at most
 * `MAX_JSON_DEPTH` levels. Every own key counts, `__proto__` included.
 */
export function isJsonValue(value: unknown): value is JsonValue {
  return check(value, 0, undefined);
}

/**
 * From this depth on the walk keeps the objects on its path, so a cycle is found within one turn of
 * it; above it (where nearly every value ends) it keeps none and makes no set. A cycle is a path
 * without end, so it always comes this deep.
 */
const PATH_KEPT_FROM = 32;

function check(value: unknown, depth: number, path: Set<object> | undefined): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (value === null) return true;
      if (depth >= MAX_JSON_DEPTH) return false;
      let below = path;
      if (depth >= PATH_KEPT_FROM) {
        below ??= new Set();
        if (below.has(value)) return false;
        below.add(value);
      }
      const ok = checkMembers(value, depth + 1, below);
      if (depth >= PATH_KEPT_FROM) below?.delete(value);
      return ok;
    }
    default:
      return false;
  }
}

function checkMembers(value: object, depth: number, path: Set<object> | undefined): boolean {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!check(value[i], depth, path)) return false;
    return true;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return false;
  for (const key in value) if (Object.hasOwn(value, key) && !check((value as Record<string, unknown>)[key], depth, path)) return false;
  return true;
}

/**
 * Validates without rebuilding: the parsed value is the input itself, so no key is ever dropped or
 * reordered (a rebuilding record schema would lose an own `__proto__` key that JSON.parse produced).
 */
export const JsonValueSchema: z.ZodType<JsonValue> = z.custom<JsonValue>(isJsonValue, {
  message: `expected a JSON value (finite numbers, plain objects and arrays, depth ≤ ${MAX_JSON_DEPTH})`,
});

export const JsonObjectSchema: z.ZodType<JsonObject> = z.custom<JsonObject>((v) => typeof v === 'object' && v !== null && !Array.isArray(v) && isJsonValue(v), {
  message: 'expected a JSON object',
});
