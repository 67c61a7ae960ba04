import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
// The package as its users import it: the built JavaScript (`npm run bench:durable` builds it first).
import { AgentRuntimeBuilder, defineTool, Messages, realEnv, ToolResults, type LlmExecutor, type StreamPart } from 'awaken-ts';
import { openStore, type Store } from 'awaken-ts/stores';
import { median } from './stats.ts';

/**
 * What storing every phase of a tool call costs (ADR 0056), `npm run bench:durable`: a 100-step run
 * (each step an inference answering one `echo` call, then a text answer) on the default `Env`, on
 * the in-memory store and on a SQLite file, interleaved in rounds in one process. A run with a store
 * writes at its start, at each call's three phases (the batch as requested, the call marked running,
 * its outcome) and at each step's end: the writes per run are counted; a server's runs also hold
 * their thread's lease, which every write checks (`RunCheckpoint.fence`). Reported: ms per run (median
 * of rounds), SQLite's time over the memory store's (median and max of per-round ratios; the target
 * is ≤ 2×), and the cost of one write on each store beside the run without a store. After each
 * subject's turn in a round its threads are deleted, untimed: the memory store would otherwise carry
 * a heap that grows round after round (its collector's work growing with it) and SQLite a file.
 */

const STEPS = 100;
const ROUNDS = Number(process.env['ROUNDS'] ?? 9);
const RUNS = Number(process.env['RUNS'] ?? 5);

const echo = defineTool({
  id: 'echo',
  description: 'echo',
  args: z.object({ text: z.string() }),
  execute: ({ text }) => ToolResults.success('echo', { echoed: text }),
});

/** The k-th call of a run answers with step k (a call id per run and step, as a provider's are new). */
function model(): LlmExecutor & { reset(): void } {
  let k = 0;
  let run = 0;
  return {
    name: 'bench',
    reset: () => {
      k = 0;
      run++;
    },
    stream: () => {
      const step = k++;
      const parts: StreamPart[] =
        step < STEPS - 1
          ? [
              { type: 'tool_call_start', id: `r${run}c${step}`, name: 'echo' },
              { type: 'tool_call_delta', id: `r${run}c${step}`, args_delta: '{"text":"hi"}' },
              { type: 'finish', stop_reason: 'ToolUse' },
            ]
          : [
              { type: 'text_delta', delta: 'done' },
              { type: 'finish', stop_reason: 'EndTurn' },
            ];
      return (async function* () {
        yield* parts;
      })();
    },
  };
}

interface Subject {
  readonly name: string;
  run: () => Promise<void>;
  /** Forgets the runs made so far (not timed), so that no subject carries a heap or a file that grows round after round. */
  readonly forget: () => Promise<void>;
  writes: number;
  readonly close: () => Promise<void>;
}

function subject(name: string, store: Store | undefined, fenced = false): Subject {
  const llm = model();
  const builder = new AgentRuntimeBuilder()
    .withEnv(realEnv())
    .withProvider('p', llm)
    .withModel('m', { provider: 'p', model_name: 'bench' })
    .withAgentSpec({ id: 'a', model: 'm', max_rounds: STEPS + 1 })
    .withTool(echo);
  const made: string[] = [];
  const s: Subject = {
    name,
    writes: 0,
    run: async () => undefined,
    forget: async () => {
      for (const id of made.splice(0)) await store?.deleteThread(id);
    },
    close: async () => store?.close(),
  };
  if (store !== undefined) {
    // Counted on the way through: the store's own checkpoint does the work.
    const checkpoint = store.checkpoint.bind(store);
    store.checkpoint = (c) => {
      s.writes++;
      return checkpoint(c);
    };
    builder.withThreadRunStore(store);
  }
  const built = builder.build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  const runtime = built.value;
  let n = 0;
  const sink = { emit: () => undefined };
  // As a server runs it: the thread's lease taken for the run, every checkpoint fenced by it.
  const owner = 'bench-instance';
  s.run = async () => {
    llm.reset();
    const threadId = `${name.replace(/\W+/g, '-')}-${n++}`;
    made.push(threadId);
    const runId = `${threadId}-run`;
    if (fenced) await store?.takeLease({ threadId, runId, owner, now: Date.now(), ttlMs: 60_000 });
    const r = await runtime.run({ threadId, runId, messages: [Messages.user('go')] }, sink, fenced ? { checkpoint: { fence: { owner } } } : {});
    if (fenced) await store?.releaseLease(threadId, runId);
    if (!r.ok || r.value.termination.type !== 'natural_end')
      throw new Error(`${name}: the run did not end naturally: ${JSON.stringify(r.ok ? r.value.termination : r.error)}`);
  };
  return s;
}

