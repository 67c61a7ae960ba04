import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
// The package as its users import it: the built JavaScript (`npm run bench:fair` builds it first).
import {
  AgentRuntimeBuilder,
  defineTool,
  MemoryThreadRunStore,
  Messages,
  realEnv,
  ToolResults,
  type AgentEvent,
  type AgentRuntime,
  type LlmExecutor,
  type Message,
  type StreamPart,
} from 'awaken-ts';
import { frameAiSdk, initialAiSdkState, transcodeAiSdk, type AiSdkState } from '../../src/protocols/ai-sdk-v6/encoder.ts';
import { allocatedPerCall, PartStream } from 'awaken-ts/testing';
import { median } from '../stats.ts';

/**
 * The loop measured fairly (`npm run bench:fair`): every case does the same run — N steps, each an
 * inference answering one `echo` tool call, then a text answer — against the same O(1) scripted
 * model, in one process, interleaved in rounds. Reported: µs per step (median over rounds), the
 * per-round ratio to `floor-phased` (median and min), and bytes *allocated* per step (a batch inside
 * a young generation large enough that no GC runs during it — `npm run bench:fair` fixes it at 256 MB
 * a semi-space — checked with V8's GC profiler: `allocatedPerCall` in `awaken-ts/testing`).
 *
 * - `floor-bare`: push the messages, await the model and the tool.
 * - `floor-phased`: the same plus, for every phase the loop runs (step_start, before_inference,
 *   after_inference, before_tool_execute, after_tool_execute, step_end each step; run_start and
 *   run_end once), a frozen snapshot and one atomic commit, one hook dispatched and one event
 *   emitted; zod validation of the tool arguments; synchronous where nothing is asynchronous.
 * - `awaken`: the runtime as the README builds it, from the built package — the default `Env` (wall
 *   clock, UUID v7 ids), no store, a sink that drops events.
 * - `awaken + store`: the same with the in-memory thread store, a checkpoint at every step end; each run
 *   starts from an empty store (see `casesFor`).
 * - `awaken, generator model`: `awaken` on the model as users write one, an `async function*`
 *   yielding fresh parts per inference, each tool call with a new id (`GeneratorModel`); every run is a fresh `run` call, so at
 *   N = 10 its per-run set-up weighs as it does for a user. Its ratio to `floor-phased` carries the
 *   generator's own cost; `floor-phased, generator model` (the same phases consuming the same
 *   generator) is the floor on that model, and the last ratio column compares each subject with the
 *   floor on its own model.
 */

const EchoArgs = z.object({ text: z.string() });
const echo = defineTool({ id: 'echo', description: 'echo', args: EchoArgs, execute: ({ text }) => ToolResults.success('echo', { echoed: text }) });
const CALL_IDS = Array.from({ length: 1_001 }, (_, i) => `c${i}`);

/** The scripted model: the k-th call of a run answers with step k's parts, in O(1). */
class ScriptModel {
  #k = 0;
  readonly #steps: number;
  readonly #toolSteps: StreamPart[][];
  readonly #text: StreamPart[];
  constructor(steps: number) {
    this.#steps = steps;
    this.#toolSteps = Array.from({ length: steps }, (_, k) => [
      { type: 'tool_call_start', id: CALL_IDS[k] as string, name: 'echo' },
      { type: 'tool_call_delta', id: CALL_IDS[k] as string, args_delta: '{"text":"hi"}' },
      { type: 'finish', stop_reason: 'ToolUse' },
    ]);
    this.#text = [
      { type: 'text_delta', delta: 'done' },
      { type: 'finish', stop_reason: 'EndTurn' },
    ];
  }
  reset(): void {
    this.#k = 0;
  }
  next(): StreamPart[] {
    const k = this.#k++;
    return k < this.#steps - 1 ? (this.#toolSteps[k] as StreamPart[]) : this.#text;
  }
  /** The runtime's port: the same parts as an async iterable (`PartStream`). */
  executor(): LlmExecutor {
    return { name: 'fair', stream: () => new PartStream(this.next()) };
  }
}

/**
 * The model as a user writes one: an `async function*` yielding fresh parts per inference (one
 * generator and its promises per call, new part objects every time), with the same script as
 * `ScriptModel` — the k-th call of a run answers with step k — except that every tool call has an
 * id never seen before, as a provider's are (`ScriptModel` reuses c0…c999 run after run, which
 * hides what a new id costs wherever a call id becomes a property name).
 */
