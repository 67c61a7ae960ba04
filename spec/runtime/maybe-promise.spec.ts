import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { all, andFinally, andThen, andThenOrElse, drive, eachInOrder, requireNow, type MaybePromise } from '../../src/runtime/maybe-promise.ts';

/**
 * The helpers every part of the loop uses for a value now or later: a machine gives the same answer
 * whether its parts answer now or later, and stays synchronous (no promise, no stack growth) when
 * they all answer now.
 */

const isPromise = (v: unknown): v is Promise<unknown> => v instanceof Promise;

/** `value` after `ticks` turns of the microtask queue. */
function later<T>(value: T, ticks: number): Promise<T> {
  let p: Promise<T> = Promise.resolve(value);
  for (let i = 0; i < ticks; i++) p = p.then((v) => v);
  return p;
}

/** `value` now (`ticks` is `null`) or after `ticks` turns. */
const nowOrLater = <T>(value: T, ticks: number | null): MaybePromise<T> => (ticks === null ? value : later(value, ticks));

/** A timing: now, or after 0 to 3 turns of the queue. */
const timing = fc.option(fc.nat(3), { nil: null, freq: 2 });

const mix = (acc: number, x: number): number => (acc * 31 + x) % 1_000_003;

describe('drive', () => {
  it('gives the same result whether each turn answers now or later, and runs the turns in order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.integer({ min: -1000, max: 1000 }), timing), { maxLength: 30 }), async (turns) => {
        const seen: number[] = [];
        const out = drive(
          { i: 0, acc: 7 },
          ({ i, acc }) => {
            seen.push(i);
            const [x, t] = turns[i] as [number, number | null];
            return nowOrLater({ i: i + 1, acc: mix(acc, x) }, t);
          },
          ({ i }) => i >= turns.length,
        );
        expect(isPromise(out)).toBe(turns.some(([, t]) => t !== null));
        const expected = turns.reduce((acc, [x]) => mix(acc, x), 7);
        expect(await out).toEqual({ i: turns.length, acc: expected });
        expect(seen).toEqual(turns.map((_, i) => i));
      }),
      { numRuns: 200 },
    );
  });

  it('returns the value itself, not a promise, when every turn answers now', () => {
    fc.assert(
      fc.property(fc.nat(200), (n) => {
        const out = drive(
          0,
          (v) => v + 1,
          (v) => v >= n,
        );
        expect(out).toBe(n);
      }),
    );
  });

  it('runs 100 000 turns that answer now without growing the stack', () => {
    expect(
      drive(
        0,
        (v) => v + 1,
        (v) => v >= 100_000,
      ),
    ).toBe(100_000);
  });

  it('runs 100 000 turns after a first one that waited without growing the stack', async () => {
    const out = drive(
      0,
      (v) => (v === 0 ? later(1, 1) : v + 1),
      (v) => v >= 100_000,
    );
    expect(isPromise(out)).toBe(true);
    expect(await out).toBe(100_000);
  });

  it('passes a turn that rejects on as the rejection of its run', async () => {
    const out = drive(
      0,
      (v) => (v === 2 ? Promise.reject(new Error('turn 2')) : v + 1),
      (v) => v >= 5,
    );
    await expect(out).rejects.toThrow('turn 2');
  });
});

describe('eachInOrder', () => {
  /** An item: its answer (`null`: go on) and when it gives it. */
  const item = fc.tuple(fc.option(fc.integer(), { nil: null, freq: 4 }), timing);

  it('stops at the first defined answer and runs the items strictly one after another, under any mix of now and later', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(item, { maxLength: 20 }), fc.nat(5), async (items, fromSeed) => {
        const from = items.length === 0 ? 0 : fromSeed % (items.length + 1);
        const called: number[] = [];
        let inFlight = false;
        const out = eachInOrder(
          items,
          ([answer, t], index) => {
            // The previous item settled before this one was called.
            expect(inFlight).toBe(false);
            called.push(index);
            const value = answer === null ? undefined : answer;
            if (t === null) return value;
            inFlight = true;
            return later(value, t).then((v) => {
              inFlight = false;
              return v;
            });
          },
          from,
        );
        const rest = items.slice(from);
        const stop = rest.findIndex(([answer]) => answer !== null);
        const ran = stop === -1 ? rest : rest.slice(0, stop + 1);
        expect(isPromise(out)).toBe(ran.some(([, t]) => t !== null));
        expect(await out).toBe(stop === -1 ? undefined : (rest[stop] as [number, number | null])[0]);
        expect(called).toEqual(ran.map((_, i) => from + i));
      }),
      { numRuns: 300 },
    );
  });

  it('passes its context to each call, and runs 100 000 items that answer now without growing the stack', () => {
    const context = { sum: 0, misplaced: 0 };
    const items = Array.from({ length: 100_000 }, (_, i) => i);
    const out = eachInOrder(
      items,
      (x: number, index: number, c: { sum: number; misplaced: number }): undefined => {
        if (x !== index) c.misplaced++;
        c.sum += x;
        return undefined;
      },
      0,
      context,
    );
    expect(out).toBeUndefined();
    expect(context).toEqual({ sum: (100_000 * 99_999) / 2, misplaced: 0 });
  });
});

