import type { TerminationReason } from '../contract/lifecycle.ts';
import type { Env } from '../runtime/env.ts';
import type { RunRecord, Store, ThreadLease } from '../runtime/store.ts';
import type { LiveRun } from './live-run.ts';
import { errorFields, type Logger } from './log.ts';
import type { RecoveryFate } from './recovery.ts';
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
  /**
   * What becomes of a run still `running` whose instance died (`recoveryFate`, given why it
   * stopped): without it, every such run is ended interrupted.
   */
  fate?(run: RunRecord, stopped: string): RecoveryFate;
  /** Takes a run of an expired lease up here from its last durable point (`RunAdoption.recover`): whether it runs here now. */
  recover?(runId: string): Promise<boolean>;
}

const LEASE_LAPSED = 'interrupted: its instance stopped renewing the thread lease';

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
   * Ends or takes up the runs of leases nobody renews (their instance died). A run still running
   * whose fate (`fate`: its agent's `recovery`, else the server's; its agent served and unchanged)
   * is to resume is taken up here (`recover`) from its last durable point: of all the instances that
   * find the lease expired, exactly one takes it over. Any other is ended by exactly one instance,
   * which marks it interrupted (with the reason), appends its terminal frame to the thread log (its
   * followers get it) and frees the thread. A run parked waiting for a decision is left waiting, its
   * thread's lease released. Returns the runs ended.
   */
  async sweep(): Promise<string[]> {
    const ended: string[] = [];
    const takeUp: string[] = [];
    for (const lease of await this.#host.leases.expired()) {
      // Serialised with starts and adoptions of the thread here: a lease this instance takes over
      // (under its own name) is not taken for a run at the same time.
      const done = await this.#host.locks.exclusive(lease.thread_id, async () => {
        if (this.#host.isLive(lease.run_id)) return false; // this instance's own run: renewed, not swept
        const fate = lease.cancel_requested ? undefined : await this.#fateOf(lease);
        if (fate?.resume === true) {
          // Taken over by `recover`, under the thread's lock (not held here across it).
          takeUp.push(lease.run_id);
          return false;
        }
        if (!(await this.#host.leases.takeOver(lease))) return false;
        return this.endAbandoned(lease, lease.cancel_requested ? 'cancelled' : 'interrupted', fate?.reason);
      });
      if (done) ended.push(lease.run_id);
    }
    for (const runId of takeUp) {
      await this.#host
        .recover?.(runId)
        .catch((e: unknown) => this.#host.logger.error('run of an expired lease not taken up', { run: runId, ...errorFields(e) }));
    }
    return ended;
  }

  /** What becomes of the running run of an expired lease; `undefined` for a run that is not running (or a delegate's sub-run: its parent's call decides). */
  async #fateOf(lease: ThreadLease): Promise<RecoveryFate | undefined> {
    const fate = this.#host.fate;
    if (fate === undefined || this.#host.recover === undefined) return undefined;
    const stored = await this.#host.store.getRun(lease.run_id);
    if (stored?.status !== 'running' || stored.parent_run_id !== undefined) return undefined;
    return fate(stored, LEASE_LAPSED);
  }

  /**
   * A run whose instance is gone (its lease taken over by this one): its record ended, its terminal
   * frame in the thread log, its thread freed — unless it was parked waiting for a decision and not
   * cancelled: then it stays waiting (its suspended segment ended with its own terminal frame) and only
   * the lease goes, so any instance can take it up when the decision comes (`adopt`). Returns whether
   * the run was ended.
   */
  async endAbandoned(lease: ThreadLease, how: 'cancelled' | 'interrupted', reason = LEASE_LAPSED): Promise<boolean> {
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
    const termination = how === 'cancelled' ? { type: 'cancelled' as const } : { type: 'error' as const, value: reason };
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
