import { z } from 'zod';

export type ToolIdPatternError = 'empty' | 'dangling_escape';

/**
 * Why a tool-id pattern (`allowed_tools`, `excluded_tools`: `*` any run, `\x` a literal x) is
 * malformed, or undefined when it is well formed (tool_id.rs `validate_tool_id_pattern`).
 */
export function toolIdPatternError(pattern: string): ToolIdPatternError | undefined {
  if (pattern === '') return 'empty';
  let i = 0;
  while (i < pattern.length) {
    if (pattern[i] === '\\') {
      if (i + 1 >= pattern.length) return 'dangling_escape';
      i += 2;
    } else i += 1;
  }
  return undefined;
}

const MESSAGES: Readonly<Record<ToolIdPatternError, string>> = {
  empty: 'pattern is empty',
  dangling_escape: 'pattern ends with a dangling escape (`\\`)',
};

/** A tool-id pattern, refused with the reason when malformed. */
export const ToolIdPatternSchema = z.string().superRefine((p, ctx) => {
  const e = toolIdPatternError(p);
  if (e !== undefined) ctx.addIssue({ code: 'custom', message: MESSAGES[e] });
});
