import type { AgentEvent } from '../../contract/event.ts';
import type { AgentRuntime } from '../../runtime/agent-runtime.ts';
import type { RunOptions } from '../../runtime/run-handle.ts';
import { ToolBatchKey, type ToolBatchRecord } from '../../runtime/tool-batch.ts';
import type { RunRecord, Store } from '../../runtime/store.ts';
import { parkedCallsOf, type WaitingCall } from '../live-run.ts';
import { errorFields, type Logger } from '../log.ts';
import { mayReach } from '../principal.ts';
import type { RunLeases } from '../run-leases.ts';
import { storedRun } from '../stored-runs.ts';
import type { ThreadLocks } from '../thread-locks.ts';
import { closersOf } from './closers.ts';
import type { RunLauncher } from './launch.ts';
import type { LiveRuns } from './live-runs.ts';
import type { ThreadLogs } from './thread-logs.ts';
import type { RunObserver, RunStarter } from './types.ts';

/** What taking up a parked run needs of the registry it serves. */
export interface AdoptionHost {
  readonly runtime: AgentRuntime;
  readonly store: Store;
  readonly logger: Logger;
  readonly leases: RunLeases;
  readonly locks: ThreadLocks;
  readonly runs: LiveRuns;
  readonly launcher: RunLauncher;
  readonly observer: RunObserver | undefined;
  /**
   * The thread logs, where a run taken up from `running` has the step its process was cut off in
   * closed before it goes on (`RunAdoption.recover`); without them nothing is closed.
   */
  readonly logs?: Pick<ThreadLogs, 'open' | 'publish' | 'runTail' | 'appendTerminal'>;
  /** Whether the registry is shutting down (nothing is taken up then). */
  closing(): boolean;
  /** What each checkpoint of a run taken up here carries (the lease it holds, the agent's digest); without it, nothing. */
  runOptions?(agentId: string): RunOptions;
}

/** The calls a parked run waits on, and where. */
export interface ParkedRun {
  readonly runId: string;
  readonly threadId: string;
  readonly calls: readonly WaitingCall[];
}

/**
 * Runs parked in the store that no live instance holds (their process died, shut down, or let them
 * go at a reload): read as the store holds them, and taken up here when a decision comes for one.
 */
export class RunAdoption {
  readonly #host: AdoptionHost;

  constructor(host: AdoptionHost) {
    this.#host = host;
  }

