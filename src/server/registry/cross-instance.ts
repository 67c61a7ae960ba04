import { passOver } from '../../contract/never.ts';
import type { Decision } from '../../contract/decision.ts';
import type { RunStatus } from '../../contract/lifecycle.ts';
import type { Message } from '../../contract/message.ts';
import type { ControlCommand } from '../../runtime/cluster-bus.ts';
import type { Env } from '../../runtime/env.ts';
import type { Store, ThreadLease } from '../../runtime/store.ts';
import type { ClusterRelay } from '../cluster-relay.ts';
import type { LiveRun } from '../live-run.ts';
import type { Logger } from '../log.ts';
import { mayReach } from '../principal.ts';
import type { RunLeases } from '../run-leases.ts';
import { reachableRun, storedRun } from '../stored-runs.ts';
import type { ThreadLocks } from '../thread-locks.ts';
import type { LiveRuns } from './live-runs.ts';
import { fail, type RegistryResult } from './types.ts';

/** What steering a run wherever it is needs of the registry it serves. */
export interface ControlHost {
  readonly store: Store;
  readonly env: Env;
  readonly logger: Logger;
  readonly leases: RunLeases;
  readonly locks: ThreadLocks;
  readonly relay: ClusterRelay | undefined;
  readonly runs: LiveRuns;
  /** Whether the run is being let go (`ParkedRelease.isReleasing`): commands no longer reach it here. */
  isReleasing(run: LiveRun): boolean;
  /** Ends the run of a lease whose instance is gone (`LeaseUpkeep.endAbandoned`). */
  endAbandoned(lease: ThreadLease, how: 'cancelled' | 'interrupted'): Promise<boolean>;
  /** Takes up a run parked in the store that no instance holds (`RunAdoption.adopt`). */
  adopt(runOrThread: string): Promise<boolean>;
}

/**
 * Cancels and decisions for a run wherever it is: a run here is steered at once; one on another
 * instance through the cluster bus (and, for a cancel, the thread's lease), whose commands for the
 * runs here arrive in `command`; one whose instance is gone is ended or taken up here.
 */
export class RunControl {
  readonly #host: ControlHost;

  constructor(host: ControlHost) {
    this.#host = host;
  }

  /** Listens to the bus: other instances' frames for the followers here, commands for the runs here. */
  async attachBus(): Promise<void> {
    await this.#host.relay?.attach((command) => this.command(command));
  }

