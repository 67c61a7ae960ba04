import type { z } from 'zod';

/** One problem of a failed parse as a user reads it: the field (its path) and what is wrong with it. */
export interface FieldIssue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
  /** The field is one the schema does not know. */
  readonly unknown?: true;
}

/** The problems of a failed parse; a key the schema does not know is named as a field of its own ("unknown field"). */
export function fieldIssues(error: z.ZodError): FieldIssue[] {
  return error.issues.flatMap((issue): FieldIssue[] =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: [...issue.path, key], message: 'unknown field', unknown: true as const }))
      : [{ path: issue.path, message: issue.message }],
  );
}

/** The problems of a failed parse on one line: `rules.0.tool: …; rules.1.behavior: …` (a problem of the whole value has no path). */
export const issueLine = (error: z.ZodError): string =>
  fieldIssues(error)
    .map((i) => (i.path.length === 0 ? i.message : `${i.path.map(String).join('.')}: ${i.message}`))
    .join('; ');

/** A path as a user writes it into a file: `[0].text`, `tool_calls[1].id` (a leading key without a dot). */
export function bracketPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : `${out === '' ? '' : '.'}${String(key)}`;
  return out;
}
