import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Bench } from 'tinybench';
import { allocatedPerCall } from '../src/testing/bench-agent.ts';
import { median } from './stats.ts';

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
  /** µs per call: the median over rounds of each round's mean. */
  readonly usPerOp: number;
  readonly rounds: number;
  /** This task's time over the baseline's, round by round (1 for the baseline): their median and min. */
  readonly ratio: number;
  readonly ratioMin: number;
  /** `usPerOp` per work unit, when the suite declares its units. */
  readonly perUnitUs?: number;
  readonly unit?: string;
  /** Bytes allocated per call (median of three batches during which no collection ran; absent when every batch saw one, or without `--expose-gc`). */
  readonly bytesPerOp?: number;
}

export interface RunOptions {
  /** The time each task is run for, in all, spread over the rounds. */
  readonly timeMs: number;
  readonly warmupMs: number;
  readonly rounds: number;
  readonly outDir: string;
}

/** Runs one suite, writes `<outDir>/<suite>.json` and returns its rows. */
export async function runSuite(suite: Suite, options: RunOptions): Promise<TaskStats[]> {
  await suite.setup?.();
  try {
    return await measure(suite, options);
  } finally {
    await suite.teardown?.();
  }
}

/**
 * The suite's tasks interleaved in rounds, each round starting from another task, so that what the
 * machine does meanwhile (another process, a frequency change) falls on subject and baseline alike;
 * each round gives every task `timeMs / rounds` (tinybench's samples, at least one call).
 */
async function measure(suite: Suite, options: RunOptions): Promise<TaskStats[]> {
  const cases = suite.cases;
  // Whether each task answers with a promise, found by one call that is waited for: tinybench would
  // otherwise find out by a call of its own, not waited for, at every round.
  const async = new Map<Case, boolean>();
  for (const c of cases) {
    const out = c.fn();
    const thenable = typeof (out as PromiseLike<unknown> | undefined)?.then === 'function';
    if (thenable) await out;
    async.set(c, thenable);
  }
  /** The mean ms per call of `c` over about `ms` of calls (one at least). */
  const meanMs = async (c: Case, ms: number): Promise<number> => {
    const bench = new Bench({ time: ms, iterations: 1, warmup: false, throws: true });
    bench.add(c.name, c.fn, { async: async.get(c) === true });
    await bench.run();
    const r = (bench.tasks[0] as (typeof bench.tasks)[number]).result;
    if (r.state !== 'completed') throw new Error(`${c.name}: ${r.state}`);
    return r.latency.mean;
  };
  for (const c of cases) await meanMs(c, options.warmupMs);
  const slice = options.timeMs / options.rounds;
  const times = cases.map((): number[] => []);
  for (let r = 0; r < options.rounds; r++) {
    for (let k = 0; k < cases.length; k++) {
      const i = (k + r) % cases.length;
      (times[i] as number[]).push(await meanMs(cases[i] as Case, slice));
    }
  }
  const base = cases.findIndex((c) => c.role === 'baseline');
  const rows: TaskStats[] = [];
  for (const [i, c] of cases.entries()) {
    const ms = median(times[i] as number[]);
    const ratios = base < 0 ? [Number.NaN] : (times[i] as number[]).map((t, r) => t / ((times[base] as number[])[r] as number));
    const bytes = await allocatedPerOp(c.fn, ms);
    rows.push({
      suite: suite.name,
      task: c.name,
      role: c.role,
      opsPerSec: Math.round(1000 / ms),
      usPerOp: round(ms * 1000),
      rounds: options.rounds,
      ratio: round(median(ratios)),
      ratioMin: round(Math.min(...ratios)),
      ...(suite.units !== undefined ? { perUnitUs: round((ms * 1000) / suite.units.count), unit: suite.units.name } : {}),
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
 * Bytes allocated per call, as `bench:fair` counts them (`allocatedPerCall`, which needs
 * `--expose-gc` and a young generation that holds a batch): batches of about 200 ms of calls.
 */
async function allocatedPerOp(fn: () => unknown, msPerCall: number): Promise<number | undefined> {
  const gc = (globalThis as { gc?: () => void }).gc;
  return gc === undefined ? undefined : allocatedPerCall(fn, Math.min(10_000, Math.round(200 / msPerCall)), gc);
}

export function formatTable(rows: readonly TaskStats[]): string {
  const header = ['suite', 'task', 'ops/s', 'µs/op (median)', 'µs/unit', 'KiB allocated/op', 'rounds', '× baseline, median', '× baseline, min'];
  const body = rows.map((r) => [
    r.suite,
    r.task,
    String(r.opsPerSec),
    r.usPerOp.toFixed(3),
    r.perUnitUs !== undefined ? `${r.perUnitUs.toFixed(3)}/${r.unit ?? ''}` : '',
    r.bytesPerOp !== undefined ? (r.bytesPerOp / 1024).toFixed(1) : '',
    String(r.rounds),
    r.ratio.toFixed(2),
    r.ratioMin.toFixed(2),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] as string).length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}
