import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { deserialiseEvent, type AgentEvent } from '../src/contract/event.ts';
import { encodeA2a, frameA2a } from '../src/protocols/a2a/encoder.ts';
import { encodeAcp, frameAcp } from '../src/protocols/acp/encoder.ts';
import { encodeAgUi, frameAgUi } from '../src/protocols/ag-ui/encoder.ts';
import { encodeAiSdk, frameAiSdk } from '../src/protocols/ai-sdk-v6/encoder.ts';
import { encodeMcp, frameMcp } from '../src/protocols/mcp/encoder.ts';

// Rewrites the golden frames (npm run conformance:golden). Run it only when an encoder change is
// intended; the conformance specs compare every stream's output with these bytes.
const ENCODERS: Readonly<Record<string, readonly [extension: string, encode: (events: readonly AgentEvent[]) => string]>> = {
  'ai-sdk-v6': ['.sse', (events) => frameAiSdk(encodeAiSdk(events))],
  'ag-ui': ['.sse', (events) => frameAgUi(encodeAgUi(events))],
  mcp: ['.ndjson', (events) => frameMcp(encodeMcp(events))],
  acp: ['.ndjson', (events) => frameAcp(encodeAcp(events))],
  a2a: ['.sse', (events) => frameA2a(encodeA2a(events))],
};
const streams = resolve(import.meta.dirname, 'streams');
for (const [protocol, [extension, encode]] of Object.entries(ENCODERS)) {
  const golden = resolve(import.meta.dirname, 'golden', protocol);
  mkdirSync(golden, { recursive: true });
  for (const file of readdirSync(streams).filter((f) => f.endsWith('.events.jsonl')).sort()) {
    const events = readFileSync(join(streams, file), 'utf8').split('\n').filter((l) => l !== '').map(deserialiseEvent);
    writeFileSync(join(golden, file.replace('.events.jsonl', extension)), encode(events));
  }
  process.stdout.write(`golden frames written to ${golden}\n`);
}
