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
  await bench.run();
  const raw = bench.tasks.map((task) => {
    const c = suite.cases.find((x) => x.name === task.name) as Case;
    const r = task.result;
    if (r.state !== 'completed') throw new Error(`${suite.name}/${task.name}: ${r.state}`);
    return { c, mean: r.latency.mean, p99: r.latency.p99, samples: r.latency.samplesCount, ops: r.throughput.mean };
  });
  const baseline = raw.find((x) => x.c.role === 'baseline');
  const rows = raw.map((x) => ({
    suite: suite.name,
    task: x.c.name,
    role: x.c.role,
    opsPerSec: Math.round(x.ops),
    meanUs: round(x.mean * 1000),
    p99Us: round(x.p99 * 1000),
    samples: x.samples,
    ratio: baseline === undefined ? Number.NaN : round(x.mean / baseline.mean),
  }));
  mkdirSync(options.outDir, { recursive: true });
  writeFileSync(
    join(options.outDir, `${suite.name}.json`),
    `${JSON.stringify({ suite: suite.name, description: suite.description, node: process.version, tasks: rows }, null, 2)}\n`,
  );
  return rows;
}

const round = (x: number): number => Math.round(x * 1000) / 1000;

export function formatTable(rows: readonly TaskStats[]): string {
  const header = ['suite', 'task', 'ops/s', 'mean µs', 'p99 µs', 'samples', '× baseline'];
  const body = rows.map((r) => [r.suite, r.task, String(r.opsPerSec), r.meanUs.toFixed(3), r.p99Us.toFixed(3), String(r.samples), r.ratio.toFixed(2)]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] as string).length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}
