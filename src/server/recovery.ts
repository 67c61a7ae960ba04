import type { RunStatus } from '../contract/lifecycle.ts';
import type { Store } from '../runtime/store.ts';
import { errorFields, type Logger } from './log.ts';

/**
 * At start-up, a run the store still shows as created or running was cut off by the end of the
 * process that owned it (a crash, a kill -9): it is marked done with the error `interrupted: …`,
 * never left looking alive — unless `resume` is asked: then a running run is left running, to be
 * recovered from its last durable point (`runsLeftRunning`, `RunRegistry.recover`). Its messages up
 * to the last checkpoint are kept. A run waiting for a decision is left waiting: its stored state
 * is all a decision needs (`RunRegistry.adopt`).
 * Its thread leases are dropped: no other process holds one. Returns the ids marked. (With one
 * server per store; several instances on one store end each other's runs through the thread leases.)
 */
export async function recoverRuns(store: Store, now: number, options: { readonly resume?: boolean } = {}): Promise<string[]> {
  const marked: string[] = [];
  // With `resume`, a running run is left running: `runsLeftRunning` names it, for the registry to recover.
  const ended: readonly RunStatus[] = options.resume === true ? ['created'] : ['created', 'running'];
  for (const status of ended) {
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

/**
 * The runs the store holds as running (at start-up: left so by a process that died), oldest first,
 * for `RunRegistry.recover` to take up from their last durable point; a delegate's sub-run among
 * them is marked interrupted instead.
 */
export async function runsLeftRunning(store: Store, now: number): Promise<string[]> {
  const ids: string[] = [];
  const children: string[] = [];
  for (let offset = 0; ; offset += 200) {
    const page = await store.listRuns({ offset, limit: 200, status: 'running' });
    for (const run of page.items) (run.parent_run_id === undefined ? ids : children).push(run.run_id);
    if (page.items.length < 200) break;
  }
  // A delegate's sub-run is its parent's call: the parent decides what becomes of it (its call is
  // replayed or ends indeterminate), so the sub-run is not taken up on its own.
  for (const id of children) await store.finishRun(id, { type: 'error', value: 'interrupted: the server stopped while the run was running' }, now);
  return ids.reverse();
}

/**
 * Takes up each run a previous process left running (`runsLeftRunning`), and logs how many: one
 * that cannot be taken up (its store answers badly) is logged and does not keep the server from
 * starting.
 */
export async function resumeLeftRunning(registry: { recover(runId: string): Promise<boolean> }, runIds: readonly string[], logger: Logger): Promise<void> {
  if (runIds.length === 0) return;
  let resumed = 0;
  for (const runId of runIds) {
    const taken = await registry.recover(runId).catch((e: unknown) => void logger.error('run left running not recovered', { run: runId, ...errorFields(e) }));
    if (taken === true) resumed++;
  }
  logger.warn(`resumed ${resumed} of ${runIds.length} run(s) a previous process left running`, { runs: runIds.length, resumed });
}
