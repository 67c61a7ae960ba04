import { Hono, type Context } from 'hono';
import type { AgentEvent } from '../contract/event.ts';
import type { Message } from '../contract/message.ts';
import type { Result } from '../contract/result.ts';
import type { WireError } from '../contract/wire.ts';
import { AG_UI_STREAM_HEADERS, finishAgUi, frameAgUi, initialAgUiState, transcodeAgUi, type AgUiState } from '../protocols/ag-ui/encoder.ts';
import { decodeAgUiInput } from '../protocols/ag-ui/request.ts';
import { finishAiSdk, frameAiSdk, initialAiSdkState, transcodeAiSdk, UI_MESSAGE_STREAM_HEADERS, type AiSdkState } from '../protocols/ai-sdk-v6/encoder.ts';
import { decodeAiSdkRequest } from '../protocols/ai-sdk-v6/request.ts';
import type { InboundRun } from '../runtime/inbound.ts';
import { checkId } from '../runtime/store.ts';
import { HttpError, logStream, registryError, type ServerParts } from './http.ts';
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
  app.post('/v1/ai-sdk/chat', (c) => serve(c, parts, aiSdk, options.heartbeatMs));
  app.post('/v1/ag-ui/run', (c) => serve(c, parts, agUi, options.heartbeatMs));
  return app;
}

async function serve<S>(c: Context, parts: ServerParts, protocol: Protocol<S>, heartbeatMs: number): Promise<Response> {
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
  const inbound = decoded.value;
  const threadId = inbound.threadId ?? env.ids.next('thread');
  try {
    checkId('thread', threadId);
  } catch {
    throw new HttpError(400, 'invalid_id', 'invalid thread id', 'threadId');
  }
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
      .map((m) => ({ ...m.message, id: m.id !== undefined && isStorableId(m.id) ? m.id : env.ids.next('message') }));
    if (fresh.length === 0) throw new HttpError(400, 'invalid_request', 'messages: no new message to run on', 'messages');
    const started = await registry.start({ threadId, ...(inbound.agentId !== undefined ? { agentId: inbound.agentId } : {}), messages: fresh });
    if (!started.ok) throw registryError(started.error);
    runId = started.value.runId;
    since = started.value.fromSeq;
  }
  let state = protocol.initial();
  const render = (item: LogItem): string => {
    if (item.kind !== 'frame' || item.runId !== runId) return '';
    const [next, text] = protocol.step(state, item.event);
    state = next;
    return text;
  };
  return logStream(
    registry,
    threadId,
    since,
    {
      heartbeatMs,
      render,
      until: (item) => item.kind === 'frame' && item.runId === runId && item.event.event_type === 'run_finish',
      epilogue: () => protocol.finish(state),
    },
    { ...protocol.headers, 'x-awaken-run-id': runId, 'x-awaken-thread-id': threadId },
  );
}

const isStorableId = (id: string): boolean => {
  try {
    checkId('message', id);
    return true;
  } catch {
    return false;
  }
};
