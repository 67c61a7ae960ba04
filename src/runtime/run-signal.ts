import type { CancellationFlag } from './phase-runtime.ts';

/**
 * A run's cancellation: a flag first, an `AbortSignal` only once something asks for one — a
 * provider reading its request's `signal`, a tool its context's, a retry's back-off. Most runs are
 * never cancelled and most models and tools never listen, and an `AbortController` with a listener
 * costs a run some microseconds to make and to drop. Asked for after the abort, the signal is
 * already aborted; asked for before, it aborts with the run.
 *
 * The run's own listener (`listen`) hears the abort before any listener on the signal, as it would
 * if it had been the signal's first: the signal, once made, has it as its first listener.
 */
/**
 * Where a request the loop makes, or a tool call's context, keeps its run's `RunSignal`: a symbol,
 * so no `Object.keys`, JSON or tool sees it, and a plain property, so a wrapper (`Object.create`, a
 * `Proxy`) reaches it as the getter of `signal` reads it.
 */
export const CANCELLATION: unique symbol = Symbol('awaken.run-cancellation');

export class RunSignal implements CancellationFlag {
  #aborted = false;
  #released = false;
  #controller: AbortController | undefined;
  #listener: (() => void) | undefined;

  get aborted(): boolean {
    return this.#aborted;
  }

  /** The run's `AbortSignal`, made at the first ask. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = new AbortController();
      if (this.#aborted) controller.abort();
      else if (!this.#released) controller.signal.addEventListener('abort', this.#heard, { once: true });
      this.#controller = controller;
    }
    return this.#controller.signal;
  }

  /** The run's one listener: told once, when the run is cancelled (not if it already was). */
  listen(listener: () => void): void {
    this.#listener = listener;
  }

  /** The run ended: its listener is told nothing more. */
  release(): void {
    this.#released = true;
    this.#listener = undefined;
    this.#controller?.signal.removeEventListener('abort', this.#heard);
  }

  abort(): void {
    if (this.#aborted) return;
    this.#aborted = true;
    if (this.#controller !== undefined) this.#controller.abort();
    else this.#listener?.();
  }

  readonly #heard = (): void => this.#listener?.();
}