  /** A command from another instance for a run here; one for a run not here (or ended, or being let go) is not ours. */
  command(command: ControlCommand): void {
    const run = this.#host.runs.get(command.runId);
    if (run === undefined || run.status === 'done' || this.#host.isReleasing(run)) return;
    switch (command.action) {
      case 'cancel':
        run.stopRequested = true;
        run.handle.cancel();
        return;
      case 'decide':
        run.handle.decide(command.decisions);
        return;
      default:
        // A command this version does not know (sent by a newer instance) is ignored, as a malformed one is.
        passOver(command);
    }
  }

  /**
   * Decisions for the parked run of a thread or a run id; any later request may send them. `messages`
   * sent with them join the thread after the calls they settle (`RunHandle.decide`).
   */
  decide(runOrThread: string, decisions: readonly Decision[], messages: readonly Message[] = []): RegistryResult<{ runId: string }> {
    const run = this.#host.runs.find(runOrThread);
    if (run === undefined || run.status === 'done') return fail({ code: 'run_not_found', message: `no waiting run: ${runOrThread}` });
    if (run.status !== 'waiting') return fail({ code: 'not_waiting', message: `run ${run.runId} is not waiting for a decision` });
    const r = run.handle.decide(decisions, messages);
    if (!r.ok) return fail({ code: 'target_not_found', message: 'message' in r.error ? String(r.error.message) : r.error.code });
    return { ok: true, value: { runId: run.runId } };
  }

  /**
   * Registers the stop intent and cancels cooperatively: the provider stream and the loop stop at
   * their next check; a tool already running finishes (its side effects happen). The run's terminal
   * frame, `cancelled`, is the signal that it stopped.
   */
  cancel(runOrThread: string): RegistryResult<{ runId: string }> {
    const run = this.#host.runs.find(runOrThread);
    if (run === undefined || run.status === 'done') return fail({ code: 'run_not_found', message: `no active run: ${runOrThread}` });
    run.stopRequested = true;
    run.handle.cancel();
    return { ok: true, value: { runId: run.runId } };
  }

  /**
   * Cancels a run wherever it runs: here; else the instance holding its thread's lease is asked
   * (a cancel request on the lease, which it sees at its next renewal, and the bus). When that lease
   * has expired (its instance is gone) the run is ended here, at once, and the thread freed.
   */
  async cancelAnywhere(runOrThread: string): Promise<RegistryResult<{ runId: string }>> {
    const { store, env, logger, leases, locks } = this.#host;
    const local = this.cancel(runOrThread);
    if (local.ok) return local;
    const runId = await reachableRun(store, runOrThread);
    if (runId === undefined) return local;
    const threadId = (await store.getRun(runId))?.thread_id;
    if (threadId !== undefined) {
      // Serialised with adoptions and sweeps of the thread here.
      const here = await locks.exclusive(threadId, async () => {
        if (this.cancel(runId).ok) return true; // taken up here meanwhile
        const lease = await leases.get(threadId);
        if (lease !== undefined && lease.run_id === runId) {
          await leases.requestCancel(runId);
          if (leases.isExpired(lease) && (await leases.takeOver(lease))) await this.#host.endAbandoned(lease, 'cancelled');
        } else if ((await storedRun(store, runId, 'waiting')) !== undefined) {
          // Parked in the store and held by no instance: ended there (its stream ended with its suspension).
          await store.finishRun(runId, { type: 'cancelled' }, env.clock.now());
          logger.info('parked run cancelled', { run: runId, thread: threadId });
        }
        return false;
      });
      if (here) return { ok: true, value: { runId } };
    }
    await this.#host.relay?.bus.send({ action: 'cancel', runId });
    return { ok: true, value: { runId } };
  }

  /**
   * The run holding a thread: this instance's, else the lease holder's (its status from the store).
   * None for a thread the current principal may not reach, decided by the thread's owner record
   * before any run is looked at, wherever it runs.
   */
  async activeRun(threadId: string): Promise<{ readonly runId: string; readonly status: RunStatus } | undefined> {
    const { store, leases, runs } = this.#host;
    if (!(await mayReach(store, threadId, 'read'))) return undefined;
    const here = runs.held(runs.current(threadId));
    if (here !== undefined) return { runId: here.runId, status: here.status };
    const lease = await leases.get(threadId);
    if (lease === undefined) {
      const parked = await storedRun(store, threadId, 'waiting', 'thread');
      return parked === undefined ? undefined : { runId: parked.run_id, status: 'waiting' };
    }
    const stored = await store.getRun(lease.run_id);
    return { runId: lease.run_id, status: stored?.status === 'waiting' ? 'waiting' : 'running' };
  }

  /**
   * Sends decisions to a waiting run wherever it is: here; parked in the store with no live instance
   * (its process died or shut down), it is taken up here first (`adopt`); else, on another instance,
   * through the bus (see `cancelAnywhere`).
   */
  async decideAnywhere(runOrThread: string, decisions: readonly Decision[], messages: readonly Message[] = []): Promise<RegistryResult<{ runId: string }>> {
    const { store, leases, relay } = this.#host;
    const local = this.decide(runOrThread, decisions, messages);
    if (local.ok || local.error.code !== 'run_not_found') return local;
    if (await this.#host.adopt(runOrThread)) return this.decide(runOrThread, decisions, messages);
    if (relay === undefined) return local;
    const run = await reachableRun(store, runOrThread, 'waiting');
    if (run === undefined) return local;
    const threadId = (await store.getRun(run))?.thread_id ?? '';
    const before = await leases.get(threadId);
    await relay.bus.send({ action: 'decide', runId: run, decisions });
    // The instance holding it may be gone with its lease not yet expired: the decision counts as
    // delivered once the run goes on or its holder renews the lease (it is alive); else, once the
    // lease expires, the run is taken up here and decided (never a 202 for a decision lost).
    for (let i = Math.ceil((leases.ttlMs + leases.sweepMs) / 25) + 40; i > 0; i--) {
      if ((await store.getRun(run))?.status !== 'waiting') return { ok: true, value: { runId: run } };
      const lease = await leases.get(threadId);
      // Renewed by the same holder: it is alive and has the message (a takeover by a sweep is not that).
      if (lease !== undefined && before !== undefined && lease.run_id === run && lease.owner === before.owner && lease.until > before.until)
        return { ok: true, value: { runId: run } };
      if (await this.#host.adopt(run)) return this.decide(run, decisions, messages);
      await new Promise((r) => setTimeout(r, 25));
    }
    return fail({ code: 'thread_busy', message: `run ${run} is held by an instance that neither answers nor lets its lease expire`, runId: run });
  }
}
