import { AsyncLocalStorage } from 'node:async_hooks';
import { hasRunFilter, ownedPage, pageOf, StoreFailure, threadMatcher, type Page, type RunRecord, type Store, type ThreadRecord } from '../runtime/store.ts';

/**
 * The principal a request acts for (docs/server.md → Access control): set by the authentication
 * middleware for the request and everything it starts (a run goes on under its starter's principal).
 * No principal (no tokens configured, the admin token, the server's own sweeps) means no thread check.
 */
const context = new AsyncLocalStorage<string>();

export const currentPrincipal = (): string | undefined => context.getStore();

export function asPrincipal<T>(principal: string, body: () => T): T {
  return context.run(principal, body);
}

/**
 * Whether the current principal may reach a thread. A thread belongs to the principal that first
 * wrote to it: a write to a thread nobody owns claims it (unless it holds data from before access
 * control was on, which only the admin reaches); a read of it sees nothing.
 */
export async function mayReach(store: Store, threadId: string, mode: 'read' | 'write'): Promise<boolean> {
  const principal = currentPrincipal();
  if (principal === undefined) return true;
  const owner = await store.threadOwner(threadId);
  if (owner !== undefined) return owner === principal;
  if (mode === 'read') return false;
  if ((await store.getThread(threadId)) !== undefined || (await store.listRuns({ offset: 0, limit: 1, threadId })).total > 0) return false;
  return (await store.claimThread(threadId, principal)) === principal;
}

const notFound = (what: string): StoreFailure => new StoreFailure({ code: 'not_found', message: `${what} not found` });

/**
 * The store as the current principal sees it: its own threads, their messages, runs and jobs; any
 * other thread is not there (reads find nothing, writes fail `not_found`). Every surface of the HTTP
 * server reads and writes through it.
 */
export function principalStore(store: Store): Store {
  const guarded: Partial<Store> = {
    getThread: async (id) => ((await mayReach(store, id, 'read')) ? store.getThread(id) : undefined),
    loadThread: async (id) => ((await mayReach(store, id, 'read')) ? store.loadThread(id) : undefined),
    listMessages: async (id, q) => {
      if (!(await mayReach(store, id, 'read'))) throw notFound(`thread ${id}`);
      return store.listMessages(id, q);
    },
    deleteThread: async (id) => ((await mayReach(store, id, 'read')) ? store.deleteThread(id) : false),
    updateThread: async (id, patch, now) => ((await mayReach(store, id, 'read')) ? store.updateThread(id, patch, now) : undefined),
    createThread: async (t) => {
      if (!(await mayReach(store, t.id, 'write'))) throw new StoreFailure({ code: 'already_exists', message: `thread already exists: ${t.id}` });
      return store.createThread(t);
    },
    checkpoint: async (c) => {
      if (!(await mayReach(store, c.threadId, 'write'))) throw notFound(`thread ${c.threadId}`);
      return store.checkpoint(c);
    },
    getRun: async (id) => {
      const run = await store.getRun(id);
      return run !== undefined && (await mayReach(store, run.thread_id, 'read')) ? run : undefined;
    },
    // The owner is a condition of the store's own query: one query, whatever the search. What it
    // answers is checked all the same (a page's owners, one lookup each): a store written before the
    // owner was part of the query would list every thread, so its page is refused and the owned
    // threads are read one by one.
    listThreads: async (q) => {
      const principal = currentPrincipal();
      if (principal === undefined) return store.listThreads(q);
      const page = await store.listThreads({ ...q, owner: principal });
      if (await ownedPage(store, page.items, principal)) return page;
      const match = threadMatcher({ ...q, owner: principal });
      const withRuns = (q.text !== undefined && q.text !== '') || hasRunFilter(q.run);
      const records: ThreadRecord[] = [];
      for (const id of await store.ownedThreads(principal)) {
        const t = await store.getThread(id);
        const runs = t !== undefined && withRuns ? (await store.listRuns({ threadId: id, offset: 0, limit: 10_000 })).items : [];
        if (t !== undefined && match(t, runs, principal)) records.push(t);
      }
      return pageOf(
        records.sort((a, b) => b.updated_at - a.updated_at || (a.id < b.id ? -1 : 1)),
        q,
      );
    },
    listRuns: async (q) => {
      const principal = currentPrincipal();
      if (principal === undefined) return store.listRuns(q);
      if (q.threadId !== undefined) return (await mayReach(store, q.threadId, 'read')) ? store.listRuns(q) : { items: [], total: 0 };
      const runs: RunRecord[] = [];
      for (const id of await store.ownedThreads(principal)) {
        const page: Page<RunRecord> = await store.listRuns({ offset: 0, limit: 10_000, threadId: id, ...(q.status !== undefined ? { status: q.status } : {}) });
        runs.push(...page.items);
      }
      return pageOf(
        runs.sort((a, b) => b.created_at - a.created_at || (a.run_id < b.run_id ? -1 : 1)),
        q,
      );
    },
    enqueue: async (job, now, defaults) => {
      if (!(await mayReach(store, job.mailbox_id, 'write'))) throw notFound(`thread ${job.mailbox_id}`);
      return store.enqueue(job, now, defaults);
    },
    listJobs: async (id, q) => ((await mayReach(store, id, 'read')) ? store.listJobs(id, q) : { items: [], total: 0 }),
  };
  return new Proxy(store, {
    get(target, key, receiver) {
      if (typeof key === 'string' && Object.hasOwn(guarded, key)) return guarded[key as keyof Store];
      const value: unknown = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
