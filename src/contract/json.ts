import { z } from 'zod';

/** Any JSON value. Payloads (`data`, `arguments`, `content`, …) are opaque JSON and keep their key order. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** Deeper than this is refused rather than walked (no stack exhaustion on hostile input). */
export const MAX_JSON_DEPTH = 512;

/**
 * Whether `value` is JSON: finite numbers, plain objects and arrays, no cycles, at most
 * `MAX_JSON_DEPTH` levels. Every own key counts, `__proto__` included. A cycle is found by the
 * depth bound (it is a path without end), so the walk keeps no record of where it has been.
 */
export function isJsonValue(value: unknown): value is JsonValue {
  return check(value, 0);
}

function check(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (value === null) return true;
      if (depth >= MAX_JSON_DEPTH) return false;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (!check(value[i], depth + 1)) return false;
        return true;
      }
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) return false;
      for (const key in value) if (Object.hasOwn(value, key) && !check((value as Record<string, unknown>)[key], depth + 1)) return false;
      return true;
    }
    default:
      return false;
  }
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
