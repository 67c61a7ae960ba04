// Over 500 lines: the HTTP app mounts every route on one Hono app, with the CORS, access and error
// handling they share, so that what a request meets before its handler reads in one place.
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { z } from 'zod';
import { RunStatusSchema } from '../contract/lifecycle.ts';
import { MessageSchema, Messages, type Message } from '../contract/message.ts';
import { decisionFor, type Decision } from '../contract/decision.ts';
import { isValidId, type RunRecord, StoreFailure } from '../runtime/store.ts';
import { a2aRoutes } from './a2a-routes.ts';
import { accessControl, authentication, type AuthOptions } from './access.ts';
import { mayReach, principalStore } from './principal.ts';
import { configRoutes, type ConfigDocs, type ConfigGuardOptions } from './config-routes.ts';
import { bodyOf, clientClosed, HttpError, logStream, registryError, SSE_HEADERS, type ServerParts } from './http-support.ts';
import { deleteThread } from './thread-delete.ts';
import { interruptThread } from './interrupt.ts';
import { errorFields, silentLogger, type Logger } from './log.ts';
import { mcpRoutes } from './mcp-routes.ts';
import { opsMiddleware, opsRoutes, type OpsOptions } from './ops-routes.ts';
import { protocolRoutes } from './protocol-routes.ts';
import { copilotkitRoutes } from './copilotkit-routes.ts';
import { runView } from './stored-runs.ts';
import { CreateThreadSchema, newThreadMeta, PatchThreadSchema, summariesOf, threadPatch } from './thread-meta.ts';

export interface HttpOptions {
  /** Largest request body accepted, in bytes (default 1 MiB). */
  readonly bodyLimit?: number;
  /** A `: heartbeat` comment after this much idleness on an SSE stream (default 15 s). */
  readonly heartbeatMs?: number;
  /** The version the A2A agent card and the MCP server announce. */
  readonly version?: string;
  /** Host names beyond the loopback ones a request may name in `Host` (`*`: any); see `accessControl`. */
  readonly allowedHosts?: readonly string[];
  /** Origins beyond the loopback ones whose pages may call the API (`*`: any); see `accessControl`. */
  readonly corsOrigins?: readonly string[];
  /** API tokens (each a principal) or an `authenticate` hook: with either, every route but health and the public card needs a credential. */
  readonly auth?: Omit<AuthOptions, 'adminToken'>;
  /** The bearer token of config writes; without one, config writes answer 401. */
  readonly adminToken?: string;
  /** Patterns a configured provider's `api_key_env` must match (default `*_API_KEY`). */
  readonly apiKeyEnvAllow?: readonly string[];
  /** How long an MCP server named by a config write may take to answer (default 10 s). */
  readonly mcpConnectTimeoutMs?: number;
  /** The MCP servers the server's own configuration connected (`mcp_servers` of its config file), listed in `/v1/capabilities`. */
  readonly mcpServers?: readonly string[];
  /** What config writes may make the server send: the outbound guard, where each credential may go, what no log line shows. */
  readonly configGuard?: ConfigGuardOptions;
  /** Where configured providers read their `api_key_env` (default: the process environment). */
  readonly processEnv?: NodeJS.ProcessEnv;
  /** Configuration saved by earlier config writes (`savedConfig(store)`), published at start. */
  readonly savedConfig?: Partial<ConfigDocs>;
  /**
   * Why config writes are refused on this server, when they are (`awaken dev`: the app is the
   * configuration, and a reload builds the runtime from it alone): PUT and DELETE answer 409 with it.
   */
  readonly configWritesRefused?: string;
  /** Where a line per request and every failure go (default: nowhere). */
  readonly logger?: Logger;
  /** Whether `X-Forwarded-Host` / `-Proto` name the server's public address (the A2A agent card): only behind a proxy that sets them (default false). */
  readonly trustProxy?: boolean;
  /**
   * The path the API is mounted at in an application of one's own (`/api/awaken`; default: the root).
   * The routes are matched without it (the mounting handler takes it off); every address the API
   * gives out — the A2A card's interfaces, a not-found answer's path — has it.
   */
  readonly basePath?: string;
  /** The operating surface: the limit on concurrent requests, the Prometheus metrics (`ops-routes.ts`). */
  readonly ops?: OpsOptions;
}

