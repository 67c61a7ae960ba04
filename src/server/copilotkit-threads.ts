import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { isAfter, isValidId, type ThreadKey, type ThreadPatch, type ThreadRecord } from '../runtime/store.ts';
import { deleteThread } from './thread-delete.ts';
import { HttpError, readJson, type ServerParts } from './http-support.ts';

/**
 * CopilotKit's `/threads` routes (`useThreads`: `@copilotkit/core`'s thread store), on the thread
 * metadata the server keeps (docs/adr/0066):
 *
 * - `GET /threads?agentId=&limit=&includeArchived=&cursor=`: the caller's threads of that agent,
 *   newest first, as `{threads, nextCursor}` (`nextCursor` null on the last page);
 * - `PATCH /threads/:id {agentId, name?, archived?}`: rename (the thread's title), archive or bring back;
 * - `POST /threads/:id/archive {agentId}`, `DELETE /threads/:id {agentId}`.
 *
 * A thread's agent is the agent of its latest run (a thread no run wrote to belongs to no agent's
 * list). Every route reads and writes through the caller's view of the store: another principal's
 * thread is absent from the list and 404 to the others, as one of another agent is.
 */

/** What `/info` says of the thread routes: the list, the per-thread reads (copilotkit-thread-reads.ts) and the mutations; no live updates. */
export const THREAD_ENDPOINTS = { list: true, inspect: true, mutations: true, realtimeMetadata: false } as const;

/** How many threads a page holds when the client names no limit, and at most. */
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;

/** How many of the caller's threads are read from the store at a time while a page is filled. */
const SCAN_BATCH = 100;

const AgentIdField = z.string().min(1);
const Name = z.string().max(500);

const PatchSchema = z.object({ agentId: AgentIdField, name: Name.optional(), archived: z.boolean().optional() }).strict();
const AgentOnlySchema = z.object({ agentId: AgentIdField }).strict();

/** One thread as CopilotKit's thread list holds it: times as ISO strings, `name` null until one is given. */
interface CopilotKitThread {
  readonly id: string;
  readonly agentId: string;
  readonly name: string | null;
  readonly archived: boolean;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly lastRunAt?: string;
}

export function copilotkitThreadRoutes(parts: ServerParts, base: string): Hono {
  const app = new Hono();
  app.get(`${base}/threads`, async (c) => c.json(await listThreads(parts, c)));
  app.patch(`${base}/threads/:id`, async (c) => {
    const id = threadIdParam(c);
    const body = parseBody(PatchSchema, await readJson(c));
    if (body.name === undefined && body.archived === undefined) throw new HttpError(400, 'invalid_request', 'name or archived: the change to make', 'name');
    const { thread } = await agentThread(parts, id, body.agentId);
    const patch: ThreadPatch = {
      ...(body.name !== undefined ? { title: body.name } : {}),
      ...(body.archived !== undefined ? { archived: body.archived } : {}),
    };
    return c.json(await viewed(parts, await updated(parts, thread.id, patch)));
  });
  app.post(`${base}/threads/:id/archive`, async (c) => {
    const id = threadIdParam(c);
    const body = parseBody(AgentOnlySchema, await readJson(c));
    await agentThread(parts, id, body.agentId);
    await updated(parts, id, { archived: true });
    return c.json({ threadId: id, archived: true });
  });
  app.delete(`${base}/threads/:id`, async (c) => {
    const id = threadIdParam(c);
    const body = parseBody(AgentOnlySchema, await readJson(c));
    await agentThread(parts, id, body.agentId);
    // As `DELETE /v1/threads/:id`.
    await deleteThread(parts.store, parts.registry, parts.runtime.env.clock.now(), id);
    return c.json({ threadId: id, deleted: true });
  });
  return app;
}

/** A thread the caller cannot reach, or that is not there: the same 404 either way. */
export const notFound = (id: string): HttpError => new HttpError(404, 'thread_not_found', `thread not found: ${id}`);

/** The thread a CopilotKit route names (`:id`), a 400 when it is not an id. */
export function threadIdParam(c: Context): string {
  const id = c.req.param('id') ?? '';
  if (!isValidId(id)) throw new HttpError(400, 'invalid_id', 'invalid thread id', 'id');
  return id;
}

/** A body checked against its schema: the first problem is a 400 naming its field (a key no schema knows, by its name). */
function parseBody<T>(schema: z.ZodType<T>, raw: unknown): T {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const [issue] = parsed.error.issues;
  if (issue?.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '(body)';
    throw new HttpError(400, 'invalid_request', `${key}: not a field of this request`, key);
  }
  // A body that is no object at all (null, an array) is the body's fault, not a missing agentId's.
  const field = issue?.path.map(String).join('.') || '(body)';
  if (field === 'agentId') throw new HttpError(400, 'invalid_request', 'agentId: the agent whose thread this is', 'agentId');
  throw new HttpError(400, 'invalid_request', `${field}: ${issue?.message ?? 'invalid'}`, field);
}

/** An agent the server runs, else 404 naming the field. */
function knownAgent(parts: ServerParts, agentId: string): void {
  if (!parts.runtime.agentIds().includes(agentId)) throw new HttpError(404, 'agent_not_found', `agent not found: ${agentId}`, 'agentId');
}

