import type { TerminationReason } from '../contract/lifecycle.ts';
import type { Env } from '../runtime/env.ts';
import type { Store, ThreadLease } from '../runtime/store.ts';
import type { LiveRun } from './live-run.ts';
import { errorFields, type Logger } from './log.ts';
import type { RunLeases } from './run-leases.ts';
import type { ThreadLocks } from './thread-locks.ts';

/** What the upkeep needs of the registry it serves. */
export interface UpkeepHost {
  readonly leases: RunLeases;
  readonly store: Store;
  readonly env: Env;
  readonly logger: Logger;
  readonly locks: ThreadLocks;
  /** This instance's runs, executing or parked. */
  runs(): Iterable<LiveRun>;
  /** Whether a run is this instance's. */
  isLive(runId: string): boolean;
  /** Appends a run's terminal frame to its thread's log (shared or local), for its followers. */
  appendTerminal(threadId: string, runId: string, termination: TerminationReason): Promise<void>;
}

/**
 * The thread leases of an instance over time, so that a server that dies mid-run does not hold
 * its threads for ever: its own renewed every third of their length — a run whose lease was taken
 * from it is stopped — and the leases nobody renews any more swept: their runs ended for their
 * followers, their threads freed.
 */
export class LeaseUpkeep {
  readonly #host: UpkeepHost;
  #loop: AbortController | undefined;

  constructor(host: UpkeepHost) {
    this.#host = host;
  }

  /**
   * Renews this instance's leases. A run whose lease was taken from it (superseded elsewhere, or
   * swept while this instance was cut off) is stopped; a run whose lease carries a cancel request is
   * cancelled.
   */
  async renew(): Promise<void> {
    const held = new Map((await this.#host.leases.renew()).map((l) => [l.run_id, l]));
    for (const run of this.#host.runs()) {
      if (run.status === 'done' || run.stopRequested) continue;
      const lease = held.get(run.runId);
      if (lease !== undefined && !lease.cancel_requested) continue;
      this.#host.logger.warn(lease === undefined ? 'run lease lost: stopping the run' : 'run cancelled through its lease', {
        run: run.runId,
        thread: run.threadId,
      });
      run.stopRequested = true;
      run.handle.cancel();
    }
  }

  /**
   * Ends the runs of leases nobody renews (their instance died): each is taken over by exactly one
   * instance, which marks the run interrupted, appends its terminal frame to the thread log (its
   * followers get it) and frees the thread. A run parked waiting for a decision is left waiting, its
   * thread's lease released. Returns the runs ended.
   */
  async sweep(): Promise<string[]> {
    const ended: string[] = [];
    for (const lease of await this.#host.leases.expired()) {
      // Serialised with starts and adoptions of the thread here: a lease this instance takes over
      // (under its own name) is not taken for a run at the same time.
      const done = await this.#host.locks.exclusive(lease.thread_id, async () => {
        if (this.#host.isLive(lease.run_id)) return false; // this instance's own run: renewed, not swept
        if (!(await this.#host.leases.takeOver(lease))) return false;
        return this.endAbandoned(lease, lease.cancel_requested ? 'cancelled' : 'interrupted');
      });
      if (done) ended.push(lease.run_id);
    }
    return ended;
  }

  /**
   * A run whose instance is gone (its lease taken over by this one): its record ended, its terminal
   * frame in the thread log, its thread freed — unless it was parked waiting for a decision and not
   * cancelled: then it stays waiting (its suspended segment ended with its own terminal frame) and only
   * the lease goes, so any instance can take it up when the decision comes (`adopt`). Returns whether
   * the run was ended.
   */
  async endAbandoned(lease: ThreadLease, how: 'cancelled' | 'interrupted'): Promise<boolean> {
    const { store, leases, logger } = this.#host;
    const now = this.#host.env.clock.now();
    const stored = await store.getRun(lease.run_id);
    if (how === 'interrupted' && stored?.status === 'waiting') {
      await leases.release(lease.thread_id, lease.run_id);
      logger.info('parked run left waiting: its instance stopped renewing the thread lease', {
        run: lease.run_id,
        thread: lease.thread_id,
        owner: lease.owner,
      });
      return false;
    }
    const termination =
      how === 'cancelled' ? { type: 'cancelled' as const } : { type: 'error' as const, value: 'interrupted: its instance stopped renewing the thread lease' };
    if (stored !== undefined && stored.status !== 'done') await store.finishRun(lease.run_id, termination, now);
    // A parked run's stream ended with its suspension: a cancel ends it in the store only (as here).
    if (stored?.status !== 'waiting') await this.#host.appendTerminal(lease.thread_id, lease.run_id, termination);
    await leases.release(lease.thread_id, lease.run_id);
    logger.warn(`run ${how}: its instance stopped renewing the thread lease`, { run: lease.run_id, thread: lease.thread_id, owner: lease.owner });
    return true;
  }

  /** Renews and sweeps until `stop` (a server calls it; specs drive the two by hand). */
  start(): void {
    if (this.#loop !== undefined) return;
    const stop = new AbortController();
    this.#loop = stop;
    const { env, logger, leases } = this.#host;
    const loop = async (task: string, every: number, body: () => Promise<unknown>): Promise<void> => {
      while (!stop.signal.aborted) {
        await body().catch((e: unknown) => logger.error('thread lease upkeep failed', { task, ...errorFields(e) }));
        try {
          await env.sleep(every, stop.signal);
        } catch {
          return;
        }
      }
    };
    void loop('renew', Math.max(10, Math.floor(leases.ttlMs / 3)), () => this.renew());
    void loop('sweep', leases.sweepMs, () => this.sweep());
  }

  stop(): void {
    this.#loop?.abort();
    this.#loop = undefined;
  }
}