  /**
   * Takes up a run waiting for a decision in the store that no live instance holds as this
   * instance's parked run, so a decision can reach it (durable HITL): the thread's lease is taken for
   * it (taken over when its holder's has expired), the runtime revives it from its stored state, and
   * nothing is emitted until a decision resumes it. True when the run (by run id or thread id) is
   * parked here afterwards; false when there is none, or another instance holds it alive.
   */
  async adopt(runOrThread: string): Promise<boolean> {
    const { store, logger, locks, runs } = this.#host;
    const here = runs.find(runOrThread);
    if (here !== undefined || this.#host.closing()) return here?.status === 'waiting';
    const stored = await storedRun(store, runOrThread, 'waiting');
    if (stored === undefined || !(await mayReach(store, stored.thread_id, 'write'))) return false;
    const threadId = stored.thread_id;
    return locks.exclusive(threadId, async () => {
      const current = runs.current(threadId);
      if (current !== undefined) return current.runId === stored.run_id && current.status === 'waiting';
      const runId = stored.run_id;
      const launched = await this.#takeUp(stored, 'waiting');
      if (launched === 'not taken') return false;
      if (!launched.ok) {
        logger.error('parked run could not be revived', { run: runId, thread: threadId, error: launched.error.message });
        return false;
      }
      logger.info('parked run revived', { run: runId, thread: threadId, calls: launched.value.run.waiting.size });
      return true;
    });
  }

  /**
   * Takes up a run the store holds as running that no live instance holds (its process died): the
   * thread's lease is taken for it (taken over when its holder's has expired), and the runtime
   * recovers it from its last durable point (`AgentRuntime.recover`) as this instance's run — its
   * frames go on in the thread's log after the seq mark the dead process left. True when it runs
   * here afterwards; false when it is not running in the store, another instance holds it alive, or
   * it could not be recovered (then it is ended with the reason, never left looking alive).
   */
  async recover(runId: string): Promise<boolean> {
    const { runtime, store, logger, locks, runs, leases } = this.#host;
    if (runs.find(runId) !== undefined || this.#host.closing()) return false;
    const stored = await storedRun(store, runId, 'running');
    if (stored === undefined) return false;
    const threadId = stored.thread_id;
    // Not taken up, and no one else holds it alive (no lease for it): ended with why — its record and
    // its followers' terminal frame — never left looking alive.
    const ended = async (why: string): Promise<false> => {
      logger.error('run left running by a stopped process could not be recovered', { run: runId, thread: threadId, error: why });
      const termination = { type: 'error' as const, value: `interrupted: it could not be taken up: ${why}` };
      if (await store.finishRun(runId, termination, runtime.env.clock.now())) await this.#host.logs?.appendTerminal(threadId, runId, termination);
      await leases.release(threadId, runId);
      return false;
    };
    return locks.exclusive(threadId, async () => {
      // A run here holds the thread: whoever started it ended this one first (the start that found its lease expired).
      if (runs.current(threadId) !== undefined) return false;
      // Another holder with a live lease: that instance has it (or will end it when the lease expires).
      let launched: Awaited<ReturnType<RunLauncher['launch']>> | 'not taken';
      try {
        launched = await this.#takeUp(stored, 'running');
      } catch (e) {
        // Taken over and then failed (the store, the bus): let go and ended, never held for ever.
        return ended(e instanceof Error ? e.message : String(e));
      }
      if (launched === 'not taken') return false;
      if (!launched.ok) return ended(launched.error.message);
      logger.info('run left running by a stopped process recovered', { run: runId, thread: threadId });
      return true;
    });
  }

  /**
   * Launches a stored run as this instance's (the thread's lock held): its lease taken (taken over
   * when its holder's has expired), then, if it still has `status`, revived (`waiting`) or recovered
   * (`running`) by the runtime through the observer. `not taken` when another holds its lease or it
   * moved on meanwhile.
   */
  async #takeUp(stored: RunRecord, status: 'waiting' | 'running'): Promise<Awaited<ReturnType<RunLauncher['launch']>> | 'not taken'> {
    const { runtime, store, leases, launcher } = this.#host;
    const threadId = stored.thread_id;
    const runId = stored.run_id;
    let taken = await leases.take(threadId, runId);
    if (!taken.ok && taken.holder.run_id === runId && leases.isExpired(taken.holder) && (await leases.takeOver(taken.holder))) taken = { ok: true };
    if (!taken.ok) return 'not taken';
    // Taken: no one else can take it up or end it now; it may have ended in between.
    if ((await store.getRun(runId))?.status !== status) {
      await leases.release(threadId, runId);
      return 'not taken';
    }
    if (status === 'running') await this.#closeCutStep(threadId, runId);
    const owner = await store.threadOwner(threadId);
    const request = { threadId, runId, ...(stored.agent_id !== '' ? { agentId: stored.agent_id } : {}) };
    // The agent a run resolves to when the store names none: the runtime's first, as at `start`.
    const agentId = stored.agent_id !== '' ? stored.agent_id : (runtime.agentIds()[0] ?? '');
    const options = this.#host.runOptions?.(agentId) ?? {};
    const begin: RunStarter = status === 'waiting' ? (sink) => runtime.revive(request, sink, options) : (sink) => runtime.recover(request, sink, options);
    const observer = this.#host.observer;
    const seen = {
      threadId,
      runId,
      agentId,
      messages: [],
      ...(owner !== undefined ? { owner } : {}),
      resumed: true,
      ...(status === 'running' ? { recovered: true } : {}),
    };
    return launcher.launch(threadId, runId, stored.agent_id, owner, [], status, (sink) =>
      observer === undefined ? begin(sink) : observer.observe(seen, begin, sink),
    );
  }

  /**
   * The step a run's dead process was cut off in, closed in the thread's log before the run goes on
   * (a stream's open blocks close before anything else follows): its followers saw the step start,
   * maybe text and calls the model was still writing, and no end; the segment taken up opens a step
   * again. What closes it is what the run loop emits for a stream cut mid-inference (`closersOf`),
   * published as frames of the run. Read from what this instance can read of the log: with nothing
   * there (a restart without a bus), a client that comes back is resynced instead. A log that cannot
   * be read leaves the step as it is: the run is taken up all the same.
   */
  async #closeCutStep(threadId: string, runId: string): Promise<void> {
    const logs = this.#host.logs;
    if (logs === undefined) return;
    let closing: AgentEvent[];
    try {
      closing = closersOf(await logs.runTail(threadId, runId), await this.#batchCalls(threadId));
    } catch (e) {
      this.#host.logger.warn('the step a stopped process left open could not be read: it is not closed', { run: runId, thread: threadId, ...errorFields(e) });
      return;
    }
    if (closing.length === 0) return;
    await logs.open(threadId);
    for (const event of closing) await logs.publish({ runId, threadId }, event);
  }

  /** The calls of the tool batch the thread's store holds (the run taken up goes on with them, and tells each one's outcome). */
  async #batchCalls(threadId: string): Promise<ReadonlySet<string>> {
    const thread = await this.#host.store.loadThread(threadId);
    const batch = thread?.threadState?.extensions[ToolBatchKey.key] as ToolBatchRecord | null | undefined;
    return new Set(batch?.calls.map((c) => c.id) ?? []);
  }

  /** The parked run of a thread or a run id here and the calls it waits on; `undefined` when none waits. */
  waiting(runOrThread: string): ParkedRun | undefined {
    const run = this.#host.runs.find(runOrThread);
    if (run === undefined || run.status !== 'waiting') return undefined;
    return { runId: run.runId, threadId: run.threadId, calls: [...run.waiting.values()] };
  }

  /**
   * The calls a run (by run id or thread id) waits on, wherever it is parked: here, else as the store
   * holds it (the thread's committed batch), without taking it up.
   */
  async waitingAnywhere(runOrThread: string): Promise<ParkedRun | undefined> {
    const { store, runs } = this.#host;
    const local = this.waiting(runOrThread);
    if (local !== undefined || runs.find(runOrThread) !== undefined) return local;
    const stored = await storedRun(store, runOrThread, 'waiting');
    if (stored === undefined || !(await mayReach(store, stored.thread_id, 'read'))) return undefined;
    const thread = await store.loadThread(stored.thread_id);
    return { runId: stored.run_id, threadId: stored.thread_id, calls: parkedCallsOf(thread?.threadState) };
  }
}
