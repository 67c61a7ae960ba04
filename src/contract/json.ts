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
  return check(value, 0, new Set());
}

function check(value: unknown, depth: number, ancestors: Set<object>): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (value === null) return true;
      if (depth >= MAX_JSON_DEPTH || ancestors.has(value)) return false;
      ancestors.add(value);
      let ok = true;
      if (Array.isArray(value)) {
        for (let i = 0; ok && i < value.length; i++) ok = check(value[i], depth + 1, ancestors);
      } else {
        const proto = Object.getPrototypeOf(value) as unknown;
        if (proto !== Object.prototype && proto !== null) ok = false;
        else for (const key of Object.keys(value)) if (!(ok = check((value as Record<string, unknown>)[key], depth + 1, ancestors))) break;
      }
      ancestors.delete(value);
      return ok;
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
