import type { LiveRun } from '../live-run.ts';
import { currentPrincipal } from '../principal.ts';

/**
 * The runs this instance executes or holds parked, by run id and by thread (one per thread), and
 * how a request finds one: only a run of the acting principal's thread is visible to it, and a run
 * being let go (`releaseParked`) is no longer reached here at all.
 */
export class LiveRuns {
  readonly #runs = new Map<string, LiveRun>();
  /** The run in flight or parked on each thread. */
  readonly #current = new Map<string, LiveRun>();
  readonly #isReleasing: (run: LiveRun) => boolean;

  constructor(isReleasing: (run: LiveRun) => boolean) {
    this.#isReleasing = isReleasing;
  }

  get size(): number {
    return this.#runs.size;
  }

  get(runId: string): LiveRun | undefined {
    return this.#runs.get(runId);
  }

  has(runId: string): boolean {
    return this.#runs.has(runId);
  }

  values(): IterableIterator<LiveRun> {
    return this.#runs.values();
  }

  /** The thread's run, whoever asks. */
  current(threadId: string): LiveRun | undefined {
    return this.#current.get(threadId);
  }

  /** The run becomes this instance's, and its thread's current run. */
  add(run: LiveRun): void {
    this.#runs.set(run.runId, run);
    this.#current.set(run.threadId, run);
  }

  /** A finished run lives on in the store; only what is live is kept here. */
  remove(run: LiveRun): void {
    if (this.#current.get(run.threadId) === run) this.#current.delete(run.threadId);
    this.#runs.delete(run.runId);
  }

  /** A live run by run id or thread id, when the current principal may see it (and it is not being let go). */
  find(runOrThread: string): LiveRun | undefined {
    return this.held(this.#runs.get(runOrThread) ?? this.#current.get(runOrThread));
  }

  /** The run, when the current principal may see it and it is not being let go. */
  held(run: LiveRun | undefined): LiveRun | undefined {
    const visible = this.visible(run);
    return visible === undefined || this.#isReleasing(visible) ? undefined : visible;
  }

  /** The run, unless a principal is acting and the run's thread is not theirs (then it is not there). */
  visible(run: LiveRun | undefined): LiveRun | undefined {
    const principal = currentPrincipal();
    return run === undefined || principal === undefined || run.owner === principal ? run : undefined;
  }
}
