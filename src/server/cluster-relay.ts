import type { AgentEvent } from '../contract/event.ts';
import type { BusStatus, ClusterBus, ControlCommand, SharedFrame } from '../runtime/cluster-bus.ts';
import { errorFields, type Logger } from './log.ts';
import type { LogItem } from './thread-log.ts';

/**
 * What an instance shares with the others through the cluster bus (docs/server.md → Several
 * instances): its frames, appended to the shared log in order (failed appends retried: appends are
 * idempotent), and its followers of threads that may run anywhere, each pulling from the shared log
 * what it has not seen — on a notification, after the bus reconnects, and at shutdown.
 */
export class ClusterRelay {
  readonly bus: ClusterBus;
  readonly #logger: Logger;
  /** Frames waiting to reach the bus, per thread, and the flush in progress. */
  readonly #outbox = new Map<string, { frames: SharedFrame[]; flushing: Promise<void> | undefined }>();
  /** The followers here, per thread: each pulls what it has not seen. */
  readonly #followers = new Map<string, Set<() => Promise<void>>>();
  #closing = false;

  constructor(bus: ClusterBus, logger: Logger) {
    this.bus = bus;
    this.#logger = logger;
  }

  get status(): BusStatus {
    return this.bus.status;
  }

  /** Listens: other instances' appends wake the followers here, commands go to `onCommand`. */
  async attach(onCommand: (command: ControlCommand) => void): Promise<void> {
    await this.bus.listen(
      (threadId) => this.#wake(threadId),
      onCommand,
      (status, cause) => {
        if (status === 'down') {
          this.#logger.error('cluster bus down: reconnecting', errorFields(cause));
          return;
        }
        this.#logger.info('cluster bus listening');
        // Appends announced while the bus was down were missed: every follower catches up from the shared log.
        for (const threadId of this.#followers.keys()) this.#wake(threadId);
      },
    );
  }

  /** Whether frames of the thread are still on their way to the bus. */
  isSharing(threadId: string): boolean {
    return this.#outbox.has(threadId);
  }

  /**
   * Sends a frame to the bus in order, batching what piles up while an append is in flight; resolves
   * once the frame (and everything before it) has been appended.
   */
  share(threadId: string, frame: SharedFrame): Promise<void> {
    let box = this.#outbox.get(threadId);
    if (box === undefined) {
      box = { frames: [], flushing: undefined };
      this.#outbox.set(threadId, box);
    }
    box.frames.push(frame);
    if (box.flushing !== undefined) return box.flushing;
    const b = box;
    b.flushing = (async () => {
      let delay = 50;
      while (b.frames.length > 0) {
        const batch = b.frames.splice(0);
        // A failed append is retried: followers on other instances must get every frame.
        for (;;) {
          try {
            await this.bus.append(threadId, batch);
            break;
          } catch (e) {
            if (this.#closing) break;
            this.#logger.error('bus append failed: retrying', { thread: threadId, frames: batch.length, retry_ms: delay, ...errorFields(e) });
            await new Promise((r) => setTimeout(r, delay));
            delay = Math.min(delay * 2, 2_000);
          }
        }
      }
      b.flushing = undefined;
      if (b.frames.length === 0) this.#outbox.delete(threadId);
    })();
    return b.flushing;
  }

  /**
   * Follows a thread through the shared log (its run may be on another instance): the frames after
   * `since` (or only new ones), then each batch the bus announces — in order, none twice. `mayRead`,
   * asked before each batch, stops the follower for good once it says no (the thread was deleted and
   * its id taken by someone else).
   */
  async follow(threadId: string, since: number | undefined, onItem: (item: LogItem) => void, mayRead?: () => Promise<boolean>): Promise<() => void> {
    const bus = this.bus;
    let last = since ?? (await bus.lastSeq(threadId));
    let closed = false;
    let pulling: Promise<void> | undefined;
    let again = false;
    /** Reads what the follower has not seen; resolves when the shared log has nothing more for it. */
    const pull = (): Promise<void> => {
      if (pulling !== undefined) {
        again = true;
        return pulling;
      }
      pulling = (async () => {
        do {
          again = false;
          for (;;) {
            let frames: SharedFrame[];
            try {
              frames = await bus.read(threadId, last, 500);
              if (frames.length > 0 && mayRead !== undefined && !(await mayRead())) stop();
            } catch (e) {
              // Tried again shortly: the follower resumes from its last frame, nothing skipped.
              this.#logger.warn('shared log read failed: retrying', { thread: threadId, after: last, ...errorFields(e) });
              if (!closed) setTimeout(() => void pull(), 250);
              break;
            }
            if (frames.length === 0 || closed) break;
            for (const f of frames) {
              if (closed) break;
              last = f.seq;
              onItem({ kind: 'frame', seq: f.seq, runId: f.runId, event: JSON.parse(f.data) as AgentEvent, data: f.data });
            }
          }
        } while (again && !closed);
        pulling = undefined;
      })();
      return pulling;
    };
    let set = this.#followers.get(threadId);
    if (set === undefined) {
      set = new Set();
      this.#followers.set(threadId, set);
    }
    const stop = (): void => {
      closed = true;
      set.delete(pull);
      if (set.size === 0 && this.#followers.get(threadId) === set) this.#followers.delete(threadId);
    };
    set.add(pull);
    void pull();
    return stop;
  }

  /** Every frame appended and every follower up to date (before streams end at shutdown). */
  async settle(): Promise<void> {
    await Promise.all([...this.#outbox.values()].map((b) => b.flushing));
    await Promise.all([...this.#followers.values()].flatMap((pulls) => [...pulls].map((pull) => pull())));
  }

  /** Stops retrying failed appends (the process is going away). */
  close(): void {
    this.#closing = true;
  }

  #wake(threadId: string): void {
    for (const pull of this.#followers.get(threadId) ?? []) void pull();
  }
}
