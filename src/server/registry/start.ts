import type { RunStatus } from '../../contract/lifecycle.ts';
import { clientInputs } from '../../runtime/run-handle.ts';
import type { AgentRuntime } from '../../runtime/agent-runtime.ts';
import type { Env } from '../../runtime/env.ts';
import type { RunOptions } from '../../runtime/run-handle.ts';
import type { Store, ThreadLease } from '../../runtime/store.ts';
import type { ClusterRelay } from '../cluster-relay.ts';
import type { Logger } from '../log.ts';
import { mayReach } from '../principal.ts';
import type { RunLeases } from '../run-leases.ts';
import { storedRun } from '../stored-runs.ts';
import type { ThreadLocks } from '../thread-locks.ts';
import type { RunLauncher } from './launch.ts';
import type { LiveRuns } from './live-runs.ts';
import {
  fail,
  type ConcurrencyPolicy,
  type RegistryError,
  type RegistryResult,
  type RunObserver,
  type RunStarter,
  type StartRequest,
  type StartedRun,
} from './types.ts';

/** What starting a run needs of the registry it serves. */
export interface StartHost {
  readonly runtime: AgentRuntime;
  readonly store: Store;
  readonly env: Env;
  readonly logger: Logger;
  readonly policy: ConcurrencyPolicy;
  readonly leases: RunLeases;
  readonly locks: ThreadLocks;
  readonly relay: ClusterRelay | undefined;
  readonly runs: LiveRuns;
  readonly launcher: RunLauncher;
  readonly observer: RunObserver | undefined;
  /** Readies the thread's log (a start makes it the most recently used). */
  touch(threadId: string): void;
  /** Ends the run of a lease whose instance is gone (`LeaseUpkeep.endAbandoned`). */
  endAbandoned(lease: ThreadLease, how: 'cancelled' | 'interrupted'): Promise<boolean>;
  /** Whether the registry is shutting down. */
  closing(): boolean;
  /** What each checkpoint of a run of this agent carries (the lease it holds, the agent's digest). */
  runOptions(agentId: string): RunOptions;
}

/**
 * Starting a run on a thread: one in flight per thread across every instance (its lease), a run
 * already there refused or superseded by the policy, a paused thread refused unless its pause is
 * discarded; then the runtime starts it (through the observer, when there is one).
 */
export class RunStart {
  readonly #host: StartHost;

  constructor(host: StartHost) {
    this.#host = host;
  }

  /** Starts a run on a thread; the run goes on whatever happens to the caller. */
  start(request: StartRequest): Promise<RegistryResult<StartedRun>> {
    return this.#host.locks.exclusive(request.threadId, () => this.#start(request));
  }

