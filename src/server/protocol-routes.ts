import { Hono, type Context } from 'hono';
import type { AgentSpec } from '../contract/agent-spec.ts';
import type { AgentEvent } from '../contract/event.ts';
import { messageText, type Message } from '../contract/message.ts';
import type { Result } from '../contract/result.ts';
import { CLIENT_TOOL_ACTION } from '../contract/tool.ts';
import type { WireError } from '../contract/wire.ts';
import { AG_UI_STREAM_HEADERS, agUiMessageOf, finishAgUi, frameAgUi, requestAgUiState, transcodeAgUi, type AgUiState } from '../protocols/ag-ui/encoder.ts';
import type { JsonValue } from '../contract/json.ts';
import {
  finishOpenGenerativeUi,
  initialOpenGenerativeUiState,
  transformOpenGenerativeUi,
  type OpenGenerativeUiState,
} from '../protocols/ag-ui/open-generative-ui.ts';
import { decodeAgUiInput } from '../protocols/ag-ui/request.ts';
import { OPEN_GENERATIVE_UI_PLUGIN_ID } from '../plugins/open-generative-ui.ts';
import {
  finishAiSdk,
  frameAiSdk,
  initialAiSdkState,
  resumedAiSdkState,
  scheduledOutput,
  transcodeAiSdk,
  UI_MESSAGE_STREAM_HEADERS,
  type AiSdkState,
} from '../protocols/ai-sdk-v6/encoder.ts';
import { decodeAiSdkRequest } from '../protocols/ai-sdk-v6/request.ts';
import type { InboundRun } from '../contract/inbound.ts';
import { clientStateProblem } from '../runtime/client-state.ts';
import { clientToolClash } from '../runtime/client-tool.ts';
import { isValidId } from '../runtime/store.ts';
import type { ThreadSnapshot } from '../runtime/thread-run-store.ts';
import { ToolBatchKey, toolMessageText, type ToolBatchRecord } from '../runtime/tool-batch.ts';
import { HttpError, logStream, readJson, registryError, type ServerParts } from './http-support.ts';
import { acceptInbound, type AcceptedInbound } from './inbound.ts';
import { interruptThread } from './interrupt.ts';
import type { LogItem, WaitingCall } from './run-registry.ts';

/** What a stream's encoder starts from: the run the client chose an id for, the calls it holds. */
interface StreamContext {
  readonly clientRunId?: string;
  /** The state keys the client is shown: its agent's `client_state`. */
  readonly shared?: readonly string[];
  /** The calls whose results the request carried as the client's own messages. */
  readonly held?: readonly string[];
  readonly resumed?: AcceptedInbound['resumed'];
  /** The agent runs the Open Generative UI plugin: its `generateSandboxedUi` calls stream as activity. */
  readonly openGenerativeUi?: boolean;
}

/** One protocol's request decoder and stream encoder (a Mealy transcoder plus framing). */
interface Protocol<S> {
  readonly decode: (body: unknown, now: number) => Result<InboundRun, WireError>;
  readonly initial: (context: StreamContext) => S;
  readonly step: (state: S, event: AgentEvent) => [S, string];
  readonly finish: (state: S) => string;
  readonly headers: Record<string, string>;
}

const aiSdk: Protocol<AiSdkState> = {
  decode: decodeAiSdkRequest,
  initial: (c) => (c.resumed !== undefined ? resumedAiSdkState(c.resumed.runId, c.resumed.calls) : initialAiSdkState()),
  step: (s, e) => {
    const [next, chunks] = transcodeAiSdk(s, e);
    return [next, frameAiSdk(chunks, { done: false })];
  },
  finish: (s) => frameAiSdk(finishAiSdk(s)),
  headers: { ...UI_MESSAGE_STREAM_HEADERS },
};

/** An AG-UI stream's state: the transcoder's, and Open Generative UI's where the agent runs it. */
interface AgUiStream {
  readonly ag: AgUiState;
  readonly ogui?: OpenGenerativeUiState;
}

