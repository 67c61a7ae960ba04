import type { Store } from '../runtime/store.ts';
import { HttpError } from './http-support.ts';
import type { RunRegistry } from './run-registry.ts';

/**
 * Deletes a thread the caller may reach (the routes check that first, from its owner record): not
 * while a run is in flight (409 naming it), a 404 when it is gone already. The id may be someone
 * else's thread next, so nothing of this one is replayed under it and the jobs queued for it are
 * superseded rather than run on a thread created later under its id.
 */
export async function deleteThread(store: Store, registry: RunRegistry, now: number, id: string): Promise<void> {
  const current = await registry.activeRun(id);
  if (current !== undefined) throw new HttpError(409, 'thread_busy', `thread ${id} has an active run: ${current.runId}`, undefined, { run_id: current.runId });
  if (!(await store.deleteThread(id))) throw new HttpError(404, 'thread_not_found', `thread not found: ${id}`);
  await registry.forget(id);
  await store.interrupt(id, now);
}
