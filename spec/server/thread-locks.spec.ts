import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ThreadLocks } from '../../src/server/thread-locks.ts';

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('ThreadLocks', () => {
  it('runs the bodies of one thread one after another, in the order they came, whatever their timing; other threads do not wait', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom('a', 'b'), fc.nat(3)), { minLength: 1, maxLength: 12 }), async (jobs) => {
        const locks = new ThreadLocks();
        const inside = new Map<string, number>();
        const order: string[] = [];
        let overlapped = false;
        await Promise.all(
          jobs.map(([thread, ticks], i) =>
            locks.exclusive(thread, async () => {
              inside.set(thread, (inside.get(thread) ?? 0) + 1);
              if ((inside.get(thread) ?? 0) > 1) overlapped = true;
              order.push(`${thread}${i}`);
              for (let t = 0; t < ticks; t++) await tick();
              inside.set(thread, (inside.get(thread) ?? 0) - 1);
            }),
          ),
        );
        expect(overlapped).toBe(false);
        for (const thread of ['a', 'b']) {
          const mine = order.filter((o) => o.startsWith(thread));
          expect(mine).toEqual(jobs.flatMap(([t], i) => (t === thread ? [`${t}${i}`] : [])));
        }
        expect(locks.size).toBe(0);
      }),
      { numRuns: 50 },
    );
  });

  it('a body that fails gives its error to its caller and does not block the next', async () => {
    const locks = new ThreadLocks();
    const failed = locks.exclusive('t', async () => {
      throw new Error('boom');
    });
    const next = locks.exclusive('t', async () => 'ran');
    await expect(failed).rejects.toThrow('boom');
    await expect(next).resolves.toBe('ran');
    expect(locks.size).toBe(0);
  });

  it('a second thread is not held up by a first one that never settles', async () => {
    const locks = new ThreadLocks();
    void locks.exclusive('stuck', () => new Promise(() => undefined));
    await expect(locks.exclusive('free', async () => 'ran')).resolves.toBe('ran');
  });
});
