import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ENCODERS } from '../src/cli/encode-command.ts';
import { eventsOf, goldenPath, streams } from './support.ts';

// Rewrites the golden frames (npm run conformance:golden) with the encoders `awaken encode` uses.
// Run it only when an encoder change is intended; the conformance specs compare every stream's
// output with these bytes.
for (const [protocol, encode] of Object.entries(ENCODERS)) {
  if (encode === undefined) continue;
  for (const file of streams) {
    const path = goldenPath(protocol, file);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, encode(eventsOf(file)));
  }
  process.stdout.write(`golden frames written for ${protocol}\n`);
}
