import { performance } from 'node:perf_hooks';
import { GCProfiler } from 'node:v8';
import type { JsonValue } from '../contract/json.ts';
import { Messages, type Message, type ToolCall } from '../contract/message.ts';
import type { StreamPart } from '../contract/stream.ts';
import type { Phase } from '../contract/phase.ts';
import { andThen, andThenOrElse, drive } from '../runtime/maybe-promise.ts';
import type { PhaseHook, Plugin } from '../core/phase/plugin.ts';
import type { AgentRuntime } from '../runtime/agent-runtime.ts';
import type { AgentEvent } from '../contract/event.ts';
import type { LlmExecutor } from '../runtime/llm.ts';
import type { Tool } from '../runtime/tool.ts';
import { interceptRegistrar } from './registrar.ts';
import { testToolContext } from './tool-context.ts';

/**
 * A user's agent measured the way `npm run bench:fair` measures the loop (the fair-benchmark rules):
 * the agent with its plugins, on the default `Env`, against the same-process floors running the same
 * scripted model and the same tools — `floor-bare` (push the messages, await the model and the
 * tools) and `floor-phased` (the same plus 8 phases with a frozen snapshot and one atomic commit
 * each, one hook dispatched and one event emitted per phase, the tools' arguments validated) —
 * interleaved in rounds in one process. Reported per N: µs per step, the median and min of the
 * per-round ratio to `floor-phased`, bytes allocated per step; and which plugin hooks cost most.
 */
export interface AgentBenchOptions {
  /** The script's steps, as parts: tool-calling steps are cycled to make N steps, the last text step ends the run. */
  readonly script: readonly (readonly StreamPart[])[];
  /** The agent's tools, by id, for the floors to run. */
  readonly tools: ReadonlyMap<string, Tool>;
  /** The agent as users run it, on this model, allowing `maxRounds` steps; `wrap` instruments its plugins (the hook profile). */
  readonly runtime: (model: LlmExecutor, maxRounds: number, wrap?: (p: Plugin) => Plugin) => AgentRuntime;
  readonly agentId: string;
  readonly steps?: readonly number[];
  readonly rounds?: number;
  /** Progress, one line per N. */
  readonly progress?: (line: string) => void;
}

export interface AgentBenchRow {
  readonly steps: number;
  readonly name: 'floor-bare' | 'floor-phased' | 'agent';
  readonly usPerStep: number;
  readonly ratioMedian: number;
  readonly ratioMin: number;
  readonly bytesPerStep: number | undefined;
}

export interface HookCost {
  readonly plugin: string;
  readonly phase: Phase;
  readonly calls: number;
  readonly usPerCall: number;
  /** Of the agent's time over the profiled runs. */
  readonly share: number;
}

