import type { Message } from '@ag-ui/client';

/** The tool calls an AG-UI client holds, in order: `[call id, tool name]`. */
export const callsOf = (messages: readonly Message[]): [string, string][] =>
  messages.flatMap((m) => ('toolCalls' in m ? (m.toolCalls ?? []).map((c): [string, string] => [c.id, c.function.name]) : []));

/** The last assistant text an AG-UI client holds. */
export const lastAssistantText = (messages: readonly Message[]): string => {
  const m = [...messages].reverse().find((x) => x.role === 'assistant' && typeof x.content === 'string' && x.content !== '');
  return typeof m?.content === 'string' ? m.content : '';
};
