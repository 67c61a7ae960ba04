/**
 * The end of a `switch` over a union: with every member handled, `value` is `never` and the call
 * type-checks; a member added to the union and forgotten here is a compile error where the switch
 * is, not a value that falls through silently. Reached only by a value the types did not foresee
 * (data from outside cast to the union), which is a fault, so it throws.
 */
export function unreachable(value: never, what = 'value'): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}

/**
 * The end of a `switch` over a union whose values may come from outside the types: a frame another
 * (newer) instance wrote, a record a store or a transcript holds. A member the types do not know is
 * passed over, as a reader of a newer writer must; it is still `never` here, so a member added to
 * the union and forgotten remains a compile error where the switch is.
 */
export function passOver(_value: never): undefined {
  return undefined;
}