class GeneratorModel {
  #k = 0;
  #calls = 0;
  readonly #steps: number;
  constructor(steps: number) {
    this.#steps = steps;
  }
  reset(): void {
    this.#k = 0;
  }
  stream(): AsyncIterable<StreamPart> {
    const k = this.#k++;
    const last = k >= this.#steps - 1;
    const calls = last ? 0 : this.#calls++;
    return (async function* (): AsyncGenerator<StreamPart> {
      if (last) {
        yield { type: 'text_delta', delta: 'done' };
        yield { type: 'finish', stop_reason: 'EndTurn' };
        return;
      }
      const id = `call_${calls}`;
      yield { type: 'tool_call_start', id, name: 'echo' };
      yield { type: 'tool_call_delta', id, args_delta: '{"text":"hi"}' };
      yield { type: 'finish', stop_reason: 'ToolUse' };
    })();
  }
  executor(): LlmExecutor {
    return { name: 'fair', stream: () => this.stream() };
  }
}

async function floorBare(model: ScriptModel): Promise<void> {
  model.reset();
  const messages: Message[] = [Messages.user('go')];
  for (;;) {
    const parts = await Promise.resolve(model.next());
    let text = '';
    let args = '';
    let id: string | undefined;
    for (const part of parts) {
      if (part.type === 'text_delta') text += part.delta;
      else if (part.type === 'tool_call_start') id = part.id;
      else if (part.type === 'tool_call_delta') args += part.args_delta;
    }
    if (id === undefined) {
      messages.push(Messages.assistant(text));
      return;
    }
    messages.push(Messages.assistantWithToolCalls(text, [{ id, name: 'echo', arguments: JSON.parse(args) as never }]));
    const result = await echo.execute(JSON.parse(args) as never, undefined as never);
    messages.push(Messages.tool(id, JSON.stringify(result)));
  }
}

type State = Readonly<{ revision: number; phases: number }>;
const sink = { emit: (_e: unknown): void => undefined };
const hooks: ((s: State) => number)[] = [(s) => s.phases + 1];

async function floorPhased(model: ScriptModel): Promise<void> {
  model.reset();
  const messages: Message[] = [Messages.user('go')];
  let state: State = Object.freeze({ revision: 0, phases: 0 });
  const phase = (name: string): void => {
    const snapshot = state;
    const phases = (hooks[0] as (s: State) => number)(snapshot);
    state = Object.freeze({ revision: snapshot.revision + 1, phases });
    sink.emit({ phase: name });
  };
  phase('run_start');
  for (;;) {
    phase('step_start');
    phase('before_inference');
    const parts = await Promise.resolve(model.next());
    let text = '';
    let args = '';
    let id: string | undefined;
    for (const part of parts) {
      sink.emit(part);
      if (part.type === 'text_delta') text += part.delta;
      else if (part.type === 'tool_call_start') id = part.id;
      else if (part.type === 'tool_call_delta') args += part.args_delta;
    }
    phase('after_inference');
    if (id === undefined) {
      messages.push(Messages.assistant(text));
      phase('step_end');
      break;
    }
    messages.push(Messages.assistantWithToolCalls(text, [{ id, name: 'echo', arguments: JSON.parse(args) as never }]));
    phase('before_tool_execute');
    const result = await echo.execute(EchoArgs.parse(JSON.parse(args)), undefined as never);
    phase('after_tool_execute');
    messages.push(Messages.tool(id, JSON.stringify(result)));
    phase('step_end');
  }
  phase('run_end');
}

/**
 * `floor-phased` on the user-written model: the same phases, consuming the same generator part by
 * part (`for await`), so that the model's own cost (its generator, its promises, its fresh parts) is
 * on both sides when the `awaken` subject on that model is compared with it.
 */
async function floorPhasedOnGenerator(model: GeneratorModel): Promise<void> {
  model.reset();
  const messages: Message[] = [Messages.user('go')];
  let state: State = Object.freeze({ revision: 0, phases: 0 });
  const phase = (name: string): void => {
    const snapshot = state;
    const phases = (hooks[0] as (s: State) => number)(snapshot);
    state = Object.freeze({ revision: snapshot.revision + 1, phases });
    sink.emit({ phase: name });
  };
  phase('run_start');
  for (;;) {
    phase('step_start');
    phase('before_inference');
    let text = '';
    let args = '';
    let id: string | undefined;
    for await (const part of model.stream()) {
      sink.emit(part);
      if (part.type === 'text_delta') text += part.delta;
      else if (part.type === 'tool_call_start') id = part.id;
      else if (part.type === 'tool_call_delta') args += part.args_delta;
    }
    phase('after_inference');
    if (id === undefined) {
      messages.push(Messages.assistant(text));
      phase('step_end');
      break;
    }
    messages.push(Messages.assistantWithToolCalls(text, [{ id, name: 'echo', arguments: JSON.parse(args) as never }]));
    phase('before_tool_execute');
    const result = await echo.execute(EchoArgs.parse(JSON.parse(args)), undefined as never);
    phase('after_tool_execute');
    messages.push(Messages.tool(id, JSON.stringify(result)));
    phase('step_end');
  }
  phase('run_end');
}

