import { GCProfiler } from 'node:v8';

/**
 * Bytes allocated by `times` calls of `run`, measured as the growth of the heap over a batch during
 * which no garbage collection ran — `undefined` when one did (the growth would then undercount).
 * Collections are counted with V8's own GC profiler, synchronously (a `PerformanceObserver` hears
 * of them only later, and so misses them). Give the process a young generation large enough for a
 * batch (`--min-semi-space-size` and `--max-semi-space-size`): without it, a batch of more than a
 * few MB always sees a scavenge.
 *
 * @param {() => Promise<unknown>} run
 * @param {number} times
 * @param {() => void} collect a full collection before the batch (`globalThis.gc` under `--expose-gc`)
 * @returns {Promise<number | undefined>}
 */
export async function allocatedBytes(run, times, collect) {
  collect();
  await new Promise((resolve) => setImmediate(resolve));
  const profiler = new GCProfiler();
  profiler.start();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < times; i++) await run();
  const after = process.memoryUsage().heapUsed;
  const collections = profiler.stop()?.statistics.length ?? 0;
  return collections === 0 ? after - before : undefined;
}
