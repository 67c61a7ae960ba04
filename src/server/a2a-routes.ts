import { Hono, type Context } from 'hono';
import { timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { JsonValue } from '../contract/json.ts';
import type { TerminationReason } from '../contract/lifecycle.ts';
import { messageText, type ContentBlock, type Message } from '../contract/message.ts';
import { agentCardOf } from '../protocols/a2a/card.ts';
import { finishA2a, frameA2a, initialA2aState, RESPONSE_ARTIFACT, taskStateOf, transcodeA2a, type A2aState, type TaskState } from '../protocols/a2a/encoder.ts';
import { decisionFor } from '../runtime/run-loop.ts';
import { isValidId, type RunRecord } from '../runtime/store.ts';
import { logStream, type ServerParts } from './http-support.ts';
import type { LogItem } from './run-registry.ts';

const A2A_VERSION = '1.0';

/** An A2A error (Google RPC style, protocol-spec §2.4). */
class A2aError extends Error {
  readonly code: 400 | 404 | 409 | 415;
  readonly status: string;
  readonly details: JsonValue[];
  constructor(code: A2aError['code'], status: string, message: string, details: JsonValue[] = []) {
    super(message);
    this.code = code;
    this.status = status;
    this.details = details;
  }
}

const badRequest = (field: string, description: string): A2aError =>
  new A2aError(400, 'INVALID_ARGUMENT', 'invalid A2A request', [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field, description }] }]);
