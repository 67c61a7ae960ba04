import { serialiseEvent, type AgentEvent } from '../../contract/event.ts';
import type { TerminationReason } from '../../contract/lifecycle.ts';
import type { ThreadSeqStore } from '../../runtime/store.ts';
import type { ClusterRelay } from '../cluster-relay.ts';
import { errorFields, type Logger } from '../log.ts';
import { SeqMarks } from '../seq-marks.ts';
import { ThreadLog, type LogFrame } from '../thread-log.ts';
import type { RegistryOptions } from './types.ts';

/** What the thread logs need of the registry they serve. */
export interface ThreadLogsHost {
  readonly store: ThreadSeqStore;
  readonly logger: Logger;
  /** The cluster bus's side of this instance: with one, the shared log is the durable one. */
  readonly relay: ClusterRelay | undefined;
  /** Frames and bytes each thread's ring keeps for reconnects. */
  readonly capacity: number;
  readonly ringBytes: number;
  /** Logs, and bytes of all rings together, kept before the oldest idle logs go. */
  readonly maxThreadLogs: number;
  readonly maxReplayBytes: number;
  /** Frames a log may hand out beyond its stored `seq` mark before the mark is raised again. */
  readonly seqBlock: number;
  /** Whether a run holds the thread (its log is never evicted then). */
  isBusy(threadId: string): boolean;
}

/** The sizes of the thread logs: the registry's options, or their defaults. */
export function threadLogLimits(options: RegistryOptions): Pick<ThreadLogsHost, 'capacity' | 'ringBytes' | 'maxThreadLogs' | 'maxReplayBytes' | 'seqBlock'> {
  return {
    capacity: options.replayBufferCapacity ?? 1024,
    ringBytes: options.replayBufferBytes ?? 1024 * 1024,
    maxThreadLogs: options.maxThreadLogs ?? 10_000,
    maxReplayBytes: options.maxReplayBytes ?? 32 * 1024 * 1024,
    seqBlock: options.seqBlock ?? 1024,
  };
}

/**
 * The replay buffers: each thread's log in memory (its ring of recent frames, its `seq`), kept
 * durable by the `seq` marks without a bus (with one, by the shared log), the frames of runs
 * published into them in order, and idle logs evicted past the limits without their `seq` going back.
 */
export class ThreadLogs {
  readonly #host: ThreadLogsHost;
  readonly #logs = new Map<string, ThreadLog>();
  /** The last `seq` of threads whose log was evicted. */
  readonly #evictedSeq = new Map<string, number>();
  /** The durable `seq` of thread logs without a bus (with one, the shared log is durable). */
  readonly #marks: SeqMarks;
  /** Frames of a thread waiting for its mark to be raised, the last in line. */
  readonly #publishing = new Map<string, Promise<void>>();
  /** What ends each open stream of a thread, by thread (`onForgotten`). */
  readonly #forgotten = new Map<string, Set<() => void>>();

  constructor(host: ThreadLogsHost) {
    this.#host = host;
    this.#marks = new SeqMarks(host.store, host.logger, host.seqBlock);
  }

  /** How many thread logs are in memory. */
  get size(): number {
    return this.#logs.size;
  }

