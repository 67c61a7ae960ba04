// Over 500 lines: A2A's two bindings (JSON-RPC and HTTP+JSON) serve the same methods, with one error
// model (the reasons below) and one way of mapping runs to tasks; split apart each would need all.
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import type { JsonValue } from '../contract/json.ts';
import type { TerminationReason } from '../contract/lifecycle.ts';
import { messageText, type ContentBlock, type Message } from '../contract/message.ts';
import { agentCardOf } from '../protocols/a2a/card.ts';
import {
  finishA2a,
  initialA2aState,
  inputRequiredMessage,
  scheduledMessage,
  RESPONSE_ARTIFACT,
  taskStateOf,
  transcodeA2a,
  waitingDisposition,
  type A2aState,
  type StreamResponse,
  type TaskState,
} from '../protocols/a2a/encoder.ts';
import { decisionFor } from '../contract/decision.ts';
import { isValidId, type RunRecord } from '../runtime/store.ts';
import { bearerCheck, HttpError, logStream, publicOrigin, readJson, type ServerParts } from './http-support.ts';
import { acceptInbound } from './inbound.ts';
import type { LogItem, WaitingCall } from './run-registry.ts';

const A2A_VERSION = '1.0';

/**
 * The A2A error reasons this server uses (the `ErrorInfo.reason` of the A2A error model), with their
 * HTTP+JSON status and JSON-RPC code.
 */
const REASONS = {
  INVALID_ARGUMENT: { http: 400, status: 'INVALID_ARGUMENT', rpc: -32602 },
  TASK_NOT_FOUND: { http: 404, status: 'NOT_FOUND', rpc: -32001 },
  TASK_NOT_CANCELABLE: { http: 409, status: 'FAILED_PRECONDITION', rpc: -32002 },
  UNSUPPORTED_OPERATION: { http: 409, status: 'FAILED_PRECONDITION', rpc: -32004 },
  CONTENT_TYPE_NOT_SUPPORTED: { http: 415, status: 'INVALID_ARGUMENT', rpc: -32005 },
  EXTENDED_AGENT_CARD_NOT_CONFIGURED: { http: 400, status: 'UNIMPLEMENTED', rpc: -32007 },
  VERSION_NOT_SUPPORTED: { http: 400, status: 'FAILED_PRECONDITION', rpc: -32009 },
  UNAUTHENTICATED: { http: 401, status: 'UNAUTHENTICATED', rpc: -32600 },
  AGENT_NOT_FOUND: { http: 404, status: 'NOT_FOUND', rpc: -32602 },
  THREAD_BUSY: { http: 409, status: 'FAILED_PRECONDITION', rpc: -32004 },
  // A context another principal holds is answered as an unknown one; JSON-RPC has no code of its own for it.
  CONTEXT_NOT_FOUND: { http: 404, status: 'NOT_FOUND', rpc: -32001 },
  THREAD_PAUSED: { http: 409, status: 'FAILED_PRECONDITION', rpc: -32004 },
  NO_ROUTE: { http: 404, status: 'NOT_FOUND', rpc: -32601 },
} as const;
type Reason = keyof typeof REASONS;

/** An A2A error: one reason, rendered by each binding (HTTP+JSON: google.rpc.Status; JSON-RPC: code + data). */
class A2aError extends Error {
  readonly reason: Reason;
  readonly details: JsonValue[];
  constructor(reason: Reason, message: string, details: JsonValue[] = []) {
    super(message);
    this.reason = reason;
    this.details = details;
  }
}

const errorInfo = (reason: string, metadata: Record<string, string> = {}): JsonValue => ({
  '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
  reason,
  domain: 'a2a-protocol.org',
  ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
});

const badRequest = (field: string, description: string): A2aError =>
  new A2aError('INVALID_ARGUMENT', `invalid A2A request: ${field}: ${description}`, [
    { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field, description }] },
  ]);
const taskNotFound = (taskId: string): A2aError => new A2aError('TASK_NOT_FOUND', `task not found: ${taskId}`, [errorInfo('TASK_NOT_FOUND', { taskId })]);
const terminal = (taskId: string): A2aError =>
  new A2aError('UNSUPPORTED_OPERATION', `task ${taskId} is in a terminal state`, [errorInfo('UNSUPPORTED_OPERATION', { taskId })]);

