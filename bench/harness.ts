import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Bench } from 'tinybench';

/** One benchmarked task: the subject or its hand-written baseline, run in the same process. */
export interface Case {
  readonly name: string;
  readonly role: 'subject' | 'baseline';
  readonly fn: () => unknown;
}

export interface Suite {
  readonly name: string;
  readonly description: string;
  readonly cases: readonly Case[];
  /** Work units in one iteration (e.g. loop steps), for a per-unit time column. */
  readonly units?: { readonly name: string; readonly count: number };
  /** Runs before the suite's first case and after its last (a server to start, say). */
  readonly setup?: () => Promise<void>;
  readonly teardown?: () => Promise<void>;
}

export interface TaskStats {
  readonly suite: string;
  readonly task: string;
  readonly role: 'subject' | 'baseline';
  readonly opsPerSec: number;
  readonly meanUs: number;
  readonly p99Us: number;
  readonly samples: number;
  /** subject mean / baseline mean of the same suite (1 for the baseline). */
  readonly ratio: number;
  /** Mean µs per work unit, when the suite declares its units. */
  readonly perUnitUs?: number;
  readonly unit?: string;
  /** Mean bytes allocated per iteration (heap growth over a measured batch, with gc). */
  readonly bytesPerOp?: number;
}

export interface RunOptions {
  readonly timeMs: number;
  readonly warmupMs: number;
  readonly outDir: string;
}

/** Runs one suite, writes `<outDir>/<suite>.json` and returns its rows. */
export async function runSuite(suite: Suite, options: RunOptions): Promise<TaskStats[]> {
  const bench = new Bench({ time: options.timeMs, warmupTime: options.warmupMs, throws: true });
  for (const c of suite.cases) bench.add(c.name, c.fn);
  await suite.setup?.();
  try {
    return await measure(suite, bench, options);
  } finally {
    await suite.teardown?.();
  }
}

async function measure(suite: Suite, bench: Bench, options: RunOptions): Promise<TaskStats[]> {
  await bench.run();
  const raw = bench.tasks.map((task) => {
    const c = suite.cases.find((x) => x.name === task.name) as Case;
    const r = task.result;
    if (r.state !== 'completed') throw new Error(`${suite.name}/${task.name}: ${r.state}`);
    return { c, mean: r.latency.mean, p99: r.latency.p99, samples: r.latency.samplesCount, ops: r.throughput.mean };
  });
  const baseline = raw.find((x) => x.c.role === 'baseline');
  const rows: TaskStats[] = [];
  for (const x of raw) {
    const bytes = await allocationPerOp(x.c.fn);
    rows.push({
      suite: suite.name,
      task: x.c.name,
      role: x.c.role,
      opsPerSec: Math.round(x.ops),
      meanUs: round(x.mean * 1000),
      p99Us: round(x.p99 * 1000),
      samples: x.samples,
      ratio: baseline === undefined ? Number.NaN : round(x.mean / baseline.mean),
      ...(suite.units !== undefined ? { perUnitUs: round((x.mean * 1000) / suite.units.count), unit: suite.units.name } : {}),
      ...(bytes !== undefined ? { bytesPerOp: Math.round(bytes) } : {}),
    });
  }
  mkdirSync(options.outDir, { recursive: true });
  writeFileSync(
    join(options.outDir, `${suite.name}.json`),
    `${JSON.stringify({ suite: suite.name, description: suite.description, node: process.version, tasks: rows }, null, 2)}\n`,
  );
  return rows;
}

const round = (x: number): number => Math.round(x * 1000) / 1000;

/**
 * Heap growth per call over a batch of calls between two full collections (needs `--expose-gc`;
 * undefined without it). A rough allocation measure: survivors are counted, short-lived garbage
 * that a minor GC reclaimed mid-batch is not.
 */
async function allocationPerOp(fn: () => unknown): Promise<number | undefined> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) return undefined;
  const n = 200;
  gc();
  const before = process.memoryUsage().heapUsed;
  const keep: unknown[] = [];
  for (let i = 0; i < n; i++) keep.push(await fn());
  const after = process.memoryUsage().heapUsed;
  keep.length = 0;
  return Math.max(0, after - before) / n;
}

export function formatTable(rows: readonly TaskStats[]): string {
  const header = ['suite', 'task', 'ops/s', 'mean µs', 'p99 µs', 'µs/unit', 'KiB/op', 'samples', '× baseline'];
  const body = rows.map((r) => [
    r.suite,
    r.task,
    String(r.opsPerSec),
    r.meanUs.toFixed(3),
    r.p99Us.toFixed(3),
    r.perUnitUs !== undefined ? `${r.perUnitUs.toFixed(3)}/${r.unit ?? ''}` : '',
    r.bytesPerOp !== undefined ? (r.bytesPerOp / 1024).toFixed(1) : '',
    String(r.samples),
    r.ratio.toFixed(2),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] as string).length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}
