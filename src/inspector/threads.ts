import { foldCase, hasRunFilter, ownedPage, type RunRecord, type Store, type ThreadRecord, type ThreadRunFilter } from '../runtime/store.ts';

/**
 * The inspector's thread list (`GET /v1/inspector/threads`, docs/inspector.md → API): the threads of
 * the store the caller may read and the threads that exist only in recorded transcripts it may read,
 * newest first, searched and paged. The store does the searching and paging of its own threads
 * (`listThreads` with a `ThreadQuery`: one SQL query on SQLite and PostgreSQL); the few threads
 * known only from transcripts are searched here and merged in, which is why the store is asked for
 * the first `offset + limit` of its threads when there are any.
 */
export interface ThreadSummary {
  readonly id: string;
  readonly title?: string;
  /** The store's time of the thread's last change; for a thread known only from transcripts, its newest transcript's modification time. */
  readonly updated_at?: number;
  /** Its run records in the store. */
  readonly runs: number;
  /** Its recorded transcripts the caller may read (a run recorded in segments counts each). */
  readonly recorded: number;
  /** Its newest run record (by creation). */
  readonly last_run?: {
    readonly run_id: string;
    readonly agent_id: string;
    readonly status: RunRecord['status'];
    /** How it ended (its termination's `type`), once it has. */
    readonly termination?: string;
    readonly steps: number;
    readonly updated_at: number;
  };
}

/** What the list is narrowed to, as the route reads it from the query. */
export interface ThreadSearch {
  /** A substring of the thread's id, title or one of its runs' ids (the transcripts' run ids for a thread known only from them), in any case. */
  readonly text?: string;
  /** Only threads with a run record that is all of these; a thread known only from transcripts has none, so is left out. */
  readonly run?: ThreadRunFilter;
  readonly offset: number;
  readonly limit: number;
}

/** A recorded transcript as far as the thread list needs it. */
export interface RecordedRun {
  readonly thread_id: string;
  readonly run_id: string;
  readonly modified_at: number;
}

interface Recorded {
  count: number;
  latest: number;
  readonly runIds: Set<string>;
}

const newestFirst = (a: { readonly id: string; readonly updated_at?: number }, b: { readonly id: string; readonly updated_at?: number }): number =>
  (b.updated_at ?? 0) - (a.updated_at ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * One page of the caller's threads. `owner` is the caller's principal (undefined: no tokens, or the
 * admin — every thread); `transcripts` are the recorded ones the caller may read.
 */
export async function findThreads(
  store: Store,
  owner: string | undefined,
  transcripts: readonly RecordedRun[],
  search: ThreadSearch,
): Promise<{ readonly items: ThreadSummary[]; readonly total: number }> {
  const recorded = new Map<string, Recorded>();
  for (const t of transcripts) {
    const r = recorded.get(t.thread_id);
    if (r === undefined) recorded.set(t.thread_id, { count: 1, latest: t.modified_at, runIds: new Set([t.run_id]) });
    else {
      r.count++;
      r.latest = Math.max(r.latest, t.modified_at);
      r.runIds.add(t.run_id);
    }
  }
  const text = search.text === undefined || search.text === '' ? undefined : foldCase(search.text);
  const runFilter = hasRunFilter(search.run) ? search.run : undefined;

  // Threads only transcripts know of (a run whose thread the store never kept, or no longer keeps):
  // the recorded threads the search keeps, less the store's (one query for them all, not one a thread).
  const candidates =
    runFilter !== undefined
      ? []
      : [...recorded].filter(([id, r]) => text === undefined || foldCase(id).includes(text) || [...r.runIds].some((run) => foldCase(run).includes(text)));
  const only: ThreadSummary[] = [];
  // A transcript the caller may read is of a thread the caller may reach: it is only the
  // transcripts' when the store has no thread of its id (a lookup a recorded thread, not a listing
  // of every thread the store holds).
  const kept = await Promise.all(candidates.map(async ([id]) => (await store.getThread(id)) !== undefined));
  candidates.forEach(([id, r], i) => {
    if (kept[i] !== true) only.push({ id, updated_at: r.latest, runs: 0, recorded: r.count });
  });

  const query = {
    ...(text !== undefined ? { text: search.text as string } : {}),
    ...(runFilter !== undefined ? { run: runFilter } : {}),
    ...(owner !== undefined ? { owner } : {}),
  };
  let page: (ThreadRecord | ThreadSummary)[];
  let total: number;
  if (only.length === 0) {
    const found = await store.listThreads({ ...query, offset: search.offset, limit: search.limit });
    page = [...found.items];
    total = found.total;
  } else {
    // The merged page is made of the first offset + limit of each side.
    const found = await store.listThreads({ ...query, offset: 0, limit: search.offset + search.limit });
    page = [...found.items, ...only].sort(newestFirst).slice(search.offset, search.offset + search.limit);
    total = found.total + only.length;
  }
  // A store that ignores the owner of its thread query would show every thread: refused, not shown.
  if (
    owner !== undefined &&
    !(await ownedPage(
      store,
      page.filter((t) => !('runs' in t)),
      owner,
    ))
  ) {
    throw new Error("the store does not keep to ThreadQuery.owner: its listThreads must list only the owner's threads");
  }
  const items = await Promise.all(page.map((t) => ('runs' in t ? t : summaryOf(store, t, recorded.get(t.id)?.count ?? 0))));
  return { items, total };
}

async function summaryOf(store: Store, t: ThreadRecord, recorded: number): Promise<ThreadSummary> {
  const runs = await store.listRuns({ threadId: t.id, offset: 0, limit: 1 });
  const last = runs.items[0];
  return {
    id: t.id,
    ...(t.title !== undefined ? { title: t.title } : {}),
    updated_at: t.updated_at,
    runs: runs.total,
    recorded,
    ...(last !== undefined
      ? {
          last_run: {
            run_id: last.run_id,
            agent_id: last.agent_id,
            status: last.status,
            ...(last.termination !== undefined ? { termination: last.termination.type } : {}),
            steps: last.steps,
            updated_at: last.updated_at,
          },
        }
      : {}),
  };
}
