import { z } from 'zod';
import { a2uiUserActionOf, formatA2uiUserAction } from '../../contract/a2ui.ts';
import { JsonValueSchema, type JsonValue } from '../../contract/json.ts';
import { Messages, type ContentBlock, type Message } from '../../contract/message.ts';
import { err, ok, type Result } from '../../contract/result.ts';
import { issuesOf, type WireError } from '../../contract/wire.ts';
import type { InboundRun } from '../../contract/inbound.ts';
import { decisionFor, type Decision } from '../../contract/decision.ts';
import { isValidId } from '../../contract/id.ts';
import type { ToolDescriptor } from '../../contract/tool.ts';

/**
 * `RunAgentInput` (AG-UI 1.0) as the runtime reads it: the fields it uses are checked (a tool needs
 * a name and, if any, an object of parameters (a JSON Schema); a context entry its description and value), the rest (forwarded props, message fields it does not read) may be anything.
 */
const InputContentSchema = z.union([
  z.string(),
  z.array(
    z.looseObject({
      type: z.string(),
      text: z.string().optional(),
      source: z.looseObject({ type: z.enum(['data', 'url']), value: z.string(), mimeType: z.string().optional() }).optional(),
    }),
  ),
]);

const InputMessageSchema = z.looseObject({
  id: z.string(),
  role: z.enum(['developer', 'system', 'assistant', 'user', 'tool', 'activity', 'reasoning']),
  content: z.union([InputContentSchema, z.record(z.string(), z.unknown())]).optional(),
  toolCallId: z.string().optional(),
  error: z.string().optional(),
});

export const RunAgentInputSchema = z.looseObject({
  threadId: z.string().min(1),
  runId: z.string().min(1),
  parentRunId: z.string().optional(),
  state: z.unknown().optional(),
  messages: z.array(InputMessageSchema),
  tools: z
    .array(z.looseObject({ name: z.string().min(1), description: z.string().optional(), parameters: z.record(z.string(), z.unknown()).nullable().optional() }))
    .optional(),
  context: z.array(z.looseObject({ description: z.string(), value: z.string() })).optional(),
  forwardedProps: z.unknown().optional(),
  resume: z.array(z.looseObject({ interruptId: z.string().min(1), status: z.enum(['resolved', 'cancelled']), payload: z.unknown().optional() })).optional(),
});

/** What a tool without `parameters` takes: an object of anything. */
const EMPTY_PARAMETERS: JsonValue = { type: 'object', properties: {} };

const json = (v: unknown): JsonValue | null => {
  const r = JsonValueSchema.safeParse(v ?? null);
  return r.success ? r.data : null;
};

function blocks(content: z.infer<typeof InputContentSchema>): ContentBlock[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  const out: ContentBlock[] = [];
  for (const part of content) {
    if (part.type === 'text' && part.text !== undefined) out.push({ type: 'text', text: part.text });
    else if (part.source !== undefined && (part.type === 'image' || part.type === 'document')) {
      const source =
        part.source.type === 'url'
          ? { kind: 'url' as const, url: part.source.value }
          : { kind: 'base64' as const, media_type: part.source.mimeType ?? 'application/octet-stream', data: part.source.value };
      out.push(part.type === 'image' ? { type: 'image', source } : { type: 'document', source });
    }
  }
  return out;
}

/** A tool message's content as a decision result: its JSON when it is JSON, else `{text}`. */
function toolResult(content: unknown): JsonValue {
  if (typeof content !== 'string') {
    const r = JsonValueSchema.safeParse(content ?? null);
    return r.success ? r.data : null;
  }
  try {
    const r = JsonValueSchema.safeParse(JSON.parse(content));
    if (r.success) return r.data;
  } catch {
    // not JSON: the text itself
  }
  return { text: content };
}

/**
 * Decodes a `RunAgentInput` body. User, system and developer messages become input (developer as
 * system); assistant, activity and reasoning messages are the server's own history and are not
 * read. Answers are candidates (the server delivers those for calls the thread waits on,
 * `planInbound`): each `resume[]` entry for the interrupt it names (`cancelled`, or a payload with
 * `approved: false`, cancels the call; otherwise it resumes with the payload as its result), and each
 * `tool` message for its call (its content, JSON when it parses, or `{error}`). A history ending with
 * a user message asks for the answer to it; `forwardedProps.discardPause: true` starts a new turn on a
 * thread waiting for a decision; `forwardedProps.a2uiAction.userAction` (a click in an A2UI surface)
 * is one more user message. `tools` are the client's own (`clientTools`: offered to the model,
 * run by the client, their results sent back as `tool` messages). `now` stamps the decisions (the server passes its clock).
 */