/** The agent of a thread: that of its latest run; undefined for a thread no run wrote to. */
async function agentOf(parts: ServerParts, thread: ThreadRecord): Promise<{ readonly agentId: string; readonly lastRunAt: number } | undefined> {
  if (thread.latest_run_id === undefined) return undefined;
  const run = await parts.store.getRun(thread.latest_run_id);
  return run === undefined ? undefined : { agentId: run.agent_id, lastRunAt: run.created_at };
}

/** The caller's thread `id` of agent `agentId`: another principal's thread, or one of another agent, is not found. */
async function agentThread(parts: ServerParts, id: string, agentId: string): Promise<{ readonly thread: ThreadRecord }> {
  knownAgent(parts, agentId);
  const thread = await parts.store.getThread(id);
  if (thread === undefined || (await agentOf(parts, thread))?.agentId !== agentId) throw notFound(id);
  return { thread };
}

async function updated(parts: ServerParts, id: string, patch: ThreadPatch): Promise<ThreadRecord> {
  const next = await parts.store.updateThread(id, patch, parts.runtime.env.clock.now());
  if (next === undefined) throw notFound(id);
  return next;
}

const isoOf = (ms: number): string => new Date(ms).toISOString();

function threadView(thread: ThreadRecord, agent: { readonly agentId: string; readonly lastRunAt: number }): CopilotKitThread {
  return {
    id: thread.id,
    agentId: agent.agentId,
    name: thread.title ?? null,
    archived: thread.archived === true,
    createdAt: isoOf(thread.created_at),
    updatedAt: isoOf(thread.updated_at),
    lastRunAt: isoOf(agent.lastRunAt),
  };
}

async function viewed(parts: ServerParts, thread: ThreadRecord): Promise<CopilotKitThread> {
  const agent = await agentOf(parts, thread);
  if (agent === undefined) throw notFound(thread.id);
  return threadView(thread, agent);
}

/** A query integer clamped to [min, max]; garbage is a 400 naming the parameter. */
function limitParam(c: Context): number {
  const raw = c.req.query('limit');
  if (raw === undefined || raw === '') return DEFAULT_LIMIT;
  if (!/^-?\d{1,15}$/.test(raw)) throw new HttpError(400, 'invalid_query', 'limit must be an integer', 'limit');
  return Math.min(MAX_LIMIT, Math.max(1, Number(raw)));
}

/** What a cursor holds: the sort key of the last thread of the page it follows (`ThreadKey`). */
const CursorSchema = z.object({ u: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER), id: z.string().refine(isValidId) }).strict();

/** A cursor as the client holds it: opaque (base64url of JSON), so nothing but this server's own is read as one. */
const cursorOf = (thread: ThreadRecord): string => Buffer.from(JSON.stringify({ u: thread.updated_at, id: thread.id })).toString('base64url');

function cursorParam(c: Context): ThreadKey | undefined {
  const raw = c.req.query('cursor');
  if (raw === undefined) return undefined;
  const refused = new HttpError(400, 'invalid_query', 'cursor: not a cursor this server handed out', 'cursor');
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(raw)) throw refused;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    throw refused;
  }
  const parsed = CursorSchema.safeParse(json);
  if (!parsed.success) throw refused;
  return { updated_at: parsed.data.u, id: parsed.data.id };
}

/**
 * A page of the caller's threads of an agent. The cursor names the last thread of the page before
 * (its place in the list's order: `updated_at`, then id), so the next page goes on after it whatever
 * was deleted or added before it meanwhile; a position would move every later thread up one place
 * when one of an earlier page is deleted, and the next page would pass one over. The store narrows
 * the threads by their runs' agent and by the cursor; each is kept when its latest run's is that
 * agent and it is not archived (unless asked for). The scan goes one thread past the page to tell
 * whether another page follows, so `nextCursor` is null exactly on the last page. A thread a run
 * updates between two reads moves to the top of the list: a later page no longer holds it, and the
 * client's next refresh does.
 */
async function listThreads(parts: ServerParts, c: Context): Promise<{ readonly threads: readonly CopilotKitThread[]; readonly nextCursor: string | null }> {
  const agentId = c.req.query('agentId');
  if (agentId === undefined || agentId === '') throw new HttpError(400, 'invalid_query', 'agentId: the agent whose threads are listed', 'agentId');
  knownAgent(parts, agentId);
  const limit = limitParam(c);
  const archivedParam = c.req.query('includeArchived');
  if (archivedParam !== undefined && archivedParam !== 'true' && archivedParam !== 'false')
    throw new HttpError(400, 'invalid_query', 'includeArchived: true or false', 'includeArchived');
  const includeArchived = archivedParam === 'true';
  const after = cursorParam(c);

  const threads: CopilotKitThread[] = [];
  let last: ThreadRecord | undefined;
  for (let offset = 0; ; ) {
    const page = await parts.store.listThreads({ offset, limit: SCAN_BATCH, run: { agentId }, ...(after !== undefined ? { after } : {}) });
    for (const thread of page.items) {
      // The store's keyset, checked again: a store written before `after` was part of the query lists
      // from the top, and the threads up to the cursor are passed over here instead.
      if (after !== undefined && !isAfter(thread, after)) continue;
      if (thread.archived === true && !includeArchived) continue;
      const agent = await agentOf(parts, thread);
      if (agent?.agentId !== agentId) continue;
      if (last !== undefined && threads.length === limit) return { threads, nextCursor: cursorOf(last) };
      threads.push(threadView(thread, agent));
      last = thread;
    }
    offset += page.items.length;
    if (page.items.length === 0 || offset >= page.total) return { threads, nextCursor: null };
  }
}
