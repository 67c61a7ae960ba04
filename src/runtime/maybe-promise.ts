/**
 * A value now or later, and the one place that tells which (docs/adr/0053-step-machine.md). The
 * phase engine, the tool batch and the run loop stay synchronous while every hook, handler, tool and
 * sink is, and only pay for promises when one of them is not (docs/adr/0005): an `await` on a value
 * that is already here still costs a turn of the microtask queue and a promise, a few dozen times
 * per step. Everything that may get either goes through `andThen`, `andThenOrElse`, `andFinally`,
 * `all`, `drive` or `eachInOrder` (and a value a user hands in whole that cannot wait, through
 * `requireNow`); nothing else in `src` asks whether a value is a promise
 * (spec/runtime/one-dispatch.spec.ts counts it).
 *
 * On a hot path a continuation is named once (a module function, a static method) and what it needs
 * is passed after it (`andThen(value, f, a, b)` calls `f(value, a, b)`), so a value that is here
 * costs no closure; the closure is made only when the value is a promise, in a function of its own
 * (`…Later`): V8 allocates a function's context at every call when any closure in it captures its
 * variables, whether or not the closure is made on that call.
 */
export type MaybePromise<T> = T | Promise<T>;

/** The question itself, private: callers say what to do with a value (`andThen`, `drive`, …), not what it is. */
function isPromiseLike<T>(value: unknown): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/**
 * A value a user hands in whole — a schema, a configuration — that must be here now: itself, or an
 * `Error` with `refusal` thrown when it is a thenable. Not for a step's result (that is `andThen`'s).
 */
export function requireNow<T>(value: T | PromiseLike<T>, refusal: string): T {
  if (isPromiseLike<T>(value)) throw new Error(refusal);
  return value;
}

/** `f(value)` (with `a`, `b` passed on), now if `value` is here, later if it is a promise. */
export function andThen<T, U>(value: MaybePromise<T> | PromiseLike<T>, f: (t: T) => MaybePromise<U>): MaybePromise<U>;
export function andThen<T, U, A, B = undefined>(
  value: MaybePromise<T> | PromiseLike<T>,
  f: (t: T, a: A, b: B) => MaybePromise<U>,
  a: A,
  b?: B,
): MaybePromise<U>;
export function andThen<T, U, A, B>(value: MaybePromise<T> | PromiseLike<T>, f: (t: T, a: A, b: B) => MaybePromise<U>, a?: A, b?: B): MaybePromise<U> {
  if (!isPromiseLike<T>(value)) return f(value, a as A, b as B);
  return andThenLater(value, f, a, b);
}

function andThenLater<T, U, A, B>(value: PromiseLike<T>, f: (t: T, a: A, b: B) => MaybePromise<U>, a?: A, b?: B): Promise<U> {
  return Promise.resolve(value).then(a === undefined && b === undefined ? (f as (t: T) => MaybePromise<U>) : (t) => f(t, a as A, b as B));
}

/**
 * `f(value)` now if `value` is here, later if it is a promise, and `onError(e)` instead when that
 * promise rejects; `a`, `b` are passed on to both. A throw of `f` is not `onError`'s: now it is the
 * caller's, later it rejects the promise returned.
 */
export function andThenOrElse<T, U>(
  value: MaybePromise<T> | PromiseLike<T>,
  f: (t: T) => MaybePromise<U>,
  onError: (e: unknown) => MaybePromise<U>,
): MaybePromise<U>;
export function andThenOrElse<T, U, A, B = undefined>(
  value: MaybePromise<T> | PromiseLike<T>,
  f: (t: T, a: A, b: B) => MaybePromise<U>,
  onError: (e: unknown, a: A, b: B) => MaybePromise<U>,
  a: A,
  b?: B,
): MaybePromise<U>;
export function andThenOrElse<T, U, A, B>(
  value: MaybePromise<T> | PromiseLike<T>,
  f: (t: T, a: A, b: B) => MaybePromise<U>,
  onError: (e: unknown, a: A, b: B) => MaybePromise<U>,
  a?: A,
  b?: B,
): MaybePromise<U> {
  if (!isPromiseLike<T>(value)) return f(value, a as A, b as B);
  return andThenOrElseLater(value, f, onError, a, b);
}

function andThenOrElseLater<T, U, A, B>(
  value: PromiseLike<T>,
  f: (t: T, a: A, b: B) => MaybePromise<U>,
  onError: (e: unknown, a: A, b: B) => MaybePromise<U>,
  a?: A,
  b?: B,
): Promise<U> {
  if (a === undefined && b === undefined) return Promise.resolve(value).then(f as (t: T) => MaybePromise<U>, onError as (e: unknown) => MaybePromise<U>);
  return Promise.resolve(value).then(
    (t) => f(t, a as A, b as B),
    (e: unknown) => onError(e, a as A, b as B),
  );
}

/**
 * `value`, after `f(a)` ran: now if `value` is here, when it settles if it is a promise (then as
 * `Promise.prototype.finally`: a rejection passes through).
 */
export function andFinally<T, A>(value: MaybePromise<T>, f: (a: A) => void, a: A): MaybePromise<T> {
  if (!isPromiseLike<T>(value)) {
    f(a);
    return value;
  }
  return andFinallyLater(value, f, a);
}

function andFinallyLater<T, A>(value: PromiseLike<T>, f: (a: A) => void, a: A): Promise<T> {
  return Promise.resolve(value).finally(() => f(a));
}

/**
 * Every value, in order: the array itself when all are here (no copy), else a promise of them all
 * (`Promise.all`: the first rejection rejects it).
 */
export function all<T>(values: readonly MaybePromise<T>[]): MaybePromise<readonly T[]> {
  for (const v of values) if (isPromiseLike<T>(v)) return Promise.all(values);
  return values as readonly T[];
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
    // An `await` on a value that is here would cost a turn of the queue for nothing.
    v = isPromiseLike<T>(next) ? ((await next) as T) : next;
  }
}

/**
 * Runs `each(item)` for every item in order, each after the previous one settled: synchronously
 * while every call answers at once; stops at the first answer that is not `undefined` and returns
 * it (`undefined` when every call went on). `context` is passed on to `each` (so a hot path names
 * `each` once instead of making a closure per call).
 */
export function eachInOrder<T, R>(
  items: readonly T[],
  each: (item: T, index: number) => MaybePromise<R | undefined>,
  from?: number,
): MaybePromise<R | undefined>;
export function eachInOrder<T, R, C>(
  items: readonly T[],
  each: (item: T, index: number, context: C) => MaybePromise<R | undefined>,
  from: number,
  context: C,
): MaybePromise<R | undefined>;
export function eachInOrder<T, R, C>(
  items: readonly T[],
  each: (item: T, index: number, context: C) => MaybePromise<R | undefined>,
  from = 0,
  context?: C,
): MaybePromise<R | undefined> {
  for (let i = from; i < items.length; i++) {
    const r = each(items[i] as T, i, context as C);
    if (isPromiseLike<R | undefined>(r)) return eachInOrderLater(r, items, each, i + 1, context as C);
    if (r !== undefined) return r;
  }
  return undefined;
}

function eachInOrderLater<T, R, C>(
  pending: PromiseLike<R | undefined>,
  items: readonly T[],
  each: (item: T, index: number, context: C) => MaybePromise<R | undefined>,
  from: number,
  context: C,
): Promise<R | undefined> {
  return Promise.resolve(pending).then((v) => (v === undefined ? eachInOrder(items, each, from, context) : v));
}
