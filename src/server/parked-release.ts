import type { AgentEvent } from '../contract/event.ts';
import type { Store } from '../runtime/store.ts';
import type { LiveRun } from './live-run.ts';
import { errorFields, type Logger } from './log.ts';
import type { ThreadLocks } from './thread-locks.ts';

/** What a release needs of the registry it serves. */
export interface ReleaseHost {
  readonly store: Store;
  readonly logger: Logger;
  /** The registry's thread locks: adoptions of a thread queue behind its release. */
  readonly locks: ThreadLocks;
  /** Whether the run is still this instance's (not ended or replaced meanwhile). */
  isLive(run: LiveRun): boolean;
}

/**
 * Parked runs let go while the process goes on, for a runtime replaced under a running server (a
 * reload): each is left exactly as a shutdown leaves it — waiting in the store, its lease released,
 * its handle dropped — so that its decision takes it up again (`RunRegistry.adopt`) on the runtime
 * current then. Runs executing at the release are marked, and let go the same way when they park: a
 * parked run always resumes on the current runtime, whenever it parked.
 */
export class ParkedRelease {
  readonly #host: ReleaseHost;
  /** Runs being let go: no longer reached here, so a decision goes the durable way (and waits for the release). */
  readonly #releasing = new WeakSet<LiveRun>();
  /** Runs executing on a runtime since replaced: let go once they park. */
  readonly #stale = new WeakSet<LiveRun>();

  constructor(host: ReleaseHost) {
    this.#host = host;
  }

  /** Whether the run is being (or was) let go: decisions, cancels and commands no longer reach it here. */
  isReleasing(run: LiveRun): boolean {
    return this.#releasing.has(run);
  }

  /** Lets go the parked runs among `runs` and marks the executing ones; returns how many were let go. */
  async releaseAll(runs: Iterable<LiveRun>): Promise<number> {
    const parked: Promise<boolean>[] = [];
    for (const run of runs) {
      if (run.status === 'done' || this.#releasing.has(run)) continue;
      if (run.status === 'waiting') parked.push(this.#release(run));
      else this.#stale.add(run);
    }
    return (await Promise.all(parked)).filter((released) => released).length;
  }

  /** Told of each event of a run here: a marked run's suspension lets it go as soon as it is parked. */
  noted(run: LiveRun, event: AgentEvent): void {
    if (event.event_type !== 'run_finish' || event.termination.type !== 'suspended' || !this.#stale.has(run)) return;
    this.#stale.delete(run);
    void this.#release(run);
  }

  /**
   * Marked at once, so a decision from now on finds the run not here and is queued (`adopt`) behind
   * the release on the thread's lock: it reaches the run only once it is let go, on the current
   * runtime. A run not held waiting by the store is kept (released, nothing could take it up again).
   */
  #release(run: LiveRun): Promise<boolean> {
    const { store, logger, locks } = this.#host;
    this.#releasing.add(run);
    return locks.exclusive(run.threadId, async () => {
      let released = false;
      try {
        // A run that just ended its segment, or was just revived, parks a moment later (or ends instead, when cancelled).
        if (!(await run.handle.parked())) return false;
        const stored = await store.getRun(run.runId);
        if (stored?.status !== 'waiting') {
          logger.warn('parked run kept on its runtime: the store does not hold it waiting', { run: run.runId, thread: run.threadId });
          return false;
        }
        if (!this.#host.isLive(run) || run.status !== 'waiting' || !run.handle.detach()) return false;
        released = true;
        logger.info('parked run released: it resumes on the runtime current when its decision comes', { run: run.runId, thread: run.threadId });
        // Let go, the run ends `suspended` at once without a frame; the registry then frees its thread.
        await run.handle.done.catch(() => undefined);
        await run.released;
        return true;
      } catch (e) {
        logger.error('parked run not released', { run: run.runId, thread: run.threadId, ...errorFields(e) });
        return released;
      } finally {
        if (!released) this.#releasing.delete(run);
      }
    });
  }
}
