/**
 * Records waiting for the port that takes them, in transcript order. Nearly always the first one is
 * taken: it is handed out by moving a cursor, where removing an array's first entry moves all the
 * others (a run of n calls would cost n²). Another one (a parallel call settling early, a call's
 * resume before its first run) is cut out where it is.
 */
export class RecordQueue<T> {
  readonly #items: (T | undefined)[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  /** The position of the first waiting record that `test` accepts, or -1. */
  findIndex(test: (item: T) => boolean): number {
    const items = this.#items;
    for (let i = this.#head; i < items.length; i++) if (test(items[i] as T)) return i - this.#head;
    return -1;
  }

  /** Takes the waiting record at position `i` (0: the first) out of the queue. */
  take(i: number): T | undefined {
    if (i < 0 || i >= this.length) return undefined;
    const at = this.#head + i;
    const item = this.#items[at];
    if (i === 0) {
      // Dropped, so that what was handed out can be collected.
      this.#items[at] = undefined;
      this.#head++;
    } else this.#items.splice(at, 1);
    return item;
  }

  shift(): T | undefined {
    return this.take(0);
  }
}
