import type { RunStatus } from '../contract/lifecycle.ts';
import type { RunRecord, Store } from '../runtime/store.ts';
import { mayReach } from './principal.ts';

/**
 * A run of the store, by run id or (else) the latest of a thread, in the given status (any unfinished
 * one without). A caller that holds a thread id says so, and no run is looked up by it.
 */
export async function storedRun(store: Store, runOrThread: string, status?: RunStatus, by: 'run or thread' | 'thread' = 'run or thread'): Promise<RunRecord | undefined> {
  const matches = (r: RunRecord): boolean => (status === undefined ? r.status !== 'done' : r.status === status);
  const byId = by === 'thread' ? undefined : await store.getRun(runOrThread).catch(() => undefined);
  if (byId !== undefined) return matches(byId) ? byId : undefined;
  const latest = await store.listRuns({ offset: 0, limit: 5, threadId: runOrThread, ...(status !== undefined ? { status } : {}) });
  return latest.items.find(matches);
}

/** The id of an unfinished run of the store (`storedRun`) that the current principal may see. */
export async function reachableRun(store: Store, runOrThread: string, status?: RunStatus): Promise<string | undefined> {
  const run = await storedRun(store, runOrThread, status);
  return run !== undefined && (await mayReach(store, run.thread_id, 'read')) ? run.run_id : undefined;
}
