// Over 500 lines: the registry is one state machine (runs, thread logs, leases, locks) whose parts
// read and change each other's state; what stands alone is in its own files (live-run, lease-upkeep,
// parked-release, seq-marks, thread-log, thread-locks).
import { serialiseEvent, type AgentEvent } from '../contract/event.ts';
import type { RunStatus, TerminationReason } from '../contract/lifecycle.ts';
import type { Message } from '../contract/message.ts';
import type { AgentRuntime, RunHandle } from '../runtime/agent-runtime.ts';
import type { Env } from '../runtime/env.ts';
import type { AgentRunResult } from '../contract/run-result.ts';
import type { Decision } from '../contract/decision.ts';
import type { ClusterBus, ControlCommand } from '../runtime/cluster-bus.ts';
import { StoreFailure, type Store } from '../runtime/store.ts';
import { ClusterRelay } from './cluster-relay.ts';
import { parkedCallsOf, trackEvent, waitingCallOf, type LiveRun, type WaitingCall } from './live-run.ts';
import { LeaseUpkeep } from './lease-upkeep.ts';
import { ParkedRelease } from './parked-release.ts';
import { errorFields, silentLogger, type Logger } from './log.ts';
import { asPrincipal, currentPrincipal, mayReach } from './principal.ts';
import { RunLeases, type LeaseOptions } from './run-leases.ts';
import { SeqMarks } from './seq-marks.ts';
import { reachableRun, storedRun } from './stored-runs.ts';
import { ThreadLocks } from './thread-locks.ts';
import { ThreadLog, type LogItem } from './thread-log.ts';

export { ThreadLog, backlogOf, type Backlog, type LogFrame, type LogItem, type ResyncFrame } from './thread-log.ts';
export { parkedCallsOf, type WaitingCall } from './live-run.ts';

export type ConcurrencyPolicy = 'reject' | 'supersede';

export interface RegistryOptions {
  readonly policy?: ConcurrencyPolicy;
  /** Shares thread logs and run control with other instances on the same database. */
  readonly bus?: ClusterBus;
  /** Frames each thread keeps for reconnects (default 1024). */
  readonly replayBufferCapacity?: number;
  /** Bytes of serialised events each thread keeps for reconnects (default 1 MiB; the latest frame always). */
  readonly replayBufferBytes?: number;
  /** Thread logs kept in memory (default 10,000); the oldest idle ones go first. */
  readonly maxThreadLogs?: number;
  /** Bytes all thread logs' rings may hold together (default 32 MiB); past it the oldest idle logs go first. */
  readonly maxReplayBytes?: number;
  /** Thread leases: this instance's name, their length, how often expired ones are swept (`startLeases`). */
  readonly leases?: LeaseOptions;
  /** Bytes a stream's client may leave unread before it is dropped (default 1 MiB; `logStream`). */
  readonly maxFollowerBytes?: number;
  /** How long a client may stay above `maxFollowerBytes` before it is dropped (default 2 s). */
  readonly followerGraceMs?: number;
  /** Frames a thread log may hand out beyond its stored `seq` mark before the mark is raised again (default 1024). */
  readonly seqBlock?: number;
  /** Where each run's start and end, its errors, and bus failures are told (default: nowhere). */
  readonly logger?: Logger;
  /** Told when a run ends and when a stream closes: the moments a server may go quiet (`IdleCollector`). */
  readonly onQuiet?: () => void;
  /** Sees every run this registry starts, and may wrap how it starts (`awaken serve --record` writes a transcript of each). */
  readonly observer?: RunObserver;
}

/** How the registry starts a run: the runtime's `start`, with the sink its frames go to. */
export type RunStarter = (sink: { emit(event: AgentEvent): void | Promise<void> }) => ReturnType<AgentRuntime['start']>;

/**
 * Sees each new run as it starts, and each parked run taken up again from the store (`resumed`: after
 * a reload or a restart, `start` revives it and it emits nothing before a decision): it calls `start`
 * itself, and may wrap the sink and the handle it returns.
 */
export interface RunObserver {
  /** `owner`: the principal the thread belongs to as the run starts (absent: none does). */
  observe(
    run: { readonly threadId: string; readonly runId: string; readonly agentId: string; readonly messages: readonly Message[]; readonly owner?: string; readonly resumed?: boolean },
    start: RunStarter,
    sink: Parameters<RunStarter>[0],
  ): ReturnType<RunStarter>;
}

/**
 * Sees every frame of this instance's runs as it is recorded (`watch`): the operating surface counts
 * runs, tokens and tool calls from them. `at`: the registry's clock then; `startedAt`: when this
 * instance took the run up (its start, or its revival).
 */
export type RunWatcher = (run: { readonly runId: string; readonly threadId: string; readonly agentId: string; readonly startedAt: number }, event: AgentEvent, at: number) => void;

/** Why the registry refused to start or steer a run. */
export type RegistryError =
  | { readonly code: 'thread_busy'; readonly message: string; readonly runId: string }
  | { readonly code: 'thread_paused'; readonly message: string; readonly runId: string }
  | { readonly code: 'run_not_found'; readonly message: string }
  | { readonly code: 'thread_not_found'; readonly message: string }
  | { readonly code: 'not_waiting'; readonly message: string }
  | { readonly code: 'target_not_found'; readonly message: string }
  | { readonly code: 'start_failed'; readonly message: string }
  | { readonly code: 'shutting_down'; readonly message: string };

