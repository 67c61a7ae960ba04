import { resolve } from 'node:path';
import { coreSuites } from './core-suites.ts';
import { formatTable, runSuite, type Suite, type TaskStats } from './harness.ts';
import { loopSuites } from './loop-suites.ts';
import { replaySuites } from './replay-suites.ts';
import { encoderSuites } from './encoder-suites.ts';
import { contextSuites } from './context-suites.ts';
import { serverSuites } from './server-suites.ts';

// `npm run bench [-- --time MS] [-- --rounds R] [-- --only core|loop|replay|encoders|context|server]`: every
// suite, its subjects and baseline interleaved in R rounds (10 unless told) in one process, each task
// run for MS ms in all (1,000 unless told).
const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const timeMs = Number(flag('--time') ?? 1000);
const rounds = Number(flag('--rounds') ?? 10);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds: a whole number, 1 or more (got ${flag('--rounds')})`);
if (!(timeMs > 0)) throw new Error(`--time: milliseconds, more than 0 (got ${flag('--time')})`);
const only = flag('--only');
const outDir = resolve(import.meta.dirname, 'results');

const pick = (name: string): boolean => only === undefined || only === name;
const suites: Suite[] = [
  ...(pick('core') ? coreSuites() : []),
  ...(pick('loop') ? loopSuites() : []),
  ...(pick('replay') ? replaySuites() : []),
  ...(pick('encoders') ? encoderSuites() : []),
  ...(pick('context') ? contextSuites() : []),
  ...(pick('server') ? serverSuites() : []),
];
const rows: TaskStats[] = [];
// A terminal gets one status line, rewritten per suite; a log or a pipe gets a plain line each.
const tty = process.stdout.isTTY === true && process.stderr.isTTY === true;
for (const [i, suite] of suites.entries()) {
  const line = `bench: [${i + 1}/${suites.length}] ${suite.name}…`;
  process.stderr.write(tty ? `\r\x1b[2K${line}` : `${line}\n`);
  rows.push(...(await runSuite(suite, { timeMs, warmupMs: Math.min(250, timeMs / 4), rounds, outDir })));
}
if (tty) process.stderr.write('\r\x1b[2K');
process.stdout.write(`${formatTable(rows)}\n`);
// Near-linear truncation: µs per message at 100k within 2× of µs per message at 1k.
const row = (suite: string, role: 'subject' | 'baseline'): TaskStats | undefined => rows.find((r) => r.suite === suite && r.role === role);
const [small, large] = [row('truncate-1k', 'subject'), row('truncate-100k', 'subject')];
const [smallBase, largeBase] = [row('truncate-1k', 'baseline'), row('truncate-100k', 'baseline')];
if (small?.perUnitUs !== undefined && large?.perUnitUs !== undefined && smallBase?.perUnitUs !== undefined && largeBase?.perUnitUs !== undefined) {
  process.stdout.write(
    `\ntruncation µs/message: 1k ${small.perUnitUs.toFixed(3)}, 100k ${large.perUnitUs.toFixed(3)} → ${(large.perUnitUs / small.perUnitUs).toFixed(2)}× (target ≤ 2×); ` +
      `the drop-oldest baseline: ${(largeBase.perUnitUs / smallBase.perUnitUs).toFixed(2)}×; subject/baseline 1k ${small.ratio.toFixed(2)}, 100k ${large.ratio.toFixed(2)}\n`,
  );
}
process.stdout.write(`\nresults written to ${outDir}/<suite>.json\n`);
