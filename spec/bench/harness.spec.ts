import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, describe, expect, it } from 'vitest';
import { formatTable, runSuite, type Suite } from '../../bench/harness.ts';
import { median } from '../../bench/stats.ts';

setFlagsFromString('--expose-gc');
(globalThis as { gc?: () => void }).gc ??= runInNewContext('gc') as () => void;

const outDir = mkdtempSync(join(tmpdir(), 'awaken-bench-harness-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));

/** Busy for `ms` of wall time: a call whose cost is known whatever else the machine does. */
const busy = (ms: number): void => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

describe('npm run bench: subject and baseline interleaved in rounds', () => {
  it('starts each round from another task, so that none is always first', async () => {
    const log: string[] = [];
    const suite: Suite = {
      name: 'order',
      description: 'which task runs when',
      cases: [
        { name: 'a', role: 'subject', fn: () => log.push('a') },
        { name: 'b', role: 'subject', fn: () => log.push('b') },
        { name: 'c', role: 'baseline', fn: () => log.push('c') },
      ],
    };
    await runSuite(suite, { timeMs: 3, warmupMs: 1, rounds: 3, outDir });
    // The calls grouped into runs of one task: one call each (is it asynchronous?), the warm-ups,
    // then three rounds, each a rotation.
    const runs = (log.join('').match(/a+|b+|c+/g) ?? []).map((r) => r[0]);
    expect(runs.slice(0, 15).join(' ')).toBe('a b c a b c a b c b c a c a b');
  });

  it('waits for every call of an asynchronous task before the next: no two overlap', async () => {
    let inFlight = 0;
    let most = 0;
    let calls = 0;
    const task = (): Promise<void> => {
      calls++;
      most = Math.max(most, ++inFlight);
      return new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        inFlight--;
      });
    };
    const suite: Suite = {
      name: 'overlap',
      description: 'an asynchronous task that is not an async function',
      cases: [
        { name: 'subject', role: 'subject', fn: task },
        { name: 'baseline', role: 'baseline', fn: task },
      ],
    };
    await runSuite(suite, { timeMs: 10, warmupMs: 2, rounds: 4, outDir });
    expect(calls).toBeGreaterThan(10);
    expect([most, inFlight]).toEqual([1, 0]);
  });

  it('gives each task the median of its rounds, and the median and min of its per-round ratios to the baseline', async () => {
    const suite: Suite = {
      name: 'ratio',
      description: 'a subject twice as slow as its baseline',
      units: { name: 'step', count: 4 },
      cases: [
        { name: 'subject', role: 'subject', fn: () => busy(2) },
        { name: 'baseline', role: 'baseline', fn: () => busy(1) },
      ],
    };
    const rows = await runSuite(suite, { timeMs: 100, warmupMs: 5, rounds: 5, outDir });
    const [subject, baseline] = rows;
    expect(subject?.rounds).toBe(5);
    expect(subject?.usPerOp).toBeGreaterThanOrEqual(2_000);
    expect(subject?.ratio).toBeGreaterThan(1.3);
    expect(subject?.ratio).toBeLessThan(4);
    expect(subject?.ratioMin).toBeLessThanOrEqual(subject?.ratio as number);
    expect(subject?.perUnitUs).toBeCloseTo((subject?.usPerOp as number) / 4, 2);
    expect([baseline?.ratio, baseline?.ratioMin]).toEqual([1, 1]);
    // What is printed is what is written.
    const written = JSON.parse(readFileSync(join(outDir, 'ratio.json'), 'utf8')) as { tasks: unknown };
    expect(written.tasks).toEqual(rows);
    expect(
      formatTable(rows)
        .split('\n')[0]
        ?.split(/\s{2,}/),
    ).toEqual(['suite', 'task', 'ops/s', 'µs/op (median)', 'µs/unit', 'KiB allocated/op', 'rounds', '× baseline, median', '× baseline, min']);
  });

  it('counts the bytes a call allocates, its garbage included', async () => {
    let kept: unknown;
    const suite: Suite = {
      name: 'bytes',
      description: 'a call that allocates about 80 KB and keeps none of it',
      cases: [
        {
          name: 'subject',
          role: 'subject',
          fn: () => {
            kept = new Array(10_000).fill(1.5);
          },
        },
        { name: 'baseline', role: 'baseline', fn: () => undefined },
      ],
    };
    const [subject, baseline] = await runSuite(suite, { timeMs: 20, warmupMs: 2, rounds: 2, outDir });
    expect(kept).toHaveLength(10_000);
    // 10,000 doubles unboxed: 80,000 bytes and a header.
    expect(subject?.bytesPerOp).toBeGreaterThanOrEqual(80_000);
    expect(subject?.bytesPerOp).toBeLessThan(120_000);
    expect(baseline?.bytesPerOp ?? 0).toBeLessThan(1_000);
  });
});

describe('median', () => {
  it('is the middle value, or the mean of the two middle ones', () => {
    expect([median([3, 1, 2]), median([4, 1, 3, 2]), median([5]), median([])]).toEqual([2, 2.5, 5, Number.NaN]);
  });
});