/** The HTTP+JSON error body (google.rpc.Status). */
function httpError(c: Context, e: A2aError): Response {
  const r = REASONS[e.reason];
  const details = e.details.length > 0 ? e.details : [errorInfo(e.reason)];
  return c.json({ error: { code: r.http, status: r.status, message: e.message, details } }, r.http);
}

/** The JSON-RPC error object (`code`, `message`, `data: [ErrorInfo…]`). */
function rpcError(e: A2aError): JsonValue {
  const details = e.details.length > 0 ? e.details : [errorInfo(e.reason)];
  return { code: REASONS[e.reason].rpc, message: e.message, data: details };
}

const PartSchema = z.looseObject({
  text: z.string().optional(),
  data: z.unknown().optional(),
  url: z.string().optional(),
  raw: z.string().optional(),
  mediaType: z.string().optional(),
  filename: z.string().optional(),
});
const SendMessageSchema = z.looseObject({
  tenant: z.string().optional(),
  message: z.looseObject({
    messageId: z.string(),
    role: z.string(),
    parts: z.array(PartSchema),
    contextId: z.string().optional(),
    taskId: z.string().optional(),
  }),
  configuration: z
    .looseObject({
      acceptedOutputModes: z.array(z.string()).optional(),
      historyLength: z.number().int().nonnegative().optional(),
      returnImmediately: z.boolean().optional(),
    })
    .optional(),
  metadata: z.unknown().optional(),
});
type SendMessage = z.output<typeof SendMessageSchema>;

/** Parses a request body with a schema; the first violation names its field. */
function parseWith<S extends z.ZodType>(schema: S, raw: unknown): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw badRequest(issue?.path.map(String).join('.') || '(body)', issue?.message ?? 'invalid');
}

/** The A2A parts of a user message as content blocks: text as is, data as JSON text, urls and raw bytes as media. */
function blocksOf(parts: SendMessage['message']['parts']): ContentBlock[] {
  return parts.map((p, i): ContentBlock => {
    const kinds = [p.text, p.data, p.url, p.raw].filter((x) => x !== undefined).length;
    if (kinds !== 1) throw badRequest(`message.parts[${i}]`, 'a part has exactly one of text, data, url, raw');
    if (p.text !== undefined) return { type: 'text', text: p.text };
    if (p.data !== undefined) return { type: 'text', text: JSON.stringify(p.data) };
    const mediaType = p.mediaType ?? 'application/octet-stream';
    const source = p.url !== undefined ? { kind: 'url' as const, url: p.url } : { kind: 'base64' as const, media_type: mediaType, data: p.raw ?? '' };
    return mediaType.startsWith('image/')
      ? { type: 'image', source }
      : { type: 'document', source, ...(p.filename !== undefined ? { title: p.filename } : {}) };
  });
}

/** The reply to an input-required task, as the decision's result: its data part, else its text. */
function replyOf(parts: SendMessage['message']['parts']): JsonValue {
  const data = parts.find((p) => p.data !== undefined)?.data;
  if (data !== undefined) return data as JsonValue;
  return { text: parts.map((p) => p.text ?? '').join('') };
}

/** A reply declines when its result says `approved: false`. */
const declines = (reply: JsonValue): boolean => typeof reply === 'object' && reply !== null && !Array.isArray(reply) && reply['approved'] === false;

const partsOf = (m: Message): JsonValue[] => {
  const text = messageText(m);
  return text === '' ? [] : [{ text }];
};

/** What an input-required status tells the client: the calls the task waits on. */
const pendingOf = (calls: readonly WaitingCall[]) =>
  calls.map((c) => ({
    toolCallId: c.callId,
    name: c.name,
    arguments: c.arguments,
    disposition: waitingDisposition(c.suspension),
    ...(c.suspension !== undefined
      ? { suspensionId: c.suspension.id, action: c.suspension.action, ...(c.suspension.message !== undefined ? { message: c.suspension.message } : {}) }
      : {}),
    ...(c.schedule !== undefined ? { schedule: c.schedule } : {}),
  }));

