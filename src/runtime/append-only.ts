/**
 * The arrays of messages that only ever grow while they are sent: the loop's history as sent, one
 * array a run (`InferenceRequest.messages`). Whoever compares a request with the one before it
 * (`RequestChain`) need not read again what it read of such an array. Held weakly: a finished run's
 * array goes with it. Not exported from the package: a mark is a promise only the loop can keep.
 */
const appendOnly = new WeakSet<readonly object[]>();

/** Marks `messages` as an array its owner only appends to, and that nobody else writes to. */
export const markAppendOnly = (messages: readonly object[]): void => {
  appendOnly.add(messages);
};

/** Whether `messages` only grows: its entries, once read, stay where they were. */
export const isAppendOnly = (messages: readonly object[]): boolean => appendOnly.has(messages);