  async #start(request: StartRequest): Promise<RegistryResult<StartedRun>> {
    const { store, env, logger, leases, runtime } = this.#host;
    if (this.#host.closing())
      return fail({ code: 'shutting_down', message: 'the server is shutting down: try again on another instance or after its restart' });
    // With access control, a start claims a new thread for its principal; another's thread is not there.
    if (!(await mayReach(store, request.threadId, 'write'))) return fail({ code: 'thread_not_found', message: `thread not found: ${request.threadId}` });
    const owner = await store.threadOwner(request.threadId);
    this.#host.touch(request.threadId);
    const current = this.#host.runs.current(request.threadId);
    if (current !== undefined) {
      // A run past its terminal frame is only writing its last checkpoint: the new one waits for it.
      if (current.status !== 'done') {
        const refused = this.refusal(request, current);
        if (refused !== undefined) return fail(refused);
        current.stopRequested = true;
        current.handle.cancel();
      }
      await current.handle.done.catch(() => undefined);
      await current.released;
    }
    // The thread's lease in the store: one run in flight per thread across every instance.
    const runId = env.ids.next('run');
    const leased = await this.#takeLease(request, runId);
    if (!leased.ok) return leased;
    // A run parked in the store with no instance holding it (its process died or shut down) pauses
    // the thread as a parked run here would: refused, or cancelled when the pause is discarded.
    const parked = await storedRun(store, request.threadId, 'waiting', 'thread');
    if (parked !== undefined) {
      const refused = this.refusal(request, { runId: parked.run_id, status: 'waiting' });
      if (refused !== undefined) {
        await leases.release(request.threadId, runId);
        return fail(refused);
      }
      await store.finishRun(parked.run_id, { type: 'cancelled' }, env.clock.now());
      logger.info('parked run cancelled: a new run discarded its pause', { run: parked.run_id, thread: request.threadId });
    }
    const agentId = request.agentId ?? runtime.agentIds()[0] ?? '';
    const runOptions = this.#host.runOptions(agentId);
    const client = clientInputs(request);
    const start: RunStarter = (sink) =>
      runtime.start(
        {
          runId,
          threadId: request.threadId,
          ...(request.agentId !== undefined ? { agentId: request.agentId } : {}),
          messages: request.messages,
          ...(request.rewindTo !== undefined ? { rewindTo: request.rewindTo } : {}),
          ...client,
        },
        sink,
        runOptions,
      );
    const observer = this.#host.observer;
    const launched = await this.#host.launcher.launch(request.threadId, runId, agentId, owner, request.messages, 'running', (sink) =>
      observer === undefined
        ? start(sink)
        : observer.observe(
            { threadId: request.threadId, runId, agentId, messages: request.messages, ...client, ...(owner !== undefined ? { owner } : {}) },
            start,
            sink,
          ),
    );
    if (!launched.ok) return launched;
    const { run, done } = launched.value;
    return { ok: true, value: { runId: run.runId, threadId: run.threadId, fromSeq: run.fromSeq, done } };
  }

  /**
   * Takes the thread's lease for a new run. Held by another run: expired, that run is ended first
   * (`sweepLeases` would); else its status in the store decides — finished (its instance died before
   * releasing): taken over; running under `reject`, or waiting without `discardPause`: refused; else
   * (supersede) the lease is stolen, the holder told to stop (a durable cancel request, and the bus),
   * and its end awaited (a lease's time at most: an instance that does not answer learns at its next
   * renewal that the thread is gone).
   */
  async #takeLease(request: StartRequest, runId: string): Promise<RegistryResult<undefined>> {
    const { store, leases, runs } = this.#host;
    let first = await leases.take(request.threadId, runId);
    if (!first.ok && leases.isExpired(first.holder) && !runs.has(first.holder.run_id)) {
      // Its instance is gone: the run is ended (for its followers too) before the thread is taken.
      const holder = first.holder;
      if (await leases.takeOver(holder)) await this.#host.endAbandoned(holder, holder.cancel_requested ? 'cancelled' : 'interrupted');
      first = await leases.take(request.threadId, runId);
    }
    if (first.ok) return { ok: true, value: undefined };
    const holder = first.holder;
    const stored = await store.getRun(holder.run_id);
    if (stored?.status !== 'done' && !runs.has(holder.run_id)) {
      const refused = this.refusal(request, { runId: holder.run_id, status: stored?.status === 'waiting' ? 'waiting' : 'running' });
      if (refused !== undefined) return fail(refused);
    }
    await leases.requestCancel(holder.run_id);
    await this.#host.relay?.bus.send({ action: 'cancel', runId: holder.run_id });
    const stolen = await leases.take(request.threadId, runId, true);
    if (!stolen.ok)
      return fail({ code: 'thread_busy', message: `thread ${request.threadId} has a run in flight: ${stolen.holder.run_id}`, runId: stolen.holder.run_id });
    if (stored !== undefined && stored.status !== 'done') {
      for (let i = Math.ceil(leases.ttlMs / 25); i > 0 && (await store.getRun(holder.run_id))?.status !== 'done'; i--)
        await new Promise((r) => setTimeout(r, 25));
    }
    return { ok: true, value: undefined };
  }

  /**
   * Whether a start must give way to the thread's run (here or on another instance): a waiting run
   * unless the pause is discarded, a running one under `reject`. Otherwise that run is to be stopped.
   */
  refusal(request: Pick<StartRequest, 'threadId' | 'discardPause'>, other: { readonly runId: string; readonly status: RunStatus }): RegistryError | undefined {
    const parked = other.status === 'waiting';
    if (parked && request.discardPause !== true) {
      return { code: 'thread_paused', message: `thread ${request.threadId} is waiting for a decision on run ${other.runId}`, runId: other.runId };
    }
    if (!parked && this.#host.policy === 'reject')
      return { code: 'thread_busy', message: `thread ${request.threadId} has a run in flight: ${other.runId}`, runId: other.runId };
    return undefined;
  }
}
