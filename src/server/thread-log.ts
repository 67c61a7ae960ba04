import type { AgentEvent } from '../contract/event.ts';
import type { Message } from '../contract/message.ts';
import { serialiseEvent } from '../contract/event.ts';

/** One retained frame of a thread's log: the thread-wide sequence number and the serialised event. */
export interface LogFrame {
  readonly kind: 'frame';
  readonly seq: number;
  readonly runId: string;
  readonly event: AgentEvent;
  readonly data: string;
}

/** Sent instead of frames a subscriber can no longer get: the thread as it is now, then the live tail. */
export interface ResyncFrame {
  readonly kind: 'resync';
  /** The last sequence number the snapshot covers: the live tail continues after it. */
  readonly seq: number;
  readonly messages: readonly Message[];
}

export type LogItem = LogFrame | ResyncFrame;

/** What a subscriber gets before the live tail: exactly the frames it lacks, or a resync. */
export type Backlog = { readonly kind: 'frames'; readonly frames: readonly LogFrame[] } | { readonly kind: 'resync' };

const NOTHING: Backlog = { kind: 'frames', frames: [] };
const RESYNC: Backlog = { kind: 'resync' };

/**
 * The backlog of a subscriber that has every frame up to `since` (seed 001 §4.5), given the retained
 * frames (ascending) and the log's last sequence number: the frames `since + 1 … lastSeq` when every
 * one of them is retained, else a resync — never a silent gap. `undefined` (no cursor) is live only.
 * A cursor ahead of the log (a sequence this log never handed out, e.g. from before a crash) resyncs.
 */
export function backlogOf(ring: readonly LogFrame[], lastSeq: number, since: number | undefined): Backlog {
  if (since === undefined || since === lastSeq) return NOTHING;
  if (since > lastSeq || since < 0) return RESYNC;
  const wanted = lastSeq - since;
  if (wanted > ring.length) return RESYNC;
  const from = ring.length - wanted;
  // Retained frames are ascending and unique: the tail is exactly since+1 … lastSeq when its ends match.
  if (ring[from]?.seq !== since + 1 || ring[ring.length - 1]?.seq !== lastSeq) return RESYNC;
  return { kind: 'frames', frames: ring.slice(from) };
}

/** A frame as the ring keeps it: the serialised event, parsed again when a backlog reads it. */
function retained(frame: LogFrame): LogFrame {
  const { seq, runId, data } = frame;
  return {
    kind: 'frame',
    seq,
    runId,
    data,
    get event(): AgentEvent {
      return JSON.parse(data) as AgentEvent;
    },
  };
}

/**
 * A thread's event log (seed 001 §4.2, §4.5): one monotonic `seq` across all its runs, a bounded
 * ring of the latest frames, and live subscribers. A subscriber whose `since` the ring cannot serve
 * gets a resync frame first (`backlogOf`).
 */
export class ThreadLog {
  readonly #capacity: number;
  readonly #maxBytes: number;
  readonly #ring: LogFrame[] = [];
  #ringBytes = 0;
  readonly #subscribers = new Set<(item: LogItem) => void>();
  /** The highest sequence number handed out (`next`) or known to exist elsewhere (`ensureAtLeast`). */
  #taken = 0;
  /** The highest sequence number delivered to subscribers (or known to exist elsewhere). */
  #published = 0;

  /** At most `capacity` frames and `maxBytes` of serialised events are kept (the latest frame always). */
  constructor(capacity: number, maxBytes = Number.POSITIVE_INFINITY) {
    this.#capacity = Math.max(1, capacity);
    this.#maxBytes = maxBytes;
  }

  /** The highest sequence number taken (a frame from `next` may still be on its way to `publish`). */
  get lastSeq(): number {
    return this.#taken;
  }

  /** Bytes of serialised events the ring holds. */
  get bytes(): number {
    return this.#ringBytes;
  }

  /** The highest sequence number delivered to subscribers (a resync made now covers up to it). */
  get publishedSeq(): number {
    return this.#published;
  }

  /** Whether a subscriber from `since` needs a resync. */
  isBehind(since: number | undefined): boolean {
    return backlogOf(this.#ring, this.#published, since).kind === 'resync';
  }

  /** Moves the counter up to `seq` (frames another instance appended, or a mark kept by the store). */
  ensureAtLeast(seq: number): void {
    if (seq > this.#taken) this.#taken = seq;
    if (seq > this.#published) this.#published = seq;
  }

  get subscribers(): number {
    return this.#subscribers.size;
  }

  append(runId: string, event: AgentEvent): LogFrame {
    return this.publish(this.next(runId, event));
  }

  /** The next frame, its `seq` taken, not yet retained or delivered (see `publish`). */
  next(runId: string, event: AgentEvent): LogFrame {
    return { kind: 'frame', seq: ++this.#taken, runId, event, data: serialiseEvent(event) };
  }

  /** Retains a frame from `next` and delivers it to the subscribers (frames are published in `seq` order). */
  publish(frame: LogFrame): LogFrame {
    if (frame.seq > this.#published) this.#published = frame.seq;
    // The ring keeps the serialised event only; a backlog parses it again.
    this.#ring.push(retained(frame));
    this.#ringBytes += frame.data.length;
    while (this.#ring.length > 1 && (this.#ring.length > this.#capacity || this.#ringBytes > this.#maxBytes))
      this.#ringBytes -= (this.#ring.shift() as LogFrame).data.length;
    for (const s of [...this.#subscribers]) {
      try {
        s(frame);
      } catch {
        // A subscriber that throws is dropped; the run and the others go on.
        this.#subscribers.delete(s);
      }
    }
    return frame;
  }

  /**
   * The backlog after `since` (`backlogOf`), then every new frame as it is published; `resync`
   * supplies the snapshot that replaces lost frames. Atomic: no frame is missed or repeated between
   * the two.
   */
  subscribe(since: number | undefined, onItem: (item: LogItem) => void, resync: (seq: number) => ResyncFrame): () => void {
    const backlog = backlogOf(this.#ring, this.#published, since);
    if (backlog.kind === 'resync') onItem(resync(this.#published));
    else for (const f of backlog.frames) onItem(f);
    this.#subscribers.add(onItem);
    return () => this.#subscribers.delete(onItem);
  }
}