export type RegistryResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: RegistryError };

interface ThreadEntry {
  readonly log: ThreadLog;
  /** The run in flight or parked (suspended, waiting for decisions). */
  current?: LiveRun;
}

export interface StartRequest {
  readonly threadId: string;
  readonly agentId?: string;
  readonly messages: readonly Message[];
  /** Start even when the thread is paused on a suspension: the parked run is cancelled first. */
  readonly discardPause?: boolean;
  /** Answer again from this stored message (`RunRequest.rewindTo`). */
  readonly rewindTo?: string;
}

export interface StartedRun {
  readonly runId: string;
  readonly threadId: string;
  /** The sequence number of the thread log before the run's first frame. */
  readonly fromSeq: number;
  readonly done: Promise<AgentRunResult | undefined>;
}

/**
 * The run registry (seed 001 §4): runs live independently of the requests that start or watch them,
 * one in-flight run per thread (`reject` or `supersede`), every event in the thread's log, decisions
 * for a parked run from any later request.
 */
export class RunRegistry {
  readonly #runtime: AgentRuntime;
  readonly #store: Store;
  readonly #env: Env;
  readonly #policy: ConcurrencyPolicy;
  readonly #capacity: number;
  readonly #ringBytes: number;
  readonly #threads = new Map<string, ThreadEntry>();
  readonly #runs = new Map<string, LiveRun>();
  /** Starts in progress per thread, serialised so two requests never both pass the busy check. */
  readonly #locks = new ThreadLocks();
  /** The cluster bus and what this instance shares through it (none without one). */
  readonly #relay: ClusterRelay | undefined;
  readonly #maxIdleThreads: number;
  readonly #maxReplayBytes: number;
  /** The last `seq` of threads whose log was evicted. */
  readonly #evictedSeq = new Map<string, number>();
  readonly #logger: Logger;
  /** The durable `seq` of thread logs without a bus (with one, the shared log is durable). */
  readonly #marks: SeqMarks;
  /** Frames of a thread waiting for its mark to be raised, the last in line. */
  readonly #publishing = new Map<string, Promise<void>>();
  /** What ends each open stream of a thread, by thread (`onForgotten`). */
  readonly #forgotten = new Map<string, Set<() => void>>();
  readonly #maxFollowerBytes: number;
  readonly #followerGraceMs: number;
  #closing = false;
  /** The open streams' closers, called at shutdown. */
  readonly #streams = new Set<() => void>();
  readonly #leases: RunLeases;
  readonly #upkeep: LeaseUpkeep;
  readonly #onQuiet: (() => void) | undefined;
  readonly #observer: RunObserver | undefined;
  readonly #release: ParkedRelease;
  readonly #watchers = new Set<RunWatcher>();

