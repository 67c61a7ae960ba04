import type { z } from 'zod';
import { err, ok, type Result } from './result.ts';

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

/** One problem with a decoded value: where (a JSON path such as `result.status`) and what. */
export interface WireIssue {
  readonly path: string;
  readonly message: string;
}

/** Why wire text could not be decoded; HTTP maps both to a 4xx naming the field. */
export type WireError = { readonly code: 'invalid_json'; readonly message: string } | { readonly code: 'invalid_value'; readonly issues: readonly WireIssue[] };

/** `fromWire` without exceptions: malformed JSON and schema violations come back as data. */
export function decodeWire<S extends z.ZodType>(schema: S, text: string): Result<z.output<S>, WireError> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return err({ code: 'invalid_json', message: (e as Error).message });
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return ok(parsed.data);
  return err({ code: 'invalid_value', issues: issuesOf(parsed.error) });
}

/** The issues of a failed parse, each naming its field by a dotted path. */
export const issuesOf = (error: z.ZodError): WireIssue[] => error.issues.map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message }));
