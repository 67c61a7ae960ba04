import { z } from 'zod';
import { JsonValueSchema, type JsonValue } from './json.ts';
import { ToolCallSchema, type ContentBlock, type ToolCall } from './message.ts';
import { TokenUsageSchema, type TokenUsage } from './usage.ts';

/** Why the model stopped. PascalCase on the wire, as 0.6 writes it (protocol-spec §1.4). */
export const StopReasonSchema = z.enum(['EndTurn', 'MaxTokens', 'ToolUse', 'StopSequence']);
export type StopReason = z.infer<typeof StopReasonSchema>;

/** One part of a streamed inference response, as an `LlmExecutor` yields it. */
export const StreamPartSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text_delta'), delta: z.string() }),
  z.object({ type: z.literal('reasoning_delta'), delta: z.string() }),
  z.object({ type: z.literal('reasoning_encrypted'), value: z.string() }),
  z.object({ type: z.literal('tool_call_start'), id: z.string(), name: z.string() }),
  z.object({ type: z.literal('tool_call_delta'), id: z.string(), args_delta: z.string() }),
  z.object({ type: z.literal('tool_call_ready'), id: z.string(), name: z.string(), arguments: JsonValueSchema }),
  z.object({ type: z.literal('usage'), usage: TokenUsageSchema }),
  z.object({ type: z.literal('finish'), stop_reason: StopReasonSchema, has_incomplete_tool_calls: z.boolean().optional() }),
  z.object({
    type: z.literal('response_metadata'),
    id: z.string().optional(),
    model: z.string().optional(),
    provider_name: z.string().optional(),
    server: z.object({ address: z.string(), port: z.number().int().positive().optional() }).optional(),
  }),
]);
export type StreamPart =
  | { readonly type: 'text_delta'; readonly delta: string }
  | { readonly type: 'reasoning_delta'; readonly delta: string }
  | { readonly type: 'reasoning_encrypted'; readonly value: string }
  | { readonly type: 'tool_call_start'; readonly id: string; readonly name: string }
  | { readonly type: 'tool_call_delta'; readonly id: string; readonly args_delta: string }
  | { readonly type: 'tool_call_ready'; readonly id: string; readonly name: string; readonly arguments: JsonValue }
  | { readonly type: 'usage'; readonly usage: TokenUsage }
  | { readonly type: 'finish'; readonly stop_reason: StopReason; readonly has_incomplete_tool_calls?: boolean }
  | ResponseMetadataPart;

/**
 * What the provider said of its answer and of itself, before the answer's first content: its id and the
 * model it says answered (as it said them), the provider's name in the GenAI semantic conventions
 * (`openai`, `anthropic`, `gcp.gemini`, …) and the host and port it was reached at. Every field is
 * optional; a stream may carry several such parts, a later field replacing an earlier one. It carries
 * no content: the loop emits no event for it (what a plugin's tap is told of an inference).
 */
export interface ResponseMetadataPart {
  readonly type: 'response_metadata';
  readonly id?: string;
  readonly model?: string;
  readonly provider_name?: string;
  readonly server?: ServerAddress;
}

/** Where a provider was reached: its base URL's host and port. */
export interface ServerAddress {
  readonly address: string;
  readonly port?: number;
}

/** `into` with each field `part` gives replacing its own (a new object; `into` is not changed). */
export function mergeResponseMetadata(into: Omit<ResponseMetadataPart, 'type'> | undefined, part: ResponseMetadataPart): Omit<ResponseMetadataPart, 'type'> {
  const { type: _type, ...facts } = part;
  return { ...into, ...facts };
}

/** The whole response of one inference, accumulated from its parts. */
export interface StreamResult {
  readonly content: readonly ContentBlock[];
  readonly reasoning: string;
  readonly toolCalls: readonly ToolCall[];
  readonly usage?: TokenUsage;
  readonly stopReason?: StopReason;
  /** A tool call whose arguments never became valid JSON (dropped from `toolCalls`). */
  readonly hasIncompleteToolCalls: boolean;
}

export const StreamResultSchema = z.object({
  content: z.array(z.object({ type: z.literal('text'), text: z.string() })),
  reasoning: z.string(),
  toolCalls: z.array(ToolCallSchema),
  usage: TokenUsageSchema.optional(),
  stopReason: StopReasonSchema.optional(),
  hasIncompleteToolCalls: z.boolean(),
});

/** Concatenated text of a stream result. */
export function streamText(result: StreamResult): string {
  let out = '';
  for (const block of result.content) if (block.type === 'text') out += block.text;
  return out;
}
