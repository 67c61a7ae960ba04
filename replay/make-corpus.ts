import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { recordRun } from '../src/replay/recorder.ts';
import { SCENARIOS, setupOf } from './corpus.ts';

// Re-records every scenario of replay/corpus.ts into fixtures/runs/ (node --import tsx replay/make-corpus.ts).
const dir = resolve(import.meta.dirname, '../fixtures/runs');
mkdirSync(dir, { recursive: true });
for (const f of readdirSync(dir)) if (f.endsWith('.jsonl')) rmSync(join(dir, f));
let i = 0;
for (const scenario of SCENARIOS) {
  const recording = await recordRun(setupOf(scenario));
  const file = `${String(++i).padStart(2, '0')}-${scenario.name}.jsonl`;
  writeFileSync(join(dir, file), recording.transcript);
  process.stdout.write(`${file}: ${recording.result.termination.type}\n`);
}