/** A task snapshot from the run record, its thread's messages and, while it waits, the calls it waits on. */
function taskOf(
  run: RunRecord,
  status: RunRecord['status'],
  messages: readonly Message[],
  historyLength: number | undefined,
  waiting: readonly WaitingCall[],
): JsonValue {
  // A task whose calls all wait on their schedule needs no input: it is still working.
  const scheduled = status === 'waiting' && waiting.length > 0 && waiting.every((c) => c.schedule !== undefined);
  const state: TaskState =
    status === 'created'
      ? 'TASK_STATE_SUBMITTED'
      : status === 'running' || scheduled
        ? 'TASK_STATE_WORKING'
        : status === 'waiting'
          ? 'TASK_STATE_INPUT_REQUIRED'
          : taskStateOf(run.termination ?? ({ type: 'natural_end' } as TerminationReason));
  const visible = messages.filter((m) => (m.role === 'user' || m.role === 'assistant') && m.visibility !== 'internal' && partsOf(m).length > 0);
  const lastAgent = [...visible].reverse().find((m) => m.role === 'assistant');
  const agentMessage = (m: Message): JsonValue => ({
    messageId: m.id ?? `${run.run_id}:answer`,
    contextId: run.thread_id,
    taskId: run.run_id,
    role: 'ROLE_AGENT',
    parts: partsOf(m),
  });
  const settled = state !== 'TASK_STATE_SUBMITTED' && state !== 'TASK_STATE_WORKING';
  const statusMessage = scheduled
    ? scheduledMessage(run.run_id, run.thread_id, pendingOf(waiting))
    : state === 'TASK_STATE_INPUT_REQUIRED' && waiting.length > 0
      ? inputRequiredMessage(run.run_id, run.thread_id, pendingOf(waiting))
      : settled && lastAgent !== undefined
        ? agentMessage(lastAgent)
        : undefined;
  const history = historyLength === undefined ? visible : historyLength === 0 ? [] : visible.slice(-historyLength);
  return {
    id: run.run_id,
    contextId: run.thread_id,
    status: { state, ...(statusMessage !== undefined ? { message: statusMessage } : {}) },
    ...(state === 'TASK_STATE_COMPLETED' && lastAgent !== undefined
      ? { artifacts: [{ artifactId: RESPONSE_ARTIFACT, name: RESPONSE_ARTIFACT, parts: partsOf(lastAgent) }] }
      : {}),
    ...(history.length > 0
      ? {
          history: history.map((m) =>
            m.role === 'assistant'
              ? agentMessage(m)
              : { messageId: m.id ?? '', contextId: run.thread_id, taskId: run.run_id, role: 'ROLE_USER', parts: partsOf(m) },
          ),
        }
      : {}),
  };
}

/** A task's stream, to be framed by a binding: where it starts and the run it follows. */
interface TaskStream {
  readonly runId: string;
  readonly threadId: string;
  readonly from: number;
}

const STATES: Record<string, RunRecord['status']> = { TASK_STATE_SUBMITTED: 'created', TASK_STATE_WORKING: 'running', TASK_STATE_INPUT_REQUIRED: 'waiting' };

/**
 * A2A 1.0 (book: A2A 路由), over both bindings the agent card advertises: HTTP+JSON under
 * `/v1/a2a[/<agent>]` (`message:send`, `message:stream`, `tasks`, `tasks/<id>`, `tasks/<id>:cancel`,
 * `tasks/<id>:subscribe`, `extendedAgentCard`) and JSON-RPC at `/v1/a2a[/<agent>]/jsonrpc`
 * (`SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask`,
 * `GetExtendedAgentCard`); each agent's card is also at `/v1/a2a/<agent>/.well-known/agent-card.json`. Task id = run id, context id = thread id. A message on an input-required
 * task answers its waiting calls; any other message in a context is a new turn (the one rule of
 * `planInbound`: a message id the thread holds starts nothing).
 */
