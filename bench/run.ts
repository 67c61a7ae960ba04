import { resolve } from 'node:path';
import { coreSuites } from './core-suites.ts';
import { formatTable, runSuite, type Suite, type TaskStats } from './harness.ts';
import { loopSuites } from './loop-suites.ts';
import { replaySuites } from './replay-suites.ts';
import { encoderSuites } from './encoder-suites.ts';

// `npm run bench [-- --time MS] [-- --only core|loop|replay|encoders]`: every suite, subjects and baselines in one process.
const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const timeMs = Number(flag('--time') ?? 1000);
const only = flag('--only');
const outDir = resolve(import.meta.dirname, 'results');

const pick = (name: string): boolean => only === undefined || only === name;
const suites: Suite[] = [...(pick('core') ? coreSuites() : []), ...(pick('loop') ? loopSuites() : []), ...(pick('replay') ? replaySuites() : []), ...(pick('encoders') ? encoderSuites() : [])];
const rows: TaskStats[] = [];
for (const suite of suites) {
  process.stderr.write(`bench: ${suite.name}…\n`);
  rows.push(...(await runSuite(suite, { timeMs, warmupMs: Math.min(250, timeMs / 4), outDir })));
}
process.stdout.write(`${formatTable(rows)}\n\nresults written to ${outDir}/<suite>.json\n`);
