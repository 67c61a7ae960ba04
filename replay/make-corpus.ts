import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { recordScenario, SCENARIOS } from './corpus.ts';

// Records the scenarios of replay/corpus.ts into fixtures/runs/ (node --import tsx replay/make-corpus.ts):
// only those without a file yet (a new scenario is appended to SCENARIOS, so earlier numbers hold);
// `--all` re-records every one (existing runs otherwise change only by migration: migrate-corpus.ts).
const all = process.argv.includes('--all');
const dir = resolve(import.meta.dirname, '../fixtures/runs');
mkdirSync(dir, { recursive: true });
if (all) for (const f of readdirSync(dir)) if (f.endsWith('.jsonl')) rmSync(join(dir, f));
let i = 0;
for (const scenario of SCENARIOS) {
  const file = `${String(++i).padStart(2, '0')}-${scenario.name}.jsonl`;
  if (!all && existsSync(join(dir, file))) continue;
  const recording = await recordScenario(scenario);
  writeFileSync(join(dir, file), recording.transcript);
  process.stdout.write(`${file}: ${recording.result.termination.type}\n`);
}
