import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { replayTranscript } from '../src/replay/replayer.ts';
import type { Suite } from './harness.ts';

const dir = resolve(import.meta.dirname, '../fixtures/runs');

/** Replays the whole corpus once per iteration; the unit is one replayed event. */
export function replaySuites(): Suite[] {
  const texts = readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()
    .map((f) => readFileSync(join(dir, f), 'utf8'));
  const events = texts.reduce((n, t) => n + (t.match(/^\{"type":"event"/gm)?.length ?? 0), 0);
  const steps = texts.reduce((n, t) => n + (t.match(/"event_type":"step_start"/g)?.length ?? 0), 0);
  const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
  const parse = (): void => {
    for (const t of texts) for (const line of t.split('\n')) if (line !== '') JSON.parse(line);
  };
  return [
    {
      name: 'replay-corpus',
      description: `replay of all ${texts.length} recorded runs (${events} events, ${steps} steps, ${Math.round(bytes / 1024)} KiB: ${Math.round(bytes / steps)} transcript bytes per step) vs just parsing their JSON`,
      units: { name: 'event', count: events },
      cases: [
        {
          name: 'awaken replay',
          role: 'subject',
          fn: async () => {
            for (const t of texts) {
              const r = await replayTranscript(t);
              if (!r.identical) throw new Error('corpus replay differs');
            }
          },
        },
        { name: 'JSON.parse of every line', role: 'baseline', fn: parse },
      ],
    },
  ];
}
