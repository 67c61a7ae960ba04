import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
// The package as its users import it: the built JavaScript (`npm run bench` builds it first).
import { replayTranscript } from 'awaken-ts/testing';
import type { Suite } from './harness.ts';

const LONG_RUN_STEPS = 400;

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
    longRunSuite(),
  ];
}

/** One long run: what a transcript costs as a run grows (each request is written as its change). */
function longRunSuite(): Suite {
  let text = '';
  const long = { name: 'event', count: 0 };
  return {
    name: 'replay-long-run',
    description: `replay of one recorded run of ${LONG_RUN_STEPS} echo steps vs just parsing its JSON`,
    get units() {
      return long;
    },
    setup: async () => {
      // Recorded in a process of its own (`echo-record.ts`): replays are measured in one that never recorded.
      text = execFileSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'echo-record.ts'), String(LONG_RUN_STEPS)], {
        // tsx is resolved from the repository, wherever the bench was started.
        cwd: resolve(import.meta.dirname, '..'),
        encoding: 'utf8',
        maxBuffer: 1 << 28,
      });
      long.count = text.match(/^\{"type":"event"/gm)?.length ?? 0;
      process.stdout.write(
        `replay-long-run: ${long.count} events, ${Math.round(Buffer.byteLength(text) / 1024)} KiB (${Math.round(Buffer.byteLength(text) / LONG_RUN_STEPS)} bytes per step)\n`,
      );
    },
    cases: [
      {
        name: 'awaken replay',
        role: 'subject',
        fn: async () => {
          const r = await replayTranscript(text);
          if (!r.identical) throw new Error('long run replay differs');
        },
      },
      {
        name: 'JSON.parse of every line',
        role: 'baseline',
        fn: () => {
          for (const l of text.split('\n')) if (l !== '') JSON.parse(l);
        },
      },
    ],
  };
}
