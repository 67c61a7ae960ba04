/**
 * The arrays of messages that only ever grow while they are sent: the loop's history as sent, one
 * array a run (`InferenceRequest.messages`). Whoever compares a request with the one before it
 * (`RequestChain`) need not read again what it read of such an array. Not exported from the
 * package: a mark is a promise only the loop can keep.
 *
 * The mark is a private field stamped on the array (a base class whose constructor returns the
 * object it is given): invisible to every reflection, comparison and serialisation, and gone with
 * the array. A `WeakSet` did the same at about ten times the cost: one entry a run in a table that
 * only a collection shrinks.
 */
class Stamped {
  constructor(target: object) {
    // biome-ignore lint/correctness/noConstructorReturn: the stamp is the returned object's own private field.
    return target;
  }
}

class AppendOnlyMark extends Stamped {
  readonly #appendOnly = true;

  /** False for anything that is not an object (what a request of a hand-written transcript may hold), as a `WeakSet` would say. */
  static marked(messages: unknown): boolean {
    return typeof messages === 'object' && messages !== null && #appendOnly in messages;
  }
}

/** Marks `messages` as an array its owner only appends to, and that nobody else writes to. */
export const markAppendOnly = (messages: readonly object[]): void => {
  if (!AppendOnlyMark.marked(messages)) new AppendOnlyMark(messages);
};

/** Whether `messages` only grows: its entries, once read, stay where they were. */
export const isAppendOnly = (messages: readonly object[]): boolean => AppendOnlyMark.marked(messages);
