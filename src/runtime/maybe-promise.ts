/**
 * A value now or later. The phase engine stays synchronous while every hook and handler is
 * synchronous and only pays for promises when one of them is not (docs/adr/0005); the core itself never waits.
 */
export type MaybePromise<T> = T | Promise<T>;

export function isPromiseLike<T>(value: unknown): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/** `f(value)`, now if `value` is here, later if it is a promise. */
export function andThen<T, U>(value: MaybePromise<T>, f: (t: T) => MaybePromise<U>): MaybePromise<U> {
  return isPromiseLike<T>(value) ? Promise.resolve(value).then(f) : f(value);
}