function awaken(model: { executor(): LlmExecutor }, store: MemoryThreadRunStore | undefined): AgentRuntime {
  const builder = new AgentRuntimeBuilder()
    .withEnv(realEnv())
    .withProvider('fair', model.executor())
    .withModel('m', { provider: 'fair', model_name: 'fair' })
    .withAgentSpec({ id: 'a', model: 'm', max_rounds: 1_000_000 })
    .withTool(echo);
  if (store !== undefined) builder.withThreadRunStore(store);
  const built = builder.build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return built.value;
}

const noEvents = { emit: (_e: AgentEvent): void => undefined };

interface Case {
  readonly name: string;
  readonly run: () => Promise<void>;
}

function casesFor(steps: number): Case[] {
  const models = { bare: new ScriptModel(steps), phased: new ScriptModel(steps), awaken: new ScriptModel(steps), stored: new ScriptModel(steps) };
  const generators = { phased: new GeneratorModel(steps), awaken: new GeneratorModel(steps) };
  const plain = awaken(models.awaken, undefined);
  const onGenerator = awaken(generators.awaken, undefined);
  const store = new MemoryThreadRunStore();
  const stored = awaken(models.stored, store);
  const runOf = (rt: AgentRuntime, model: { reset(): void }) => async (): Promise<void> => {
    model.reset();
    // Each run starts from an empty store, as a run on a new thread does: one store holding the
    // checkpoints of the bench's every earlier run (10⁵ and more) would charge the growth of its
    // arrays and maps to whichever steps happened to pay for it. The clearing is timed with the run.
    if (rt === stored) {
      store.threads.clear();
      store.checkpoints.length = 0;
    }
    const r = await rt.run({ messages: [Messages.user('go')] }, noEvents);
    if (!r.ok || r.value.termination.type !== 'natural_end' || r.value.steps !== steps)
      throw new Error(`the run did not take ${steps} steps: ${JSON.stringify(r)}`);
  };
  return [
    { name: 'floor-bare', run: () => floorBare(models.bare) },
    { name: 'floor-phased', run: () => floorPhased(models.phased) },
    { name: 'awaken', run: runOf(plain, models.awaken) },
    { name: 'awaken + store', run: runOf(stored, models.stored) },
    { name: 'floor-phased, generator model', run: () => floorPhasedOnGenerator(generators.phased) },
    { name: 'awaken, generator model', run: runOf(onGenerator, generators.awaken) },
  ];
}

// ---- streaming: µs per text delta through the loop and the AI SDK encoder ---------------------------

const DELTAS = 1_000;
const DELTA_PARTS: StreamPart[] = [
  ...Array.from({ length: DELTAS }, (_, i): StreamPart => ({ type: 'text_delta', delta: `w${i % 10} ` })),
  { type: 'finish', stop_reason: 'EndTurn' },
];

/** One inference of DELTAS text deltas, each event transcoded to UI message chunks and framed as SSE. */
function streamingRuntime(): AgentRuntime {
  const built = new AgentRuntimeBuilder()
    .withEnv(realEnv())
    .withProvider('fair', {
      name: 'fair',
      stream: () => new PartStream(DELTA_PARTS),
    })
    .withModel('m', { provider: 'fair', model_name: 'fair' })
    .withAgentSpec({ id: 'a', model: 'm' })
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return built.value;
}

/** The server's per-event work for an AI SDK client: transcode, then frame (the text is what a socket would be written). */
function aiSdkSink(): { emit: (e: AgentEvent) => void; bytes: () => number } {
  let state: AiSdkState = initialAiSdkState();
  let bytes = 0;
  return {
    emit: (e) => {
      const [next, chunks] = transcodeAiSdk(state, e);
      state = next;
      if (chunks.length > 0) bytes += frameAiSdk(chunks, { done: false }).length;
    },
    bytes: () => bytes,
  };
}

/** The floor: the same deltas framed as `text-delta` chunks, synchronously, nothing else. */
function framingFloor(): number {
  let bytes = 0;
  for (const part of DELTA_PARTS) {
    if (part.type !== 'text_delta') continue;
    bytes += `data: ${JSON.stringify({ type: 'text-delta', id: 't0', delta: part.delta })}\n\n`.length;
  }
  return bytes;
}

