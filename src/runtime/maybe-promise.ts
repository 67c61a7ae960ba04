/**
 * A value now or later, and the one place that tells which (docs/adr/0053-step-machine.md). The
 * phase engine, the tool batch and the run loop stay synchronous while every hook, handler, tool and
 * sink is, and only pay for promises when one of them is not (docs/adr/0005): an `await` on a value
 * that is already here still costs a turn of the microtask queue and a promise, a few dozen times
 * per step. Everything that may get either goes through `andThen` or `drive`; nothing else in `src`
 * asks whether a value is a promise (spec/runtime/one-dispatch.spec.ts counts it).
 */
export type MaybePromise<T> = T | Promise<T>;

/** Whether `value` is a thenable. Only this module asks; `isPromiseLike` is exported for values a user hands in whole (a schema, a config), never for a step's result. */
export function isPromiseLike<T>(value: unknown): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/** `f(value)`, now if `value` is here, later if it is a promise. */
export function andThen<T, U>(value: MaybePromise<T> | PromiseLike<T>, f: (t: T) => MaybePromise<U>): MaybePromise<U> {
  return isPromiseLike<T>(value) ? Promise.resolve(value).then(f) : f(value);
}

/**
 * `f(value)` now if `value` is here, later if it is a promise, and `onError(e)` when that promise
 * rejects or `f` throws later (a throw of `f` now is the caller's).
 */
export function andThenOrElse<T, U>(value: MaybePromise<T> | PromiseLike<T>, f: (t: T) => MaybePromise<U>, onError: (e: unknown) => MaybePromise<U>): MaybePromise<U> {
  return isPromiseLike<T>(value) ? Promise.resolve(value).then(f, onError) : f(value);
}

/**
 * Runs a machine to its end (Hono's `compose` keeps its dispatch in one function the same way):
 * `turn(value)` gives the next value, now or later, until `done(value)`. Turns that answer at once
 * run in a plain loop — no promise, no stack growth; from the first promise on the rest runs in one
 * async function, so a long asynchronous run costs one awaited promise per turn that waited.
 */
export function drive<T>(value: T, turn: (value: T) => MaybePromise<T>, done: (value: T) => boolean): MaybePromise<T> {
  let v = value;
  for (;;) {
    if (done(v)) return v;
    const next = turn(v);
    if (isPromiseLike<T>(next)) return driveLater(next, turn, done);
    v = next;
  }
}

async function driveLater<T>(pending: PromiseLike<T>, turn: (value: T) => MaybePromise<T>, done: (value: T) => boolean): Promise<T> {
  let v: T = await pending;
  for (;;) {
    if (done(v)) return v;
    const next = turn(v);
    v = isPromiseLike<T>(next) ? ((await next) as T) : next;
  }
}

/**
 * Runs `each(item)` for every item in order, each after the previous one settled: synchronously
 * while every call answers at once; stops at the first answer that is not `undefined` and returns
 * it (`undefined` when every call went on).
 */
export function eachInOrder<T, R>(items: readonly T[], each: (item: T, index: number) => MaybePromise<R | undefined>, from = 0): MaybePromise<R | undefined> {
  for (let i = from; i < items.length; i++) {
    const r = each(items[i] as T, i);
    if (isPromiseLike<R | undefined>(r)) return Promise.resolve(r).then((v) => (v === undefined ? eachInOrder(items, each, i + 1) : v));
    if (r !== undefined) return r;
  }
  return undefined;
}
