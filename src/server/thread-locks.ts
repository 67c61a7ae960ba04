/**
 * One thing at a time per thread, within this instance: starts, adoptions, sweeps and cross-instance
 * cancels of a thread queue behind each other (what each does spans several awaits on the store).
 * Threads do not wait for each other; a failure does not block the next in line.
 */
export class ThreadLocks {
  readonly #tails = new Map<string, Promise<unknown>>();

  /** Runs `body` once everything queued on `threadId` before it has settled. */
  async exclusive<T>(threadId: string, body: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(threadId) ?? Promise.resolve();
    const next = previous.then(body, body);
    const settled = next.catch(() => undefined);
    this.#tails.set(threadId, settled);
    try {
      return await next;
    } finally {
      if (this.#tails.get(threadId) === settled) this.#tails.delete(threadId);
    }
  }

  /** Threads with something queued (none once everything settled). */
  get size(): number {
    return this.#tails.size;
  }
}
