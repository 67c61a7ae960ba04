import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { allocatedBytes, allocatedPerCall } from '../../src/testing/bench-agent.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('bytes allocated, as the benchmarks measure them', () => {
  it('counts what a batch allocates, the part a collection would free included', async () => {
    let kept: unknown[] = [];
    const batch = (): Promise<number | undefined> =>
      allocatedBytes(
        async () => {
          kept = Array.from({ length: 1_000 }, (_, i) => ({ i, s: `x${i}` }));
        },
        20,
        gc,
      );
    // A batch this small (about a megabyte) fits the young generation; a scavenge of the test
    // runner's own may still land in one, so a few are tried.
    let bytes: number | undefined;
    for (let attempt = 0; attempt < 10 && bytes === undefined; attempt++) bytes = await batch();
    expect(kept).toHaveLength(1_000);
    // 20 × 1,000 objects (of at least 16 bytes each), 19 × 1,000 of them already garbage.
    expect(bytes).toBeGreaterThan(20 * 1_000 * 16);
  });

  it('a call that answers at once is not awaited, so a batch of calls that allocate nothing measures next to nothing', async () => {
    let calls = 0;
    let bytes: number | undefined;
    for (let attempt = 0; attempt < 10 && bytes === undefined; attempt++) {
      bytes = await allocatedBytes(
        () => {
          calls++;
        },
        10_000,
        gc,
      );
    }
    expect(calls).toBeGreaterThanOrEqual(10_000);
    // Awaited, each call costs a promise and its reaction: about 2.6 MB for the batch on Node 20.
    // Not awaited, what is counted is the batch's own doing (its loop compiled on the way): under 0.2 MB.
    expect(bytes).toBeLessThan(10_000 * 50);
  });

  it('a call that answers with a thenable is waited for, as with a promise: its work is counted', async () => {
    let kept: unknown[] = [];
    // A thenable that is not a Promise, doing its work only when it is waited for.
    const lazy = (): { then: (resolve: (v: undefined) => void) => void } => ({
      // biome-ignore lint/suspicious/noThenProperty: a thenable that is not a Promise is the case
      then: (resolve) => {
        kept = Array.from({ length: 1_000 }, (_, i) => ({ i }));
        resolve(undefined);
      },
    });
    let bytes: number | undefined;
    for (let attempt = 0; attempt < 10 && bytes === undefined; attempt++) bytes = await allocatedBytes(lazy, 20, gc);
    expect(kept).toHaveLength(1_000);
    expect(bytes).toBeGreaterThan(20 * 1_000 * 16);
  });

  it('a batch during which the heap was collected is not a measurement', async () => {
    expect(await allocatedBytes(async () => gc(), 1, gc)).toBeUndefined();
    expect(
      await allocatedBytes(
        async () => {
          for (let i = 0; i < 200; i++) new Array(100_000).fill(i);
        },
        1,
        gc,
      ),
    ).toBeUndefined();
  });
});

describe('bytes allocated per call, as the benches report them', () => {
  it('halves a batch until one runs with no collection, and gives the bytes of one call', async () => {
    // The ninth call of a batch collects: batches of 40, 20 and 10 calls are not measurements, one of 5 is.
    let made = 0;
    const batches: number[] = [];
    let kept: unknown[] = [];
    const perCall = await allocatedPerCall(
      () => {
        if (++made === 9) gc();
        kept = Array.from({ length: 1_000 }, (_, i) => ({ i }));
      },
      40,
      () => {
        if (made > 0) batches.push(made);
        made = 0;
        gc();
      },
    );
    batches.push(made);
    expect(kept).toHaveLength(1_000);
    // Three measurements, each after the batches that were halved (a scavenge of the test runner's
    // own landing in a batch of 5 would halve it once more).
    expect(batches.filter((n) => n > 8)).toEqual([40, 20, 10, 40, 20, 10, 40, 20, 10]);
    expect(batches.filter((n) => n <= 8).every((n) => n <= 5)).toBe(true);
    expect(batches.filter((n) => n === 5).length).toBeGreaterThanOrEqual(1);
    // 1,000 objects of at least 16 bytes each, per call.
    expect(perCall).toBeGreaterThan(1_000 * 16);
    expect(perCall).toBeLessThan(1_000 * 200);
  });

  it('is undefined when even one call collects', async () => {
    expect(await allocatedPerCall(() => gc(), 4, gc)).toBeUndefined();
  });
});
