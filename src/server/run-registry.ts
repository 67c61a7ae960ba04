import type { Decision } from '../contract/decision.ts';
import type { RunStatus, TerminationReason } from '../contract/lifecycle.ts';
import type { Message } from '../contract/message.ts';
import type { AgentRuntime } from '../runtime/agent-runtime.ts';
import type { Env } from '../runtime/env.ts';
import type { RunOptions } from '../runtime/run-handle.ts';
import type { RunRecord, Store } from '../runtime/store.ts';
import { agentDigestOf } from './agent-digest.ts';
import { ClusterRelay } from './cluster-relay.ts';
import type { LiveRun, WaitingCall } from './live-run.ts';
import { LeaseUpkeep } from './lease-upkeep.ts';
import { errorFields, silentLogger, type Logger } from './log.ts';
import { ParkedRelease } from './parked-release.ts';
import { RunAdoption } from './registry/adopt.ts';
import { RunControl } from './registry/cross-instance.ts';
import { RunLauncher } from './registry/launch.ts';
import { LiveRuns } from './registry/live-runs.ts';
import { RegistryShutdown } from './registry/shutdown.ts';
import { RunStart } from './registry/start.ts';
import { Subscriptions } from './registry/subscribe.ts';
import { ThreadLogs, threadLogLimits } from './registry/thread-logs.ts';
import type { ConcurrencyPolicy, RegistryOptions, RegistryResult, RunWatcher, StartRequest, StartedRun } from './registry/types.ts';
import { acknowledgeJobOf, type RecoveryFate, recoveryFate } from './recovery.ts';
import { RunLeases } from './run-leases.ts';
import { ThreadLocks } from './thread-locks.ts';
import type { LogItem, ThreadLog } from './thread-log.ts';

export { ThreadLog, backlogOf, type Backlog, type LogFrame, type LogItem, type ResyncFrame } from './thread-log.ts';
export { parkedCallsOf, type WaitingCall } from './live-run.ts';
export type {
  ConcurrencyPolicy,
  RegistryError,
  RegistryOptions,
  RegistryResult,
  RunObserver,
  RunStarter,
  RunWatcher,
  StartRequest,
  StartedRun,
} from './registry/types.ts';

/**
 * The run registry (seed 001 §4): runs live independently of the requests that start or watch them,
 * one in-flight run per thread (`reject` or `supersede`), every event in the thread's log, decisions
 * for a parked run from any later request. One object over its parts (src/server/registry/): a
 * run's start, its life here, the adoption of parked runs, the thread logs and their followers, the
 * steering of runs on any instance, and the shutdown.
 */
