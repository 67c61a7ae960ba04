import type { RunStatus } from '../contract/lifecycle.ts';
import { terminationCode, type RunRecord, type Store } from '../runtime/store.ts';
import { mayReach } from './principal.ts';

/**
 * A run of the store, by run id or (else) the latest of a thread, in the given status (any unfinished
 * one without). A caller that holds a thread id says so, and no run is looked up by it.
 */
export async function storedRun(
  store: Store,
  runOrThread: string,
  status?: RunStatus,
  by: 'run or thread' | 'thread' = 'run or thread',
): Promise<RunRecord | undefined> {
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

/**
 * A run record as the HTTP API answers it: the record, and the fields every answer has whether the
 * store knew them or not — `parent_run_id` (null for a run a caller started), the token totals (0
 * until a checkpoint reported some) and `termination_code` (null while the run has not ended or parked).
 * Not `agent_digest`: the server's own note of what the agent was, for taking the run up after a crash.
 */
export interface RunView extends Omit<RunRecord, 'parent_run_id' | 'input_tokens' | 'output_tokens' | 'agent_digest'> {
  readonly parent_run_id: string | null;
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly termination_code: string | null;
}

export const runView = ({ agent_digest: _, ...r }: RunRecord): RunView => ({
  ...r,
  parent_run_id: r.parent_run_id ?? null,
  input_tokens: r.input_tokens ?? 0,
  output_tokens: r.output_tokens ?? 0,
  termination_code: r.termination !== undefined ? terminationCode(r.termination) : null,
});
