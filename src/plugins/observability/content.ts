import type { ContentBlock, Message, ToolCall } from '../../contract/message.ts';
import type { GenAIContent, GenAIMessage, GenAIPart } from './spans.ts';

/**
 * What an inference was sent and answered, in the GenAI semantic conventions' message shape
 * (`gen_ai.input.messages`, `gen_ai.system_instructions`, `gen_ai.output.messages`): each message a
 * role and its parts — text, tool calls, tool results (`tool_call_response`, the text the model read),
 * images and documents by URI or inline. The system messages are the instructions, apart from the history.
 */
export function contentOf(
  sent: readonly Message[],
  answer: { readonly text: string; readonly reasoning?: string; readonly toolCalls: readonly ToolCall[] } | undefined,
  finishReason: string | undefined,
): GenAIContent {
  const system: GenAIPart[] = [];
  const input: GenAIMessage[] = [];
  for (const m of sent) {
    if (m.role === 'system') system.push(...m.content.map(partOf));
    else input.push({ role: m.role, parts: messageParts(m) });
  }
  if (answer === undefined) return { input_messages: input, system_instructions: system };
  const parts: GenAIPart[] = [
    ...(answer.reasoning !== undefined && answer.reasoning !== '' ? [{ type: 'reasoning' as const, content: answer.reasoning }] : []),
    ...(answer.text !== '' ? [{ type: 'text' as const, content: answer.text }] : []),
    ...answer.toolCalls.map(toolCallPart),
  ];
  return {
    input_messages: input,
    system_instructions: system,
    output_messages: [{ role: 'assistant', parts, ...(finishReason !== undefined ? { finish_reason: finishReason } : {}) }],
  };
}

/** A tool message is the result of its call (`tool_call_response`); any other, its blocks then its calls. */
function messageParts(m: Message): GenAIPart[] {
  if (m.role === 'tool' && m.tool_call_id !== undefined) return [{ type: 'tool_call_response', id: m.tool_call_id, response: textOf(m.content) }];
  return [...m.content.map(partOf), ...(m.tool_calls ?? []).map(toolCallPart)];
}

const toolCallPart = (c: ToolCall): GenAIPart => ({ type: 'tool_call', id: c.id, name: c.name, arguments: c.arguments });

const textOf = (blocks: readonly ContentBlock[]): string => blocks.map((b) => (b.type === 'text' ? b.text : '')).join('');

function partOf(b: ContentBlock): GenAIPart {
  switch (b.type) {
    case 'text':
      return { type: 'text', content: b.text };
    case 'image':
    case 'document': {
      const modality = b.type === 'image' ? 'image' : 'document';
      return b.source.kind === 'url'
        ? { type: 'uri', modality, uri: b.source.url }
        : { type: 'blob', modality, mime_type: b.source.media_type, content: b.source.data };
    }
    default: {
      const unknown: never = b;
      return { type: 'text', content: JSON.stringify(unknown) };
    }
  }
}