const agUi: Protocol<AgUiStream> = {
  decode: decodeAgUiInput,
  initial: (c) => ({
    ag: requestAgUiState({
      ...(c.clientRunId !== undefined ? { clientRunId: c.clientRunId } : {}),
      ...(c.shared !== undefined ? { shared: c.shared } : {}),
      ...(c.held !== undefined ? { held: c.held } : {}),
      ...(c.resumed !== undefined ? { resumed: c.resumed } : {}),
    }),
    ...(c.openGenerativeUi === true ? { ogui: initialOpenGenerativeUiState() } : {}),
  }),
  step: (s, e) => {
    const [ag, events] = transcodeAgUi(s.ag, e);
    if (s.ogui === undefined) return [{ ag }, frameAgUi(events)];
    const [ogui, shown] = transformOpenGenerativeUi(s.ogui, events);
    return [{ ag, ogui }, frameAgUi(shown)];
  },
  finish: (s) => {
    const closing = finishAgUi(s.ag);
    if (s.ogui === undefined) return frameAgUi(closing);
    const [ogui, shown] = transformOpenGenerativeUi(s.ogui, closing);
    return frameAgUi([...shown, ...finishOpenGenerativeUi(ogui)]);
  },
  headers: { ...AG_UI_STREAM_HEADERS },
};

/**
 * The protocol routes of the book: AI SDK v6 (`POST /v1/ai-sdk/chat`) and AG-UI
 * (`POST /v1/ag-ui/run`). The client's history is read by the one rule of `planInbound`: an answer
 * to a call the thread waits on resumes its parked run; otherwise the new messages (those whose ids
 * the thread does not hold yet) start a run, or a history ending with a stored user message asks for
 * a new answer to it. The response is the protocol's event stream of that run, up to its terminal
 * event.
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
    return streamRun(parts, aiSdk, threadId, current.runId, current.fromSeq, heartbeatMs, {});
  };
  app.get('/v1/ai-sdk/chat/:thread_id/stream', reattach);
  app.get('/v1/ai-sdk/threads/:thread_id/stream', reattach);
  app.get('/v1/ai-sdk/threads/:thread_id/messages', async (c) => {
    const threadId = threadParam(c);
    const thread = await parts.store.loadThread(threadId);
    if (thread === undefined) throw new HttpError(404, 'thread_not_found', `thread not found: ${threadId}`);
    const waiting = (await parts.registry.waitingAnywhere(threadId))?.calls ?? [];
    return c.json(toUiMessages(threadView(thread, waiting), waiting));
  });

  app.post('/v1/ag-ui/run', (c) => serve(c, parts, agUi, heartbeatMs));
  app.post('/v1/ag-ui/threads/:thread_id/runs', (c) => serve(c, parts, agUi, heartbeatMs, { threadId: threadParam(c) }));
  app.post('/v1/ag-ui/agents/:agent_id/runs', (c) => serve(c, parts, agUi, heartbeatMs, { agentId: c.req.param('agent_id') ?? '' }));
  const interrupt = async (c: Context): Promise<Response> =>
    c.json(await interruptThread(parts.store, parts.registry, parts.runtime.env.clock.now(), threadParam(c)), 202);
  app.post('/v1/ag-ui/threads/:thread_id/interrupt', interrupt);
  app.post('/v1/ai-sdk/threads/:thread_id/interrupt', interrupt);
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

/**
 * A thread's view (`threadView`) as AI SDK `UIMessage`s: text parts of user and assistant messages, each tool call
 * as the part the stream made of it (`tool-<name>`), with its output when the thread holds one, and
 * an approval request when the thread waits on it (a preliminary output for a scheduled call, the bare
 * input for a call the client runs) — so a chat reloaded from here renders and answers
 * as a live one.
 */
function toUiMessages(messages: readonly Message[], waiting: readonly WaitingCall[]): unknown[] {
  const results = new Map(messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, messageText(m)] as const));
  // A call left to the client asks nothing either: it shows as a call whose input is in, for the client to run.
  const asked = new Map(
    waiting
      .filter((w) => w.schedule === undefined && w.suspension?.action !== CLIENT_TOOL_ACTION)
      .map((w) => [w.callId, w.suspension?.id ?? w.callId] as const),
  );
  // A scheduled call asks nothing: it shows as the stream showed it, a preliminary output saying when it goes on.
  const scheduled = new Map(
    waiting.flatMap((w) => (w.schedule !== undefined ? [[w.callId, scheduledOutput(w.suspension?.message, w.schedule)] as const] : [])),
  );
  const output = (text: string): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  };
  const toolPart = (c: { readonly id: string; readonly name: string; readonly arguments: unknown }): unknown => {
    const base = { type: `tool-${c.name}`, toolCallId: c.id, input: c.arguments };
    if (asked.has(c.id)) return { ...base, state: 'approval-requested', approval: { id: asked.get(c.id) } };
    if (scheduled.has(c.id)) return { ...base, state: 'output-available', output: scheduled.get(c.id), preliminary: true };
    if (results.has(c.id)) return { ...base, state: 'output-available', output: output(results.get(c.id) ?? '') };
    return { ...base, state: 'input-available' };
  };
  return messages
    .filter((m) => m.role === 'user' || m.role === 'assistant')
    .map((m) => ({
      id: m.id ?? '',
      role: m.role,
      parts: [...(messageText(m) !== '' ? [{ type: 'text', text: messageText(m) }] : []), ...(m.tool_calls ?? []).map(toolPart)],
    }));
}