export class RunRegistry {
  readonly #settings: {
    readonly store: Store;
    readonly env: Env;
    readonly logger: Logger;
    readonly relay: ClusterRelay | undefined;
    readonly policy: ConcurrencyPolicy;
    readonly maxFollowerBytes: number;
    readonly followerGraceMs: number;
  };
  readonly #runs: LiveRuns;
  readonly #logs: ThreadLogs;
  readonly #upkeep: LeaseUpkeep;
  readonly #launcher: RunLauncher;
  readonly #starts: RunStart;
  readonly #adoption: RunAdoption;
  readonly #following: Subscriptions;
  readonly #control: RunControl;
  readonly #end: RegistryShutdown;

  constructor(runtime: AgentRuntime, store: Store, options: RegistryOptions = {}) {
    const env = runtime.env;
    const logger = options.logger ?? silentLogger;
    const relay = options.bus === undefined ? undefined : new ClusterRelay(options.bus, logger);
    const policy = options.policy ?? 'reject';
    this.#settings = {
      store,
      env,
      logger,
      relay,
      policy,
      maxFollowerBytes: options.maxFollowerBytes ?? 1024 * 1024,
      followerGraceMs: options.followerGraceMs ?? 2_000,
    };
    // Each part gets only what it uses of the others (its host), so that it can be specified alone.
    const leases = new RunLeases(store, env, options.leases);
    // Every checkpoint of a run here carries the lease it holds its thread by (a process that lost it
    // writes nothing more) and what its agent was when it started (whether a crash may take it up).
    const fence = { owner: leases.owner };
    const runOptions = (agentId: string): RunOptions => {
      const agentDigest = agentDigestOf(runtime.registries, agentId, options.codeVersion?.());
      return { waitForDecisions: true, checkpoint: agentDigest === undefined ? { fence } : { fence, agentDigest } };
    };
    const locks = new ThreadLocks();
    const runs = new LiveRuns((run) => release.isReleasing(run));
    const logs = new ThreadLogs({ store, logger, relay, ...threadLogLimits(options), isBusy: (threadId) => runs.current(threadId) !== undefined });
    const appendTerminal = (threadId: string, runId: string, termination: TerminationReason): Promise<void> =>
      logs.appendTerminal(threadId, runId, termination);
    // The run of an expired lease, still running: taken up here when the server (or its agent) says so.
    const recovery = options.recovery;
    const fate =
      recovery === undefined
        ? undefined
        : (run: RunRecord, stopped: string): RecoveryFate =>
            recoveryFate(
              run,
              { recovery, agents: runtime.registries.agents, digest: (agentId) => agentDigestOf(runtime.registries, agentId, options.codeVersion?.()) },
              stopped,
            );
    const upkeep = new LeaseUpkeep({
      leases,
      store,
      env,
      logger,
      locks,
      runs: () => runs.values(),
      isLive: (runId) => runs.has(runId),
      appendTerminal,
      ...(fate !== undefined ? { fate, recover: (runId: string) => this.#takeUpAbandoned(runId) } : {}),
    });
    const release: ParkedRelease = new ParkedRelease({ store, logger, locks, isLive: (run) => runs.get(run.runId) === run });
    const quiet = (): void => {
      try {
        options.onQuiet?.();
      } catch (e) {
        logger.error('onQuiet failed', errorFields(e));
      }
    };
    const endAbandoned = upkeep.endAbandoned.bind(upkeep);
    const closing = (): boolean => this.#end.closing;
    const observer = options.observer;
    const launcher = new RunLauncher({
      env,
      logger,
      logs,
      runs,
      releaseLease: (t, r) => leases.release(t, r),
      noted: (run, event) => release.noted(run, event),
      quiet,
    });
    const adoption = new RunAdoption({ runtime, store, logger, leases, locks, runs, launcher, observer, logs, closing, runOptions });
    this.#runs = runs;
    this.#logs = logs;
    this.#upkeep = upkeep;
    this.#launcher = launcher;
    this.#adoption = adoption;
    this.#starts = new RunStart({
      runtime,
      store,
      env,
      logger,
      policy,
      leases,
      locks,
      relay,
      runs,
      launcher,
      observer,
      touch: (t) => void logs.log(t),
      endAbandoned,
      closing,
      runOptions,
    });
    this.#following = new Subscriptions({ store, relay, logs, runs });
    const isReleasing = (run: LiveRun): boolean => release.isReleasing(run);
    this.#control = new RunControl({ store, env, logger, leases, locks, relay, runs, isReleasing, endAbandoned, adopt: (r) => adoption.adopt(r) });
    const releaseAll = (parked: Iterable<LiveRun>): Promise<number> => release.releaseAll(parked);
    this.#end = new RegistryShutdown({
      store,
      env,
      logger,
      leases,
      relay,
      runs: () => runs.values(),
      stopUpkeep: () => upkeep.stop(),
      flushLogs: () => logs.flush(),
      releaseAll,
      quiet,
    });
  }

  /** Listens to the bus: other instances' frames for the followers here, commands for the runs here. */
  attachBus(): Promise<void> {
    return this.#control.attachBus();
  }

  /** Bytes a stream's client may leave unread before it is dropped. */
  get maxFollowerBytes(): number {
    return this.#settings.maxFollowerBytes;
  }

  /** How long a stream's client may stay above `maxFollowerBytes`. */
  get followerGraceMs(): number {
    return this.#settings.followerGraceMs;
  }

  /** The time on the runtime's clock. */
  now(): number {
    return this.#settings.env.clock.now();
  }

  /** Tells that a client was dropped for not reading. */
  followerDropped(fields: { readonly thread: string; readonly queuedBytes: number }): void {
    this.#settings.logger.warn('slow client dropped', { thread: fields.thread, queued_bytes: fields.queuedBytes });
  }

  /** The cluster bus: `none` without one, else whether its notifications arrive. */
  get busStatus(): 'none' | 'listening' | 'down' {
    return this.#settings.relay === undefined ? 'none' : this.#settings.relay.status;
  }

  get policy(): ConcurrencyPolicy {
    return this.#settings.policy;
  }

  /** How many runs this instance is executing or holding parked. */
  get liveRuns(): number {
    return this.#runs.size;
  }

  /** How many thread logs are in memory. */
  get threadLogs(): number {
    return this.#logs.size;
  }

  log(threadId: string): ThreadLog {
    return this.#logs.log(threadId);
  }

  /** Starts a run on a thread; the run goes on whatever happens to the caller (`RunStart`). */
  start(request: StartRequest): Promise<RegistryResult<StartedRun>> {
    return this.#starts.start(request);
  }

  /**
   * The run of a lease that expired, taken up here: the mailbox job its dead instance had claimed on
   * its thread is acknowledged (the run is that job's work going on; re-queued, it would run again).
   */
  async #takeUpAbandoned(runId: string): Promise<boolean> {
    const taken = await this.#adoption.recover(runId);
    if (!taken) return false;
    const { store, env, logger } = this.#settings;
    await acknowledgeJobOf(runId, store, env.clock.now()).catch((e: unknown) =>
      logger.error('mailbox job of a resumed run not acknowledged', { run: runId, ...errorFields(e) }),
    );
    return true;
  }

  /** Takes up a run left running in the store by a process that died (`RunAdoption.recover`). */
  recover(runId: string): Promise<boolean> {
    return this.#adoption.recover(runId);
  }

  /** Takes up a run parked in the store that no live instance holds (`RunAdoption.adopt`). */
  adopt(runOrThread: string): Promise<boolean> {
    return this.#adoption.adopt(runOrThread);
  }

  /** The calls a run waits on, wherever it is parked, without taking it up (`RunAdoption.waitingAnywhere`). */
  waitingAnywhere(runOrThread: string): Promise<{ readonly runId: string; readonly threadId: string; readonly calls: readonly WaitingCall[] } | undefined> {
    return this.#adoption.waitingAnywhere(runOrThread);
  }

  /** Registers what sees every frame of this instance's runs (`RunWatcher`); returns its removal. */
  watch(watcher: RunWatcher): () => void {
    return this.#launcher.watch(watcher);
  }

  /** A thread was deleted: what is kept by its id goes, unless a run holds it (`ThreadLogs.forget`). */
  forget(threadId: string): Promise<void> {
    return this.#logs.forget(threadId);
  }

  /** Decisions for the parked run of a thread or a run id here (`RunControl.decide`). */
  decide(runOrThread: string, decisions: readonly Decision[], messages: readonly Message[] = []): RegistryResult<{ runId: string }> {
    return this.#control.decide(runOrThread, decisions, messages);
  }

  /** Cancels a run here cooperatively (`RunControl.cancel`). */
  cancel(runOrThread: string): RegistryResult<{ runId: string }> {
    return this.#control.cancel(runOrThread);
  }

  /** The live view of a run (undefined once it is only in the store). */
  live(runId: string): { readonly status: RunStatus; readonly threadId: string; readonly agentId: string; readonly createdAt: number } | undefined {
    const run = this.#runs.visible(this.#runs.get(runId));
    return run === undefined ? undefined : { status: run.status, threadId: run.threadId, agentId: run.agentId, createdAt: run.createdAt };
  }

  /**
   * Resolves with the run's termination once it ends here — with a frame or without one (a parked
   * run cancelled sends none); `undefined` for a run not here.
   */
  ended(runId: string): Promise<TerminationReason> | undefined {
    return this.#runs.visible(this.#runs.get(runId))?.handle.done.then((r) => r.termination);
  }

  /** The parked run of a thread or a run id and the calls it waits on; `undefined` when none waits. */
  waiting(runOrThread: string): { readonly runId: string; readonly threadId: string; readonly calls: readonly WaitingCall[] } | undefined {
    return this.#adoption.waiting(runOrThread);
  }

  /** Resolves when the run's current segment ends, with its termination (`Subscriptions.segmentEnd`). */
  segmentEnd(runId: string, fromSeq: number): Promise<TerminationReason | undefined> {
    return this.#following.segmentEnd(runId, fromSeq);
  }

  /** The run in flight or parked on a thread, and where its frames start in the thread log. */
  currentRun(threadId: string): { readonly runId: string; readonly status: RunStatus; readonly fromSeq: number } | undefined {
    const run = this.#runs.held(this.#runs.current(threadId));
    return run === undefined ? undefined : { runId: run.runId, status: run.status, fromSeq: run.fromSeq };
  }

  /** Where a thread's stream stands now (`Subscriptions.lastSeq`). */
  lastSeq(threadId: string): Promise<number> {
    return this.#following.lastSeq(threadId);
  }

  /** Subscribes to a thread's log, with a resync for a follower the ring left behind (`Subscriptions.subscribe`). */
  subscribe(
    threadId: string,
    since: number | undefined,
    onItem: (item: LogItem) => void,
    options: { readonly scope?: 'thread' | 'run' } = {},
  ): Promise<() => void> {
    return this.#following.subscribe(threadId, since, onItem, options);
  }

  /** Cancels a run wherever it runs (`RunControl.cancelAnywhere`). */
  cancelAnywhere(runOrThread: string): Promise<RegistryResult<{ runId: string }>> {
    return this.#control.cancelAnywhere(runOrThread);
  }

  /** Renews this instance's leases; a run whose lease was taken from it, or carries a cancel request, is stopped (`LeaseUpkeep.renew`). */
  renewLeases(): Promise<void> {
    return this.#upkeep.renew();
  }

  /** Ends the runs of leases nobody renews, leaving parked runs waiting (`LeaseUpkeep.sweep`); returns the runs ended. */
  sweepLeases(): Promise<string[]> {
    return this.#upkeep.sweep();
  }

  /** Renews leases and sweeps expired ones until `shutdown` (a server calls it; specs drive the two by hand). */
  startLeases(): void {
    this.#upkeep.start();
  }

  /** The run holding a thread: this instance's, else the lease holder's (`RunControl.activeRun`). */
  activeRun(threadId: string): Promise<{ readonly runId: string; readonly status: RunStatus } | undefined> {
    return this.#control.activeRun(threadId);
  }

  /** Sends decisions to a waiting run wherever it is (`RunControl.decideAnywhere`). */
  decideAnywhere(runOrThread: string, decisions: readonly Decision[], messages: readonly Message[] = []): Promise<RegistryResult<{ runId: string }>> {
    return this.#control.decideAnywhere(runOrThread, decisions, messages);
  }

  /** Graceful shutdown (`RegistryShutdown.shutdown`). */
  shutdown(options: { readonly graceMs?: number } = {}): Promise<void> {
    return this.#end.shutdown(options);
  }

  /** Lets go every run parked here while the server goes on (`RegistryShutdown.releaseParked`). */
  releaseParked(): Promise<number> {
    return this.#end.releaseParked();
  }

  /** Whether the registry is shutting down (no new run starts). */
  get closing(): boolean {
    return this.#end.closing;
  }

  /** Registers what ends an open stream of `threadId` when the thread is deleted (`forget`); returns its removal. */
  onForgotten(threadId: string, end: () => void): () => void {
    return this.#logs.onForgotten(threadId, end);
  }

  /** Registers what ends an open stream at shutdown; returns its removal. */
  onShutdown(close: () => void): () => void {
    return this.#end.onShutdown(close);
  }
}