export interface AgentBenchReport {
  readonly agent: string;
  readonly rounds: number;
  readonly rows: readonly AgentBenchRow[];
  readonly hooks: readonly HookCost[];
}

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * One scripted inference as a port streams it, at its least: one object that is its own iterator,
 * whose `next` returns a settled promise per part (not an async generator, which would add its own
 * machinery to the subject's time; not an object of closures, which would add to its allocation).
 */
export class PartStream implements AsyncIterable<StreamPart>, AsyncIterator<StreamPart> {
  readonly #parts: readonly StreamPart[];
  #i = 0;
  constructor(parts: readonly StreamPart[]) {
    this.#parts = parts;
  }
  [Symbol.asyncIterator](): AsyncIterator<StreamPart> {
    return this;
  }
  next(): Promise<IteratorResult<StreamPart>> {
    const i = this.#i;
    if (i >= this.#parts.length) return Promise.resolve(DONE);
    this.#i = i + 1;
    return Promise.resolve({ done: false, value: this.#parts[i] as StreamPart });
  }
  return(): Promise<IteratorResult<StreamPart>> {
    return Promise.resolve(DONE);
  }
}

/** The N-step scenario, made once: step k's parts (tool steps cycled, call ids made unique), the text step last. */
export function scenario(script: readonly (readonly StreamPart[])[], steps: number): StreamPart[][] {
  const calls = script.filter((parts) => parts.some((p) => p.type === 'tool_call_start'));
  const last = [...script].reverse().find((parts) => !parts.some((p) => p.type === 'tool_call_start')) ?? [
    { type: 'text_delta', delta: 'done' },
    { type: 'finish', stop_reason: 'EndTurn' },
  ];
  if (calls.length === 0 && steps > 1) throw new Error('the script has no step that calls a tool: a run of it takes one step');
  return Array.from({ length: steps }, (_, k) => {
    if (k === steps - 1) return [...last];
    const parts = calls[k % calls.length] as readonly StreamPart[];
    return parts.map((p) => ('id' in p && (p.type === 'tool_call_start' || p.type === 'tool_call_delta') ? { ...p, id: `${p.id}-${k}` } : p)) as StreamPart[];
  });
}

/** The scripted model over a scenario: the k-th call of a run answers with step k, in O(1). */
class ScenarioModel {
  #k = 0;
  readonly #steps: readonly StreamPart[][];
  constructor(steps: readonly StreamPart[][]) {
    this.#steps = steps;
  }
  reset(): void {
    this.#k = 0;
  }
  next(): readonly StreamPart[] {
    const k = this.#k++;
    return this.#steps[Math.min(k, this.#steps.length - 1)] as StreamPart[];
  }
  executor(): LlmExecutor {
    return { name: 'bench', stream: () => new PartStream(this.next()) };
  }
}

/** The tool calls and text of one inference's parts. */
function readParts(parts: readonly StreamPart[], emit?: (p: StreamPart) => void): { text: string; calls: ToolCall[] } {
  let text = '';
  const args = new Map<string, { name: string; args: string }>();
  for (const part of parts) {
    emit?.(part);
    if (part.type === 'text_delta') text += part.delta;
    else if (part.type === 'tool_call_start') args.set(part.id, { name: part.name, args: '' });
    else if (part.type === 'tool_call_delta') {
      const a = args.get(part.id);
      if (a !== undefined) a.args += part.args_delta;
    }
  }
  return { text, calls: [...args].map(([id, a]) => ({ id, name: a.name, arguments: (a.args === '' ? {} : JSON.parse(a.args)) as JsonValue })) };
}

const context = testToolContext();

async function runTool(tools: ReadonlyMap<string, Tool>, call: ToolCall, validate: boolean): Promise<unknown> {
  const tool = tools.get(call.name);
  if (tool === undefined) throw new Error(`the script calls ${call.name}, which the agent does not have`);
  if (validate) tool.validateArgs?.(call.arguments);
  return tool.execute(call.arguments, context);
}

async function floorBare(model: ScenarioModel, tools: ReadonlyMap<string, Tool>): Promise<void> {
  model.reset();
  const messages: Message[] = [Messages.user('go')];
  for (;;) {
    const { text, calls } = readParts(await Promise.resolve(model.next()));
    if (calls.length === 0) {
      messages.push(Messages.assistant(text));
      return;
    }
    messages.push(Messages.assistantWithToolCalls(text, calls));
    for (const call of calls) messages.push(Messages.tool(call.id, JSON.stringify(await runTool(tools, call, false))));
  }
}

type FloorState = Readonly<{ revision: number; phases: number }>;
const floorSink = { emit: (_e: unknown): void => undefined };
const floorHook = (s: FloorState): number => s.phases + 1;

async function floorPhased(model: ScenarioModel, tools: ReadonlyMap<string, Tool>): Promise<void> {
  model.reset();
  const messages: Message[] = [Messages.user('go')];
  let state: FloorState = Object.freeze({ revision: 0, phases: 0 });
  const phase = (name: string): void => {
    const snapshot = state;
    state = Object.freeze({ revision: snapshot.revision + 1, phases: floorHook(snapshot) });
    floorSink.emit({ phase: name });
  };
  phase('run_start');
  for (;;) {
    phase('step_start');
    phase('before_inference');
    const { text, calls } = readParts(await Promise.resolve(model.next()), (p) => floorSink.emit(p));
    phase('after_inference');
    if (calls.length === 0) {
      messages.push(Messages.assistant(text));
      phase('step_end');
      break;
    }
    messages.push(Messages.assistantWithToolCalls(text, calls));
    for (const call of calls) {
      phase('before_tool_execute');
      const result = await runTool(tools, call, true);
      phase('after_tool_execute');
      messages.push(Messages.tool(call.id, JSON.stringify(result)));
    }
    phase('step_end');
  }
  phase('run_end');
}

const noEvents = { emit: (_e: AgentEvent): void => undefined };
const NO_WAIT = Object.freeze({ waitForDecisions: false });

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

const countedOne = (_: unknown, i: number): number => i + 1;

/**
 * Bytes allocated by `times` calls of `run`: the heap's growth over a batch during which no garbage
 * collection ran (counted with V8's GC profiler), `undefined` when one did. A call that returns a
 * promise (any thenable) is waited for; one that answers at once is not (awaiting it would count a
 * promise per call).
 */
export async function allocatedBytes(run: () => unknown, times: number, collect: () => void): Promise<number | undefined> {
  collect();
  await new Promise((resolve) => setImmediate(resolve));
  const profiler = new GCProfiler();
  profiler.start();
  const before = process.memoryUsage().heapUsed;
  await drive(
    0,
    (i) => andThen(run(), countedOne, i),
    (i) => i >= times,
  );
  const after = process.memoryUsage().heapUsed;
  const collections = profiler.stop()?.statistics.length ?? 0;
  return collections === 0 ? after - before : undefined;
}

/**
 * Bytes allocated per call of `run`, as the benchmarks count them: `allocatedBytes` over a batch of
 * `calls` calls, halved until a batch runs with no collection; the median of three such batches
 * (one can be thrown off by the heap's own bookkeeping). Undefined when not even one call runs
 * without a collection. Needs a young generation that holds a batch (`--max-semi-space-size`).
 */
export async function allocatedPerCall(run: () => unknown, calls: number, collect: () => void): Promise<number | undefined> {
  const xs: number[] = [];
  for (let batch = 0; batch < 3; batch++) {
    for (let n = Math.max(1, Math.floor(calls)); n >= 1; n = Math.floor(n / 2)) {
      const bytes = await allocatedBytes(run, n, collect);
      if (bytes === undefined) continue;
      xs.push(bytes / n);
      break;
    }
  }
  return xs.length === 0 ? undefined : median(xs);
}

/** A plugin whose hooks add their time to `costs` (the hook profile: a separate pass, never timed). */
function timed(plugin: Plugin, costs: Map<string, { plugin: string; phase: Phase; calls: number; ms: number }>): Plugin {
  const wrap = <P extends Phase>(phase: P, hook: PhaseHook<P>): PhaseHook<P> => {
    const id = `${plugin.name}\u0000${phase}`;
    return (ctx) => {
      const t0 = performance.now();
      const done = (): void => {
        const c = costs.get(id) ?? { plugin: plugin.name, phase, calls: 0, ms: 0 };
        c.calls++;
        c.ms += performance.now() - t0;
        costs.set(id, c);
      };
      // A hook that answers at once is timed at once; one that answers later, when it settles.
      return andThenOrElse(
        hook(ctx),
        (out) => {
          done();
          return out;
        },
        (e) => {
          done();
          throw e;
        },
      );
    };
  };
  const configKeys = (plugin as { readonly configKeys?: unknown }).configKeys;
  return {
    name: plugin.name,
    ...(configKeys !== undefined ? { configKeys } : {}),
    register: (r) =>
      plugin.register(interceptRegistrar(r, { registerPhaseHook: (real, phase: Phase, hook: PhaseHook) => real.registerPhaseHook(phase, wrap(phase, hook)) })),
  };
}

/** Runs the bench; see `AgentBenchOptions`. Needs `globalThis.gc` for the allocation column (else it is left out). */
export async function benchAgent(o: AgentBenchOptions): Promise<AgentBenchReport> {
  const rounds = o.rounds ?? 15;
  const rows: AgentBenchRow[] = [];
  const gc = (globalThis as { gc?: () => void }).gc;
  for (const steps of o.steps ?? [10, 100, 1_000]) {
    const plan = scenario(o.script, steps);
    const models = { bare: new ScenarioModel(plan), phased: new ScenarioModel(plan), agent: new ScenarioModel(plan) };
    const agent = o.runtime(models.agent.executor(), steps + 1);
    const cases: { name: AgentBenchRow['name']; run: () => Promise<void> }[] = [
      { name: 'floor-bare', run: () => floorBare(models.bare, o.tools) },
      { name: 'floor-phased', run: () => floorPhased(models.phased, o.tools) },
      {
        name: 'agent',
        run: async () => {
          models.agent.reset();
          // A run that suspends returns at once (and is refused below) instead of waiting for a decision.
          const r = await agent.run({ agentId: o.agentId, messages: [Messages.user('go')] }, noEvents, NO_WAIT);
          if (!r.ok) throw new Error(`the agent's run did not start: ${JSON.stringify(r.error)}`);
          if (r.value.termination.type !== 'natural_end' || r.value.steps !== steps)
            throw new Error(
              `the agent's run ended ${JSON.stringify(r.value.termination)} after ${r.value.steps} steps, not naturally after ${steps}: a bench script must not suspend or stop early`,
            );
        },
      },
    ];
    const runs = Math.max(2, Math.floor(4_000 / steps));
    const time = async (run: () => Promise<void>): Promise<number> => {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < runs; i++) await run();
      return Number(process.hrtime.bigint() - t0) / 1_000 / (runs * steps);
    };
    for (const c of cases) await time(c.run); // warm-up
    const times = new Map(cases.map((c) => [c.name, [] as number[]]));
    const ratios = new Map(cases.map((c) => [c.name, [] as number[]]));
    for (let r = 0; r < rounds; r++) {
      const round = new Map<string, number>();
      for (let i = 0; i < cases.length; i++) {
        const c = cases[(i + r) % cases.length] as (typeof cases)[number];
        round.set(c.name, await time(c.run));
      }
      const floor = round.get('floor-phased') as number;
      for (const [name, t] of round) {
        times.get(name as AgentBenchRow['name'])?.push(t);
        ratios.get(name as AgentBenchRow['name'])?.push(t / floor);
      }
    }
    for (const c of cases) {
      const perRun = gc === undefined ? undefined : await allocatedPerCall(c.run, 2_000 / steps, gc);
      const bytes = perRun === undefined ? undefined : perRun / steps;
      const rs = ratios.get(c.name) as number[];
      rows.push({
        steps,
        name: c.name,
        usPerStep: median(times.get(c.name) as number[]),
        ratioMedian: median(rs),
        ratioMin: Math.min(...rs),
        bytesPerStep: bytes,
      });
    }
    o.progress?.(`awaken bench: N = ${steps} done`);
  }

  // The hook profile: the agent with every plugin's hooks timed, at the smallest N, apart from the timed rounds.
  const costs = new Map<string, { plugin: string; phase: Phase; calls: number; ms: number }>();
  const steps = Math.min(...(o.steps ?? [10]));
  const model = new ScenarioModel(scenario(o.script, steps));
  const profiled = o.runtime(model.executor(), steps + 1, (p) => timed(p, costs));
  const t0 = performance.now();
  const profileRuns = Math.max(5, Math.floor(2_000 / steps));
  for (let i = 0; i < profileRuns; i++) {
    model.reset();
    await profiled.run({ agentId: o.agentId, messages: [Messages.user('go')] }, noEvents, NO_WAIT);
  }
  const total = performance.now() - t0;
  const hooks = [...costs.values()]
    .map((c) => ({ plugin: c.plugin, phase: c.phase, calls: c.calls, usPerCall: (c.ms * 1_000) / c.calls, share: c.ms / total }))
    .sort((a, b) => b.share - a.share);
  return { agent: o.agentId, rounds, rows, hooks };
}

/** The report as the command prints it: the table per N, the marginal cost, and the costliest hooks. */
export function renderAgentBench(r: AgentBenchReport): string {
  const kib = (b: number | undefined): string => (b === undefined ? '—' : (b / 1024).toFixed(1));
  const lines = [
    `agent ${r.agent}: ${r.rounds} rounds, interleaved with the floors in one process`,
    '',
    '| N | case | µs per step (median) | × floor-phased, median | × floor-phased, min | KiB allocated per step |',
    '|---|---|---|---|---|---|',
    ...r.rows.map(
      (x) => `| ${x.steps} | ${x.name} | ${x.usPerStep.toFixed(2)} | ${x.ratioMedian.toFixed(2)} | ${x.ratioMin.toFixed(2)} | ${kib(x.bytesPerStep)} |`,
    ),
  ];
  const ns = [...new Set(r.rows.map((x) => x.steps))];
  if (ns.length > 1) {
    const at = (n: number): number => r.rows.find((x) => x.steps === n && x.name === 'agent')?.usPerStep ?? Number.NaN;
    lines.push(
      '',
      `marginal cost per step (agent, µs per step): ${ns
        .slice(1)
        .map((n, i) => `${(at(n) / at(ns[i] as number)).toFixed(2)}× from N = ${ns[i]} to ${n}`)
        .join(', ')}`,
    );
  }
  lines.push(
    '',
    r.hooks.length === 0 ? 'plugin hooks: none (the agent has no plugin hooks)' : "plugin hooks, by share of the agent's time (a separate, instrumented pass):",
  );
  for (const h of r.hooks.slice(0, 10))
    lines.push(`  ${(h.share * 100).toFixed(1).padStart(5)}%  ${h.plugin} · ${h.phase}  (${h.calls} calls, ${h.usPerCall.toFixed(2)} µs each)`);
  return `${lines.join('\n')}\n`;
}