const dir = mkdtempSync(join(tmpdir(), 'awaken-bench-durable-'));
const memoryStore = openStore('memory');
const sqliteStore = openStore(`sqlite:${join(dir, 'bench.db')}`);
const fencedStore = openStore(`sqlite:${join(dir, 'fenced.db')}`);
if (typeof memoryStore === 'string' || typeof sqliteStore === 'string' || typeof fencedStore === 'string') throw new Error('a store did not open');
const subjects = [
  subject('no store', undefined),
  subject('memory store', memoryStore),
  subject('SQLite file', sqliteStore),
  subject('SQLite file, fenced', fencedStore, true),
];
const times = new Map<string, number[]>(subjects.map((s) => [s.name, []]));
const perRun = new Map<string, number>();

for (const s of subjects) for (let i = 0; i < 3; i++) await s.run();
for (let round = 0; round < ROUNDS; round++) {
  for (const s of round % 2 === 0 ? subjects : [...subjects].reverse()) {
    const before = s.writes;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < RUNS; i++) await s.run();
    times.get(s.name)?.push(Number(process.hrtime.bigint() - t0) / 1e6 / RUNS);
    await s.forget();
    perRun.set(s.name, (s.writes - before) / RUNS);
  }
}
for (const s of subjects) await s.close();
rmSync(dir, { recursive: true, force: true });

const ms = (name: string): number => median(times.get(name) ?? []);
const ratios = (times.get('SQLite file') ?? []).map((t, i) => t / ((times.get('memory store') ?? [])[i] as number));
const writes = perRun.get('SQLite file') ?? 0;
const perWrite = (name: string): number => ((ms(name) - ms('no store')) / (perRun.get(name) ?? 1)) * 1000;
const lines = [
  '# Durable call phases, measured',
  '',
  `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model.split(' ')[0] ?? 'CPU'}, ${ROUNDS} rounds of ${RUNS} runs, ${new Date().toISOString().slice(0, 10)}. \`npm run bench:durable\`; method in \`bench/durable.ts\`.`,
  '',
  `A run of ${STEPS} steps (${STEPS - 1} with one tool call), ${writes} writes per run with a store.`,
  '',
  '| case | ms per run (median) | µs per write over no store |',
  '|---|---|---|',
  `| no store | ${ms('no store').toFixed(2)} | — |`,
  `| memory store | ${ms('memory store').toFixed(2)} | ${perWrite('memory store').toFixed(1)} |`,
  `| SQLite file | ${ms('SQLite file').toFixed(2)} | ${perWrite('SQLite file').toFixed(1)} |`,
  `| SQLite file, fenced by the thread's lease (as a server's runs) | ${ms('SQLite file, fenced').toFixed(2)} | ${perWrite('SQLite file, fenced').toFixed(1)} |`,
  '',
  `SQLite over the memory store, per round: median ${median(ratios).toFixed(2)}×, max ${Math.max(...ratios).toFixed(2)}× (target ≤ 2×).`,
  '',
];
process.stdout.write(`${lines.join('\n')}\n`);
if (process.argv.includes('--write')) writeFileSync(join(import.meta.dirname, 'results/durable.md'), `${lines.join('\n')}`);