const RunMessageSchema = z.union([z.object({ role: z.enum(['user', 'system', 'assistant']), content: z.string() }).strict(), MessageSchema]);
const MessagesField = z.array(RunMessageSchema).min(1, { message: 'at least one message is required' });

const CreateRunSchema = z
  .object({
    agentId: z.string().min(1).optional(),
    agent_id: z.string().min(1).optional(),
    threadId: z.string().min(1).optional(),
    thread_id: z.string().min(1).optional(),
    messages: MessagesField,
    /** Start even when the thread waits for a decision: the waiting run is cancelled. */
    discardPause: z.boolean().optional(),
    discard_pause: z.boolean().optional(),
  })
  .strict();

const InputsSchema = z.object({ messages: MessagesField }).strict();
/** `POST /v1/runs/:id/triggers/:call_id`: what the woken call is given (its `ctx.resume.decision.result`). */
const TriggerSchema = z.object({ payload: z.unknown().optional() }).strict();
const DecisionSchema = z
  .object({
    toolCallId: z.string().min(1).optional(),
    tool_call_id: z.string().min(1).optional(),
    action: z.string(),
    payload: z.unknown().optional(),
    reason: z.string().optional(),
  })
  .strict();

/** A query integer clamped to [min, max]; garbage is a 400 naming the parameter. */
function intParam(c: Context, name: string, fallback: number, min: number, max: number): number {
  const raw = c.req.query(name);
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d{1,15}$/.test(raw)) throw new HttpError(400, 'invalid_query', `${name} must be an integer`, name);
  return Math.min(max, Math.max(min, Number(raw)));
}

function idParam(c: Context, name: string, kind: string): string {
  const id = c.req.param(name) ?? '';
  if (!isValidId(id)) throw new HttpError(400, 'invalid_id', `invalid ${kind} id`, name);
  return id;
}

/** A run's input as messages, each with a fresh id. */
function toMessages(input: readonly z.output<typeof RunMessageSchema>[], newId: () => string): Message[] {
  return input.map((m) => {
    if ('content' in m && typeof m.content === 'string') {
      const text = m.content;
      return m.role === 'user'
        ? Messages.user(text, { id: newId() })
        : m.role === 'system'
          ? Messages.system(text, { id: newId() })
          : Messages.assistant(text, { id: newId() });
    }
    const message = m as Message;
    return message.id !== undefined ? message : { ...message, id: newId() };
  });
}

/** `Last-Event-ID` or `?since=`: the last frame the client has; absent means only new frames. */
function sinceOf(c: Context): number | undefined {
  const raw = c.req.header('last-event-id') ?? c.req.query('since');
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d{1,15}$/.test(raw.trim())) throw new HttpError(400, 'invalid_cursor', 'Last-Event-ID / since must be a non-negative integer', 'since');
  return Number(raw.trim());
}

const decisionAction = (action: string): Decision['decision']['action'] => {
  if (action === 'resume' || action === 'cancel') return action;
  throw new HttpError(400, 'invalid_request', `invalid action: ${action}, expected 'resume' or 'cancel'`, 'action');
};

/**
 * The HTTP API (book: HTTP API; seed 001): health, threads and their messages and event stream, runs
 * (create → SSE, list, get, inputs, cancel, decision), and the protocol routes. Every client mistake
 * is a 4xx `{error, code}`.
 */