async function streamingRows(rounds: number): Promise<{ name: string; usPerDelta: number; ratioMedian: number; ratioMin: number }[]> {
  const runtime = streamingRuntime();
  const subject = async (): Promise<void> => {
    const sink = aiSdkSink();
    const r = await runtime.run({ messages: [Messages.user('go')] }, sink);
    if (!r.ok || r.value.termination.type !== 'natural_end' || sink.bytes() === 0) throw new Error('the streaming run did not end naturally');
  };
  const floor = async (): Promise<void> => {
    if (framingFloor() === 0) throw new Error('nothing framed');
  };
  const time = async (f: () => Promise<void>, runs: number): Promise<number> => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < runs; i++) await f();
    return Number(process.hrtime.bigint() - t0) / 1_000 / (runs * DELTAS);
  };
  await time(subject, 50);
  await time(floor, 50);
  const times = { subject: [] as number[], floor: [] as number[] };
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? (['subject', 'floor'] as const) : (['floor', 'subject'] as const);
    const round: Record<string, number> = {};
    for (const which of order) round[which] = await time(which === 'subject' ? subject : floor, 40);
    times.subject.push(round['subject'] as number);
    times.floor.push(round['floor'] as number);
    ratios.push((round['subject'] as number) / (round['floor'] as number));
  }
  return [
    { name: 'awaken: loop + AI SDK transcode + SSE frame', usPerDelta: median(times.subject), ratioMedian: median(ratios), ratioMin: Math.min(...ratios) },
    { name: 'floor: synchronous framing of the same deltas', usPerDelta: median(times.floor), ratioMedian: 1, ratioMin: 1 },
  ];
}

/** µs per step of `runs` runs. */
async function timeOf(c: Case, runs: number, steps: number): Promise<number> {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < runs; i++) await c.run();
  return Number(process.hrtime.bigint() - t0) / 1_000 / (runs * steps);
}

/** Bytes allocated per step (`allocatedPerCall`: batches of about 2,000 steps, halved until no GC runs during one). */
async function allocatedPerStep(c: Case, steps: number): Promise<number | undefined> {
  const gc = (globalThis as { gc?: () => void }).gc;
  const perRun = gc === undefined ? undefined : await allocatedPerCall(c.run, 2_000 / steps, gc);
  return perRun === undefined ? undefined : perRun / steps;
}

interface Row {
  readonly steps: number;
  readonly name: string;
  readonly usPerStep: number;
  readonly ratioMedian: number;
  readonly ratioMin: number;
  /** Median per-round ratio to `floor-phased` on the same model (the generator model's floor for its subject). */
  readonly ratioSameModel: number;
  readonly bytesPerStep: number | undefined;
}

