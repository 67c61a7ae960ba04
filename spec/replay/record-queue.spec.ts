import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RecordQueue } from '../../src/replay/record-queue.ts';

/** The replay's queue of records a port takes from: it must behave as the array it replaces. */
describe('RecordQueue', () => {
  type Op = { kind: 'push'; value: number } | { kind: 'shift' } | { kind: 'take'; wanted: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('push' as const), value: fc.integer({ min: 0, max: 9 }) }),
    fc.record({ kind: fc.constant('shift' as const) }),
    // Takes the first record equal to `wanted` (or nothing when none is): the first one or one further on.
    fc.record({ kind: fc.constant('take' as const), wanted: fc.integer({ min: 0, max: 9 }) }),
  );

  it('property: hands out, finds and takes records as an array does with shift, findIndex and splice', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const queue = new RecordQueue<number>();
        const model: number[] = [];
        for (const o of ops) {
          if (o.kind === 'push') {
            queue.push(o.value);
            model.push(o.value);
          } else if (o.kind === 'shift') expect(queue.shift()).toBe(model.shift());
          else {
            const i = model.indexOf(o.wanted);
            const wanted = (x: number): boolean => x === o.wanted;
            expect(queue.findIndex(wanted)).toBe(i);
            expect(queue.take(i)).toBe(i >= 0 ? model.splice(i, 1)[0] : undefined);
          }
          expect(queue.length).toBe(model.length);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('takes nothing at a position outside the waiting records', () => {
    const queue = new RecordQueue<string>();
    queue.push('a');
    queue.push('b');
    expect(queue.shift()).toBe('a');
    expect([queue.take(-1), queue.take(1), queue.length]).toEqual([undefined, undefined, 1]);
    expect(queue.take(0)).toBe('b');
    expect([queue.shift(), queue.length]).toEqual([undefined, 0]);
  });
});
