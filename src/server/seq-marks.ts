import type { ThreadSeqStore } from '../runtime/store.ts';
import { errorFields, type Logger } from './log.ts';
import type { ThreadLog } from './thread-log.ts';

interface Mark {
  /** The mark as last written (or being written): no frame above it has been handed out. */
  reserved: number;
  /** The thread's mark writes, in order. */
  chain: Promise<void>;
}

/**
 * Keeps each thread log's `seq` durable (seed 001 §4.2) at the cost of a store write per run and per
 * `block` frames: before a frame at or above the stored mark is published the mark is raised `block`
 * ahead (the thread logs `cover` the frame's `seq + 1`); at a clean end it is set to the last frame.
 * After a restart the log goes on from the mark — after a crash above every frame a client may hold —
 * so an old `Last-Event-ID` resumes exactly (clean end) or resyncs (crash), never silently skips the
 * next run's frames nor gets again, under new ids, what a run taken up again streams anew.
 */
export class SeqMarks {
  readonly #store: ThreadSeqStore;
  readonly #block: number;
  readonly #logger: Logger;
  readonly #marks = new Map<string, Mark>();

  constructor(store: ThreadSeqStore, logger: Logger, block = 1024) {
    this.#store = store;
    this.#logger = logger;
    this.#block = Math.max(1, block);
  }

  /** Raises a new thread log to its stored mark (once per thread log). */
  async load(threadId: string, log: ThreadLog): Promise<void> {
    if (this.#marks.has(threadId)) return;
    const stored = await this.#store.loadThreadSeq(threadId);
    log.ensureAtLeast(stored);
    if (!this.#marks.has(threadId)) this.#marks.set(threadId, { reserved: stored, chain: Promise.resolve() });
  }

  /** `undefined` when `seq` is already covered by the stored mark; else the write that covers it. */
  cover(threadId: string, seq: number): Promise<void> | undefined {
    const mark = this.#mark(threadId);
    if (seq <= mark.reserved) return undefined;
    mark.reserved = seq + this.#block - 1;
    return this.#write(threadId, mark, mark.reserved);
  }

  /** Sets the mark to the log's last frame (a clean end: nothing above it was handed out). */
  settle(threadId: string, lastSeq: number): Promise<void> {
    const mark = this.#mark(threadId);
    mark.reserved = lastSeq;
    return this.#write(threadId, mark, lastSeq);
  }

  /** Forgets an evicted thread (its mark is in the store). */
  forget(threadId: string): void {
    this.#marks.delete(threadId);
  }

  /** Resolves when every mark write so far has ended. */
  async flush(): Promise<void> {
    await Promise.all([...this.#marks.values()].map((m) => m.chain));
  }

  #mark(threadId: string): Mark {
    let mark = this.#marks.get(threadId);
    if (mark === undefined) {
      mark = { reserved: 0, chain: Promise.resolve() };
      this.#marks.set(threadId, mark);
    }
    return mark;
  }

  #write(threadId: string, mark: Mark, seq: number): Promise<void> {
    // A failed write is logged and the stream goes on (the run's own checkpoints fail on a store that
    // is down): only a crash before the next good write could then hand out a sequence number twice.
    mark.chain = mark.chain.then(() =>
      this.#store
        .saveThreadSeq(threadId, seq)
        .catch((e: unknown) => this.#logger.error('thread sequence mark not saved', { thread: threadId, seq, ...errorFields(e) })),
    );
    return mark.chain;
  }
}
