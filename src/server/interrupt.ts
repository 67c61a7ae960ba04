import type { Store } from '../runtime/store.ts';
import { HttpError } from './http-support.ts';
import { mayReach } from './principal.ts';
import type { RunRegistry } from './run-registry.ts';

/** How long an interrupt waits for the run of a job claimed a moment ago to start (25 ms each): 2 s. */
const STARTING_POLLS = 80;

/** The run of the thread cancelled now, if one was going or waiting. */
async function cancelled(registry: RunRegistry, threadId: string): Promise<string | undefined> {
  const r = await registry.cancelAnywhere(threadId);
  return r.ok ? r.value.runId : undefined;
}

/** Whether anything of the thread exists: the thread, a run of it on this instance, a job queued or claimed for it. */
async function known(store: Store, registry: RunRegistry, threadId: string): Promise<boolean> {
  if (registry.currentRun(threadId) !== undefined || (await store.getThread(threadId)) !== undefined) return true;
  for (const status of ['queued', 'claimed'] as const) if ((await store.listJobs(threadId, { status, offset: 0, limit: 1 })).total > 0) return true;
  return false;
}

/** What an interrupt did: the queued runs it superseded, and the run it cancelled (if one was going or waiting). */
export interface Interrupted {
  readonly status: 'interrupt_requested';
  readonly thread_id: string;
  readonly superseded_dispatches: number;
  readonly run_id?: string;
}

/**
 * Interrupts a thread (book: MailboxInterrupt), as `POST /v1/threads/:id/interrupt` and the AI SDK
 * and AG-UI interrupt routes do: the thread's mailbox generation is bumped, so its queued runs are
 * superseded and never start, and its run — going or waiting, here or on another instance — is
 * cancelled. Only the thread's owner reaches it: for anyone else, as for a thread with nothing going
 * and nothing queued, it is a 404 and nothing changes.
 */
export async function interruptThread(store: Store, registry: RunRegistry, now: number, threadId: string): Promise<Interrupted> {
  const nothing = new HttpError(404, 'nothing_to_interrupt', `nothing to interrupt on thread ${threadId}: no run going or waiting, nothing queued`);
  if (!(await mayReach(store, threadId, 'read'))) throw nothing;
  // An id nothing knows is answered before the store records a generation for it (any id can be named).
  if (!(await known(store, registry, threadId))) throw nothing;
  const { superseded_count, active_job } = await store.interrupt(threadId, now);
  let runId = await cancelled(registry, threadId);
  // A job claimed a moment ago has its run about to start: it is cancelled once it has.
  for (let i = 0; runId === undefined && active_job !== undefined && i < STARTING_POLLS; i++) {
    await new Promise((r) => setTimeout(r, 25));
    runId = await cancelled(registry, threadId);
  }
  if (superseded_count === 0 && runId === undefined && active_job === undefined) throw nothing;
  return { status: 'interrupt_requested', thread_id: threadId, superseded_dispatches: superseded_count, ...(runId !== undefined ? { run_id: runId } : {}) };
}
