import { Hono, type Context } from 'hono';
import type { AgentEvent } from '../contract/event.ts';
import { messageText, type Message } from '../contract/message.ts';
import type { Result } from '../contract/result.ts';
import type { WireError } from '../contract/wire.ts';
import { AG_UI_STREAM_HEADERS, finishAgUi, frameAgUi, initialAgUiState, transcodeAgUi, type AgUiState } from '../protocols/ag-ui/encoder.ts';
import { decodeAgUiInput } from '../protocols/ag-ui/request.ts';
import { finishAiSdk, frameAiSdk, initialAiSdkState, transcodeAiSdk, UI_MESSAGE_STREAM_HEADERS, type AiSdkState } from '../protocols/ai-sdk-v6/encoder.ts';
import { decodeAiSdkRequest } from '../protocols/ai-sdk-v6/request.ts';
import type { InboundRun } from '../runtime/inbound.ts';
import { isValidId } from '../runtime/store.ts';
import { HttpError, logStream, registryError, type ServerParts } from './http-support.ts';
import type { LogItem } from './run-registry.ts';

/** One protocol's request decoder and stream encoder (a Mealy transcoder plus framing). */
interface Protocol<S> {
  readonly decode: (body: unknown, now: number) => Result<InboundRun, WireError>;
  readonly initial: () => S;
  readonly step: (state: S, event: AgentEvent) => [S, string];
  readonly finish: (state: S) => string;
  readonly headers: Record<string, string>;
}

const aiSdk: Protocol<AiSdkState> = {
  decode: decodeAiSdkRequest,
  initial: initialAiSdkState,
  step: (s, e) => {
    const [next, chunks] = transcodeAiSdk(s, e);
    return [next, frameAiSdk(chunks, { done: false })];
  },
  finish: (s) => frameAiSdk(finishAiSdk(s)),
  headers: { ...UI_MESSAGE_STREAM_HEADERS },
};

const agUi: Protocol<AgUiState> = {
  decode: decodeAgUiInput,
  initial: initialAgUiState,
  step: (s, e) => {
    const [next, events] = transcodeAgUi(s, e);
    return [next, frameAgUi(events)];
  },
  finish: (s) => frameAgUi(finishAgUi(s)),
  headers: { ...AG_UI_STREAM_HEADERS },
};

/**
 * The protocol routes of the book: AI SDK v6 (`POST /v1/ai-sdk/chat`) and AG-UI
 * (`POST /v1/ag-ui/run`). A request with decisions resumes the thread's waiting run; otherwise its
 * new messages (those whose ids the thread does not hold yet) start a run. The response is the
 * protocol's event stream of that run, up to its terminal event.
 */
export function protocolRoutes(parts: ServerParts, options: { readonly heartbeatMs: number }): Hono {
  const app = new Hono();
  const { heartbeatMs } = options;
  app.post('/v1/ai-sdk/chat', (c) => serve(c, parts, aiSdk, heartbeatMs));
  // Reattach (DefaultChatTransport.reconnectToStream): the thread's run in flight from its start, or 204.
  const reattach = (c: Context): Response => {
    const threadId = threadParam(c);
    const current = parts.registry.currentRun(threadId);
    if (current === undefined || current.status !== 'running') return c.body(null, 204);
    return streamRun(parts, aiSdk, threadId, current.runId, current.fromSeq, heartbeatMs);
  };
  app.get('/v1/ai-sdk/chat/:thread_id/stream', reattach);
  app.get('/v1/ai-sdk/threads/:thread_id/stream', reattach);
  app.get('/v1/ai-sdk/threads/:thread_id/messages', async (c) => c.json(toUiMessages(await storedMessages(parts, threadParam(c)))));

  app.post('/v1/ag-ui/run', (c) => serve(c, parts, agUi, heartbeatMs));
  app.post('/v1/ag-ui/threads/:thread_id/runs', (c) => serve(c, parts, agUi, heartbeatMs, { threadId: threadParam(c) }));
  app.post('/v1/ag-ui/agents/:agent_id/runs', (c) => serve(c, parts, agUi, heartbeatMs, { agentId: c.req.param('agent_id') ?? '' }));
  app.post('/v1/ag-ui/threads/:thread_id/interrupt', (c) => {
    const threadId = threadParam(c);
    const r = parts.registry.cancel(threadId);
    if (!r.ok) throw registryError(r.error);
    return c.json({ status: 'interrupt_requested', thread_id: threadId, run_id: r.value.runId }, 202);
  });
  app.get('/v1/ag-ui/threads/:thread_id/messages', async (c) => c.json(toAgUiMessages(await storedMessages(parts, threadParam(c)))));
  return app;
}

function threadParam(c: Context): string {
  const id = c.req.param('thread_id') ?? '';
  if (!isValidId(id)) throw new HttpError(400, 'invalid_id', 'invalid thread id', 'thread_id');
  return id;
}

async function storedMessages(parts: ServerParts, threadId: string): Promise<readonly Message[]> {
  const thread = await parts.store.loadThread(threadId);
  if (thread === undefined) throw new HttpError(404, 'thread_not_found', `thread not found: ${threadId}`);
  return thread.messages.filter((m) => m.visibility !== 'internal');
}

