import { z } from 'zod';
import { JsonValueSchema, type JsonValue } from '../../contract/json.ts';
import { Messages, type ContentBlock, type Message } from '../../contract/message.ts';
import { err, ok, type Result } from '../../contract/result.ts';
import { issuesOf, type WireError } from '../../contract/wire.ts';
import type { InboundRun } from '../../contract/inbound.ts';
import { decisionFor, type Decision } from '../../contract/decision.ts';

/**
 * The body `DefaultChatTransport` posts (`{id, messages, trigger, messageId}`) plus the runtime's own
 * fields (`threadId`, `agentId`, `state`). UI messages need `parts` (a legacy `{role, content}`
 * message is refused, naming the field); part fields the runtime does not read may be anything.
 */
const PartSchema = z.looseObject({
  type: z.string(),
  text: z.string().optional(),
  mediaType: z.string().optional(),
  url: z.string().optional(),
  toolCallId: z.string().optional(),
  state: z.string().optional(),
  output: z.unknown().optional(),
  errorText: z.string().optional(),
  providerExecuted: z.boolean().optional(),
  approval: z.looseObject({ id: z.string(), approved: z.boolean().optional(), reason: z.string().optional() }).optional(),
});

const UiMessageSchema = z.looseObject({
  id: z.string().optional(),
  role: z.enum(['system', 'user', 'assistant']),
  parts: z.array(PartSchema),
});

export const AiSdkChatRequestSchema = z.looseObject({
  id: z.string().optional(),
  threadId: z.string().min(1).optional(),
  thread_id: z.string().min(1).optional(),
  agentId: z.string().min(1).optional(),
  agent_id: z.string().min(1).optional(),
  messages: z.array(UiMessageSchema),
  trigger: z.string().optional(),
  state: z.unknown().optional(),
  /** Start the new turn even when the thread waits for an approval (the transport's `body` option). */
  discardPause: z.boolean().optional(),
  discard_pause: z.boolean().optional(),
});

type Part = z.infer<typeof PartSchema>;

const json = (v: unknown): JsonValue => {
  const r = JsonValueSchema.safeParse(v ?? null);
  return r.success ? r.data : null;
};

/** A file part as a content block: data URLs as base64 media, http(s) URLs as links; others dropped. */
function fileBlock(part: Part): ContentBlock | undefined {
  const url = part.url ?? '';
  const mediaType = part.mediaType ?? 'application/octet-stream';
  const data = /^data:([^;,]+)?(;base64)?,(.*)$/s.exec(url);
  const source =
    data !== null && data[2] !== undefined
      ? { kind: 'base64' as const, media_type: data[1] ?? mediaType, data: data[3] ?? '' }
      : /^https?:/.test(url)
        ? { kind: 'url' as const, url }
        : undefined;
  if (source === undefined) return undefined;
  return mediaType.startsWith('image/') ? { type: 'image', source } : { type: 'document', source };
}

/** The decision an assistant tool part carries, by its state; `undefined` when it carries none. */
function decisionOf(part: Part, now: number): Decision | undefined {
  if (!part.type.startsWith('tool-') && part.type !== 'dynamic-tool') return undefined;
  if (part.providerExecuted === true || part.toolCallId === undefined) return undefined;
  const decide = (targetId: string, action: 'resume' | 'cancel', result: JsonValue, reason?: string): Decision =>
    decisionFor(targetId, action, now, { result, ...(reason !== undefined ? { reason } : {}) });
  switch (part.state) {
    case 'output-available':
      return decide(part.toolCallId, 'resume', json(part.output));
    case 'output-error':
      return decide(part.toolCallId, 'resume', { error: part.errorText ?? 'tool execution error' });
    case 'output-denied':
      return decide(part.approval?.id ?? part.toolCallId, 'cancel', { approved: false }, part.approval?.reason);
    case 'approval-responded': {
      const a = part.approval;
      if (a === undefined || a.approved === undefined) return undefined;
      const result: JsonValue = { approved: a.approved, ...(a.reason !== undefined ? { reason: a.reason } : {}) };
      return decide(a.id, a.approved ? 'resume' : 'cancel', result, a.reason);
    }
    default:
      return undefined;
  }
}

/**
 * Decodes an AI SDK v6 chat request. User and system messages become input (text and file parts);
 * assistant messages are the server's own history and are not taken as input, but their tool parts
 * carry answers: an output (`output-available` resumes with it, `output-error` with `{error}`), a
 * denial (`output-denied` cancels), or an approval answer (`approval-responded`, addressed to the
 * approval id, which is the suspension id). Later answers for one target win. Every answer in the
 * history is a candidate: the server delivers only those for calls the thread waits on
 * (`planInbound`). `trigger: 'regenerate-message'` asks for a new answer to the last message.
 * The chat id is the thread id unless `threadId` is given. `now` stamps the decisions.
 */
export function decodeAiSdkRequest(body: unknown, now: number): Result<InboundRun, WireError> {
  const parsed = AiSdkChatRequestSchema.safeParse(body);
  if (!parsed.success) return err({ code: 'invalid_value', issues: issuesOf(parsed.error) });
  const req = parsed.data;
  const messages: { id?: string; message: Message }[] = [];
  const decisions = new Map<string, Decision>();
  for (const m of req.messages) {
    if (m.role === 'assistant') {
      for (const p of m.parts) {
        const d = decisionOf(p, now);
        if (d !== undefined) {
          decisions.delete(d.targetId);
          decisions.set(d.targetId, d);
        }
      }
      continue;
    }
    const content: ContentBlock[] = [];
    for (const p of m.parts) {
      if (p.type === 'text' && p.text !== undefined && p.text !== '') content.push({ type: 'text', text: p.text });
      else if (p.type === 'file') {
        const b = fileBlock(p);
        if (b !== undefined) content.push(b);
      }
    }
    if (content.length === 0) continue;
    const message: Message = { ...(m.role === 'user' ? Messages.user('') : Messages.system('')), content };
    messages.push({ ...(m.id !== undefined ? { id: m.id } : {}), message });
  }
  const threadId = req.threadId ?? req.thread_id ?? req.id;
  const agentId = req.agentId ?? req.agent_id;
  const state = req.state === undefined ? undefined : json(req.state);
  const last = req.messages.at(-1)?.id;
  return ok({
    ...(threadId !== undefined ? { threadId } : {}),
    ...(agentId !== undefined ? { agentId } : {}),
    messages,
    decisions: [...decisions.values()],
    ...(state !== undefined && state !== null ? { state } : {}),
    ...(req.trigger === 'regenerate-message' && last !== undefined ? { regenerateFrom: last } : {}),
    ...((req.discardPause ?? req.discard_pause) === true ? { discardPause: true } : {}),
  });
}
