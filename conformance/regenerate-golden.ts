import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { deserialiseEvent } from '../src/contract/event.ts';
import { encodeAiSdk, frameAiSdk } from '../src/protocols/ai-sdk-v6/encoder.ts';

// Rewrites the golden frames (npm run conformance:golden). Run it only when an encoder change is
// intended; the conformance spec compares every stream's output with these bytes.
const streams = resolve(import.meta.dirname, 'streams');
const golden = resolve(import.meta.dirname, 'golden/ai-sdk-v6');
for (const file of readdirSync(streams).filter((f) => f.endsWith('.events.jsonl')).sort()) {
  const events = readFileSync(join(streams, file), 'utf8').split('\n').filter((l) => l !== '').map(deserialiseEvent);
  writeFileSync(join(golden, file.replace('.events.jsonl', '.sse')), frameAiSdk(encodeAiSdk(events)));
}
process.stdout.write(`golden frames written to ${golden}\n`);
