import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { replayFiles } from '../src/replay/report.ts';

// `npm run replay`: replays every transcript in fixtures/runs/ and prints the table; exit 0 iff all identical.
const dir = resolve(import.meta.dirname, '../fixtures/runs');
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.jsonl'))
  .sort()
  .map((f) => join(dir, f));
if (files.length === 0) {
  process.stderr.write(`replay: no transcripts in ${dir}\n`);
  process.exit(1);
}
const io = { out: (t: string) => void process.stdout.write(t), err: (t: string) => void process.stderr.write(t) };
process.exitCode = await replayFiles(files, io, process.argv.includes('--json') ? 'json' : 'table');
