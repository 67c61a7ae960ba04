import fc from 'fast-check';
import type { z } from 'zod';

/**
 * An arbitrary for the plain-data subset of zod used by the error families: objects, discriminated
 * unions, literals, enums, strings and non-negative integers. Anything else is a test bug.
 */
export function fromSchema(schema: z.ZodType): fc.Arbitrary<unknown> {
  const def = (schema as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
  switch (def.type) {
    case 'string':
      return fc.string({ maxLength: 8 });
    case 'number':
      return fc.nat();
    case 'literal':
      return fc.constantFrom(...(def['values'] as unknown[]));
    case 'enum':
      return fc.constantFrom(...Object.values(def['entries'] as Record<string, string>));
    case 'object': {
      const shape = def['shape'] as Record<string, z.ZodType>;
      return fc.record(Object.fromEntries(Object.entries(shape).map(([k, v]) => [k, fromSchema(v)])), { noNullPrototype: true });
    }
    case 'union':
      return fc.oneof(...(def['options'] as z.ZodType[]).map(fromSchema));
    default:
      throw new Error(`fromSchema: unsupported zod type ${def.type}`);
  }
}
