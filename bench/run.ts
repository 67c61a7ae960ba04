import { resolve } from 'node:path';
import { coreSuites } from './core-suites.ts';
import { formatTable, runSuite, type TaskStats } from './harness.ts';

// `npm run bench [-- --time MS]`: every suite, subject and baseline in the same process.
const args = process.argv.slice(2);
const timeArg = args.indexOf('--time');
const timeMs = timeArg >= 0 ? Number(args[timeArg + 1]) : 1000;
const outDir = resolve(import.meta.dirname, 'results');

const rows: TaskStats[] = [];
for (const suite of coreSuites()) {
  process.stderr.write(`bench: ${suite.name}…\n`);
  rows.push(...(await runSuite(suite, { timeMs, warmupMs: Math.min(250, timeMs / 4), outDir })));
}
process.stdout.write(`${formatTable(rows)}\n\nresults written to ${outDir}/<suite>.json\n`);
