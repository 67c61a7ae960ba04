import type { z } from 'zod';

/**
 * Canonical wire form of any contract value: keys in schema order, absent optionals omitted,
 * unknown keys dropped, opaque JSON payloads kept as they are.
 */
export function toWire<S extends z.ZodType>(schema: S, value: z.input<S> | z.output<S>): string {
  return JSON.stringify(schema.parse(value));
}

/** Parses wire text with the schema; throws a `ZodError` (or `SyntaxError`) on bad input. */
export function fromWire<S extends z.ZodType>(schema: S, text: string): z.output<S> {
  return schema.parse(JSON.parse(text));
}
