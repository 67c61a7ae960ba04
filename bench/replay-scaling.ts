import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
// The package as its users import it: the built JavaScript (`npm run bench:replay-scaling` builds it first).
import { defineTool, deterministicEnv, Messages, ToolResults } from 'awaken-ts';
import { recordRun, replayTranscript, ScriptedLlm } from 'awaken-ts/testing';
import { echoTranscript, type EchoRunLib } from './echo-run.ts';
import { median } from './stats.ts';

/**
 * Whether replay keeps its speed as a run grows, `npm run bench:replay-scaling`: echo runs of 125,
 * 1,250 and 12,500 steps (1k, 10k and 100k events; each step an inference answering one call, then a
 * text answer) are recorded once, then replayed in rounds in one process, each round replaying every
 * size for about the same number of events (the 1k run 100 times, the 10k run 10 times, the 100k run
 * once). Reported: replayed events per second (events ÷ wall time, parsing and set-up included),
 * median and range over rounds per size, and the largest median over the smallest (the target is
 * within ±25 %: at most 1.25×); and how long recording each run took, once (the first, smallest,
 * pays for the process's warm-up). A round of warm-up replays runs first, untimed.
 */

const SIZES = [125, 1_250, 12_500] as const;
const ROUNDS = Number(process.env['ROUNDS'] ?? 5);
const EVENTS_A_ROUND = 100_000;
const lib: EchoRunLib = { defineTool, deterministicEnv, Messages, ToolResults, recordRun, ScriptedLlm };

// One after another, so that each recording's time is its own.
const runs: { steps: number; text: string; events: number; recordedMs: number; times: number; rates: number[] }[] = [];
for (const steps of SIZES) {
  const started = performance.now();
  const text = await echoTranscript(lib, steps);
  const recordedMs = performance.now() - started;
  const events = text.match(/^\{"type":"event"/gm)?.length ?? 0;
  runs.push({ steps, text, events, recordedMs, times: Math.max(1, Math.round(EVENTS_A_ROUND / events)), rates: [] });
}

/** Replays `run` its number of times in a row; events per second. */
async function round(run: (typeof runs)[number]): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < run.times; i++) {
    const r = await replayTranscript(run.text);
    if (!r.identical) throw new Error(`the ${run.steps}-step run replays differently`);
  }
  return (run.events * run.times * 1000) / (performance.now() - started);
}

for (const run of runs) await round(run);
for (let r = 0; r < ROUNDS; r++) for (const run of runs) run.rates.push(await round(run));

const k = (x: number): string => `${(x / 1000).toFixed(1)}k`;
const medians = runs.map((run) => median(run.rates));
const lines = [
  '# Replay speed as a run grows, measured',
  '',
  `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model.split(' ')[0] ?? 'CPU'}, ${ROUNDS} rounds, ${new Date().toISOString().slice(0, 10)}. \`npm run bench:replay-scaling\`; method in \`bench/replay-scaling.ts\`.`,
  '',
  '| run | events | recorded in (ms, once) | replays a round | events/s (median) | events/s (range) |',
  '|---|---|---|---|---|---|',
  ...runs.map(
    (run, i) =>
      `| ${run.steps.toLocaleString('en')} steps | ${run.events.toLocaleString('en')} | ${Math.round(run.recordedMs).toLocaleString('en')} | ${run.times} | ${k(medians[i] as number)} | ${k(Math.min(...run.rates))}–${k(Math.max(...run.rates))} |`,
  ),
  '',
  `Largest median over smallest: ${(Math.max(...medians) / Math.min(...medians)).toFixed(2)}× (target ≤ 1.25×).`,
];
process.stdout.write(`${lines.join('\n')}\n`);
if (process.argv.includes('--write')) writeFileSync(join(import.meta.dirname, 'results/replay-scaling.md'), `${lines.join('\n')}\n`);
