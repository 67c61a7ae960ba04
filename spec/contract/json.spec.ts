import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isJsonValue, JsonObjectSchema, JsonValueSchema, MAX_JSON_DEPTH } from '../../src/contract/json.ts';
import { ToolResultSchema } from '../../src/contract/tool.ts';
import { fromWire, toWire } from '../../src/contract/wire.ts';

describe('JSON values', () => {
  it('accepts everything JSON.parse produces, unchanged (same object)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const parsed = JSON.parse(JSON.stringify(v)) as unknown;
        expect(JsonValueSchema.parse(parsed)).toBe(parsed);
      }),
      { numRuns: 200 },
    );
  });

  it('keeps an own __proto__ key from the wire instead of dropping it', () => {
    const wire = '{"tool_name":"t","status":"success","data":{"__proto__":{"x":1},"a":2},"message":null}';
    const parsed = fromWire(ToolResultSchema, wire);
    expect(Object.keys(parsed.data as object)).toEqual(['__proto__', 'a']);
    expect(toWire(ToolResultSchema, parsed)).toBe(wire);
  });

  it('refuses what JSON cannot carry', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    const a: unknown[] = [1];
    a.push([a]);
    // A cycle of 40 objects, each with a sibling that is JSON: longer than the depth walked without a path kept.
    const ring: Record<string, unknown> = { ok: [1, 'x'] };
    let last = ring;
    for (let i = 0; i < 39; i++) last = last['next'] = { ok: { n: i } };
    last['next'] = ring;
    for (const bad of [Number.NaN, Infinity, undefined, () => 1, new Date(0), new Map(), cyclic, a, ring, [1, undefined], { a: Symbol('x') }, 10n]) {
      expect(isJsonValue(bad), String(bad)).toBe(false);
      expect(JsonValueSchema.safeParse(bad).success).toBe(false);
    }
  });

  it('refuses nesting deeper than the limit without exhausting the stack', () => {
    const deep = (n: number): unknown => (n === 0 ? 0 : [deep(n - 1)]);
    expect(isJsonValue(deep(MAX_JSON_DEPTH))).toBe(true);
    expect(isJsonValue(deep(MAX_JSON_DEPTH + 1))).toBe(false);
    expect(isJsonValue(JSON.parse('['.repeat(100_000) + ']'.repeat(100_000)))).toBe(false);
  });

  it('accepts a shared (non-cyclic) sub-object and null-prototype objects', () => {
    const shared = { x: 1 };
    expect(isJsonValue({ a: shared, b: shared })).toBe(true);
    expect(isJsonValue(Object.assign(Object.create(null) as object, { k: 'v' }))).toBe(true);
  });

  it('objects only for JsonObject', () => {
    expect(JsonObjectSchema.safeParse({ a: 1 }).success).toBe(true);
    expect(JsonObjectSchema.safeParse([1]).success).toBe(false);
    expect(JsonObjectSchema.safeParse(null).success).toBe(false);
  });
});
