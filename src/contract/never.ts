/**
 * The end of a `switch` over a union: with every member handled, `value` is `never` and the call
 * type-checks; a member added to the union and forgotten here is a compile error where the switch
 * is, not a value that falls through silently. Reached only by a value the types did not foresee
 * (data from outside cast to the union), which is a fault, so it throws.
 */
export function unreachable(value: never, what = 'value'): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}
