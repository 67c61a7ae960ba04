import type { Store } from '../runtime/store.ts';
import { HttpError } from './http-support.ts';
import { mayReach } from './principal.ts';
import type { RunRegistry } from './run-registry.ts';

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
  const { superseded_count } = await store.interrupt(threadId, now);
  const cancelled = await registry.cancelAnywhere(threadId);
  const runId = cancelled.ok ? cancelled.value.runId : undefined;
  if (superseded_count === 0 && runId === undefined) throw nothing;
  return { status: 'interrupt_requested', thread_id: threadId, superseded_dispatches: superseded_count, ...(runId !== undefined ? { run_id: runId } : {}) };
}
