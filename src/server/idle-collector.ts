import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface IdleCollectorOptions {
  /** Quiet time after the last run ended or stream closed before collecting (ms). */
  readonly delayMs: number;
  /** Least time between two collections (ms); a touch sooner than that collects when it is over. */
  readonly minSpacingMs: number;
}

/**
 * Gives memory back once a server goes quiet. V8 collects when JavaScript allocates; a server that
 * just finished a burst of work (runs, or streams to clients that stopped reading and then left)
 * allocates nothing more, so what the burst left behind stays resident until the next one. Touched
 * when a run ends or a stream closes, this runs one full collection `delayMs` after the last touch,
 * unless a run is going by then (its end touches again), and never more often than `minSpacingMs`.
 */
export class IdleCollector {
  readonly #collect: () => void;
  readonly #busy: () => boolean;
  readonly #options: IdleCollectorOptions;
  readonly #now: () => number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #lastAt = Number.NEGATIVE_INFINITY;
  #closed = false;

  constructor(collect: () => void, busy: () => boolean, options: IdleCollectorOptions, now: () => number = Date.now) {
    this.#collect = collect;
    this.#busy = busy;
    this.#options = options;
    this.#now = now;
  }

  /** Something ended: collect once things stay quiet. */
  touch(): void {
    if (this.#closed) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    const wait = Math.max(this.#options.delayMs, this.#lastAt + this.#options.minSpacingMs - this.#now());
    this.#timer = setTimeout(() => this.#fire(), wait);
    this.#timer.unref?.();
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #fire(): void {
    this.#timer = undefined;
    if (this.#closed || this.#busy()) return;
    this.#lastAt = this.#now();
    this.#collect();
  }
}

/**
 * The engine's full collection, or undefined where it cannot be had. Node exposes it only under
 * `--expose-gc`; the flag, set for the moment a new context is made, hands that context's `gc` out
 * (the way test runners measure heaps), and is switched off again so no other context gets one.
 */
export function fullCollection(): (() => void) | undefined {
  const own = (globalThis as { gc?: unknown }).gc;
  if (typeof own === 'function') return own as () => void;
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}