/** Stored messages as AI SDK `UIMessage`s: text parts of user and assistant messages, tool calls as dynamic tool parts. */
function toUiMessages(messages: readonly Message[]): unknown[] {
  const results = new Map(messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, messageText(m)] as const));
  return messages
    .filter((m) => m.role === 'user' || m.role === 'assistant')
    .map((m) => ({
      id: m.id ?? '',
      role: m.role,
      parts: [
        ...(messageText(m) !== '' ? [{ type: 'text', text: messageText(m) }] : []),
        ...(m.tool_calls ?? []).map((c) => ({ type: 'dynamic-tool', toolName: c.name, toolCallId: c.id, state: results.has(c.id) ? 'output-available' : 'input-available', input: c.arguments, ...(results.has(c.id) ? { output: results.get(c.id) } : {}) })),
      ],
    }));
}

/** Stored messages as AG-UI messages (`{id, role, content, toolCalls?, toolCallId?}`). */
function toAgUiMessages(messages: readonly Message[]): unknown[] {
  return messages.map((m) => ({
    id: m.id ?? '',
    role: m.role,
    content: messageText(m),
    ...(m.tool_calls !== undefined ? { toolCalls: m.tool_calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } })) } : {}),
    ...(m.tool_call_id !== undefined ? { toolCallId: m.tool_call_id } : {}),
  }));
}

/** One run's frames in a protocol's encoding, from `since` to its terminal frame. */
function streamRun<S>(parts: ServerParts, protocol: Protocol<S>, threadId: string, runId: string, since: number, heartbeatMs: number): Response {
  let state = protocol.initial();
  const render = (item: LogItem): string => {
    if (item.kind !== 'frame' || item.runId !== runId) return '';
    const [next, text] = protocol.step(state, item.event);
    state = next;
    return text;
  };
  return logStream(
    parts.registry,
    threadId,
    since,
    { heartbeatMs, render, until: (item) => item.kind === 'frame' && item.runId === runId && item.event.event_type === 'run_finish', epilogue: () => protocol.finish(state) },
    { ...protocol.headers, 'x-awaken-run-id': runId, 'x-awaken-thread-id': threadId },
  );
}

async function serve<S>(
  c: Context,
  parts: ServerParts,
  protocol: Protocol<S>,
  heartbeatMs: number,
  path: { readonly threadId?: string; readonly agentId?: string } = {},
): Promise<Response> {
  const { runtime, store, registry } = parts;
  const env = runtime.env;
  let raw: unknown;
  try {
    raw = JSON.parse(await c.req.text());
  } catch (e) {
    throw new HttpError(400, 'invalid_json', `malformed JSON: ${(e as Error).message}`);
  }
  const decoded = protocol.decode(raw, env.clock.now());
  if (!decoded.ok) {
    if (decoded.error.code === 'invalid_json') throw new HttpError(400, 'invalid_json', decoded.error.message);
    const [first] = decoded.error.issues;
    throw new HttpError(400, 'invalid_request', `${first?.path || '(body)'}: ${first?.message ?? 'invalid'}`, first?.path || '(body)');
  }
  const inbound = { ...decoded.value, ...(path.agentId !== undefined ? { agentId: path.agentId } : {}) };
  if (path.threadId !== undefined && inbound.threadId !== undefined && inbound.threadId !== path.threadId) {
    throw new HttpError(400, 'invalid_request', 'threadId: does not match the thread of the path', 'threadId');
  }
  const threadId = path.threadId ?? inbound.threadId ?? env.ids.next('thread');
  if (!isValidId(threadId)) throw new HttpError(400, 'invalid_id', 'invalid thread id', 'threadId');
  if (inbound.agentId !== undefined && !runtime.agentIds().includes(inbound.agentId)) throw new HttpError(404, 'agent_not_found', `agent not found: ${inbound.agentId}`, 'agentId');

  let runId: string;
  let since: number;
  if (inbound.decisions.length > 0) {
    since = registry.log(threadId).lastSeq;
    const r = registry.decide(threadId, inbound.decisions);
    if (!r.ok) throw registryError(r.error);
    runId = r.value.runId;
  } else {
    const stored = new Set(((await store.loadThread(threadId))?.messages ?? []).map((m) => m.id));
    const fresh: Message[] = inbound.messages
      .filter((m) => m.id === undefined || !stored.has(m.id))
      .map((m) => ({ ...m.message, id: m.id !== undefined && isValidId(m.id) ? m.id : env.ids.next('message') }));
    if (fresh.length === 0) throw new HttpError(400, 'invalid_request', 'messages: no new message to run on', 'messages');
    const started = await registry.start({ threadId, ...(inbound.agentId !== undefined ? { agentId: inbound.agentId } : {}), messages: fresh });
    if (!started.ok) throw registryError(started.error);
    runId = started.value.runId;
    since = started.value.fromSeq;
  }
  return streamRun(parts, protocol, threadId, runId, since, heartbeatMs);
}