export function decodeAgUiInput(body: unknown, now: number): Result<InboundRun, WireError> {
  const parsed = RunAgentInputSchema.safeParse(body);
  if (!parsed.success) return err({ code: 'invalid_value', issues: issuesOf(parsed.error) });
  const input = parsed.data;
  const messages: { id?: string; message: Message }[] = [];
  input.messages.forEach((m) => {
    if (m.role !== 'user' && m.role !== 'system' && m.role !== 'developer') return;
    const content = InputContentSchema.safeParse(m.content ?? '');
    if (!content.success) return;
    const b = blocks(content.data);
    if (b.length === 0) return;
    const message: Message = m.role === 'user' ? { ...Messages.user(''), content: b } : { ...Messages.system(''), content: b };
    messages.push({ id: m.id, message });
  });
  const fromTools: Decision[] = input.messages.flatMap((m) =>
    m.role === 'tool' && m.toolCallId !== undefined && m.toolCallId !== ''
      ? [decisionFor(m.toolCallId, 'resume', now, { result: m.error !== undefined ? { error: m.error } : toolResult(m.content) })]
      : [],
  );
  const fromResume: Decision[] = (input.resume ?? []).map((r) => {
    const payload = JsonValueSchema.safeParse(r.payload ?? null);
    const value: JsonValue = payload.success ? payload.data : null;
    const denied = typeof value === 'object' && value !== null && !Array.isArray(value) && value['approved'] === false;
    const cancel = r.status === 'cancelled' || denied;
    const reason = typeof value === 'object' && value !== null && !Array.isArray(value) && typeof value['reason'] === 'string' ? value['reason'] : undefined;
    const result: JsonValue | undefined = value !== null ? value : cancel ? { approved: false } : undefined;
    return decisionFor(r.interruptId, cancel ? 'cancel' : 'resume', now, {
      ...(result !== undefined ? { result } : {}),
      ...(reason !== undefined ? { reason } : {}),
    });
  });
  const state = input.state === undefined ? undefined : JsonValueSchema.safeParse(input.state);
  const clientTools = (input.tools ?? []).map(
    (t): ToolDescriptor => ({ id: t.name, name: t.name, description: t.description ?? '', parameters: json(t.parameters) ?? EMPTY_PARAMETERS }),
  );
  const last = input.messages.at(-1);
  const props = input.forwardedProps;
  // A click in an A2UI surface: the thread's history is the server's, so the action joins it as the
  // user's message (worded as `@ag-ui/a2ui-middleware` words it), not as a tool call the client made up.
  const action = a2uiUserActionOf(json(props) ?? undefined);
  if (!action.ok) return err({ code: 'invalid_value', issues: action.error });
  if (action.value !== undefined) {
    // Kept under an id of the run, so that a retried request adds the click once: a run id that
    // cannot make a message id would get a fresh one, and the retry a second message.
    const id = `a2ui-action-${input.runId}`;
    if (!isValidId(id))
      return err({
        code: 'invalid_value',
        issues: [{ path: 'runId', message: 'a run that carries forwardedProps.a2uiAction needs an id of letters, digits and ._:- (at most 188 characters)' }],
      });
    messages.push({ id, message: Messages.user(formatA2uiUserAction(action.value)) });
  }
  const discardPause = typeof props === 'object' && props !== null && (props as Record<string, unknown>)['discardPause'] === true;
  return ok({
    threadId: input.threadId,
    runId: input.runId,
    messages,
    decisions: [...fromTools, ...fromResume],
    ...(fromTools.length > 0 ? { held: fromTools.map((d) => d.targetId) } : {}),
    ...(clientTools.length > 0 ? { clientTools } : {}),
    ...(input.context !== undefined && input.context.length > 0
      ? { clientContext: input.context.map((c) => ({ description: c.description, value: c.value })) }
      : {}),
    ...(state?.success === true && state.data !== null ? { state: state.data } : {}),
    ...(last?.role === 'user' ? { regenerateFrom: last.id } : {}),
    ...(discardPause ? { discardPause: true } : {}),
  });
}
