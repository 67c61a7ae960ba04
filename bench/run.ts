import { resolve } from 'node:path';
import { coreSuites } from './core-suites.ts';
import { formatTable, runSuite, type Suite, type TaskStats } from './harness.ts';
import { loopSuites } from './loop-suites.ts';
import { replaySuites } from './replay-suites.ts';
import { encoderSuites } from './encoder-suites.ts';
import { contextSuites } from './context-suites.ts';

// `npm run bench [-- --time MS] [-- --only core|loop|replay|encoders|context]`: every suite, subjects and baselines in one process.
const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const timeMs = Number(flag('--time') ?? 1000);
const only = flag('--only');
const outDir = resolve(import.meta.dirname, 'results');

const pick = (name: string): boolean => only === undefined || only === name;
const suites: Suite[] = [...(pick('core') ? coreSuites() : []), ...(pick('loop') ? loopSuites() : []), ...(pick('replay') ? replaySuites() : []), ...(pick('encoders') ? encoderSuites() : []), ...(pick('context') ? contextSuites() : [])];
const rows: TaskStats[] = [];
for (const suite of suites) {
  process.stderr.write(`bench: ${suite.name}…\n`);
  rows.push(...(await runSuite(suite, { timeMs, warmupMs: Math.min(250, timeMs / 4), outDir })));
}
process.stdout.write(`${formatTable(rows)}\n`);
// Near-linear truncation: µs per message at 100k within 2× of µs per message at 1k.
const perMsg = (suite: string): number | undefined => rows.find((r) => r.suite === suite && r.role === 'subject')?.perUnitUs;
const [small, large] = [perMsg('truncate-1k'), perMsg('truncate-100k')];
if (small !== undefined && large !== undefined) {
  process.stdout.write(`\ntruncation µs/message: 1k ${small.toFixed(3)}, 100k ${large.toFixed(3)} → ${(large / small).toFixed(2)}× (target ≤ 2×)\n`);
}
process.stdout.write(`\nresults written to ${outDir}/<suite>.json\n`);
