import type { Env } from '../../runtime/env.ts';
import type { Store } from '../../runtime/store.ts';
import type { ClusterRelay } from '../cluster-relay.ts';
import type { LiveRun } from '../live-run.ts';
import type { Logger } from '../log.ts';
import type { RunLeases } from '../run-leases.ts';

/** What ending a registry needs of it. */
export interface ShutdownHost {
  readonly store: Store;
  readonly env: Env;
  readonly logger: Logger;
  readonly leases: RunLeases;
  readonly relay: ClusterRelay | undefined;
  /** This instance's runs, executing or parked. */
  runs(): Iterable<LiveRun>;
  /** Stops renewing and sweeping leases (`LeaseUpkeep.stop`). */
  stopUpkeep(): void;
  /** Every frame on its way published and every `seq` mark written (`ThreadLogs.flush`). */
  flushLogs(): Promise<void>;
  /** Lets parked runs go while the server goes on (`ParkedRelease.releaseAll`). */
  releaseAll(runs: Iterable<LiveRun>): Promise<number>;
  /** Told when a stream closes: the server may go quiet. */
  quiet(): void;
}

/**
 * The end of a registry: no new run starts, parked runs are left waiting for a later instance,
 * runs in flight get a grace period, then every open stream ends. Also the release of parked runs
 * while the server goes on (a runtime replaced under it).
 */
export class RegistryShutdown {
  readonly #host: ShutdownHost;
  #closing = false;
  /** The open streams' closers, called at shutdown. */
  readonly #streams = new Set<() => void>();

  constructor(host: ShutdownHost) {
    this.#host = host;
  }

  /** Whether the registry is shutting down (no new run starts). */
  get closing(): boolean {
    return this.#closing;
  }

  /** Registers what ends an open stream at shutdown; returns its removal. */
  onShutdown(close: () => void): () => void {
    this.#streams.add(close);
    return () => {
      if (this.#streams.delete(close)) this.#host.quiet();
    };
  }

  /**
   * Graceful shutdown: no new run starts (`shutting_down`), a parked run is let go waiting (its lease
   * released: decidable after a restart or on another instance), every run in flight is cancelled and
   * given `graceMs` (default 10 s) to end; one that does not is marked interrupted and its lease
   * released, so another instance may take its thread at once. Then every open stream ends — a thread
   * stream with a resync frame to reconnect from (`reason: shutting_down`) — and the sequence marks
   * are written.
   */
  async shutdown(options: { readonly graceMs?: number } = {}): Promise<void> {
    const { store, env, logger, leases, relay } = this.#host;
    this.#closing = true;
    this.#host.stopUpkeep();
    // Every run still held here: one that has told its end may still be writing it, and releases
    // its thread only then; only those not ended are cancelled.
    const held = [...this.#host.runs()];
    const runs = held.filter((r) => r.status !== 'done');
    for (const r of runs) {
      // A parked run is let go, not cancelled: it stays waiting in the store, decidable after a restart.
      if (r.status === 'waiting' && r.handle.detach()) {
        logger.info('parked run left waiting at shutdown', { run: r.runId, thread: r.threadId });
        continue;
      }
      r.stopRequested = true;
      r.handle.cancel();
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const grace = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), options.graceMs ?? 10_000)));
    const ended = await Promise.race([Promise.all(held.map((r) => r.handle.done.catch(() => undefined))).then(() => 'ended' as const), grace]);
    clearTimeout(timer);
    if (ended === 'late') {
      for (const r of runs.filter((x) => x.status !== 'done')) {
        logger.warn('run still going at shutdown: marked interrupted, its thread released', { run: r.runId, thread: r.threadId });
        await store
          .finishRun(r.runId, { type: 'error', value: 'interrupted: the server shut down while the run was going' }, env.clock.now())
          .catch(() => false);
        await leases.release(r.threadId, r.runId).catch(() => undefined);
      }
    } else {
      await Promise.all(held.map((r) => r.released));
    }
    // A run that ended just before is no longer held here, but its release may still be in flight.
    await leases.settled();
    await this.#host.flushLogs();
    // Every frame in the shared log, and every follower of it up to date, before the streams end.
    await relay?.settle();
    relay?.close();
    for (const close of [...this.#streams]) close();
  }

  /**
   * Lets go every run parked here as a shutdown would, while the server goes on (its runtime was
   * replaced: `awaken dev` after a reload): each stays waiting in the store, its thread's lease is
   * released and its handle dropped (nothing it does later is published), so its decision takes it
   * up again (`adopt`, then the runtime's `revive`) on the runtime current then. A decision that
   * comes during the release waits for it. Runs executing now are not touched: they go on on the
   * runtime they started on, and are let go the same way if they park. Returns how many were let go.
   *
   * The open streams of a released run's thread stay open, unlike at shutdown: the thread log is
   * this process's and goes on (same `seq`) when the run is taken up again here, and a stream that
   * ends now would only have to reconnect to the same place. A run's own stream (`POST /v1/runs`)
   * ended with its suspension already.
   */
  releaseParked(): Promise<number> {
    if (this.#closing) return Promise.resolve(0);
    return this.#host.releaseAll([...this.#host.runs()]);
  }
}
