import { z } from 'zod';
import { JsonValueSchema } from './json.ts';

export const RoleSchema = z.enum(['system', 'user', 'assistant', 'tool']);
export type Role = z.infer<typeof RoleSchema>;

/**
 * `external` messages are shown to API consumers and the model; `internal` ones only to the model.
 * `external` is the default and is omitted on the wire; 0.6's `all` is read as `external` (docs/parity.md).
 */
export const VisibilitySchema = z.enum(['external', 'internal']);
export type Visibility = z.infer<typeof VisibilitySchema>;

export const MediaSourceSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('url'), url: z.string() }),
  z.object({ kind: z.literal('base64'), media_type: z.string(), data: z.string() }),
]);
export type MediaSource = z.infer<typeof MediaSourceSchema>;

export const ContentBlockSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('image'), source: MediaSourceSchema }),
  z.object({ type: z.literal('document'), source: MediaSourceSchema, title: z.string().optional() }),
]);
export type ContentBlock = z.infer<typeof ContentBlockSchema>;

export const ToolCallSchema = z.object({
  id: z.string(),
  name: z.string(),
  arguments: JsonValueSchema,
});
export type ToolCall = z.infer<typeof ToolCallSchema>;

export const MessageMetadataSchema = z.object({
  run_id: z.string().optional(),
  step_index: z.number().int().nonnegative().optional(),
});
export type MessageMetadata = z.infer<typeof MessageMetadataSchema>;

const MessageShape = z.object({
  id: z.string().optional(),
  role: RoleSchema,
  content: z.array(ContentBlockSchema),
  tool_calls: z.array(ToolCallSchema).optional(),
  tool_call_id: z.string().optional(),
  visibility: z.preprocess((v) => (v === 'all' ? 'external' : v), VisibilitySchema).optional(),
  metadata: MessageMetadataSchema.optional(),
});

/** A conversation message. Canonical form omits `visibility` when it is `external`. */
export const MessageSchema = MessageShape.transform((m): Message => {
  if (m.visibility !== 'external') return m as Message;
  const { visibility: _external, ...rest } = m;
  return rest as Message;
});

export type Message = {
  id?: string;
  role: Role;
  content: ContentBlock[];
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  visibility?: 'internal';
  metadata?: MessageMetadata;
};

export const textBlock = (text: string): ContentBlock => ({ type: 'text', text });

type MessageOptions = { readonly id?: string; readonly visibility?: Visibility };

function build(role: Role, text: string, options: MessageOptions = {}): Message {
  return {
    ...(options.id !== undefined ? { id: options.id } : {}),
    role,
    content: [textBlock(text)],
    ...(options.visibility === 'internal' ? { visibility: 'internal' as const } : {}),
  };
}

/**
 * Constructors of the book's `Message::{system,user,assistant,tool,internal_*}`. Ids are never
 * drawn here (the core does no id generation): callers pass the id they drew from their `Env`.
 */
export const Messages = {
  system: (text: string, options?: MessageOptions): Message => build('system', text, options),
  user: (text: string, options?: MessageOptions): Message => build('user', text, options),
  assistant: (text: string, options?: MessageOptions): Message => build('assistant', text, options),
  internalSystem: (text: string, options?: { readonly id?: string }): Message => build('system', text, { ...options, visibility: 'internal' }),
  internalUser: (text: string, options?: { readonly id?: string }): Message => build('user', text, { ...options, visibility: 'internal' }),
  assistantWithToolCalls: (text: string, toolCalls: ToolCall[], options?: MessageOptions): Message => ({
    ...build('assistant', text, options),
    ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
  }),
  tool: (toolCallId: string, text: string, options?: MessageOptions): Message => ({
    ...build('tool', text, options),
    tool_call_id: toolCallId,
  }),
} as const;

/** Concatenated text of every text block. */
export function messageText(message: Message): string {
  let out = '';
  for (const block of message.content) if (block.type === 'text') out += block.text;
  return out;
}