  constructor(runtime: AgentRuntime, store: Store, options: RegistryOptions = {}) {
    this.#runtime = runtime;
    this.#store = store;
    this.#env = runtime.env;
    this.#policy = options.policy ?? 'reject';
    this.#capacity = options.replayBufferCapacity ?? 1024;
    this.#ringBytes = options.replayBufferBytes ?? 1024 * 1024;
    this.#relay = options.bus === undefined ? undefined : new ClusterRelay(options.bus, options.logger ?? silentLogger);
    this.#maxIdleThreads = options.maxThreadLogs ?? 10_000;
    this.#maxReplayBytes = options.maxReplayBytes ?? 32 * 1024 * 1024;
    this.#logger = options.logger ?? silentLogger;
    this.#maxFollowerBytes = options.maxFollowerBytes ?? 1024 * 1024;
    this.#followerGraceMs = options.followerGraceMs ?? 2_000;
    this.#leases = new RunLeases(store, this.#env, options.leases);
    this.#marks = new SeqMarks(store, this.#logger, options.seqBlock ?? 1024);
    this.#onQuiet = options.onQuiet;
    this.#observer = options.observer;
    this.#upkeep = new LeaseUpkeep({
      leases: this.#leases,
      store,
      env: this.#env,
      logger: this.#logger,
      locks: this.#locks,
      runs: () => this.#runs.values(),
      isLive: (runId) => this.#runs.has(runId),
      appendTerminal: (threadId, runId, termination) => this.#appendTerminal(threadId, runId, termination),
    });
    this.#release = new ParkedRelease({ store, logger: this.#logger, locks: this.#locks, isLive: (run) => this.#runs.get(run.runId) === run });
  }

  /** Listens to the bus: other instances' frames for the followers here, commands for the runs here. */
  async attachBus(): Promise<void> {
    await this.#relay?.attach((command: ControlCommand) => {
      const run = this.#runs.get(command.runId);
      if (run === undefined || run.status === 'done' || this.#release.isReleasing(run)) return;
      if (command.action === 'cancel') {
        run.stopRequested = true;
        run.handle.cancel();
      } else run.handle.decide(command.decisions);
    });
  }

  /** Bytes a stream's client may leave unread before it is dropped. */
  get maxFollowerBytes(): number {
    return this.#maxFollowerBytes;
  }

  /** How long a stream's client may stay above `maxFollowerBytes`. */
  get followerGraceMs(): number {
    return this.#followerGraceMs;
  }

  /** The time on the runtime's clock. */
  now(): number {
    return this.#env.clock.now();
  }

  /** Tells that a client was dropped for not reading. */
  followerDropped(fields: { readonly thread: string; readonly queuedBytes: number }): void {
    this.#logger.warn('slow client dropped', { thread: fields.thread, queued_bytes: fields.queuedBytes });
  }

  /** The cluster bus: `none` without one, else whether its notifications arrive. */
  get busStatus(): 'none' | 'listening' | 'down' {
    return this.#relay === undefined ? 'none' : this.#relay.status;
  }

  get policy(): ConcurrencyPolicy {
    return this.#policy;
  }

  /** How many runs this instance is executing or holding parked. */
  get liveRuns(): number {
    return this.#runs.size;
  }

  /** How many thread logs are in memory. */
  get threadLogs(): number {
    return this.#threads.size;
  }

  log(threadId: string): ThreadLog {
    let entry = this.#threads.get(threadId);
    if (entry === undefined) {
      entry = { log: new ThreadLog(this.#capacity, this.#ringBytes) };
      entry.log.ensureAtLeast(this.#evictedSeq.get(threadId) ?? 0);
      this.#evictedSeq.delete(threadId);
      this.#threads.set(threadId, entry);
    } else {
      // Most recently used last: eviction takes the oldest idle threads first.
      this.#threads.delete(threadId);
      this.#threads.set(threadId, entry);
    }
    return entry.log;
  }

  /** Starts a run on a thread; the run goes on whatever happens to the caller. */
  start(request: StartRequest): Promise<RegistryResult<StartedRun>> {
    return this.#locks.exclusive(request.threadId, () => this.#start(request));
  }

  async #start(request: StartRequest): Promise<RegistryResult<StartedRun>> {
    if (this.#closing) return fail({ code: 'shutting_down', message: 'the server is shutting down: try again on another instance or after its restart' });
    // With access control, a start claims a new thread for its principal; another's thread is not there.
    if (!(await mayReach(this.#store, request.threadId, 'write'))) return fail({ code: 'thread_not_found', message: `thread not found: ${request.threadId}` });
    const owner = await this.#store.threadOwner(request.threadId);
    this.log(request.threadId);
    const current = (this.#threads.get(request.threadId) as ThreadEntry).current;
    if (current !== undefined) {
      // A run past its terminal frame is only writing its last checkpoint: the new one waits for it.
      if (current.status !== 'done') {
        const refused = this.#refusal(request, current);
        if (refused !== undefined) return fail(refused);
        current.stopRequested = true;
        current.handle.cancel();
      }
      await current.handle.done.catch(() => undefined);
      await current.released;
    }
    // The thread's lease in the store: one run in flight per thread across every instance.
    const runId = this.#env.ids.next('run');
    const leased = await this.#takeLease(request, runId);
    if (!leased.ok) return leased;
    // A run parked in the store with no instance holding it (its process died or shut down) pauses
    // the thread as a parked run here would: refused, or cancelled when the pause is discarded.
    const parked = await storedRun(this.#store, request.threadId, 'waiting', 'thread');
    if (parked !== undefined) {
      const refused = this.#refusal(request, { runId: parked.run_id, status: 'waiting' });
      if (refused !== undefined) {
        await this.#leases.release(request.threadId, runId);
        return fail(refused);
      }
      await this.#store.finishRun(parked.run_id, { type: 'cancelled' }, this.#env.clock.now());
      this.#logger.info('parked run cancelled: a new run discarded its pause', { run: parked.run_id, thread: request.threadId });
    }
    const agentId = request.agentId ?? this.#runtime.agentIds()[0] ?? '';
    const start: RunStarter = (sink) =>
      this.#runtime.start(
        {
          runId,
          threadId: request.threadId,
          ...(request.agentId !== undefined ? { agentId: request.agentId } : {}),
          messages: request.messages,
          ...(request.rewindTo !== undefined ? { rewindTo: request.rewindTo } : {}),
        },
        sink,
        { waitForDecisions: true },
      );
    const observer = this.#observer;
    const launched = await this.#launch(request.threadId, runId, agentId, owner, request.messages, 'running', (sink) =>
      observer === undefined ? start(sink) : observer.observe({ threadId: request.threadId, runId, agentId, messages: request.messages, ...(owner !== undefined ? { owner } : {}) }, start, sink),
    );
    if (!launched.ok) return launched;
    const { run, done } = launched.value;
    return { ok: true, value: { runId: run.runId, threadId: run.threadId, fromSeq: run.fromSeq, done } };
  }

  /**
   * Runs what `begin` starts (a new run, or a parked run revived) as this instance's run of the
   * thread, holding its lease already: its frames go to the thread log (the `seq` mark raised first),
   * its end frees the thread. The lease is released when it does not start.
   */
  async #launch(
    threadId: string,
    runId: string,
    agentId: string,
    owner: string | undefined,
    input: readonly Message[],
    status: RunStatus,
    begin: (sink: { emit(event: AgentEvent): void | Promise<void> }) => Promise<{ ok: true; value: RunHandle } | { ok: false; error: { code: string } }>,
  ): Promise<RegistryResult<{ run: LiveRun; done: Promise<AgentRunResult | undefined> }>> {
    const log = this.log(threadId);
    const entry = this.#threads.get(threadId) as ThreadEntry;
    if (this.#relay !== undefined) {
      log.ensureAtLeast(await this.#relay.bus.lastSeq(threadId));
    } else {
      await this.#marks.load(threadId, log);
      // The run's first frames go out at once: the mark is raised before the run starts.
      await this.#marks.cover(threadId, log.lastSeq + 1);
    }
    const fromSeq = log.lastSeq;
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
      await this.#leases.release(threadId, runId).catch((e: unknown) => this.#logger.error('lease not released', { thread: threadId, run: runId, ...errorFields(e) }));
      return fail({ code: 'start_failed', message: 'message' in started.error ? String(started.error.message) : started.error.code });
    }
    const handle = started.value;
    live = {
      runId: handle.runId,
      threadId,
      agentId,
      handle,
      createdAt: this.#env.clock.now(),
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
    this.#runs.set(run.runId, run);
    entry.current = run;
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

  /**
   * Takes up a run waiting for a decision in the store that no live instance holds (its process died
   * or shut down) as this instance's parked run, so a decision can reach it (durable HITL): the
   * thread's lease is taken for it (taken over when its holder's has expired), the runtime revives it
   * from its stored state, and nothing is emitted until a decision resumes it. True when the run (by
   * run id or thread id) is parked here afterwards; false when there is none, or another instance
   * holds it alive.
   */
  async adopt(runOrThread: string): Promise<boolean> {
    const here = this.#find(runOrThread);
    if (here !== undefined || this.#closing) return here?.status === 'waiting';
    const stored = await storedRun(this.#store, runOrThread, 'waiting');
    if (stored === undefined || !(await mayReach(this.#store, stored.thread_id, 'write'))) return false;
    const threadId = stored.thread_id;
    return this.#locks.exclusive(threadId, async () => {
      const current = this.#threads.get(threadId)?.current;
      if (current !== undefined) return current.runId === stored.run_id && current.status === 'waiting';
      const runId = stored.run_id;
      let taken = await this.#leases.take(threadId, runId);
      if (!taken.ok && taken.holder.run_id === runId && this.#leases.isExpired(taken.holder) && (await this.#leases.takeOver(taken.holder))) taken = { ok: true };
      if (!taken.ok) return false;
      // Taken: no one else can revive or end it now; it may have ended in between.
      if ((await this.#store.getRun(runId))?.status !== 'waiting') {
        await this.#leases.release(threadId, runId);
        return false;
      }
      const owner = await this.#store.threadOwner(threadId);
      const revive: RunStarter = (sink) => this.#runtime.revive({ threadId, runId, ...(stored.agent_id !== '' ? { agentId: stored.agent_id } : {}) }, sink);
      const observer = this.#observer;
      // The agent a revived run resolves to when the store names none: the runtime's first, as at `start`.
      const agentId = stored.agent_id !== '' ? stored.agent_id : (this.#runtime.agentIds()[0] ?? '');
      const launched = await this.#launch(threadId, runId, stored.agent_id, owner, [], 'waiting', (sink) =>
        observer === undefined ? revive(sink) : observer.observe({ threadId, runId, agentId, messages: [], ...(owner !== undefined ? { owner } : {}), resumed: true }, revive, sink),
      );
      if (!launched.ok) {
        this.#logger.error('parked run could not be revived', { run: runId, thread: threadId, error: launched.error.message });
        return false;
      }
      this.#logger.info('parked run revived', { run: runId, thread: threadId, calls: launched.value.run.waiting.size });
      return true;
    });
  }

  /**
   * The calls a run (by run id or thread id) waits on, wherever it is parked: here, else as the store
   * holds it (the thread's committed batch), without taking it up.
   */
  async waitingAnywhere(runOrThread: string): Promise<{ readonly runId: string; readonly threadId: string; readonly calls: readonly WaitingCall[] } | undefined> {
    const local = this.waiting(runOrThread);
    if (local !== undefined || this.#find(runOrThread) !== undefined) return local;
    const stored = await storedRun(this.#store, runOrThread, 'waiting');
    if (stored === undefined || !(await mayReach(this.#store, stored.thread_id, 'read'))) return undefined;
    const thread = await this.#store.loadThread(stored.thread_id);
    return { runId: stored.run_id, threadId: stored.thread_id, calls: parkedCallsOf(thread?.threadState) };
  }

  /**
   * Takes the thread's lease for a new run. Held by another run: expired, that run is ended first
   * (`sweepLeases` would); else its status in the store decides — finished (its instance died before
   * releasing): taken over; running under
   * `reject`, or waiting without `discardPause`: refused; else (supersede) the lease is stolen, the
   * holder told to stop (a durable cancel request, and the bus), and its end awaited (a lease's time
   * at most: an instance that does not answer learns at its next renewal that the thread is gone).
   */
  async #takeLease(request: StartRequest, runId: string): Promise<RegistryResult<undefined>> {
    let first = await this.#leases.take(request.threadId, runId);
    if (!first.ok && this.#leases.isExpired(first.holder) && !this.#runs.has(first.holder.run_id)) {
      // Its instance is gone: the run is ended (for its followers too) before the thread is taken.
      const holder = first.holder;
      if (await this.#leases.takeOver(holder)) await this.#upkeep.endAbandoned(holder, holder.cancel_requested ? 'cancelled' : 'interrupted');
      first = await this.#leases.take(request.threadId, runId);
    }
    if (first.ok) return { ok: true, value: undefined };
    const holder = first.holder;
    const stored = await this.#store.getRun(holder.run_id);
    if (stored?.status !== 'done' && !this.#runs.has(holder.run_id)) {
      const refused = this.#refusal(request, { runId: holder.run_id, status: stored?.status === 'waiting' ? 'waiting' : 'running' });
      if (refused !== undefined) return fail(refused);
    }
    await this.#leases.requestCancel(holder.run_id);
    await this.#relay?.bus.send({ action: 'cancel', runId: holder.run_id });
    const stolen = await this.#leases.take(request.threadId, runId, true);
    if (!stolen.ok) return fail({ code: 'thread_busy', message: `thread ${request.threadId} has a run in flight: ${stolen.holder.run_id}`, runId: stolen.holder.run_id });
    if (stored !== undefined && stored.status !== 'done') {
      for (let i = Math.ceil(this.#leases.ttlMs / 25); i > 0 && (await this.#store.getRun(holder.run_id))?.status !== 'done'; i--) await new Promise((r) => setTimeout(r, 25));
    }
    return { ok: true, value: undefined };
  }

  /**
   * Whether a start must give way to the thread's run (here or on another instance): a waiting run
   * unless the pause is discarded, a running one under `reject`. Otherwise that run is to be stopped.
   */
  #refusal(request: StartRequest, other: { readonly runId: string; readonly status: RunStatus }): RegistryError | undefined {
    const parked = other.status === 'waiting';
    if (parked && request.discardPause !== true) {
      return { code: 'thread_paused', message: `thread ${request.threadId} is waiting for a decision on run ${other.runId}`, runId: other.runId };
    }
    if (!parked && this.#policy === 'reject') return { code: 'thread_busy', message: `thread ${request.threadId} has a run in flight: ${other.runId}`, runId: other.runId };
    return undefined;
  }

  /** Registers what sees every frame of this instance's runs (`RunWatcher`); returns its removal. */
  watch(watcher: RunWatcher): () => void {
    this.#watchers.add(watcher);
    return () => void this.#watchers.delete(watcher);
  }

  #record(run: LiveRun, event: AgentEvent): void | Promise<void> {
    trackEvent(run, event, this.#logger);
    for (const watcher of this.#watchers) {
      try {
        watcher({ runId: run.runId, threadId: run.threadId, agentId: run.agentId, startedAt: run.createdAt }, event, this.#env.clock.now());
      } catch (e) {
        // A watcher only counts: the run and its followers go on without it.
        this.#logger.error('run watcher failed', errorFields(e));
      }
    }
    this.#release.noted(run, event);
    const log = this.log(run.threadId);
    if (this.#relay === undefined) {
      const frame = log.next(run.runId, event);
      const cover = this.#marks.cover(run.threadId, frame.seq);
      const before = this.#publishing.get(run.threadId);
      if (cover === undefined && before === undefined) {
        log.publish(frame);
        return;
      }
      // A frame above the stored mark waits for the mark; the frames after it wait their turn.
      const published = Promise.all([before, cover]).then(() => void log.publish(frame));
      this.#publishing.set(run.threadId, published);
      void published.then(() => {
        if (this.#publishing.get(run.threadId) === published) this.#publishing.delete(run.threadId);
      });
      return published;
    }
    const frame = log.next(run.runId, event);
    const shared = this.#relay.share(run.threadId, { seq: frame.seq, runId: frame.runId, data: frame.data });
    if (event.event_type !== 'run_finish') {
      log.publish(frame);
      return;
    }
    // A segment's terminal frame is delivered once every frame before it is in the shared log: a
    // client that saw it and goes on on another instance finds the thread's sequence where it stopped.
    return shared.then(() => void log.publish(frame));
  }

  /** A run that ended without its terminal frame (a crash) gets one, so every stream is finalised. */
  #finish(run: LiveRun, crash: string | undefined): void {
    if (!run.terminalSeen) {
      const termination = run.stopRequested ? { type: 'cancelled' as const } : { type: 'error' as const, value: crash ?? 'the run ended without a terminal event' };
      void this.#record(run, { event_type: 'run_finish', thread_id: run.threadId, run_id: run.runId, termination });
    }
    run.status = 'done';
    if (this.#relay === undefined) {
      // A clean end: the mark comes down to the last frame, so a client holding it resumes exactly after a restart.
      const threadId = run.threadId;
      const settle = (): void => void this.#marks.settle(threadId, this.log(threadId).lastSeq);
      const pending = this.#publishing.get(threadId);
      if (pending === undefined) settle();
      else void pending.then(settle);
    }
    run.released = this.#leases.release(run.threadId, run.runId).catch((e: unknown) => this.#logger.error('lease not released', { thread: run.threadId, run: run.runId, ...errorFields(e) }));
    const entry = this.#threads.get(run.threadId);
    if (entry?.current === run) delete entry.current;
    // A finished run lives on in the store; the registry keeps only what is live.
    this.#runs.delete(run.runId);
    this.#evictIdle();
    this.#quiet();
  }

  /**
   * A thread was deleted: its id may name someone else's thread next, so what this instance keeps
   * by that id goes with it — the replay ring is dropped (the `seq` goes on from where it stopped, so
   * no client's Last-Event-ID points into the old frames) and the streams that followed it are let
   * go, seeing nothing of a thread later created under the same id. With a cluster bus, the thread's
   * frames leave the shared log too (a failure is logged: the thread is gone from the store already,
   * and followers of its id stop once it is someone else's). A thread with a run is kept.
   */
  async forget(threadId: string): Promise<void> {
    // Frames still on their way to the log are the deleted thread's: they land before it goes.
    await this.#publishing.get(threadId)?.catch(() => undefined);
    const entry = this.#threads.get(threadId);
    if (entry?.current !== undefined) return;
    // Streams open on the deleted thread end with it: whatever runs on its id next is another thread.
    for (const end of [...(this.#forgotten.get(threadId) ?? [])]) end();
    this.#forgotten.delete(threadId);
    if (entry !== undefined && !this.#publishing.has(threadId)) this.#evict(threadId, entry.log.lastSeq);
    await this.#relay?.bus.forget(threadId).catch((e: unknown) => this.#logger.error('shared log of a deleted thread not dropped', { thread: threadId, ...errorFields(e) }));
  }

  /**
   * Keeps at most `maxIdleThreads` logs, and `maxReplayBytes` in their rings, evicting threads with no
   * run and no subscriber (oldest first out);
   * an evicted thread's sequence number is remembered, so its `seq` never goes back.
   */
  #evictIdle(): void {
    let bytes = 0;
    for (const entry of this.#threads.values()) bytes += entry.log.bytes;
    if (this.#threads.size <= this.#maxIdleThreads && bytes <= this.#maxReplayBytes) return;
    for (const [id, entry] of this.#threads) {
      if (this.#threads.size <= this.#maxIdleThreads && bytes <= this.#maxReplayBytes) break;
      if (entry.current !== undefined || entry.log.subscribers > 0 || this.#relay?.isSharing(id) === true) continue;
      if (this.#publishing.has(id)) continue;
      this.#evict(id, entry.log.lastSeq);
      bytes -= entry.log.bytes;
    }
  }

  /** Lets a thread's log go, remembering where its `seq` stood so that it never goes back. */
  #evict(threadId: string, lastSeq: number): void {
    this.#evictedSeq.set(threadId, lastSeq);
    this.#threads.delete(threadId);
    this.#marks.forget(threadId);
  }

  /**
   * Decisions for the parked run of a thread or a run id; any later request may send them. `messages`
   * sent with them join the thread after the calls they settle (`RunHandle.decide`).
   */
  decide(runOrThread: string, decisions: readonly Decision[], messages: readonly Message[] = []): RegistryResult<{ runId: string }> {
    const run = this.#find(runOrThread);
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
    const run = this.#find(runOrThread);
    if (run === undefined || run.status === 'done') return fail({ code: 'run_not_found', message: `no active run: ${runOrThread}` });
    run.stopRequested = true;
    run.handle.cancel();
    return { ok: true, value: { runId: run.runId } };
  }

  /** A live run by run id or thread id, when the current principal may see it (and it is not being let go). */
  #find(runOrThread: string): LiveRun | undefined {
    return this.#held(this.#runs.get(runOrThread) ?? this.#threads.get(runOrThread)?.current);
  }

  /** The run, when the current principal may see it and it is not being let go (`releaseParked`). */
  #held(run: LiveRun | undefined): LiveRun | undefined {
    const visible = this.#visible(run);
    return visible === undefined || this.#release.isReleasing(visible) ? undefined : visible;
  }

  /** The run, unless a principal is acting and the run's thread is not theirs (then it is not there). */
  #visible(run: LiveRun | undefined): LiveRun | undefined {
    const principal = currentPrincipal();
    return run === undefined || principal === undefined || run.owner === principal ? run : undefined;
  }

  /** The live view of a run (undefined once it is only in the store). */
  live(runId: string): { readonly status: RunStatus; readonly threadId: string; readonly agentId: string; readonly createdAt: number } | undefined {
    const run = this.#visible(this.#runs.get(runId));
    return run === undefined ? undefined : { status: run.status, threadId: run.threadId, agentId: run.agentId, createdAt: run.createdAt };
  }

  /** The parked run of a thread or a run id and the calls it waits on; `undefined` when none waits. */
  waiting(runOrThread: string): { readonly runId: string; readonly threadId: string; readonly calls: readonly WaitingCall[] } | undefined {
    const run = this.#find(runOrThread);
    if (run === undefined || run.status !== 'waiting') return undefined;
    return { runId: run.runId, threadId: run.threadId, calls: [...run.waiting.values()] };
  }

  /**
   * Resolves when the run's current segment ends (its next `run_finish` frame, suspended or final),
   * with that frame's termination; at once when the run already waits or is done.
   */
  async segmentEnd(runId: string, fromSeq: number): Promise<import('../contract/lifecycle.ts').TerminationReason | undefined> {
    const run = this.#runs.get(runId);
    if (run === undefined) return undefined;
    return new Promise((resolveEnd) => {
      let off: (() => void) | undefined;
      let done = false;
      void this.subscribe(
        run.threadId,
        fromSeq,
        (item) => {
          if (done || item.kind !== 'frame' || item.runId !== runId || item.event.event_type !== 'run_finish') return;
          done = true;
          off?.();
          resolveEnd(item.event.termination);
        },
        { scope: 'run' },
      ).then((unsubscribe) => {
        off = unsubscribe;
        if (done) unsubscribe();
      });
    });
  }

  /** The run in flight or parked on a thread, and where its frames start in the thread log. */
  currentRun(threadId: string): { readonly runId: string; readonly status: RunStatus; readonly fromSeq: number } | undefined {
    const run = this.#held(this.#threads.get(threadId)?.current);
    return run === undefined ? undefined : { runId: run.runId, status: run.status, fromSeq: run.fromSeq };
  }

  /**
   * Where a thread's stream stands now: the last frame delivered to its followers (the shared log's
   * last with several instances); a resync made now covers up to it.
   */
  async lastSeq(threadId: string): Promise<number> {
    if (this.#relay !== undefined) return this.#relay.bus.lastSeq(threadId);
    const log = this.log(threadId);
    await this.#marks.load(threadId, log);
    return log.publishedSeq;
  }

  /**
   * Subscribes to a thread's log; frames lost to the ring are replaced by a resync with the thread's
   * messages: the stored history (committed at every step end), plus the input of the run in flight
   * when its first step has not been committed yet.
   */
  async subscribe(threadId: string, since: number | undefined, onItem: (item: LogItem) => void, options: { readonly scope?: 'thread' | 'run' } = {}): Promise<() => void> {
    if (!(await mayReach(this.#store, threadId, 'read')) && this.#visible(this.#threads.get(threadId)?.current) === undefined) {
      throw new StoreFailure({ code: 'not_found', message: `thread not found: ${threadId}` });
    }
    // With several instances, a thread's stream follows the shared log (its runs may happen anywhere);
    // a stream of one local run (it ends with that run) reads the local ring.
    const local = options.scope === 'run' && this.#threads.get(threadId)?.current !== undefined;
    if (this.#relay !== undefined && !local) {
      // The shared log outlives this request: its follower reads on only while the thread is still
      // its principal's (an id deleted and taken by another principal names their thread then).
      const principal = currentPrincipal();
      const mayRead = principal === undefined ? undefined : () => asPrincipal(principal, () => mayReach(this.#store, threadId, 'read'));
      return this.#relay.follow(threadId, since, onItem, mayRead);
    }
    // The messages of a resync are read only for a subscriber already behind the ring; one that is not
    // subscribes without waiting, so it cannot fall behind before it is attached.
    const log = this.log(threadId);
    await this.#marks.load(threadId, log);
    const messages = log.isBehind(since) ? await this.#resyncMessages(threadId) : [];
    const off = log.subscribe(since, onItem, (seq) => ({ kind: 'resync', seq, messages }));
    return () => {
      off();
      // The last follower of an idle thread gone: its ring may now make room for others.
      this.#evictIdle();
    };
  }

  /** The thread as a resync shows it: the stored history plus the input of a run not yet committed. */
  async #resyncMessages(threadId: string): Promise<readonly Message[]> {
    const stored = (await this.#store.loadThread(threadId))?.messages ?? [];
    const current = this.#threads.get(threadId)?.current;
    const ids = new Set(stored.map((m) => m.id));
    const pending = current === undefined ? [] : current.input.filter((m) => m.id === undefined || !ids.has(m.id));
    return [...stored, ...pending];
  }

  /**
   * Cancels a run wherever it runs: here; else the instance holding its thread's lease is asked
   * (a cancel request on the lease, which it sees at its next renewal, and the bus). When that lease
   * has expired (its instance is gone) the run is ended here, at once, and the thread freed.
   */
  async cancelAnywhere(runOrThread: string): Promise<RegistryResult<{ runId: string }>> {
    const local = this.cancel(runOrThread);
    if (local.ok) return local;
    const runId = await reachableRun(this.#store, runOrThread);
    if (runId === undefined) return local;
    const threadId = (await this.#store.getRun(runId))?.thread_id;
    if (threadId !== undefined) {
      // Serialised with adoptions and sweeps of the thread here.
      const here = await this.#locks.exclusive(threadId, async () => {
        if (this.cancel(runId).ok) return true; // taken up here meanwhile
        const lease = await this.#leases.get(threadId);
        if (lease !== undefined && lease.run_id === runId) {
          await this.#leases.requestCancel(runId);
          if (this.#leases.isExpired(lease) && (await this.#leases.takeOver(lease))) await this.#upkeep.endAbandoned(lease, 'cancelled');
        } else if ((await storedRun(this.#store, runId, 'waiting')) !== undefined) {
          // Parked in the store and held by no instance: ended there (its stream ended with its suspension).
          await this.#store.finishRun(runId, { type: 'cancelled' }, this.#env.clock.now());
          this.#logger.info('parked run cancelled', { run: runId, thread: threadId });
        }
        return false;
      });
      if (here) return { ok: true, value: { runId } };
    }
    await this.#relay?.bus.send({ action: 'cancel', runId });
    return { ok: true, value: { runId } };
  }

  /** Renews this instance's leases; a run whose lease was taken from it, or carries a cancel request, is stopped (`LeaseUpkeep.renew`). */
  renewLeases(): Promise<void> {
    return this.#upkeep.renew();
  }

  /** Ends the runs of leases nobody renews, leaving parked runs waiting (`LeaseUpkeep.sweep`); returns the runs ended. */
  sweepLeases(): Promise<string[]> {
    return this.#upkeep.sweep();
  }

  /** Appends a run's terminal frame to its thread's log (shared or local) for the run's followers. */
  async #appendTerminal(threadId: string, runId: string, termination: TerminationReason): Promise<void> {
    const event: AgentEvent = { event_type: 'run_finish', thread_id: threadId, run_id: runId, termination };
    if (this.#relay !== undefined) {
      await this.#relay.bus.appendNext(threadId, { runId, data: serialiseEvent(event) });
    } else {
      const log = this.log(threadId);
      await this.#marks.load(threadId, log);
      const frame = log.next(runId, event);
      await this.#marks.cover(threadId, frame.seq);
      log.publish(frame);
      await this.#marks.settle(threadId, log.lastSeq);
    }
  }

  /** Renews leases and sweeps expired ones until `shutdown` (a server calls it; specs drive the two by hand). */
  startLeases(): void {
    this.#upkeep.start();
  }

  /** The run holding a thread: this instance's, else the lease holder's (its status from the store). */
  async activeRun(threadId: string): Promise<{ readonly runId: string; readonly status: RunStatus } | undefined> {
    const local = this.currentRun(threadId);
    if (local !== undefined) return local;
    const lease = await this.#leases.get(threadId);
    if (!(await mayReach(this.#store, threadId, 'read'))) return undefined;
    if (lease === undefined) {
      const parked = await storedRun(this.#store, threadId, 'waiting', 'thread');
      return parked === undefined ? undefined : { runId: parked.run_id, status: 'waiting' };
    }
    const stored = await this.#store.getRun(lease.run_id);
    return { runId: lease.run_id, status: stored?.status === 'waiting' ? 'waiting' : 'running' };
  }

  /**
   * Sends decisions to a waiting run wherever it is: here; parked in the store with no live instance
   * (its process died or shut down), it is taken up here first (`adopt`); else, on another instance,
   * through the bus (see `cancelAnywhere`).
   */
  async decideAnywhere(runOrThread: string, decisions: readonly Decision[], messages: readonly Message[] = []): Promise<RegistryResult<{ runId: string }>> {
    const local = this.decide(runOrThread, decisions, messages);
    if (local.ok || local.error.code !== 'run_not_found') return local;
    if (await this.adopt(runOrThread)) return this.decide(runOrThread, decisions, messages);
    if (this.#relay === undefined) return local;
    const run = await reachableRun(this.#store, runOrThread, 'waiting');
    if (run === undefined) return local;
    const threadId = (await this.#store.getRun(run))?.thread_id ?? '';
    const before = await this.#leases.get(threadId);
    await this.#relay.bus.send({ action: 'decide', runId: run, decisions });
    // The instance holding it may be gone with its lease not yet expired: the decision counts as
    // delivered once the run goes on or its holder renews the lease (it is alive); else, once the
    // lease expires, the run is taken up here and decided (never a 202 for a decision lost).
    for (let i = Math.ceil((this.#leases.ttlMs + this.#leases.sweepMs) / 25) + 40; i > 0; i--) {
      if ((await this.#store.getRun(run))?.status !== 'waiting') return { ok: true, value: { runId: run } };
      const lease = await this.#leases.get(threadId);
      // Renewed by the same holder: it is alive and has the message (a takeover by a sweep is not that).
      if (lease !== undefined && before !== undefined && lease.run_id === run && lease.owner === before.owner && lease.until > before.until) return { ok: true, value: { runId: run } };
      if (await this.adopt(run)) return this.decide(run, decisions, messages);
      await new Promise((r) => setTimeout(r, 25));
    }
    return fail({ code: 'thread_busy', message: `run ${run} is held by an instance that neither answers nor lets its lease expire`, runId: run });
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
    this.#closing = true;
    this.#upkeep.stop();
    const runs = [...this.#runs.values()].filter((r) => r.status !== 'done');
    for (const r of runs) {
      // A parked run is let go, not cancelled: it stays waiting in the store, decidable after a restart.
      if (r.status === 'waiting' && r.handle.detach()) {
        this.#logger.info('parked run left waiting at shutdown', { run: r.runId, thread: r.threadId });
        continue;
      }
      r.stopRequested = true;
      r.handle.cancel();
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const grace = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), options.graceMs ?? 10_000)));
    const ended = await Promise.race([Promise.all(runs.map((r) => r.handle.done.catch(() => undefined))).then(() => 'ended' as const), grace]);
    clearTimeout(timer);
    if (ended === 'late') {
      for (const r of runs.filter((x) => x.status !== 'done')) {
        this.#logger.warn('run still going at shutdown: marked interrupted, its thread released', { run: r.runId, thread: r.threadId });
        await this.#store.finishRun(r.runId, { type: 'error', value: 'interrupted: the server shut down while the run was going' }, this.#env.clock.now()).catch(() => false);
        await this.#leases.release(r.threadId, r.runId).catch(() => undefined);
      }
    } else {
      await Promise.all(runs.map((r) => r.released));
    }
    await Promise.all(this.#publishing.values());
    await this.#marks.flush();
    // Every frame in the shared log, and every follower of it up to date, before the streams end.
    await this.#relay?.settle();
    this.#relay?.close();
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
    return this.#release.releaseAll([...this.#runs.values()]);
  }

  /** Whether the registry is shutting down (no new run starts). */
  get closing(): boolean {
    return this.#closing;
  }

  /** Registers what ends an open stream of `threadId` when the thread is deleted (`forget`); returns its removal. */
  onForgotten(threadId: string, end: () => void): () => void {
    const ends = this.#forgotten.get(threadId) ?? new Set<() => void>();
    ends.add(end);
    this.#forgotten.set(threadId, ends);
    return () => {
      ends.delete(end);
      if (ends.size === 0 && this.#forgotten.get(threadId) === ends) this.#forgotten.delete(threadId);
    };
  }

  /** Registers what ends an open stream at shutdown; returns its removal. */
  onShutdown(close: () => void): () => void {
    this.#streams.add(close);
    return () => {
      if (this.#streams.delete(close)) this.#quiet();
    };
  }

  #quiet(): void {
    try {
      this.#onQuiet?.();
    } catch (e) {
      this.#logger.error('onQuiet failed', errorFields(e));
    }
  }
}

const fail = <T>(error: RegistryError): RegistryResult<T> => ({ ok: false, error });