const taskNotFound = (taskId: string): A2aError =>
  new A2aError(404, 'NOT_FOUND', `task not found: ${taskId}`, [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org', metadata: { taskId } }]);

const PartSchema = z.looseObject({
  text: z.string().optional(),
  data: z.unknown().optional(),
  url: z.string().optional(),
  raw: z.string().optional(),
  mediaType: z.string().optional(),
  filename: z.string().optional(),
});
const SendMessageSchema = z.looseObject({
  message: z.looseObject({
    messageId: z.string(),
    role: z.string(),
    parts: z.array(PartSchema),
    contextId: z.string().optional(),
    taskId: z.string().optional(),
  }),
  configuration: z
    .looseObject({ acceptedOutputModes: z.array(z.string()).optional(), historyLength: z.number().int().nonnegative().optional(), returnImmediately: z.boolean().optional() })
    .optional(),
  metadata: z.unknown().optional(),
});
type SendMessage = z.output<typeof SendMessageSchema>;

/** The A2A parts of a user message as content blocks: text as is, data as JSON text, urls and raw bytes as media. */
function blocksOf(parts: SendMessage['message']['parts']): ContentBlock[] {
  return parts.map((p, i): ContentBlock => {
    const kinds = [p.text, p.data, p.url, p.raw].filter((x) => x !== undefined).length;
    if (kinds !== 1) throw badRequest(`message.parts[${i}]`, 'a part has exactly one of text, data, url, raw');
    if (p.text !== undefined) return { type: 'text', text: p.text };
    if (p.data !== undefined) return { type: 'text', text: JSON.stringify(p.data) };
    const mediaType = p.mediaType ?? 'application/octet-stream';
    const source = p.url !== undefined ? { kind: 'url' as const, url: p.url } : { kind: 'base64' as const, media_type: mediaType, data: p.raw ?? '' };
    return mediaType.startsWith('image/') ? { type: 'image', source } : { type: 'document', source, ...(p.filename !== undefined ? { title: p.filename } : {}) };
  });
}

/** The reply to an input-required task, as the decision's result: its data part, else its text. */
function replyOf(parts: SendMessage['message']['parts']): JsonValue {
  const data = parts.find((p) => p.data !== undefined)?.data;
  if (data !== undefined) return data as JsonValue;
  return { text: parts.map((p) => p.text ?? '').join('') };
}

const partsOf = (m: Message): JsonValue[] => {
  const text = messageText(m);
  return text === '' ? [] : [{ text }];
};

/** A task snapshot from the run record and its thread's messages. */
function taskOf(run: RunRecord, status: RunRecord['status'], messages: readonly Message[], historyLength: number | undefined): JsonValue {
  const state: TaskState =
    status === 'created' ? 'TASK_STATE_SUBMITTED' : status === 'running' ? 'TASK_STATE_WORKING' : status === 'waiting' ? 'TASK_STATE_INPUT_REQUIRED' : taskStateOf(run.termination ?? ({ type: 'natural_end' } as TerminationReason));
  const visible = messages.filter((m) => (m.role === 'user' || m.role === 'assistant') && m.visibility !== 'internal' && partsOf(m).length > 0);
  const lastAgent = [...visible].reverse().find((m) => m.role === 'assistant');
  const agentMessage = (m: Message): JsonValue => ({ messageId: m.id ?? `${run.run_id}:answer`, contextId: run.thread_id, taskId: run.run_id, role: 'ROLE_AGENT', parts: partsOf(m) });
  const settled = state !== 'TASK_STATE_SUBMITTED' && state !== 'TASK_STATE_WORKING';
  const history = historyLength === undefined ? visible : historyLength === 0 ? [] : visible.slice(-historyLength);
  return {
    id: run.run_id,
    contextId: run.thread_id,
    status: { state, ...(settled && lastAgent !== undefined ? { message: agentMessage(lastAgent) } : {}) },
    ...(state === 'TASK_STATE_COMPLETED' && lastAgent !== undefined ? { artifacts: [{ artifactId: RESPONSE_ARTIFACT, name: RESPONSE_ARTIFACT, parts: partsOf(lastAgent) }] } : {}),
    ...(history.length > 0
      ? {
          history: history.map((m) =>
            m.role === 'assistant' ? agentMessage(m) : { messageId: m.id ?? '', contextId: run.thread_id, taskId: run.run_id, role: 'ROLE_USER', parts: partsOf(m) },
          ),
        }
      : {}),
  };
}

/**
 * A2A 1.0 over HTTP+JSON (book: A2A 路由): the agent card at `/.well-known/agent-card.json`, and under
 * `/v1/a2a[/<agent>]`: `message:send`, `message:stream`, `tasks/<id>`, `tasks/<id>:cancel`. Task id =
 * run id, context id = thread id. A `message:send` naming an input-required task answers its waiting
 * tool calls (the reply's data part, else its text, is the decision's result).
 */
export function a2aRoutes(parts: ServerParts, options: { readonly heartbeatMs: number; readonly version: string; readonly extendedCardToken?: string }): Hono {
  const { runtime, store, registry } = parts;
  const env = runtime.env;
  const app = new Hono();

  app.onError((e, c) => {
    if (e instanceof A2aError) return c.json({ error: { code: e.code, status: e.status, message: e.message, ...(e.details.length > 0 ? { details: e.details } : {}) } }, e.code);
    throw e;
  });

  const baseUrl = (c: Context): string => {
    const proto = c.req.header('x-forwarded-proto') ?? 'http';
    const host = c.req.header('x-forwarded-host') ?? c.req.header('host') ?? 'localhost';
    return `${proto}://${host}`;
  };
  const defaultAgent = (): string => (runtime.agentIds().includes('default') ? 'default' : (runtime.agentIds()[0] ?? ''));

  app.get('/.well-known/agent-card.json', (c) => {
    const resolved = runtime.resolve(defaultAgent());
    if (!resolved.ok) throw new A2aError(404, 'NOT_FOUND', 'no agent to describe');
    const card = agentCardOf(resolved.value.spec, baseUrl(c), options.version);
    if (options.extendedCardToken === undefined || options.extendedCardToken === '') return c.json(card);
    // An extended card exists: the public card says so, and how to authenticate for it.
    return c.json({
      ...card,
      capabilities: { ...(card['capabilities'] as Record<string, JsonValue>), extendedAgentCard: true },
      securitySchemes: { awakenExtendedCardBearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } },
      // Canonical proto3 JSON: the empty scope list is omitted.
      securityRequirements: [{ schemes: { awakenExtendedCardBearer: {} } }],
    });
  });

  app.all('/v1/a2a/*', async (c) => {
    const version = c.req.header('a2a-version') ?? c.req.query('A2A-Version');
    if (version !== undefined && version !== A2A_VERSION) {
      throw new A2aError(400, 'FAILED_PRECONDITION', `A2A version ${version} is not supported (only ${A2A_VERSION})`, [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'VERSION_NOT_SUPPORTED', domain: 'a2a-protocol.org', metadata: { version } },
      ]);
    }
    const segments = c.req.path.slice('/v1/a2a/'.length).split('/').filter((s) => s !== '').map(decodeURIComponent);
    let agentId = defaultAgent();
    if (segments.length > 0 && !/^(message:|tasks$|extendedAgentCard$)/.test(segments[0] as string)) {
      agentId = segments.shift() as string;
      if (!runtime.agentIds().includes(agentId)) throw new A2aError(404, 'NOT_FOUND', `agent not found: ${agentId}`);
    }
    const [head, second, third] = segments;
    const method = c.req.method;
    if (method === 'GET' && head === 'extendedAgentCard' && second === undefined) return extendedCard(c, agentId);
    if (method === 'POST' && (head === 'message:send' || head === 'message:stream') && second === undefined) return send(c, agentId, head === 'message:stream');
    if (head === 'tasks' && second === undefined && method === 'GET') return c.json(await listTasks(c));
    if (head === 'tasks' && second !== undefined && third === undefined) {
      if (method === 'POST' && second.endsWith(':subscribe')) return subscribeTask(second.slice(0, -':subscribe'.length));
      const cancel = second.endsWith(':cancel');
      const taskId = cancel ? second.slice(0, -':cancel'.length) : second;
      if (method === 'GET' && !cancel) return c.json(await snapshot(taskId, historyOf(c)));
      if (method === 'POST' && cancel) {
        const live = registry.live(taskId);
        if (live === undefined || live.status === 'done') throw new A2aError(409, 'FAILED_PRECONDITION', `task ${taskId} cannot be canceled`, [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_CANCELABLE', domain: 'a2a-protocol.org', metadata: { taskId } }]);
        const from = registry.log(live.threadId).lastSeq;
        registry.cancel(taskId);
        if (live.status !== 'waiting') await registry.segmentEnd(taskId, from);
        else await waitDone(taskId);
        return c.json(await snapshot(taskId, undefined));
      }
    }
    throw new A2aError(404, 'NOT_FOUND', `no A2A route: ${method} ${c.req.path}`);
  });

  /**
   * The extended card (bearer-protected): the public card plus the skills of every agent. Without a
   * configured token it is unsupported; a missing or wrong token is UNAUTHENTICATED.
   */
  function extendedCard(c: Context, agentId: string): Response {
    const token = options.extendedCardToken;
    if (token === undefined || token === '') throw new A2aError(400, 'UNIMPLEMENTED', 'the extended agent card is not enabled on this server');
    const m = /^bearer\s+(.+)$/i.exec((c.req.header('authorization') ?? '').trim());
    const given = Buffer.from(m?.[1] ?? '');
    const expected = Buffer.from(token);
    if (m === null || given.length !== expected.length || !timingSafeEqual(given, expected)) {
      return c.json({ error: { code: 401, status: 'UNAUTHENTICATED', message: 'a valid bearer token is required for the extended agent card' } }, 401);
    }
    const resolved = runtime.resolve(agentId);
    if (!resolved.ok) throw new A2aError(404, 'NOT_FOUND', `agent not found: ${agentId}`);
    const card = agentCardOf(resolved.value.spec, baseUrl(c), options.version);
    const skills = runtime.agentIds().map((id) => ({ id, name: id, description: `Interact with the '${id}' Awaken agent.`, tags: ['awaken', 'agent'], inputModes: ['text/plain', 'application/json'], outputModes: ['text/plain'] }));
    return c.json({ ...card, skills });
  }

  const historyOf = (c: Context): number | undefined => {
    const raw = c.req.query('historyLength');
    if (raw === undefined) return undefined;
    if (!/^\d{1,6}$/.test(raw)) throw badRequest('historyLength', 'must be a non-negative integer');
    return Number(raw);
  };

  /** `GET tasks?contextId=&status=&pageSize=&pageToken=&historyLength=`: newest first. */
  async function listTasks(c: Context): Promise<JsonValue> {
    const contextId = c.req.query('contextId');
    const pageSize = Math.min(100, Math.max(1, Number(c.req.query('pageSize') ?? 50) || 50));
    const token = c.req.query('pageToken') ?? '';
    if (token !== '' && !/^\d{1,9}$/.test(token)) throw badRequest('pageToken', 'must be a page token from a previous listing');
    const offset = token === '' ? 0 : Number(token);
    const wanted = c.req.query('status');
    const STATES: Record<string, RunRecord['status']> = { TASK_STATE_SUBMITTED: 'created', TASK_STATE_WORKING: 'running', TASK_STATE_INPUT_REQUIRED: 'waiting' };
    const status = wanted === undefined ? undefined : STATES[wanted.toUpperCase().startsWith('TASK_STATE_') ? wanted.toUpperCase() : `TASK_STATE_${wanted.toUpperCase().replace(/-/g, '_')}`];
    const page = await store.listRuns({ offset, limit: pageSize, ...(contextId !== undefined ? { threadId: contextId } : {}), ...(status !== undefined ? { status } : {}) });
    const historyLength = historyOf(c) ?? 0;
    const tasks: JsonValue[] = [];
    for (const run of page.items) {
      const messages = historyLength === 0 ? [] : ((await store.loadThread(run.thread_id))?.messages ?? []);
      tasks.push(taskOf(run, registry.live(run.run_id)?.status ?? run.status, messages, historyLength));
    }
    const next = offset + page.items.length;
    return { tasks, totalSize: page.total, pageSize, nextPageToken: next < page.total ? String(next) : '' };
  }

  /** `tasks/{id}:subscribe`: the task's stream from now to the end of its current segment. */
  async function subscribeTask(taskId: string): Promise<Response> {
    const live = registry.live(taskId);
    if (live === undefined || live.status === 'done') {
      if (!isValidId(taskId) || (await store.getRun(taskId)) === undefined) throw taskNotFound(taskId);
      throw new A2aError(409, 'FAILED_PRECONDITION', `task ${taskId} is in a terminal state`, [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'UNSUPPORTED_OPERATION', domain: 'a2a-protocol.org', metadata: { taskId } }]);
    }
    return streamTask(taskId, live.threadId, registry.log(live.threadId).lastSeq);
  }

  async function waitDone(runId: string): Promise<void> {
    for (let i = 0; i < 500; i++) {
      const live = registry.live(runId);
      if (live === undefined || live.status === 'done') return;
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  async function snapshot(taskId: string, historyLength: number | undefined): Promise<JsonValue> {
    if (!isValidId(taskId)) throw taskNotFound(taskId);
    const stored = await store.getRun(taskId);
    const live = registry.live(taskId);
    if (stored === undefined && live === undefined) throw taskNotFound(taskId);
    const record: RunRecord = stored ?? { run_id: taskId, thread_id: live?.threadId ?? '', agent_id: live?.agentId ?? '', status: 'created', steps: 0, created_at: 0, updated_at: 0 };
    const messages = (await store.loadThread(record.thread_id))?.messages ?? [];
    return taskOf(record, live?.status ?? record.status, messages, historyLength);
  }

  async function send(c: Context, agentId: string, stream: boolean): Promise<Response> {
    const type = c.req.header('content-type') ?? '';
    if (!/^application\/(a2a\+)?json\b/i.test(type)) throw badRequest('contentType', 'the body must be application/json or application/a2a+json');
    let raw: unknown;
    try {
      raw = JSON.parse(await c.req.text());
    } catch (e) {
      throw badRequest('(body)', `malformed JSON: ${(e as Error).message}`);
    }
    const parsed = SendMessageSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw badRequest(issue?.path.map(String).join('.') || '(body)', issue?.message ?? 'invalid');
    }
    const req = parsed.data;
    const m = req.message;
    if (m.role !== 'ROLE_USER') throw badRequest('message.role', 'must be ROLE_USER');
    if (m.messageId.trim() === '') throw badRequest('message.messageId', 'must not be blank');
    if (m.parts.length === 0) throw badRequest('message.parts', 'at least one part is required');
    const modes = req.configuration?.acceptedOutputModes;
    if (modes !== undefined && modes.length > 0 && !modes.includes('text/plain')) throw new A2aError(415, 'INVALID_ARGUMENT', 'this agent answers text/plain only');

    let runId: string;
    let threadId: string;
    let from: number;
    const existing = m.taskId !== undefined ? registry.live(m.taskId) : undefined;
    if (m.taskId !== undefined && existing !== undefined && existing.status === 'waiting') {
      if (m.contextId !== undefined && m.contextId !== existing.threadId) throw badRequest('message.contextId', 'does not match the task');
      threadId = existing.threadId;
      runId = m.taskId;
      from = registry.log(threadId).lastSeq;
      const reply = replyOf(m.parts);
      const decided = registry.decide(runId, registry.waitingCalls(runId).map((id) => decisionFor(id, 'resume', env.clock.now(), { result: reply })));
      if (!decided.ok) throw badRequest('message.taskId', decided.error.message);
    } else {
      if (m.taskId !== undefined && existing !== undefined) throw badRequest('message.taskId', `task ${m.taskId} is not waiting for input`);
      threadId = m.contextId ?? env.ids.next('thread');
      if (!isValidId(threadId)) throw badRequest('message.contextId', 'invalid context id');
      const messageId = isValidId(m.messageId) ? m.messageId : env.ids.next('message');
      const started = await registry.start({ threadId, agentId, messages: [{ id: messageId, role: 'user', content: blocksOf(m.parts) }] });
      if (!started.ok) throw new A2aError(409, 'FAILED_PRECONDITION', started.error.message);
      runId = started.value.runId;
      from = started.value.fromSeq;
    }
    if (!stream) {
      if (req.configuration?.returnImmediately !== true) await registry.segmentEnd(runId, from);
      return c.json({ task: await snapshot(runId, req.configuration?.historyLength) });
    }
    return streamTask(runId, threadId, from);
  }

  /** A task's StreamResponse frames from `from` to the end of its segment (`run_start` made up when the segment is a resumption). */
  function streamTask(runId: string, threadId: string, from: number): Response {
    let state: A2aState = initialA2aState();
    const render = (item: LogItem): string => {
      if (item.kind !== 'frame' || item.runId !== runId) return '';
      // A segment joined midway (a resumption, a subscription) opens with the task, as a stream does.
      let opening = '';
      if (!state.started && item.event.event_type !== 'run_start') {
        const [s0, f0] = transcodeA2a(state, { event_type: 'run_start', thread_id: threadId, run_id: runId });
        state = s0;
        opening = frameA2a(f0);
      }
      const [next, frames] = transcodeA2a(state, item.event);
      state = next;
      return opening + frameA2a(frames);
    };
    return logStream(
      registry,
      threadId,
      from,
      { heartbeatMs: options.heartbeatMs, render, until: (item) => item.kind === 'frame' && item.runId === runId && item.event.event_type === 'run_finish', epilogue: () => frameA2a(finishA2a(state)) },
      { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' },
    );
  }

  return app;
}