describe('andThen', () => {
  const f = (x: number): number => x * 2 + 1;
  const fLater = (x: number): Promise<number> => later(f(x), 1);

  it('left identity: for a value here, andThen(x, f) is f(x), at once', () => {
    fc.assert(
      fc.property(fc.integer(), (x) => {
        expect(andThen(x, f)).toBe(f(x));
      }),
    );
  });

  it('right identity: andThen(m, x => x) settles to what m settles to; a promise only when m is one', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer(), timing, async (x, t) => {
        const m = nowOrLater(x, t);
        const out = andThen(m, (v: number) => v);
        expect(isPromise(out)).toBe(t !== null);
        expect(await out).toBe(x);
      }),
    );
  });

  it('associativity: andThen(andThen(m, g), h) equals andThen(m, x => andThen(g(x), h)), whatever answers now or later', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: -1000, max: 1000 }), timing, timing, timing, async (x, tm, tg, th) => {
        const g = (v: number): MaybePromise<number> => nowOrLater(v * 3 - 2, tg);
        const h = (v: number): MaybePromise<number> => nowOrLater(mix(v, 5), th);
        const left = andThen(andThen(nowOrLater(x, tm), g), h);
        const right = andThen(nowOrLater(x, tm), (v: number) => andThen(g(v), h));
        const anyLater = tm !== null || tg !== null || th !== null;
        expect(isPromise(left)).toBe(anyLater);
        expect(isPromise(right)).toBe(anyLater);
        expect(await left).toBe(await right);
      }),
    );
  });

  it('passes what follows the continuation on to it, now and later', async () => {
    const g = (x: number, a: string, b: boolean): string => `${x}:${a}:${b}`;
    expect(andThen(1, g, 'a', true)).toBe('1:a:true');
    expect(await andThen(later(2, 1), g, 'b', false)).toBe('2:b:false');
    expect(await fLater(1)).toBe(3);
  });
});

describe('andThenOrElse', () => {
  it('is andThen while nothing rejects: onError is not called', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer(), timing, async (x, t) => {
        let errors = 0;
        const out = andThenOrElse(
          nowOrLater(x, t),
          (v: number) => v + 1,
          () => ++errors,
        );
        expect(isPromise(out)).toBe(t !== null);
        expect(await out).toBe(x + 1);
        expect(errors).toBe(0);
      }),
    );
  });

  it('a rejection is onError’s (with what follows passed on); f is not called', async () => {
    let called = false;
    const out = andThenOrElse(
      Promise.reject(new Error('no')),
      () => {
        called = true;
        return 'f';
      },
      (e: unknown, a: string) => `${(e as Error).message}:${a}`,
      'ctx',
    );
    expect(await out).toBe('no:ctx');
    expect(called).toBe(false);
  });

  it('a throw of f is not onError’s: now it is the caller’s, later it rejects the promise returned', async () => {
    let errors = 0;
    const boom = (): never => {
      throw new Error('boom');
    };
    expect(() => andThenOrElse(1, boom, () => ++errors)).toThrow('boom');
    await expect(andThenOrElse(later(1, 1), boom, () => ++errors)).rejects.toThrow('boom');
    expect(errors).toBe(0);
  });
});

describe('andFinally, all, requireNow', () => {
  it('andFinally runs f once: before it returns for a value here, once the promise settles otherwise; a rejection passes through', async () => {
    const ran: string[] = [];
    expect(andFinally(1, (a: string) => ran.push(a), 'now')).toBe(1);
    expect(ran).toEqual(['now']);
    const pending = andFinally(later(2, 2), (a: string) => ran.push(a), 'later');
    expect(ran).toEqual(['now']);
    expect(await pending).toBe(2);
    expect(ran).toEqual(['now', 'later']);
    await expect(andFinally(Promise.reject(new Error('x')), (a: string) => ran.push(a), 'rejected')).rejects.toThrow('x');
    expect(ran).toEqual(['now', 'later', 'rejected']);
  });

  it('all gives the array itself when every value is here, else a promise of the values in order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.integer(), timing), { maxLength: 10 }), async (items) => {
        const values = items.map(([x, t]) => nowOrLater(x, t));
        const out = all(values);
        if (items.every(([, t]) => t === null)) expect(out).toBe(values);
        else expect(isPromise(out)).toBe(true);
        expect(await out).toEqual(items.map(([x]) => x));
      }),
    );
  });

  it('requireNow gives a value that is here and refuses a thenable', () => {
    const schema = { type: 'object' };
    expect(requireNow(schema, 'no promise')).toBe(schema);
    expect(() => requireNow(Promise.resolve(schema), 'no promise')).toThrow('no promise');
    const thenable = Object.defineProperty({}, 'then', { value: () => undefined });
    expect(() => requireNow(thenable, 'no thenable')).toThrow('no thenable');
  });
});
