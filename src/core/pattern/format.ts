import { OP_TOKENS, type FieldCondition, type MatchOp, type PathSegment, type ToolCallPattern } from './types.ts';

const tokenOf = (op: MatchOp): string => (OP_TOKENS.find(([, o]) => o === op) as readonly [string, MatchOp])[0];

/** `"…"` with `"` and `\` escaped, so the parser reads the same value back (0.6 does not escape them). */
export const quoteValue = (value: string): string => `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

export function formatPath(path: readonly PathSegment[]): string {
  let out = '';
  for (const seg of path) {
    if (seg.kind === 'index') out += `[${seg.index}]`;
    else if (seg.kind === 'any_index') out += '[*]';
    else out += (out === '' ? '' : '.') + (seg.kind === 'wildcard' ? '*' : seg.name);
  }
  return out;
}

const formatCondition = (c: FieldCondition): string => `${formatPath(c.path)} ${tokenOf(c.op)} ${quoteValue(c.value)}`;

/**
 * The pattern as text: `parsePattern(formatPattern(p))` gives `p` back for every pattern the parser
 * makes (a property spec holds it). Also its serialized form in configs and state.
 */
export function formatPattern(pattern: ToolCallPattern): string {
  const { tool, args } = pattern;
  const head = tool.kind === 'exact' ? tool.name : tool.kind === 'glob' ? tool.pattern : `/${tool.source}/`;
  if (args.kind === 'any') return head;
  if (args.kind === 'primary') return `${head}(${args.value})`;
  return `${head}(${args.conditions.map(formatCondition).join(', ')})`;
}