export function createHttpApp(given: ServerParts, options: HttpOptions = {}): Hono {
  // Every surface reads and writes threads as the request's principal sees them (no principal: all).
  const parts: ServerParts = { ...given, store: principalStore(given.store) };
  const { runtime, store, registry } = parts;
  // A thread's parent is checked in the caller's view; its ancestors, in the whole store.
  const threadStores = { view: store, all: given.store };
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const env = runtime.env;
  const newMessageId = (): string => env.ids.next('message');
  const app = new Hono();
  const logger = options.logger ?? silentLogger;
  const basePath = options.basePath ?? '';

  // One line per request, when its response starts (an SSE stream goes on after it).
  app.use('*', async (c, next) => {
    const started = env.clock.now();
    await next();
    const status = c.res.status;
    const params = c.req.param() as Record<string, string | undefined>;
    const route = c.req.routePath;
    const fields = {
      method: c.req.method,
      route: route === '/*' ? undefined : route,
      path: basePath + c.req.path,
      status,
      ms: env.clock.now() - started,
      thread: c.res.headers.get('x-awaken-thread-id') ?? params['thread_id'] ?? (route.startsWith('/v1/threads/') ? params['id'] : undefined),
      run: c.res.headers.get('x-awaken-run-id') ?? (route.startsWith('/v1/runs/') ? params['id'] : undefined),
    };
    // The request limit's refusal is the server protecting itself, not a failure of it.
    if (status >= 500 && !(status === 503 && c.res.headers.get('retry-after') !== null)) logger.error('request', fields);
    else if (status >= 500) logger.warn('request', fields);
    else logger.info('request', fields);
  });

  // The limit on concurrent requests and the request gauges, before any other work is done.
  app.use('*', opsMiddleware(parts, options.ops));
  // Host and Origin checks and CORS, before anything else, on every route (preflights included).
  app.use(
    '*',
    accessControl({
      ...(options.allowedHosts !== undefined ? { allowedHosts: options.allowedHosts } : {}),
      ...(options.corsOrigins !== undefined ? { corsOrigins: options.corsOrigins } : {}),
    }),
  );
  // Who is calling: 401 without a credential when tokens are configured; the principal for the rest.
  app.use('*', authentication({ ...(options.auth ?? {}), ...(options.adminToken !== undefined ? { adminToken: options.adminToken } : {}) }));
  app.use(
    '*',
    bodyLimit({
      maxSize: options.bodyLimit ?? 1024 * 1024,
      onError: (c) => c.json({ error: `request body larger than ${options.bodyLimit ?? 1024 * 1024} bytes`, code: 'body_too_large', field: '(body)' }, 413),
    }),
  );

  app.onError((e, c) => {
    if (e instanceof HttpError) return c.json({ error: e.message, code: e.code, ...(e.field !== undefined ? { field: e.field } : {}), ...e.extra }, e.status);
    if (e instanceof StoreFailure) {
      const status = e.error.code === 'not_found' ? 404 : e.error.code === 'validation' ? 400 : 409;
      return c.json({ error: e.error.message, code: e.error.code }, status);
    }
    // Nobody reads this answer: its status is what the request line logs (info, not a server error).
    if (clientClosed(c, e))
      return new Response(JSON.stringify({ error: 'the client closed the connection before its request was read', code: 'client_closed' }), {
        status: 499,
        headers: { 'content-type': 'application/json' },
      });
    logger.error('request failed', { method: c.req.method, path: basePath + c.req.path, ...errorFields(e) });
    return c.json({ error: 'internal error', code: 'internal' }, 500);
  });
  app.notFound((c) => c.json({ error: `no route: ${c.req.method} ${basePath}${c.req.path}`, code: 'not_found' }, 404));

  /**
   * Liveness and readiness: `healthy`; `degraded` while the cluster bus is re-establishing its
   * connection (streams of other instances' runs and cross-instance cancels wait for it); `unhealthy`
   * when the store does not answer. `/health` is 503 only when unhealthy; `/health/ready` unless healthy.
   */
  const health = async (c: Context, ready: boolean): Promise<Response> => {
    const bus = registry.busStatus;
    const components = { runtime: 'ok', ...(bus !== 'none' ? { bus: bus === 'listening' ? 'ok' : 'reconnecting' } : {}) };
    try {
      await store.listThreads({ offset: 0, limit: 1 });
    } catch (e) {
      logger.error('store unavailable', { check: 'health', ...errorFields(e) });
      return c.json({ status: 'unhealthy', components: { store: 'error', ...components } }, 503);
    }
    const status = bus === 'down' ? 'degraded' : 'healthy';
    return c.json({ status, components: { store: 'ok', ...components } }, ready && status !== 'healthy' ? 503 : 200);
  };
  app.route('/', opsRoutes(parts, options.ops));
  app.get('/health', (c) => health(c, false));
  app.get('/health/ready', (c) => health(c, true));

  // ---- threads ------------------------------------------------------------------------------------

  app.post('/v1/threads', async (c) => {
    const body = await bodyOf(c, CreateThreadSchema);
    const id = body.id ?? env.ids.next('thread');
    if (!isValidId(id)) throw new HttpError(400, 'invalid_id', 'invalid thread id', 'id');
    const meta = await newThreadMeta(threadStores, id, body);
    return c.json(await store.createThread({ id, ...meta, now: env.clock.now() }), 201);
  });

  app.get('/v1/threads', async (c) => {
    const offset = intParam(c, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
    const limit = intParam(c, 'limit', 50, 1, 200);
    const page = await store.listThreads({ offset, limit });
    return c.json({ items: page.items, offset, limit, total: page.total, has_more: offset + page.items.length < page.total });
  });

  // Before `/v1/threads/:id`, so `summaries` is not taken for a thread id.
  app.get('/v1/threads/summaries', async (c) => {
    const offset = intParam(c, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
    const limit = intParam(c, 'limit', 50, 1, 200);
    const page = await store.listThreads({ offset, limit });
    const items = await summariesOf(store, page.items);
    return c.json({ items, offset, limit, total: page.total, has_more: offset + items.length < page.total });
  });

  app.get('/v1/threads/:id', async (c) => {
    const id = idParam(c, 'id', 'thread');
    const thread = await store.getThread(id);
    if (thread === undefined) throw new HttpError(404, 'thread_not_found', `thread not found: ${id}`);
    const current = await registry.activeRun(id);
    return c.json({ ...thread, ...(current !== undefined ? { active_run_id: current.runId, active_run_status: current.status } : {}) });
  });

  /** A thread's metadata changed: a field given replaces it, `null` clears it; the thread as it is after. */
  const patchThread = async (c: Context): Promise<Response> => {
    const id = idParam(c, 'id', 'thread');
    const body = await bodyOf(c, PatchThreadSchema);
    // The caller's view of the store: another principal's thread is not there.
    if ((await store.getThread(id)) === undefined) throw new HttpError(404, 'thread_not_found', `thread not found: ${id}`);
    const patch = await threadPatch(threadStores, id, body);
    const updated = await store.updateThread(id, patch, env.clock.now());
    if (updated === undefined) throw new HttpError(404, 'thread_not_found', `thread not found: ${id}`);
    return c.json(updated);
  };
  app.patch('/v1/threads/:id', patchThread);
  app.patch('/v1/threads/:id/metadata', patchThread);

  app.delete('/v1/threads/:id', async (c) => {
    const id = idParam(c, 'id', 'thread');
    // Whose thread it is comes first, from its owner record: another principal's is not found, as one
    // that does not exist, before its run could make it busy.
    if (!(await mayReach(given.store, id, 'read'))) throw new HttpError(404, 'thread_not_found', `thread not found: ${id}`);
    await deleteThread(store, registry, env.clock.now(), id);
    return c.body(null, 204);
  });

  app.post('/v1/threads/:id/interrupt', async (c) => c.json(await interruptThread(store, registry, env.clock.now(), idParam(c, 'id', 'thread')), 202));

  app.get('/v1/threads/:id/messages', async (c) => {
    const id = idParam(c, 'id', 'thread');
    const visibility = c.req.query('visibility');
    if (visibility !== undefined && visibility !== 'all' && visibility !== 'external')
      throw new HttpError(400, 'invalid_query', 'visibility must be external or all', 'visibility');
    const cursor = c.req.query('cursor');
    if (cursor !== undefined && !/^\d{1,15}$/.test(cursor)) throw new HttpError(400, 'invalid_cursor', 'cursor must be a valid pagination token', 'cursor');
    const offset = cursor !== undefined ? Number(cursor) : intParam(c, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
    const limit = intParam(c, 'limit', 50, 1, 200);
    const page = await store.listMessages(id, { offset, limit, ...(visibility === 'all' ? { visibility: 'all' as const } : {}) });
    const hasMore = offset + page.items.length < page.total;
    return c.json({ messages: page.items, total: page.total, has_more: hasMore, ...(hasMore ? { next_cursor: String(offset + page.items.length) } : {}) });
  });

  // ---- background submissions through the mailbox ----------------------------------------------------

  const SubmitSchema = z
    .object({
      agentId: z.string().min(1).optional(),
      agent_id: z.string().min(1).optional(),
      messages: MessagesField,
      priority: z.number().int().min(0).max(255).optional(),
      dedupeKey: z.string().min(1).max(200).optional(),
    })
    .strict();
  const submit = async (c: Context, threadId: string, body: z.output<typeof SubmitSchema>): Promise<Response> => {
    const mailbox = parts.mailbox;
    if (mailbox === undefined) throw new HttpError(404, 'not_found', 'the mailbox is not enabled on this server');
    const agentId = body.agentId ?? body.agent_id ?? runtime.agentIds()[0] ?? '';
    if (!runtime.agentIds().includes(agentId)) throw new HttpError(404, 'agent_not_found', `agent not found: ${agentId}`, 'agentId');
    const job = await mailbox
      .submit({
        threadId,
        agentId,
        messages: toMessages(body.messages, newMessageId),
        ...(body.priority !== undefined ? { priority: body.priority } : {}),
        ...(body.dedupeKey !== undefined ? { dedupeKey: body.dedupeKey } : {}),
      })
      .catch((e: unknown) => {
        // Another principal's thread (Mailbox.submit): answered as /v1/runs answers it.
        if (e instanceof StoreFailure && e.error.code === 'not_found') throw new HttpError(404, 'thread_not_found', `thread not found: ${threadId}`);
        throw e;
      });
    return c.json({ status: 'queued', job_id: job.job_id, thread_id: threadId }, 202);
  };

  /** Book: POST /v1/threads/:id/messages — queued behind (and cancelling) what runs on the thread. */
  app.post('/v1/threads/:id/messages', async (c) => {
    const id = idParam(c, 'id', 'thread');
    const body = await bodyOf(c, SubmitSchema);
    if ((await store.getThread(id)) === undefined) throw new HttpError(404, 'thread_not_found', `thread not found: ${id}`);
    return submit(c, id, body);
  });
  app.post('/v1/threads/:id/mailbox', async (c) => submit(c, idParam(c, 'id', 'thread'), await bodyOf(c, SubmitSchema)));
  app.get('/v1/threads/:id/mailbox', async (c) => {
    const id = idParam(c, 'id', 'thread');
    const status = c.req.query('status');
    const statuses = ['queued', 'claimed', 'accepted', 'cancelled', 'superseded', 'dead_letter'] as const;
    if (status !== undefined && !(statuses as readonly string[]).includes(status))
      throw new HttpError(400, 'invalid_query', `invalid status filter: ${status}`, 'status');
    const offset = intParam(c, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
    const limit = intParam(c, 'limit', 50, 1, 200);
    const page = await store.listJobs(id, { offset, limit, ...(status !== undefined ? { status: status as (typeof statuses)[number] } : {}) });
    return c.json({ items: page.items, total: page.total, has_more: offset + page.items.length < page.total });
  });

  /** The thread's event stream across runs: `id: <seq>` frames; reconnect with Last-Event-ID or ?since=. */
  app.get('/v1/threads/:id/stream', async (c) => {
    const id = idParam(c, 'id', 'thread');
    const since = sinceOf(c);
    const until = c.req.query('until');
    if (until !== undefined && until !== 'idle') throw new HttpError(400, 'invalid_query', `invalid until: ${until} (the one value is 'idle')`, 'until');
    // A thread that does not exist (and has no run starting on it) has nothing to follow.
    if ((await store.getThread(id)) === undefined && (await registry.activeRun(id)) === undefined)
      throw new HttpError(404, 'thread_not_found', `thread not found: ${id}`);
    if (until === undefined) return logStream(registry, id, since, { heartbeatMs });
    // ?until=idle: up to the frame that is the thread's last now; with a run in flight here, up to its
    // segment's run_finish frame (finished, or suspended for a decision) — so a plain client returns.
    const last = await registry.lastSeq(id);
    const current = registry.currentRun(id);
    const endAt =
      current === undefined || current.status === 'waiting'
        ? Promise.resolve(last)
        : registry.segmentEnd(current.runId, current.fromSeq).then(() => registry.lastSeq(id));
    return logStream(registry, id, since ?? last, { heartbeatMs, endAt });
  });

  // ---- runs ---------------------------------------------------------------------------------------

  app.post('/v1/runs', async (c) => {
    const body = await bodyOf(c, CreateRunSchema);
    const agentId = body.agentId ?? body.agent_id;
    if (agentId !== undefined && !runtime.agentIds().includes(agentId)) throw new HttpError(404, 'agent_not_found', `agent not found: ${agentId}`, 'agentId');
    const threadId = body.threadId ?? body.thread_id ?? env.ids.next('thread');
    if (!isValidId(threadId)) throw new HttpError(400, 'invalid_id', 'invalid thread id', 'threadId');
    const started = await registry.start({
      threadId,
      ...(agentId !== undefined ? { agentId } : {}),
      messages: toMessages(body.messages, newMessageId),
      discardPause: body.discardPause ?? body.discard_pause ?? false,
    });
    if (!started.ok) throw registryError(started.error);
    const runId = started.value.runId;
    return logStream(
      registry,
      threadId,
      started.value.fromSeq,
      {
        heartbeatMs,
        until: (item) => item.kind === 'frame' && item.runId === runId && item.event.event_type === 'run_finish',
      },
      { ...SSE_HEADERS, 'x-awaken-run-id': runId, 'x-awaken-thread-id': threadId },
    );
  });

  app.get('/v1/runs', async (c) => {
    const status = c.req.query('status');
    const parsed = status === undefined ? undefined : RunStatusSchema.safeParse(status);
    if (parsed !== undefined && !parsed.success) throw new HttpError(400, 'invalid_query', `invalid status filter: ${status}`, 'status');
    const offset = intParam(c, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
    const limit = intParam(c, 'limit', 50, 1, 200);
    const threadId = c.req.query('thread_id') ?? c.req.query('threadId');
    const page = await store.listRuns({
      offset,
      limit,
      ...(parsed?.success === true ? { status: parsed.data } : {}),
      ...(threadId !== undefined ? { threadId } : {}),
    });
    const items = page.items.map((r) => {
      const live = registry.live(r.run_id);
      return runView(liveStatus(r, live?.status));
    });
    return c.json({ items, total: page.total, has_more: offset + items.length < page.total });
  });

  app.get('/v1/runs/:id', async (c) => {
    const id = idParam(c, 'id', 'run');
    const stored = await store.getRun(id);
    const live = registry.live(id);
    if (stored === undefined) {
      if (live === undefined) throw new HttpError(404, 'run_not_found', `run not found: ${id}`);
      return c.json(
        runView({
          run_id: id,
          thread_id: live.threadId,
          agent_id: live.agentId,
          status: live.status,
          steps: 0,
          created_at: live.createdAt,
          updated_at: live.createdAt,
        }),
      );
    }
    return c.json(runView(liveStatus(stored, live?.status)));
  });

  /** New input for a run's thread (book: Run 输入): an active run is cancelled first, then a new run starts. */
  app.post('/v1/runs/:id/inputs', async (c) => {
    const id = idParam(c, 'id', 'run');
    const body = await bodyOf(c, InputsSchema);
    const stored = await store.getRun(id);
    const live = registry.live(id);
    const threadId = live?.threadId ?? stored?.thread_id;
    const agentId = live?.agentId ?? stored?.agent_id;
    if (threadId === undefined) throw new HttpError(404, 'run_not_found', `run not found: ${id}`);
    const current = registry.currentRun(threadId);
    if (current !== undefined && current.status !== 'waiting') registry.cancel(current.runId);
    const started = await registry.start({
      threadId,
      ...(agentId !== undefined && agentId !== '' ? { agentId } : {}),
      messages: toMessages(body.messages, newMessageId),
      discardPause: true,
    });
    if (!started.ok) throw registryError(started.error);
    return c.json({ status: 'inputs_accepted', run_id: started.value.runId, thread_id: threadId }, 202);
  });

  app.post('/v1/runs/:id/cancel', async (c) => {
    const id = idParam(c, 'id', 'run');
    const r = await registry.cancelAnywhere(id);
    if (!r.ok) throw registryError(r.error);
    return c.json({ status: 'cancel_requested', run_id: r.value.runId }, 202);
  });

  app.post('/v1/runs/:id/decision', async (c) => {
    const id = idParam(c, 'id', 'run');
    const body = await bodyOf(c, DecisionSchema);
    const target = body.toolCallId ?? body.tool_call_id;
    if (target === undefined) throw new HttpError(400, 'invalid_request', 'toolCallId: required', 'toolCallId');
    const action = decisionAction(body.action);
    if (action === 'resume') {
      // A scheduled call is woken by its time or its trigger (→ the triggers route), never by a decision.
      const parked = await registry.waitingAnywhere(id);
      const call = parked?.calls.find((x) => (x.callId === target || x.suspension?.id === target) && x.schedule !== undefined);
      if (call !== undefined)
        throw new HttpError(
          409,
          'call_scheduled',
          `toolCallId: the call ${call.callId} is scheduled (${call.suspension?.message ?? 'it waits'}): its time or its trigger wakes it, a decision may only cancel it`,
          'toolCallId',
        );
    }
    const decision = decisionFor(target, action, env.clock.now(), {
      ...(body.payload !== undefined ? { result: body.payload as never } : {}),
      ...(body.reason !== undefined ? { reason: body.reason } : {}),
    });
    const r = await registry.decideAnywhere(id, [decision]);
    if (!r.ok) throw registryError(r.error);
    return c.json({ status: 'decision_submitted', run_id: r.value.runId, tool_call_id: target }, 202);
  });

  // A call a gate scheduled to wait for a trigger (`ToolResults.scheduled`) goes on when its owner says so.
  app.post('/v1/runs/:id/triggers/:call_id', async (c) => {
    const id = idParam(c, 'id', 'run');
    const callId = c.req.param('call_id') ?? '';
    if (!isValidId(callId)) throw new HttpError(400, 'invalid_id', 'invalid call id', 'call_id');
    const body = await bodyOf(c, TriggerSchema);
    const parked = await registry.waitingAnywhere(id);
    if (parked === undefined || !parked.calls.some((x) => x.callId === callId && x.schedule?.trigger === true))
      throw new HttpError(404, 'no_trigger', `run ${id} has no call ${callId} waiting for a trigger`);
    const decision = decisionFor(callId, 'resume', env.clock.now(), body.payload !== undefined ? { result: body.payload as never } : {});
    const r = await registry.decideAnywhere(parked.runId, [decision]);
    if (!r.ok) throw registryError(r.error);
    return c.json({ status: 'triggered', run_id: r.value.runId, call_id: callId }, 202);
  });

  app.route('/', protocolRoutes(parts, { heartbeatMs }));
  app.route('/', copilotkitRoutes(parts, { heartbeatMs }));
  app.route(
    '/',
    a2aRoutes(parts, {
      heartbeatMs,
      version: options.version ?? '0.0.0',
      ...(options.adminToken !== undefined ? { extendedCardToken: options.adminToken } : {}),
      ...(options.trustProxy === true ? { trustProxy: true } : {}),
      basePath,
    }),
  );
  app.route(
    '/',
    configRoutes(parts, {
      base: runtime.registries,
      ...(options.adminToken !== undefined ? { adminToken: options.adminToken } : {}),
      ...(options.processEnv !== undefined ? { env: options.processEnv } : {}),
      ...(options.savedConfig !== undefined ? { saved: options.savedConfig } : {}),
      ...(options.configWritesRefused !== undefined ? { writesRefused: options.configWritesRefused } : {}),
      ...(options.version !== undefined ? { version: options.version } : {}),
      ...(options.apiKeyEnvAllow !== undefined ? { apiKeyEnvAllow: options.apiKeyEnvAllow } : {}),
      ...(options.mcpConnectTimeoutMs !== undefined ? { mcpConnectTimeoutMs: options.mcpConnectTimeoutMs } : {}),
      ...(options.mcpServers !== undefined ? { mcpServers: options.mcpServers } : {}),
      ...(options.configGuard ?? {}),
      logger,
    }),
  );
  app.route('/', mcpRoutes(parts, { version: options.version ?? '0.0.0' }));
  return app;
}

/**
 * A stored run with the status its live run here has now (it moves before the store is written):
 * except `done`, which the record says once its end is stored — with its termination, never without.
 */
function liveStatus(stored: RunRecord, live: RunRecord['status'] | undefined): RunRecord {
  if (live === undefined || live === stored.status || live === 'done') return stored;
  return { ...stored, status: live };
}