export function a2aRoutes(
  parts: ServerParts,
  options: {
    readonly heartbeatMs: number;
    readonly version: string;
    readonly extendedCardToken?: string;
    readonly trustProxy?: boolean;
    readonly basePath?: string;
  },
): Hono {
  const { runtime, store, registry } = parts;
  const env = runtime.env;
  const app = new Hono();

  app.onError((e, c) => {
    if (e instanceof A2aError) return httpError(c, e);
    throw e;
  });

  // The card's addresses are where clients reach the API: under the path it is mounted at.
  const baseUrl = (c: Context): string => `${publicOrigin(c, options.trustProxy === true)}${options.basePath ?? ''}`;
  const defaultAgent = (): string => (runtime.agentIds().includes('default') ? 'default' : (runtime.agentIds()[0] ?? ''));

  /** The card of an agent, with its two interfaces (HTTP+JSON and JSON-RPC). */
  const cardOf = (c: Context, agentId: string): Record<string, JsonValue> => {
    const resolved = runtime.resolve(agentId);
    if (!resolved.ok) throw new A2aError('AGENT_NOT_FOUND', `agent not found: ${agentId}`);
    const card = agentCardOf(resolved.value.spec, baseUrl(c), options.version);
    return card as Record<string, JsonValue>;
  };

  app.get('/.well-known/agent-card.json', (c) => {
    const card = cardOf(c, defaultAgent());
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

  const checkVersion = (c: Context): void => {
    const version = c.req.header('a2a-version') ?? c.req.query('A2A-Version');
    if (version !== undefined && version !== A2A_VERSION) {
      throw new A2aError('VERSION_NOT_SUPPORTED', `A2A version ${version} is not supported (only ${A2A_VERSION})`, [
        errorInfo('VERSION_NOT_SUPPORTED', { version }),
      ]);
    }
  };

  /** The path's segments after `/v1/a2a/`, percent-decoded (a malformed escape is a 400 naming the path). */
  const segmentsOf = (c: Context): string[] =>
    c.req.path
      .slice('/v1/a2a/'.length)
      .split('/')
      .filter((s) => s !== '')
      .map((s) => {
        try {
          return decodeURIComponent(s);
        } catch {
          throw badRequest('path', `malformed percent-encoding in '${s}'`);
        }
      });

  /** The agent a path names (its first segment unless that is a method), and the rest. */
  const agentOf = (segments: string[]): [string, string[]] => {
    const [first, ...rest] = segments;
    if (first === undefined || /^(message:|tasks$|extendedAgentCard$|jsonrpc$|\.well-known$)/.test(first)) return [defaultAgent(), segments];
    if (!runtime.agentIds().includes(first)) throw new A2aError('AGENT_NOT_FOUND', `agent not found: ${first}`);
    return [first, rest];
  };

  // ---- the operations, shared by both bindings ------------------------------------------------------

  /**
   * The extended card (bearer-protected): the public card plus the skills of every agent. Without a
   * configured token it is unsupported; a missing or wrong token is UNAUTHENTICATED.
   */
  function extendedCard(c: Context, agentId: string): JsonValue {
    const token = options.extendedCardToken;
    if (token === undefined || token === '') throw new A2aError('EXTENDED_AGENT_CARD_NOT_CONFIGURED', 'the extended agent card is not enabled on this server');
    if (bearerCheck(c, token) !== 'ok') {
      throw new A2aError('UNAUTHENTICATED', 'a valid bearer token is required for the extended agent card');
    }
    const card = cardOf(c, agentId);
    const skills = runtime.agentIds().map((id) => ({
      id,
      name: id,
      description: `Interact with the '${id}' Awaken agent.`,
      tags: ['awaken', 'agent'],
      inputModes: ['text/plain', 'application/json'],
      outputModes: ['text/plain'],
    }));
    return { ...card, skills };
  }

  async function snapshot(taskId: string, historyLength: number | undefined): Promise<JsonValue> {
    if (!isValidId(taskId)) throw taskNotFound(taskId);
    const stored = await store.getRun(taskId);
    const live = registry.live(taskId);
    if (stored === undefined && live === undefined) throw taskNotFound(taskId);
    const record: RunRecord = stored ?? {
      run_id: taskId,
      thread_id: live?.threadId ?? '',
      agent_id: live?.agentId ?? '',
      status: 'created',
      steps: 0,
      created_at: 0,
      updated_at: 0,
    };
    const messages = (await store.loadThread(record.thread_id))?.messages ?? [];
    return taskOf(record, live?.status ?? record.status, messages, historyLength, (await registry.waitingAnywhere(taskId))?.calls ?? []);
  }

  /** `tasks` listing: newest first, by context and state, paged. */
  async function listTasks(q: {
    readonly contextId?: string | undefined;
    readonly status?: string | undefined;
    readonly pageSize?: number | undefined;
    readonly pageToken?: string | undefined;
    readonly historyLength?: number | undefined;
  }): Promise<JsonValue> {
    const pageSize = Math.min(100, Math.max(1, q.pageSize ?? 50));
    const token = q.pageToken ?? '';
    if (token !== '' && !/^\d{1,9}$/.test(token)) throw badRequest('pageToken', 'must be a page token from a previous listing');
    const offset = token === '' ? 0 : Number(token);
    const wanted = q.status;
    const status =
      wanted === undefined || wanted === ''
        ? undefined
        : STATES[wanted.toUpperCase().startsWith('TASK_STATE_') ? wanted.toUpperCase() : `TASK_STATE_${wanted.toUpperCase().replace(/-/g, '_')}`];
    const page = await store.listRuns({
      offset,
      limit: pageSize,
      ...(q.contextId !== undefined && q.contextId !== '' ? { threadId: q.contextId } : {}),
      ...(status !== undefined ? { status } : {}),
    });
    const historyLength = q.historyLength ?? 0;
    const tasks: JsonValue[] = [];
    for (const run of page.items) {
      const messages = historyLength === 0 ? [] : ((await store.loadThread(run.thread_id))?.messages ?? []);
      const calls = registry.waiting(run.run_id)?.calls ?? (run.status === 'waiting' ? (await registry.waitingAnywhere(run.run_id))?.calls : undefined) ?? [];
      tasks.push(taskOf(run, registry.live(run.run_id)?.status ?? run.status, messages, historyLength, calls));
    }
    const next = offset + page.items.length;
    return { tasks, totalSize: page.total, pageSize, nextPageToken: next < page.total ? String(next) : '' };
  }

  async function waitDone(runId: string): Promise<void> {
    for (let i = 0; i < 500; i++) {
      const live = registry.live(runId);
      if (live === undefined || live.status === 'done') return;
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  /** Cancels a task: unknown → TASK_NOT_FOUND, finished → TASK_NOT_CANCELABLE; answers the task once it stopped. */
  async function cancelTask(taskId: string): Promise<JsonValue> {
    if (!isValidId(taskId)) throw taskNotFound(taskId);
    const live = registry.live(taskId);
    if (live === undefined || live.status === 'done') {
      const stored = await store.getRun(taskId);
      if (stored === undefined) throw taskNotFound(taskId);
      // Waiting in the store and held by no run here (a restart, or a reload let it go): ended there.
      if (stored.status === 'waiting' && (await registry.cancelAnywhere(taskId)).ok) return snapshot(taskId, undefined);
      throw new A2aError('TASK_NOT_CANCELABLE', `task ${taskId} cannot be canceled: it has finished`, [errorInfo('TASK_NOT_CANCELABLE', { taskId })]);
    }
    const from = registry.log(live.threadId).lastSeq;
    registry.cancel(taskId);
    if (live.status !== 'waiting') await registry.segmentEnd(taskId, from);
    else await waitDone(taskId);
    return snapshot(taskId, undefined);
  }

  /** `SubscribeToTask`: the task's stream from now to its next final state (a wait on scheduled calls is none). */
  async function subscribeTask(taskId: string): Promise<TaskStream> {
    if (!isValidId(taskId)) throw taskNotFound(taskId);
    const live = registry.live(taskId);
    if (live === undefined || live.status === 'done') {
      if ((await store.getRun(taskId)) === undefined) throw taskNotFound(taskId);
      throw terminal(taskId);
    }
    return { runId: taskId, threadId: live.threadId, from: registry.log(live.threadId).lastSeq };
  }

  /**
   * `SendMessage`: a message on an input-required task answers the calls it waits on (its data part,
   * else its text, is the result; `{"approved": false}` declines); any other message is a new turn in
   * its context — refused while a task there waits for input, unless `metadata.discardPause` cancels
   * it. A message id the context already holds starts nothing: the context's latest task answers.
   * Blocking unless streaming or `returnImmediately`.
   */
  async function sendMessage(agentId: string, raw: unknown): Promise<{ readonly req: SendMessage; readonly stream: TaskStream }> {
    const req = parseWith(SendMessageSchema, raw);
    const m = req.message;
    if (m.role !== 'ROLE_USER') throw badRequest('message.role', 'must be ROLE_USER');
    if (m.messageId.trim() === '') throw badRequest('message.messageId', 'must not be blank');
    if (m.parts.length === 0) throw badRequest('message.parts', 'at least one part is required');
    const modes = req.configuration?.acceptedOutputModes;
    if (modes !== undefined && modes.length > 0 && !modes.includes('text/plain'))
      throw new A2aError('CONTENT_TYPE_NOT_SUPPORTED', 'this agent answers text/plain only');
    const blocks = blocksOf(m.parts);
    let agent = agentId;
    if (req.tenant !== undefined && req.tenant !== '') {
      if (!runtime.agentIds().includes(req.tenant)) throw new A2aError('AGENT_NOT_FOUND', `agent not found: ${req.tenant}`);
      agent = req.tenant;
    }

    let threadId: string;
    let answers: ReturnType<typeof decisionFor>[] = [];
    if (m.taskId !== undefined && m.taskId !== '') {
      const taskId = m.taskId;
      if (!isValidId(taskId)) throw taskNotFound(taskId);
      // A task parked by a process that is gone is taken up here to receive its answer.
      await registry.adopt(taskId);
      const live = registry.live(taskId);
      if (live === undefined || live.status === 'done') {
        if ((await store.getRun(taskId)) === undefined) throw taskNotFound(taskId);
        throw terminal(taskId);
      }
      if (m.contextId !== undefined && m.contextId !== '' && m.contextId !== live.threadId) throw badRequest('message.contextId', 'does not match the task');
      const waiting = registry.waiting(taskId);
      if (waiting === undefined)
        throw new A2aError('UNSUPPORTED_OPERATION', `task ${taskId} is not waiting for input`, [errorInfo('UNSUPPORTED_OPERATION', { taskId })]);
      // A scheduled call is the server's to wake: a reply answers the calls that asked for one.
      const asked = waiting.calls.filter((call) => call.schedule === undefined);
      if (asked.length === 0)
        throw new A2aError('UNSUPPORTED_OPERATION', `task ${taskId} is not waiting for input: its calls are scheduled and go on by themselves`, [
          errorInfo('UNSUPPORTED_OPERATION', { taskId }),
        ]);
      threadId = live.threadId;
      const reply = replyOf(m.parts);
      answers = asked.map((call) => decisionFor(call.callId, declines(reply) ? 'cancel' : 'resume', env.clock.now(), { result: reply }));
    } else {
      threadId = m.contextId !== undefined && m.contextId !== '' ? m.contextId : env.ids.next('thread');
      if (!isValidId(threadId)) throw badRequest('message.contextId', 'invalid context id');
    }
    const meta = req.metadata;
    const inbound = {
      threadId,
      messages: answers.length > 0 ? [] : [{ id: m.messageId, message: { role: 'user' as const, content: blocks } }],
      decisions: answers,
      ...(typeof meta === 'object' && meta !== null && (meta as Record<string, unknown>)['discardPause'] === true ? { discardPause: true } : {}),
    };
    const accepted = await acceptInbound(parts, threadId, agent, inbound);
    if (accepted.ok === 'nothing') {
      // The context holds this message already (a retry): its latest task answers.
      const latest = (await store.listRuns({ offset: 0, limit: 1, threadId })).items[0];
      if (latest === undefined) throw badRequest('message.messageId', 'the context holds this message but no task');
      const live = registry.live(latest.run_id);
      return { req, stream: { runId: latest.run_id, threadId, from: live !== undefined && live.status !== 'done' ? registry.log(threadId).lastSeq : -1 } };
    }
    if (!accepted.ok) {
      const e = accepted.error;
      if (e.code === 'thread_paused') {
        throw new A2aError(
          'THREAD_PAUSED',
          `context ${threadId} waits for input on task ${e.runId}: answer it with a message on that task, or send metadata.discardPause: true to cancel it`,
          [errorInfo('THREAD_PAUSED', { contextId: threadId, taskId: e.runId })],
        );
      }
      if (e.code === 'thread_not_found') throw new A2aError('CONTEXT_NOT_FOUND', e.message, [errorInfo('CONTEXT_NOT_FOUND', { contextId: threadId })]);
      throw new A2aError('THREAD_BUSY', e.message, [errorInfo(e.code.toUpperCase(), { contextId: threadId, ...('runId' in e ? { taskId: e.runId } : {}) })]);
    }
    return { req, stream: { runId: accepted.value.runId, threadId, from: accepted.value.since } };
  }

  /** The task a blocking `SendMessage` answers: after its current segment (unless `returnImmediately`) — `WORKING` when that parks it on scheduled calls. */
  async function sendResult(sent: Awaited<ReturnType<typeof sendMessage>>): Promise<JsonValue> {
    const { req, stream } = sent;
    if (req.configuration?.returnImmediately !== true && stream.from >= 0) await registry.segmentEnd(stream.runId, stream.from);
    return { task: await snapshot(stream.runId, req.configuration?.historyLength) };
  }

  /**
   * A task's `StreamResponse` frames from `from` to the end of its segment, each wrapped by the
   * binding (`run_start` made up when the segment is a resumption or a subscription). A task that
   * has finished (a retried message) streams its snapshot alone.
   */
  async function taskStream(stream: TaskStream, wrap: (frame: StreamResponse) => JsonValue): Promise<Response> {
    const headers = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' };
    const frame = (f: StreamResponse): string => `data: ${JSON.stringify(wrap(f))}\n\n`;
    if (stream.from < 0) return new Response(frame({ task: await snapshot(stream.runId, undefined) }), { headers });
    let state: A2aState = initialA2aState();
    // A run that ends while it waits (cancelled) sends no frame of its own: its stream ends with it.
    let endedWith: TerminationReason | undefined;
    const endAt = registry.ended(stream.runId)?.then(
      (termination) => {
        endedWith = termination;
        return registry.log(stream.threadId).lastSeq;
      },
      // A run that failed outside its loop ends its stream where it stands.
      () => registry.log(stream.threadId).lastSeq,
    );
    const render = (item: LogItem): string => {
      if (item.kind !== 'frame' || item.runId !== stream.runId) return '';
      // A segment joined midway (a resumption, a subscription) opens with the task, as a stream does.
      let out = '';
      if (!state.started && item.event.event_type !== 'run_start') {
        const [s0, f0] = transcodeA2a(state, { event_type: 'run_start', thread_id: stream.threadId, run_id: stream.runId });
        state = s0;
        out += f0.map(frame).join('');
      }
      const [next, frames] = transcodeA2a(state, item.event);
      state = next;
      return out + frames.map(frame).join('');
    };
    return logStream(
      registry,
      stream.threadId,
      stream.from,
      {
        heartbeatMs: options.heartbeatMs,
        render,
        // The task's final state for this stream (not a wait on scheduled calls: the task works on).
        until: () => state.finished,
        epilogue: () => {
          if (state.scheduled && !state.finished && endedWith !== undefined && endedWith.type !== 'suspended') {
            const [next, frames] = transcodeA2a(state, { event_type: 'run_finish', thread_id: stream.threadId, run_id: stream.runId, termination: endedWith });
            state = next;
            return frames.map(frame).join('');
          }
          return finishA2a(state).map(frame).join('');
        },
        ...(endAt !== undefined ? { endAt } : {}),
      },
      headers,
    );
  }

  const historyParam = (raw: string | undefined): number | undefined => {
    if (raw === undefined) return undefined;
    if (!/^\d{1,6}$/.test(raw)) throw badRequest('historyLength', 'must be a non-negative integer');
    return Number(raw);
  };

  const jsonBody = async (c: Context): Promise<unknown> => {
    const type = c.req.header('content-type') ?? '';
    if (!/^application\/(a2a\+)?json\b/i.test(type)) throw badRequest('contentType', 'the body must be application/json or application/a2a+json');
    try {
      return await readJson(c);
    } catch (e) {
      throw e instanceof HttpError ? badRequest('(body)', e.message) : e;
    }
  };

  // ---- JSON-RPC binding --------------------------------------------------------------------------

  const RpcRequestSchema = z.object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number().int(), z.null()]).optional(),
    method: z.string().min(1),
    params: z.unknown().optional(),
  });
  const IdParams = z.looseObject({ id: z.string().min(1), historyLength: z.number().int().nonnegative().optional() });
  const ListParams = z.looseObject({
    contextId: z.string().optional(),
    status: z.string().optional(),
    pageSize: z.number().int().optional(),
    pageToken: z.string().optional(),
    historyLength: z.number().int().nonnegative().optional(),
  });

  async function jsonRpc(c: Context, agentId: string): Promise<Response> {
    let raw: unknown;
    try {
      raw = await readJson(c);
    } catch (e) {
      if (!(e instanceof HttpError)) throw e;
      return c.json({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: `Parse error: ${e.code === 'invalid_json' ? 'the body is not JSON' : e.message}` },
      });
    }
    const parsed = RpcRequestSchema.safeParse(raw);
    if (!parsed.success)
      return c.json({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid request: a JSON-RPC 2.0 request object is required' } });
    const { id = null, method } = parsed.data;
    const params = parsed.data.params ?? {};
    const reply = (result: JsonValue): Response => c.json({ jsonrpc: '2.0', id, result });
    try {
      checkVersion(c);
      switch (method) {
        case 'SendMessage':
          return reply(await sendResult(await sendMessage(agentId, params)));
        case 'SendStreamingMessage':
          return taskStream((await sendMessage(agentId, params)).stream, (result) => ({ jsonrpc: '2.0', id, result }));
        case 'GetTask': {
          const p = parseWith(IdParams, params);
          return reply(await snapshot(p.id, p.historyLength));
        }
        case 'ListTasks':
          return reply(await listTasks(parseWith(ListParams, params)));
        case 'CancelTask':
          return reply(await cancelTask(parseWith(IdParams, params).id));
        case 'SubscribeToTask':
          return taskStream(await subscribeTask(parseWith(IdParams, params).id), (result) => ({ jsonrpc: '2.0', id, result }));
        case 'GetExtendedAgentCard':
          return reply(extendedCard(c, agentId));
        default:
          return c.json({ jsonrpc: '2.0', id, error: { code: -32601, message: `Method not found: ${method}` } });
      }
    } catch (e) {
      if (e instanceof A2aError) return c.json({ jsonrpc: '2.0', id, error: rpcError(e) });
      throw e;
    }
  }

  // ---- HTTP+JSON binding -------------------------------------------------------------------------

  app.all('/v1/a2a/*', async (c) => {
    const [agentId, segments] = agentOf(segmentsOf(c));
    const [head, second, third] = segments;
    const method = c.req.method;
    // Each agent's own card, beside its interfaces (a client made from `<server>/v1/a2a/<agent>`).
    if (method === 'GET' && head === '.well-known' && second === 'agent-card.json' && third === undefined) return c.json(cardOf(c, agentId));
    if (head === 'jsonrpc' && second === undefined) {
      if (method !== 'POST') return c.json({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'JSON-RPC requests are POSTed' } }, 405);
      return jsonRpc(c, agentId);
    }
    checkVersion(c);
    if (method === 'GET' && head === 'extendedAgentCard' && second === undefined) return c.json(extendedCard(c, agentId));
    if (method === 'POST' && (head === 'message:send' || head === 'message:stream') && second === undefined) {
      const sent = await sendMessage(agentId, await jsonBody(c));
      return head === 'message:send' ? c.json(await sendResult(sent)) : taskStream(sent.stream, (f) => f);
    }
    if (head === 'tasks' && second === undefined && method === 'GET') {
      const size = c.req.query('pageSize');
      return c.json(
        await listTasks({
          ...(c.req.query('contextId') !== undefined ? { contextId: c.req.query('contextId') as string } : {}),
          ...(c.req.query('status') !== undefined ? { status: c.req.query('status') as string } : {}),
          ...(size !== undefined ? { pageSize: Number(size) || 50 } : {}),
          ...(c.req.query('pageToken') !== undefined ? { pageToken: c.req.query('pageToken') as string } : {}),
          ...(c.req.query('historyLength') !== undefined ? { historyLength: historyParam(c.req.query('historyLength')) as number } : {}),
        }),
      );
    }
    if (head === 'tasks' && second !== undefined && third === undefined) {
      if (method === 'POST' && second.endsWith(':subscribe')) return taskStream(await subscribeTask(second.slice(0, -':subscribe'.length)), (f) => f);
      if (method === 'POST' && second.endsWith(':cancel')) return c.json(await cancelTask(second.slice(0, -':cancel'.length)));
      if (method === 'GET' && !second.includes(':')) return c.json(await snapshot(second, historyParam(c.req.query('historyLength'))));
    }
    throw new A2aError('NO_ROUTE', `no A2A route: ${method} ${options.basePath ?? ''}${c.req.path}`);
  });

  return app;
}