const floorOnSameModel = (name: string): string => (name.endsWith('generator model') ? 'floor-phased, generator model' : 'floor-phased');

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const rounds = Number(args[args.indexOf('--rounds') + 1] ?? 0) || 15;
  const sizes = [10, 100, 1_000];
  const rows: Row[] = [];
  for (const steps of sizes) {
    const cases = casesFor(steps);
    const runs = Math.max(2, Math.floor(4_000 / steps));
    for (const c of cases) await timeOf(c, runs, steps); // warm-up
    const times = new Map(cases.map((c) => [c.name, [] as number[]]));
    const ratios = new Map(cases.map((c) => [c.name, [] as number[]]));
    const sameModel = new Map(cases.map((c) => [c.name, [] as number[]]));
    for (let r = 0; r < rounds; r++) {
      const round = new Map<string, number>();
      // Each round in another order: no case always runs first or after the same one.
      const order = cases.map((_, i) => cases[(i + r) % cases.length] as Case);
      for (const c of order) round.set(c.name, await timeOf(c, runs, steps));
      const floor = round.get('floor-phased') as number;
      for (const [name, t] of round) {
        times.get(name)?.push(t);
        ratios.get(name)?.push(t / floor);
        sameModel.get(name)?.push(t / (round.get(floorOnSameModel(name)) as number));
      }
    }
    for (const c of cases) {
      const rs = ratios.get(c.name) as number[];
      rows.push({
        steps,
        name: c.name,
        usPerStep: median(times.get(c.name) as number[]),
        ratioMedian: median(rs),
        ratioMin: Math.min(...rs),
        ratioSameModel: median(sameModel.get(c.name) as number[]),
        bytesPerStep: await allocatedPerStep(c, steps),
      });
    }
    process.stderr.write(`bench:fair: N = ${steps} done\n`);
  }
  const table = [
    '| N | case | µs per step (median) | × floor-phased, median | × floor-phased, min | × floor-phased on the same model, median | KiB allocated per step |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.steps} | ${r.name} | ${r.usPerStep.toFixed(2)} | ${r.ratioMedian.toFixed(2)} | ${r.ratioMin.toFixed(2)} | ${r.ratioSameModel.toFixed(2)} | ${r.bytesPerStep === undefined ? '—' : (r.bytesPerStep / 1024).toFixed(1)} |`,
    ),
  ].join('\n');
  const marginal = (name: string): string => {
    const at = (n: number): number => rows.find((r) => r.steps === n && r.name === name)?.usPerStep ?? Number.NaN;
    return `${name}: ${(at(1_000) / at(100)).toFixed(2)} (100 → 1,000) vs ${(at(100) / at(10)).toFixed(2)} (10 → 100)`;
  };
  const streaming = await streamingRows(rounds);
  const streamTable = [
    '| case | µs per text delta (median) | × floor, median | × floor, min |',
    '|---|---|---|---|',
    ...streaming.map((r) => `| ${r.name} | ${r.usPerDelta.toFixed(3)} | ${r.ratioMedian.toFixed(2)} | ${r.ratioMin.toFixed(2)} |`),
  ].join('\n');
  const machine = `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${rounds} rounds, ${new Date().toISOString().slice(0, 10)}`;
  const md = `# The loop, measured fairly\n\n${machine}. \`npm run bench:fair\`; method in \`bench/fair/loop.ts\`.\n\n${table}\n\nMarginal cost per step, ratio of µs per step: ${['awaken', 'awaken + store', 'awaken, generator model', 'floor-phased'].map(marginal).join('; ')}.\n\nStreaming: one inference of ${DELTAS.toLocaleString('en')} text deltas, every event transcoded for an AI SDK client and framed as SSE, beside the same deltas framed synchronously:\n\n${streamTable}\n`;
  const out = join(import.meta.dirname, '../results');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'loop-fair.md'), md);
  writeFileSync(join(out, 'loop-fair.json'), `${JSON.stringify({ machine, rows, streaming }, null, 2)}\n`);
  process.stdout.write(md);
}

/**
 * `--profile <case> [--steps N] [--seconds S]`: runs that one case alone, back to back, for `node
 * --cpu-prof` or `--heap-prof` to see where its time and bytes go; prints µs per step and nothing else.
 */
async function profileOne(args: readonly string[]): Promise<void> {
  const name = args[args.indexOf('--profile') + 1] ?? 'awaken';
  const steps = Number(args.includes('--steps') ? args[args.indexOf('--steps') + 1] : 10);
  const seconds = Number(args.includes('--seconds') ? args[args.indexOf('--seconds') + 1] : 10);
  const c = casesFor(steps).find((x) => x.name === name);
  if (c === undefined) throw new Error(`no case named ${name}`);
  // `--heap-samples <file>`: V8's sampling heap profiler, counting objects the GC has since collected
  // too (what `--heap-prof` leaves out), i.e. where the bytes allocated per step are allocated.
  const heapOut = args.includes('--heap-samples') ? args[args.indexOf('--heap-samples') + 1] : undefined;
  for (let i = 0; i < 200; i++) await c.run();
  const session = heapOut === undefined ? undefined : new Session();
  const post = (method: string, params?: object): Promise<unknown> =>
    new Promise((resolve, reject) => session?.post(method, params, (e, r) => (e === null ? resolve(r) : reject(e))));
  if (session !== undefined) {
    session.connect();
    await post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  }
  const until = Date.now() + seconds * 1_000;
  let runs = 0;
  const t0 = process.hrtime.bigint();
  while (Date.now() < until) {
    for (let i = 0; i < 100; i++) await c.run();
    runs += 100;
  }
  const us = Number(process.hrtime.bigint() - t0) / 1_000 / (runs * steps);
  if (session !== undefined && heapOut !== undefined) {
    const { profile } = (await post('HeapProfiler.stopSampling')) as { profile: unknown };
    writeFileSync(heapOut, JSON.stringify({ runs, steps, profile }));
    session.disconnect();
  }
  const bytes = heapOut === undefined ? await allocatedPerStep(c, steps) : undefined;
  process.stdout.write(
    `${name}, N = ${steps}: ${us.toFixed(2)} µs per step over ${runs} runs${bytes === undefined ? '' : `, ${(bytes / 1024).toFixed(2)} KiB allocated per step`}\n`,
  );
}

if (process.argv.includes('--profile')) await profileOne(process.argv.slice(2));
else await main();
