import type { AgentEvent } from '../../contract/event.ts';
import type { RunStatus } from '../../contract/lifecycle.ts';
import type { Message } from '../../contract/message.ts';
import type { AgentRunResult } from '../../contract/run-result.ts';
import type { RunHandle } from '../../runtime/agent-runtime.ts';
import type { Env } from '../../runtime/env.ts';
import { trackEvent, waitingCallOf, type LiveRun } from '../live-run.ts';
import { errorFields, type Logger } from '../log.ts';
import type { LiveRuns } from './live-runs.ts';
import type { ThreadLogs } from './thread-logs.ts';
import { fail, type RegistryResult, type RunSink, type RunWatcher } from './types.ts';

/** What running a run here needs of the registry it serves. */
export interface LauncherHost {
  readonly env: Env;
  readonly logger: Logger;
  /** Releases the thread's lease (`RunLeases.release`). */
  releaseLease(threadId: string, runId: string): Promise<void>;
  readonly logs: ThreadLogs;
  readonly runs: LiveRuns;
  /** Told of each frame (`ParkedRelease.noted`). */
  noted(run: LiveRun, event: AgentEvent): void;
  /** Told when a run ended: the server may go quiet. */
  quiet(): void;
}

/** How a run begins: the runtime's `start` or `revive`, with the sink its frames go to. */
export type Begin = (sink: RunSink) => Promise<{ ok: true; value: RunHandle } | { ok: false; error: { code: string } }>;

/**
 * A run's life on this instance, whether new or revived: begun with its thread's lease held, every
 * frame followed (`trackEvent`), shown to the watchers and published in the thread log; its end
 * gives it a terminal frame when it crashed without one, releases the lease and frees the thread.
 */
export class RunLauncher {
  readonly #host: LauncherHost;
  readonly #watchers = new Set<RunWatcher>();

  constructor(host: LauncherHost) {
    this.#host = host;
  }

  /** Registers what sees every frame of this instance's runs (`RunWatcher`); returns its removal. */
  watch(watcher: RunWatcher): () => void {
    this.#watchers.add(watcher);
    return () => void this.#watchers.delete(watcher);
  }

  /**
   * Runs what `begin` starts (a new run, or a parked run revived) as this instance's run of the
   * thread, holding its lease already: its frames go to the thread log (the `seq` mark raised first),
   * its end frees the thread. The lease is released when it does not start.
   */
  async launch(
    threadId: string,
    runId: string,
    agentId: string,
    owner: string | undefined,
    input: readonly Message[],
    status: RunStatus,
    begin: Begin,
  ): Promise<RegistryResult<{ run: LiveRun; done: Promise<AgentRunResult | undefined> }>> {
    const { env, logger, runs } = this.#host;
    const fromSeq = await this.#host.logs.open(threadId);
    let live: LiveRun | undefined;
    const pending: AgentEvent[] = [];
    const sink = {
      emit: (event: AgentEvent): void | Promise<void> => {
        if (live === undefined) {
          pending.push(event);
          return;
        }
        return this.#record(live, event);
      },
    };
    const started = await begin(sink);
    if (!started.ok) {
      await this.#host
        .releaseLease(threadId, runId)
        .catch((e: unknown) => logger.error('lease not released', { thread: threadId, run: runId, ...errorFields(e) }));
      return fail({ code: 'start_failed', message: 'message' in started.error ? String(started.error.message) : started.error.code });
    }
    const handle = started.value;
    live = {
      runId: handle.runId,
      threadId,
      agentId,
      handle,
      createdAt: env.clock.now(),
      input,
      fromSeq,
      status,
      stopRequested: false,
      // A revived run's suspended segment ended in the process that parked it.
      terminalSeen: status === 'waiting',
      waiting: new Map(handle.waitingOn().map((c) => [c.call.id, waitingCallOf(c)])),
      calls: new Map(),
      stepMessageId: handle.runId,
      released: undefined,
      owner,
    };
    const run = live;
    runs.add(run);
    for (const event of pending.splice(0)) void this.#record(run, event);
    const done = handle.done.then(
      (result) => {
        this.#finish(run, undefined);
        return result;
      },
      (e: unknown) => {
        this.#finish(run, e instanceof Error ? e.message : String(e));
        return undefined;
      },
    );
    return { ok: true, value: { run, done } };
  }

  #record(run: LiveRun, event: AgentEvent): void | Promise<void> {
    const { env, logger } = this.#host;
    trackEvent(run, event, logger);
    for (const watcher of this.#watchers) {
      try {
        watcher({ runId: run.runId, threadId: run.threadId, agentId: run.agentId, startedAt: run.createdAt }, event, env.clock.now());
      } catch (e) {
        // A watcher only counts: the run and its followers go on without it.
        logger.error('run watcher failed', errorFields(e));
      }
    }
    this.#host.noted(run, event);
    return this.#host.logs.publish(run, event);
  }

  /** A run that ended without its terminal frame (a crash) gets one, so every stream is finalised. */
  #finish(run: LiveRun, crash: string | undefined): void {
    // Taken over by another instance, the run goes on there: its end is not this process's to tell,
    // and the thread's lease for it is the other's.
    const fenced = run.handle.fenced?.() === true;
    if (!run.terminalSeen && !fenced) {
      const termination = run.stopRequested
        ? { type: 'cancelled' as const }
        : { type: 'error' as const, value: crash ?? 'the run ended without a terminal event' };
      void this.#record(run, { event_type: 'run_finish', thread_id: run.threadId, run_id: run.runId, termination });
    }
    run.status = 'done';
    this.#host.logs.ended(run.threadId);
    if (fenced) this.#host.logs.letGo(run.threadId);
    run.released = (fenced ? Promise.resolve() : this.#host.releaseLease(run.threadId, run.runId)).catch((e: unknown) =>
      this.#host.logger.error('lease not released', { thread: run.threadId, run: run.runId, ...errorFields(e) }),
    );
    // A finished run lives on in the store; the registry keeps only what is live.
    this.#host.runs.remove(run);
    this.#host.logs.evictIdle();
    this.#host.quiet();
  }
}
