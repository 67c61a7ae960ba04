import type { RunStatus } from '../contract/lifecycle.ts';
import type { Store } from '../runtime/store.ts';

/**
 * At start-up, a run the store still shows as created or running was cut off by the end of the
 * process that owned it (a crash, a kill -9): it is marked done with the error `interrupted: …`,
 * never left looking alive. Its messages up to the last checkpoint are kept. A run waiting for a
 * decision is left waiting: its stored state is all a decision needs (`RunRegistry.adopt`).
 * Its thread leases are dropped: no other process holds one. Returns the ids marked. (With one
 * server per store; several instances on one store end each other's runs through the thread leases.)
 */
export async function recoverRuns(store: Store, now: number): Promise<string[]> {
  const marked: string[] = [];
  for (const status of ['created', 'running'] as const satisfies readonly RunStatus[]) {
    for (;;) {
      const page = await store.listRuns({ offset: 0, limit: 200, status });
      if (page.items.length === 0) break;
      for (const run of page.items) {
        await store.finishRun(run.run_id, { type: 'error', value: `interrupted: the server stopped while the run was ${status}` }, now);
        marked.push(run.run_id);
      }
    }
  }
  await store.clearLeases();
  return marked;
}