/**
 * The thread a client aligns to: its stored messages a client may see, then the assistant message
 * whose calls a parked run waits on — it joins the thread only once its calls are settled, so until
 * then it is made from the thread's tool batch — its text and every call of it, under the id the
 * thread will keep the message under, so a client aligned to this view keeps it across the resume —
 * followed by the results of the calls that have settled (`settled:<call>`: not the stream's
 * `result:<call>`, which a client merging by id would keep in place, above the message it answers).
 * A waiting call of no batch the thread holds is shown under the message its run names.
 */
export function threadView(thread: ThreadSnapshot | undefined, waiting: readonly WaitingCall[]): Message[] {
  const shown = (thread?.messages ?? []).filter((m) => m.visibility !== 'internal');
  const batch = thread?.threadState?.extensions[ToolBatchKey.key] as ToolBatchRecord | null | undefined;
  const held = new Set(shown.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id)));
  const waits = new Set(waiting.map((w) => w.callId));
  const inBatch = new Set(batch?.calls.map((c) => c.id) ?? []);
  const pending = new Map<string, Message>();
  const settled: Message[] = [];
  if (batch?.calls.some((c) => waits.has(c.id) && !held.has(c.id))) {
    pending.set(batch.message_id, {
      id: batch.message_id,
      role: 'assistant',
      content: batch.text !== '' ? [{ type: 'text', text: batch.text }] : [],
      tool_calls: batch.calls.map((c) => ({ ...c })),
    });
    for (const c of batch.calls) {
      const result = batch.results[c.id];
      if (result !== undefined && !waits.has(c.id))
        settled.push({ id: `settled:${c.id}`, role: 'tool', content: [{ type: 'text', text: toolMessageText(result) }], tool_call_id: c.id });
    }
  }
  for (const w of waiting) {
    if (held.has(w.callId) || inBatch.has(w.callId)) continue;
    const made = pending.get(w.messageId) ?? { id: w.messageId, role: 'assistant', content: [], tool_calls: [] };
    pending.set(w.messageId, { ...made, tool_calls: [...(made.tool_calls ?? []), { id: w.callId, name: w.name, arguments: w.arguments }] });
  }
  return [...shown, ...pending.values(), ...settled];
}

/** Stored messages as AG-UI messages (`{id, role, content, toolCalls?, toolCallId?}`). */
export function toAgUiMessages(messages: readonly Message[]): unknown[] {
  return messages.map(agUiMessageOf);
}

/** The spec of the agent a request runs (the first agent when it names none); undefined for none (its start says why). */
export function agentSpecOf(parts: ServerParts, agentId: string | undefined): AgentSpec | undefined {
  const id = agentId ?? parts.runtime.agentIds()[0];
  return id === undefined ? undefined : parts.runtime.registries.agents.get(id);
}

/** The tools of that agent, resolved only to check a client's tools against them (none when it does not resolve). */
function agentTools(parts: ServerParts, spec: AgentSpec | undefined): ReadonlyMap<string, unknown> {
  const resolved = spec === undefined ? undefined : parts.runtime.resolve(spec.id);
  return resolved?.ok === true ? resolved.value.tools : new Map();
}

/** One run's frames in a protocol's encoding, from `since` to its terminal frame. */
function streamRun<S>(
  parts: ServerParts,
  protocol: Protocol<S>,
  threadId: string,
  runId: string,
  since: number,
  heartbeatMs: number,
  context: StreamContext,
): Response {
  let state = protocol.initial(context);
  const aligns = (protocol as Protocol<unknown>) === agUi;
  /** A failed inference's `RUN_ERROR`, held until the run's last frame so that the snapshot goes before it. */
  let held = '';
  const render = (item: LogItem): string => {
    if (item.kind !== 'frame' || item.runId !== runId) return '';
    const [next, text] = protocol.step(state, item.event);
    state = next;
    if (aligns && item.event.event_type === 'error') {
      held += text;
      return '';
    }
    if (aligns && item.event.event_type === 'run_finish' && held !== '') {
      const all = held + text;
      held = '';
      return all;
    }
    return text;
  };
  return logStream(
    parts.registry,
    threadId,
    since,
    {
      heartbeatMs,
      render,
      until: (item) => item.kind === 'frame' && item.runId === runId && item.event.event_type === 'run_finish',
      epilogue: () => protocol.finish(state),
      ...(aligns ? { lastFrame: (text: string) => withMessagesSnapshot(parts, threadId, text) } : {}),
    },
    { ...protocol.headers, 'x-awaken-run-id': runId, 'x-awaken-thread-id': threadId },
  );
}

