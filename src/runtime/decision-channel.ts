import type { Decision } from '../contract/decision.ts';
import type { Message } from '../contract/message.ts';
import type { CancellationFlag } from './phase-runtime.ts';

/** What a parked run gets from its channel: decisions, `undefined` once cancelled, `detached` once let go. */
export type Taken = readonly Decision[] | undefined | 'detached';

/**
 * The decisions a suspended run waits on (book: decision channel). Callers `push` decisions (with
 * input sent along) while the run is parked; the run takes them with `next()`, every batch sent since
 * it last took, flattened in the order sent. An abort of the run's signal wins over decisions still
 * queued (the run is cancelled, not resumed); a `detach` lets the run go once nothing is queued.
 *
 * The channel also tells when the run is parked: it waits in `next()` with nothing queued. A decision
 * pushed and not taken yet means the run is about to wake, so `parked()` waits for the run to take it
 * and park again (or end) rather than answering `true` at once.
 */
export class DecisionChannel {
  readonly #signal: CancellationFlag;
  readonly #queue: Decision[][] = [];
  readonly #inbox: Message[] = [];
  #wake: (() => void) | undefined;
  #detached = false;
  #waiting = false;
  /** Waiting `parked()` callers; `undefined` once the run has ended. */
  #parkWaiters: ((parked: boolean) => void)[] | undefined = [];

  /** `signal` is the run's own (its flag): its owner calls `aborted()` when it fires. */
  constructor(signal: CancellationFlag) {
    this.#signal = signal;
  }

  /** Queues decisions, and the messages sent with them, and wakes the run if it waits. */
  push(decisions: readonly Decision[], messages: readonly Message[] = []): void {
    this.#inbox.push(...messages);
    this.#queue.push([...decisions]);
    this.#waiting = false;
    this.#wakeUp();
  }

  /**
   * The next decisions: every batch queued since the last call, once there is one. `undefined` when
   * the signal has aborted (even with decisions queued), `detached` when the run was let go and
   * nothing is queued.
   */
  async next(): Promise<Taken> {
    while (this.#queue.length === 0 && !this.#signal.aborted && !this.#detached) {
      this.#waiting = true;
      this.#settle(true);
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
    this.#waiting = false;
    if (this.#signal.aborted) return undefined;
    if (this.#queue.length === 0) return 'detached';
    return this.#queue.splice(0).flat();
  }

  /** The messages sent with the decisions taken so far (and any sent since), each once. */
  takeInput(): readonly Message[] {
    return this.#inbox.splice(0);
  }

  /** Lets the run go: a `next()` with nothing queued answers `detached`, now and from then on. */
  detach(): void {
    this.#detached = true;
    this.#wakeUp();
  }

  /** Whether the run was let go (`detach`). */
  get detached(): boolean {
    return this.#detached;
  }

  /** The run's signal fired: a run waiting for decisions wakes to be cancelled. */
  aborted(): void {
    this.#wakeUp();
  }

  /** Whether the run waits in `next()` with nothing queued. */
  get parkedNow(): boolean {
    return this.#waiting;
  }

  /**
   * Resolves `true` once the run waits in `next()` with nothing queued (at once if it does), `false`
   * if the run ends first (`close`), also when asked after the end.
   */
  parked(): Promise<boolean> {
    if (this.#waiting) return Promise.resolve(true);
    const waiters = this.#parkWaiters;
    if (waiters === undefined) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => waiters.push(resolve));
  }

  /** The run has ended: whoever waits for it to park is told it will not. */
  close(): void {
    this.#waiting = false;
    this.#settle(false);
  }

  #settle(parked: boolean): void {
    const waiters = this.#parkWaiters;
    if (waiters === undefined) return;
    this.#parkWaiters = parked ? [] : undefined;
    for (const w of waiters) w(parked);
  }

  #wakeUp(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }
}