  log(threadId: string): ThreadLog {
    let log = this.#logs.get(threadId);
    if (log === undefined) {
      log = new ThreadLog(this.#host.capacity, this.#host.ringBytes);
      log.ensureAtLeast(this.#evictedSeq.get(threadId) ?? 0);
      this.#evictedSeq.delete(threadId);
    } else {
      // Most recently used last: eviction takes the oldest idle threads first.
      this.#logs.delete(threadId);
    }
    this.#logs.set(threadId, log);
    return log;
  }

  /** Raises the thread's log to its stored mark (once per log; a log with a bus has none stored). */
  loadMark(threadId: string, log: ThreadLog): Promise<void> {
    return this.#marks.load(threadId, log);
  }

  /**
   * Readies the log for a run's frames; returns its `seq` before them. With a bus the log goes on
   * from the shared log's; without, the mark is raised first, so the run's first frames go out at once.
   */
  async open(threadId: string): Promise<number> {
    const log = this.log(threadId);
    const relay = this.#host.relay;
    if (relay !== undefined) {
      log.ensureAtLeast(await relay.bus.lastSeq(threadId));
    } else {
      await this.#marks.load(threadId, log);
      await this.#marks.cover(threadId, log.lastSeq + 1);
    }
    return log.lastSeq;
  }

  /** A run's frame into its thread's log; what it returns settles once the frame is out. */
  publish(run: { readonly runId: string; readonly threadId: string }, event: AgentEvent): void | Promise<void> {
    const log = this.log(run.threadId);
    const relay = this.#host.relay;
    if (relay === undefined) {
      const frame = log.next(run.runId, event);
      const cover = this.#coverAbove(run.threadId, frame.seq);
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
    const shared = relay.share(run.threadId, { seq: frame.seq, runId: frame.runId, data: frame.data });
    // A frame reaches this instance's clients once it is in the shared log: should the instance die
    // first, no client holds an id the instance that takes the run up gives to another frame. The run
    // does not wait for it, but for its terminal frame (a client that saw it and goes on on another
    // instance finds the thread's sequence where it stopped).
    const delivered = shared.then(() => void log.publish(frame));
    if (event.event_type === 'run_finish') return delivered;
  }

  /** A run ended here: without a bus, its thread's mark comes down to the last frame once it is out. */
  ended(threadId: string): void {
    if (this.#host.relay !== undefined) return;
    // A clean end: a client holding the last frame resumes exactly after a restart.
    const settle = (): void => void this.#marks.settle(threadId, this.log(threadId).lastSeq);
    const pending = this.#publishing.get(threadId);
    if (pending === undefined) settle();
    else void pending.then(settle);
  }

  /** Appends a run's terminal frame to its thread's log (shared or local) for the run's followers. */
  async appendTerminal(threadId: string, runId: string, termination: TerminationReason): Promise<void> {
    const event: AgentEvent = { event_type: 'run_finish', thread_id: threadId, run_id: runId, termination };
    const relay = this.#host.relay;
    if (relay !== undefined) {
      await relay.bus.appendNext(threadId, { runId, data: serialiseEvent(event) });
    } else {
      const log = this.log(threadId);
      await this.#marks.load(threadId, log);
      const frame = log.next(runId, event);
      await this.#coverAbove(threadId, frame.seq);
      log.publish(frame);
      await this.#marks.settle(threadId, log.lastSeq);
    }
  }

  /**
   * The events of a run in its thread's log that this instance can read, from the run's last
   * `run_start` on (from the first readable one when none is left): the shared log with a bus, else
   * this process's ring — empty after a restart, when what a client holds is resynced anyway.
   */
  async runTail(threadId: string, runId: string): Promise<AgentEvent[]> {
    const relay = this.#host.relay;
    if (relay !== undefined) return runTailOf(await sharedTail(relay, threadId, runId), runId);
    await this.#publishing.get(threadId);
    const log = this.#logs.get(threadId);
    if (log === undefined) return [];
    // The ring keeps a gapless tail of the log: the oldest cursor it still serves without a resync
    // marks where that tail begins (a cursor it serves, every later one it serves too).
    let low = 0;
    let high = log.publishedSeq;
    while (low < high) {
      const mid = Math.floor((low + high) / 2);
      if (log.isBehind(mid)) low = mid + 1;
      else high = mid;
    }
    const frames: LogFrame[] = [];
    log.subscribe(
      low,
      (item) => void (item.kind === 'frame' && frames.push(item)),
      (seq) => ({ kind: 'resync', seq, messages: [] }),
    )();
    return runTailOf(frames, runId);
  }

  /** Every frame on its way published and every mark written (at shutdown). */
  async flush(): Promise<void> {
    await Promise.all(this.#publishing.values());
    await this.#marks.flush();
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

  /**
   * Ends the thread's open streams here, keeping its log: the run they followed was taken over by
   * another instance (`RunHandle.fenced`) and goes on in the shared log, which a client that
   * reconnects (with its last id, to any instance) follows; here it would wait for an end that this
   * instance will never tell.
   */
  letGo(threadId: string): void {
    for (const end of [...(this.#forgotten.get(threadId) ?? [])]) end();
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
    if (this.#host.isBusy(threadId)) return;
    const log = this.#logs.get(threadId);
    // Streams open on the deleted thread end with it: whatever runs on its id next is another thread.
    for (const end of [...(this.#forgotten.get(threadId) ?? [])]) end();
    this.#forgotten.delete(threadId);
    if (log !== undefined && !this.#publishing.has(threadId)) this.#evict(threadId, log.lastSeq);
    await this.#host.relay?.bus
      .forget(threadId)
      .catch((e: unknown) => this.#host.logger.error('shared log of a deleted thread not dropped', { thread: threadId, ...errorFields(e) }));
  }

  /**
   * Keeps at most `maxThreadLogs` logs, and `maxReplayBytes` in their rings, evicting threads with no
   * run and no subscriber (oldest first out); an evicted thread's `seq` is remembered, so it never goes back.
   */
  evictIdle(): void {
    const { maxThreadLogs, maxReplayBytes, relay } = this.#host;
    let bytes = 0;
    for (const log of this.#logs.values()) bytes += log.bytes;
    if (this.#logs.size <= maxThreadLogs && bytes <= maxReplayBytes) return;
    for (const [id, log] of this.#logs) {
      if (this.#logs.size <= maxThreadLogs && bytes <= maxReplayBytes) break;
      if (this.#host.isBusy(id) || log.subscribers > 0 || relay?.isSharing(id) === true) continue;
      if (this.#publishing.has(id)) continue;
      this.#evict(id, log.lastSeq);
      bytes -= log.bytes;
    }
  }

  /**
   * `undefined` when the stored mark is above `seq` already; else the write that puts it above. A
   * frame goes out only below the stored mark, so after a crash the mark is above every frame a
   * client may hold: a client back with the last one is resynced — a run taken up again streams
   * anew what it had streamed since its last write, and a client that kept that is told to drop it.
   * A clean end sets the mark to the last frame, which a client then resumes from exactly.
   */
  #coverAbove(threadId: string, seq: number): Promise<void> | undefined {
    return this.#marks.cover(threadId, seq + 1);
  }

  /** Lets a thread's log go, remembering where its `seq` stood so that it never goes back. */
  #evict(threadId: string, lastSeq: number): void {
    this.#evictedSeq.set(threadId, lastSeq);
    this.#logs.delete(threadId);
    this.#marks.forget(threadId);
  }
}

/** Frames of a thread read from the shared log at once, when reading back for a run's last `run_start`. */
const SHARED_PAGE = 500;

/**
 * The shared log's frames from the last `run_start` of `runId` on, read back a page at a time from
 * the end (a thread's earlier runs are not read); all of it when the run has none.
 */
async function sharedTail(relay: ClusterRelay, threadId: string, runId: string): Promise<{ readonly runId: string; readonly event: AgentEvent }[]> {
  const pages: { readonly runId: string; readonly event: AgentEvent }[][] = [];
  let high = await relay.bus.lastSeq(threadId);
  while (high > 0) {
    const low = Math.max(0, high - SHARED_PAGE);
    const top = high;
    // Seqs the log skipped would let a read run past the page: what is past it was read already.
    const page = (await relay.bus.read(threadId, low, top - low))
      .filter((f) => f.seq <= top && f.runId === runId)
      .map((f) => ({ runId: f.runId, event: JSON.parse(f.data) as AgentEvent }));
    pages.unshift(page);
    if (page.some((f) => f.event.event_type === 'run_start')) break;
    high = low;
  }
  return pages.flat();
}

/** The events of `runId` among `frames`, from its last `run_start` on. */
function runTailOf(frames: readonly { readonly runId: string; readonly event: AgentEvent }[], runId: string): AgentEvent[] {
  const events = frames.filter((f) => f.runId === runId).map((f) => f.event);
  const start = events.findLastIndex((e) => e.event_type === 'run_start');
  return start < 0 ? events : events.slice(start);
}
