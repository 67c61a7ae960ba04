/**
 * Brings the recorded runs of `fixtures/runs/` up to the current transcript format with `migrate`
 * (src/replay/migrate.ts) — never by recording them again. Each migrated run must replay identical
 * at every port and event; otherwise nothing is written. Up to format 4 a migration keeps every event
 * line byte for byte; format 5's rewrites (`FORMAT_5_REWRITES`) change events where the runtime now
 * emits differently — the replay judges both; format 6 rewrites the header alone (its plugins as
 * `{id}` entries, the config digest over them), formats 7, 8, 9 and 10 their tag alone, and format 11
 * names A2UI v0.8 in the section of an agent that runs `generative-ui` (its digest over it), format 12
 * its tag alone. A format-1 run
 * gains the `end` record, how the run ended (its result and the thread it left), which format 1 does
 * not hold: it is what the replay of the migrated run ends with, taken only once that replay is
 * identical at every port and event.
 *
 *   node --import tsx replay/migrate-corpus.ts
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { migrate, olderFormat, TRANSCRIPT_FORMAT_1 } from '../src/replay/migrate.ts';
import { replayTranscript } from '../src/replay/replayer.ts';

const dir = resolve(import.meta.dirname, '../fixtures/runs');
const eventLines = (text: string): string[] => text.split('\n').filter((l) => l.startsWith('{"type":"event",'));
const fail = (file: string, report: Awaited<ReturnType<typeof replayTranscript>>): never => {
  throw new Error(`${file}: the migrated run does not replay identical: ${JSON.stringify(report.divergence ?? report.firstDifference)}`);
};
const pending: [string, string][] = [];
let eventsChanged = 0;
for (const file of readdirSync(dir)
  .filter((f) => f.endsWith('.jsonl'))
  .sort()) {
  const before = readFileSync(join(dir, file), 'utf8');
  const older = olderFormat(before);
  if (older === undefined) continue;
  const migrated = migrate(before);
  if (JSON.stringify(eventLines(before)) !== JSON.stringify(eventLines(migrated.text))) eventsChanged++;
  let after = migrated.text;
  if (older === TRANSCRIPT_FORMAT_1) {
    const replayed = await replayTranscript(after, { withoutEndRecord: true, waitForDecisions: migrated.waitForDecisions === true });
    if (!replayed.identical || replayed.end === undefined) fail(file, replayed);
    after = `${after}${JSON.stringify(replayed.end)}\n`;
  }
  const report = await replayTranscript(after);
  if (!report.identical) fail(file, report);
  pending.push([file, after]);
}
for (const [file, text] of pending) writeFileSync(join(dir, file), text);
console.log(`migrated ${pending.length} run(s) in fixtures/runs/ (${eventsChanged} with events the runtime now emits differently)`);
