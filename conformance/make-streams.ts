import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readTranscript } from '../src/replay/transcript.ts';

// Extracts the event stream of every recorded run into conformance/streams/run-<name>.events.jsonl
// (node --import tsx conformance/make-streams.ts). Hand-written edge cases (edge-*.events.jsonl)
// are kept as they are.
const runs = resolve(import.meta.dirname, '../fixtures/runs');
const out = resolve(import.meta.dirname, 'streams');
for (const file of readdirSync(runs)
  .filter((f) => f.endsWith('.jsonl'))
  .sort()) {
  const text = readFileSync(join(runs, file), 'utf8');
  const events = readTranscript(text).flatMap((l) => (l.ok && l.record.type === 'event' ? [/"event":(.*)\}$/.exec(l.text)?.[1] ?? ''] : []));
  writeFileSync(join(out, `run-${file.replace(/^\d+-/, '').replace(/\.jsonl$/, '')}.events.jsonl`), `${events.join('\n')}\n`);
}
