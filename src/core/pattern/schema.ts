import { z } from 'zod';
import { formatPattern } from './format.ts';
import { parsePattern } from './parse.ts';
import { describeParseError } from './types.ts';

/**
 * A tool pattern as text in a config or an action: refused with the parser's message and position
 * (`"Bash(npm *": parse error at 10: expected ')', found end of input`), kept in its printed form.
 */
export const PatternTextSchema = z.string().transform((text, ctx) => {
  const parsed = parsePattern(text);
  if (parsed.ok) return formatPattern(parsed.value);
  ctx.addIssue({ code: 'custom', message: `${JSON.stringify(text)}: ${describeParseError(parsed.error)}` });
  return z.NEVER;
});
