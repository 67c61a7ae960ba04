import type { Env } from '../runtime/env.ts';
import type { LeaseTake, ThreadLease, ThreadLeaseStore } from '../runtime/store.ts';

export interface LeaseOptions {
  /** This instance's name in the leases it holds (default: an id from the `Env`). */
  readonly owner?: string;
  /** How long a lease lasts unless renewed (default 10 s); renewed every third of it. */
  readonly ttlMs?: number;
  /** How often expired leases are looked for (default 5 s). */
  readonly sweepMs?: number;
}

/**
 * This instance's side of thread leases (see `ThreadLeaseStore`): taking a thread for a run, renewing
 * what it holds, finding leases whose owner stopped renewing. Times come from the `Env` clock.
 */
export class RunLeases {
  readonly owner: string;
  readonly ttlMs: number;
  readonly sweepMs: number;
  readonly #store: ThreadLeaseStore;
  readonly #env: Env;
  readonly #releasing = new Set<Promise<void>>();

  constructor(store: ThreadLeaseStore, env: Env, options: LeaseOptions = {}) {
    this.#store = store;
    this.#env = env;
    this.owner = options.owner ?? env.ids.next('instance');
    this.ttlMs = Math.max(30, options.ttlMs ?? 10_000);
    this.sweepMs = Math.max(10, options.sweepMs ?? 5_000);
  }

  take(threadId: string, runId: string, steal = false): Promise<LeaseTake> {
    return this.#store.takeLease({ threadId, runId, owner: this.owner, now: this.#env.clock.now(), ttlMs: this.ttlMs, steal });
  }

  /**
   * Lets go of the thread's lease for the run, when it is this instance's: a lease another instance
   * took over for the run (it took the run up) is that instance's, and stays.
   */
  release(threadId: string, runId: string): Promise<void> {
    const releasing = this.#release(threadId, runId);
    this.#releasing.add(releasing);
    const settle = (): void => void this.#releasing.delete(releasing);
    releasing.then(settle, settle);
    return releasing;
  }

  /**
   * Every release under way has settled. A run that ended just before a shutdown is no longer among
   * the registry's runs, but its release may still be in flight: a store closed under it would leave
   * the thread leased until the lease expires.
   */
  async settled(): Promise<void> {
    while (this.#releasing.size > 0) await Promise.allSettled([...this.#releasing]);
  }

  async #release(threadId: string, runId: string): Promise<void> {
    const held = await this.#store.getLease(threadId);
    if (held === undefined || held.run_id !== runId || held.owner !== this.owner) return;
    await this.#store.releaseLease(threadId, runId);
  }

  /** Renews this instance's leases; returns those it still holds. */
  renew(): Promise<ThreadLease[]> {
    return this.#store.renewLeases(this.owner, this.#env.clock.now(), this.ttlMs);
  }

  /** Leases whose owner stopped renewing them. */
  expired(limit = 50): Promise<ThreadLease[]> {
    return this.#store.expiredLeases(this.#env.clock.now(), limit);
  }

  /** Takes an expired lease over (true for exactly one instance), to end its run and free the thread. */
  takeOver(lease: ThreadLease): Promise<boolean> {
    return this.#store.takeOverLease(lease.thread_id, lease.run_id, this.owner, this.#env.clock.now(), this.ttlMs);
  }

  get(threadId: string): Promise<ThreadLease | undefined> {
    return this.#store.getLease(threadId);
  }

  requestCancel(runId: string): Promise<boolean> {
    return this.#store.requestCancel(runId);
  }

  /** Whether a lease has expired now. */
  isExpired(lease: ThreadLease): boolean {
    return lease.until <= this.#env.clock.now();
  }
}