/**
 * An AG-UI run's last frame (`RUN_FINISHED` or `RUN_ERROR`) with `MESSAGES_SNAPSHOT` of the thread as
 * stored before it (seed 001 §7.3: the server's history is the history). A client streamed this
 * run's messages under the ids the stream gave them, and holds its own tool results under its own;
 * the snapshot gives each the id the thread keeps it under, so the next run — a resume, an answer to
 * an interrupt, a client tool's result — starts from the thread itself. Every run ends so, not only
 * a resumed one: a client merges a snapshot by id and puts the messages it did not hold at the end,
 * so only the latest run's messages may change ids, or older ones would move below newer.
 */
async function withMessagesSnapshot(parts: ServerParts, threadId: string, text: string): Promise<string> {
  const at = text.lastIndexOf('data: {"type":"RUN_');
  if (at < 0 || !(text.startsWith('data: {"type":"RUN_FINISHED"', at) || text.startsWith('data: {"type":"RUN_ERROR"', at))) return text;
  const thread = await parts.store.loadThread(threadId);
  // Not there (deleted meanwhile): an empty snapshot would wipe what the client holds.
  if (thread === undefined) return text;
  const waiting = (await parts.registry.waitingAnywhere(threadId))?.calls ?? [];
  const snapshot = frameAgUi([{ type: 'MESSAGES_SNAPSHOT', messages: toAgUiMessages(threadView(thread, waiting)) as JsonValue[] }]);
  return text.slice(0, at) + snapshot + text.slice(at);
}

/** An AG-UI run request answered as `/v1/ag-ui/run` answers it (CopilotKit's `/agent/:id/run` is one). */
export const serveAgUi = (
  c: Context,
  parts: ServerParts,
  heartbeatMs: number,
  path: { readonly agentId?: string } = {},
  body?: { readonly value: unknown },
): Promise<Response> => serve(c, parts, agUi, heartbeatMs, path, body);

async function serve<S>(
  c: Context,
  parts: ServerParts,
  protocol: Protocol<S>,
  heartbeatMs: number,
  path: { readonly threadId?: string; readonly agentId?: string } = {},
  /** The request's body when the caller has read it already (CopilotKit's single route carries it in an envelope). */
  body?: { readonly value: unknown },
): Promise<Response> {
  const { runtime } = parts;
  const env = runtime.env;
  const raw = body !== undefined ? body.value : await readJson(c);
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
  if (inbound.agentId !== undefined && !runtime.agentIds().includes(inbound.agentId))
    throw new HttpError(404, 'agent_not_found', `agent not found: ${inbound.agentId}`, 'agentId');

  const agent = agentSpecOf(parts, inbound.agentId);
  const problem = agent === undefined || inbound.state === undefined ? undefined : clientStateProblem(agent, inbound.state);
  if (problem !== undefined) throw new HttpError(400, 'invalid_request', problem.message, problem.field);
  const client = inbound.clientTools ?? [];
  const clash = client.length === 0 ? undefined : clientToolClash(agentTools(parts, agent), client);
  if (clash !== undefined) {
    const field = `tools[${clash.index}].name`;
    throw new HttpError(400, 'invalid_request', `${field}: '${clash.id}' is a tool of the agent: a client tool may not take a server tool's name`, field);
  }

  // The history the client sends back is history (planInbound): decisions only for calls the thread
  // waits on, messages only those it does not hold.
  const accepted = await acceptInbound(parts, threadId, inbound.agentId, inbound);
  if (accepted.ok === 'nothing')
    throw new HttpError(400, 'invalid_request', 'messages: no new message, no answer to a waiting tool call and nothing to regenerate', 'messages');
  if (!accepted.ok) throw registryError(accepted.error);
  const { runId, since, resumed } = accepted.value;
  return streamRun(parts, protocol, threadId, runId, since, heartbeatMs, {
    ...(inbound.runId !== undefined ? { clientRunId: inbound.runId } : {}),
    shared: agent?.client_state ?? [],
    ...(inbound.held !== undefined ? { held: inbound.held } : {}),
    ...(resumed !== undefined ? { resumed } : {}),
    ...(agent?.plugin_ids.includes(OPEN_GENERATIVE_UI_PLUGIN_ID) === true ? { openGenerativeUi: true } : {}),
  });
}
