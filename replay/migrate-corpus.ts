/**
 * Brings the recorded runs of `fixtures/runs/` up to the current transcript format with
 * `migrateTranscript` — never by recording them again. Each migrated run must keep every event line
 * byte for byte and replay identical; otherwise nothing is written. Format 2's last line, how the
 * run ended (its result and the thread it left), is the one thing a format-1 transcript does not hold:
 * it is what the replay of the migrated run ends with, taken only once that replay is identical at
 * every port and event.
 *
 *   node --import tsx replay/migrate-corpus.ts
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { isFormat1, migrate } from '../src/replay/migrate.ts';
import { replayTranscript } from '../src/replay/replayer.ts';

const dir = resolve(import.meta.dirname, '../fixtures/runs');
const eventLines = (text: string): string[] => text.split('\n').filter((l) => l.startsWith('{"type":"event",'));
const pending: [string, string][] = [];
for (const file of readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort()) {
  const before = readFileSync(join(dir, file), 'utf8');
  if (!isFormat1(before)) continue;
  const { text: migrated, waitForDecisions } = migrate(before);
  if (JSON.stringify(eventLines(before)) !== JSON.stringify(eventLines(migrated))) throw new Error(`${file}: the migration changed an event line`);
  // Format 2 ends with how the run ended: the replay of the migrated run gives it, once
  // the run is shown to be the recorded one (every port and every event identical).
  const replayed = await replayTranscript(migrated, { withoutEndRecord: true, waitForDecisions });
  if (!replayed.identical || replayed.end === undefined) throw new Error(`${file}: the migrated run does not replay identical: ${JSON.stringify(replayed.divergence ?? replayed.firstDifference)}`);
  const after = `${migrated}${JSON.stringify(replayed.end)}\n`;
  const report = await replayTranscript(after);
  if (!report.identical) throw new Error(`${file}: the migrated run does not replay identical: ${JSON.stringify(report.divergence ?? report.firstDifference)}`);
  pending.push([file, after]);
}
for (const [file, text] of pending) writeFileSync(join(dir, file), text);
console.log(`migrated ${pending.length} run(s) in fixtures/runs/`);
