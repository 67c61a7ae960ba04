import type { Message } from '../../contract/message.ts';
import type { ToolDescriptor } from '../../contract/tool.ts';

/**
 * The token-estimation port. Estimates decide what is kept, so they must be deterministic; a real
 * tokenizer can be plugged in, the default is the byte heuristic below.
 */
export interface Tokenizer {
  readonly name: string;
  /** Tokens of one message as the model would receive it. */
  messageTokens(message: Message): number;
  /** Tokens the tool schemas of one request take. */
  toolTokens(tools: readonly ToolDescriptor[]): number;
}

const ASCII = /^[\x00-\x7f]*$/;

/** UTF-8 byte length of a string, without allocating (lone surrogates count as U+FFFD, 3 bytes). */
export function utf8Length(text: string): number {
  if (ASCII.test(text)) return text.length;
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** Cost of a block that is not text (image, document). */
export const NON_TEXT_BLOCK_TOKENS = 50;
/** Fixed per-message overhead. */
export const MESSAGE_OVERHEAD_TOKENS = 4;

/**
 * 0.6's byte heuristic (core-spec §5.2): `4 + floor(S / 4)` per message, S = UTF-8 bytes of its text
 * plus 50 per non-text block. Tool calls are counted too (name and compact JSON arguments): 0.6 leaves
 * them out ⟂, which lets an assistant message full of tool calls look free (docs/parity.md X3).
 * Tool schemas: `name + description + floor(len(compact JSON of parameters) / 4) + 10` each (0.6's
 * formula, name and description in bytes, undivided).
 */
export const byteHeuristicTokenizer: Tokenizer = Object.freeze({
  name: 'byte-heuristic',
  messageTokens(message: Message): number {
    let s = 0;
    for (const block of message.content) s += block.type === 'text' ? utf8Length(block.text) : NON_TEXT_BLOCK_TOKENS;
    if (message.tool_calls !== undefined) {
      for (const call of message.tool_calls) s += utf8Length(call.name) + utf8Length(JSON.stringify(call.arguments) ?? 'null');
    }
    return MESSAGE_OVERHEAD_TOKENS + Math.floor(s / 4);
  },
  toolTokens(tools: readonly ToolDescriptor[]): number {
    let total = 0;
    for (const tool of tools) {
      const schema = JSON.stringify(tool.parameters);
      total += utf8Length(tool.name) + utf8Length(tool.description) + Math.floor(utf8Length(schema ?? '') / 4) + 10;
    }
    return total;
  },
});

/** Σ message tokens. */
export function estimateTokens(messages: readonly Message[], tokenizer: Tokenizer = byteHeuristicTokenizer): number {
  let total = 0;
  for (const m of messages) total += tokenizer.messageTokens(m);
  return total;
}
