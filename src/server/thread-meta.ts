import { z } from 'zod';
import { isValidId, THREAD_CUSTOM_MAX_BYTES, type Store, type ThreadCustom, type ThreadPatch, type ThreadRecord } from '../runtime/store.ts';
import { HttpError } from './http-support.ts';

/**
 * Thread metadata over HTTP (docs/server.md → Threads): what `POST /v1/threads` and
 * `PATCH /v1/threads/:id` accept, the checks a store leaves to its caller (ids, the size of `custom`,
 * that a parent exists for the caller and makes no cycle), and the summaries list.
 */

const Title = z.string().max(500);
/** A JSON object (not an array, not null): the caller's own data about the thread. */
const Custom = z.record(z.string(), z.unknown());

export const CreateThreadSchema = z
  .object({
    id: z.string().optional(),
    title: Title.optional(),
    resource_id: z.string().optional(),
    parent_thread_id: z.string().optional(),
    custom: Custom.optional(),
  })
  .strict();

export const PatchThreadSchema = z
  .object({
    title: Title.optional(),
    resource_id: z.string().nullable().optional(),
    parent_thread_id: z.string().nullable().optional(),
    custom: Custom.optional(),
  })
  .strict();

/** How many parents up a chain is followed looking for a cycle; a longer chain is refused as one. */
const MAX_ANCESTRY = 1000;

/** An id field of the body, checked as every id is (`isValidId`). */
function checkIdField(field: 'resource_id' | 'parent_thread_id', value: string | null | undefined): void {
  if (typeof value === 'string' && !isValidId(value))
    throw new HttpError(400, 'invalid_id', `invalid ${field === 'resource_id' ? 'resource' : 'parent thread'} id`, field);
}

/** `custom` when it is at most `THREAD_CUSTOM_MAX_BYTES` of JSON; a larger one is a 413 naming it. */
function checkCustom(custom: Record<string, unknown> | undefined): ThreadCustom | undefined {
  if (custom === undefined) return undefined;
  const bytes = Buffer.byteLength(JSON.stringify(custom));
  if (bytes > THREAD_CUSTOM_MAX_BYTES)
    throw new HttpError(413, 'custom_too_large', `custom is ${bytes} bytes of JSON; at most ${THREAD_CUSTOM_MAX_BYTES} are kept`, 'custom');
  return custom as ThreadCustom;
}

/** The caller's view of the store (another principal's thread is not there), and the whole store. */
export interface ThreadStores {
  readonly view: Store;
  readonly all: Store;
}

/**
 * Refuses a parent that the caller cannot see, as one that does not exist, or that would make
 * `threadId` its own ancestor. The parent's ancestors are followed in the whole store: a chain that
 * passes through threads the caller cannot see (links an admin made) is a cycle all the same.
 */
async function checkParent(stores: ThreadStores, threadId: string, parentId: string): Promise<void> {
  const missing = (): HttpError => new HttpError(400, 'parent_thread_not_found', `parent thread not found: ${parentId}`, 'parent_thread_id');
  const cycle = (): HttpError =>
    new HttpError(400, 'thread_cycle', `thread ${parentId} cannot be the parent of ${threadId}: it would be its own ancestor`, 'parent_thread_id');
  if (parentId === threadId) throw cycle();
  let next: ThreadRecord | undefined = await stores.view.getThread(parentId);
  if (next === undefined) throw missing();
  for (let hops = 0; next?.parent_thread_id !== undefined; hops++) {
    if (next.parent_thread_id === threadId || hops >= MAX_ANCESTRY) throw cycle();
    next = await stores.all.getThread(next.parent_thread_id);
  }
}

/** The metadata of a thread to create, checked (its parent against the caller's threads). */
export async function newThreadMeta(
  stores: ThreadStores,
  threadId: string,
  body: z.output<typeof CreateThreadSchema>,
): Promise<Pick<ThreadRecord, 'title' | 'resource_id' | 'parent_thread_id' | 'custom'>> {
  checkIdField('resource_id', body.resource_id);
  checkIdField('parent_thread_id', body.parent_thread_id);
  const custom = checkCustom(body.custom);
  if (typeof body.parent_thread_id === 'string') await checkParent(stores, threadId, body.parent_thread_id);
  return {
    ...(body.title !== undefined ? { title: body.title } : {}),
    ...(body.resource_id !== undefined ? { resource_id: body.resource_id } : {}),
    ...(body.parent_thread_id !== undefined ? { parent_thread_id: body.parent_thread_id } : {}),
    ...(custom !== undefined ? { custom } : {}),
  };
}

/** A metadata change of a thread the caller holds, checked. */
export async function threadPatch(stores: ThreadStores, threadId: string, body: z.output<typeof PatchThreadSchema>): Promise<ThreadPatch> {
  checkIdField('resource_id', body.resource_id);
  checkIdField('parent_thread_id', body.parent_thread_id);
  const custom = checkCustom(body.custom);
  if (typeof body.parent_thread_id === 'string') await checkParent(stores, threadId, body.parent_thread_id);
  return {
    ...(body.title !== undefined ? { title: body.title } : {}),
    ...(body.resource_id !== undefined ? { resource_id: body.resource_id } : {}),
    ...(body.parent_thread_id !== undefined ? { parent_thread_id: body.parent_thread_id } : {}),
    ...(custom !== undefined ? { custom } : {}),
  };
}

/** One line of `GET /v1/threads/summaries`: every field present, `null` when the thread has none. */
export interface ThreadSummary {
  readonly id: string;
  readonly resource_id: string | null;
  readonly parent_thread_id: string | null;
  readonly title: string | null;
  readonly updated_at: number;
  /** The agent of the thread's latest run; null for a thread no run wrote to. */
  readonly agent_id: string | null;
}

/** The summaries of a page of threads (`store` is the caller's view: its own threads and runs). */
export async function summariesOf(store: Store, threads: readonly ThreadRecord[]): Promise<ThreadSummary[]> {
  return Promise.all(
    threads.map(async (t) => {
      const latest = t.latest_run_id === undefined ? undefined : await store.getRun(t.latest_run_id);
      return {
        id: t.id,
        resource_id: t.resource_id ?? null,
        parent_thread_id: t.parent_thread_id ?? null,
        title: t.title ?? null,
        updated_at: t.updated_at,
        agent_id: latest?.agent_id ?? null,
      };
    }),
  );
}
