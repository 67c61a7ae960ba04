import { AsyncLocalStorage } from 'node:async_hooks';
import type { AgentSpec, AgentSpecInput } from '../contract/agent-spec.ts';
import { serialiseEvent, type AgentEvent } from '../contract/event.ts';
import type { InferenceOverride } from '../contract/inference.ts';
import type { JsonValue } from '../contract/json.ts';
import type { Message } from '../contract/message.ts';
import type { StreamPart } from '../contract/stream.ts';
import type { StopPolicy } from '../core/policies/stop-policy.ts';
import type { StateCommand } from '../core/state/state-command.ts';
import { PLUGIN_CATALOG } from '../plugins/catalog.ts';
import type { RuntimePlugin } from '../runtime/resolve.ts';
import { AgentRuntimeBuilder } from '../runtime/agent-runtime.ts';
import { deterministicEnv, withIdPrefix, type Env, type IdKind } from '../runtime/env.ts';
import { clientInputs, type ClientInputs } from '../runtime/run-handle.ts';
import { MemoryThreadRunStore } from '../runtime/thread-run-store.ts';
import { DELEGATION_CATEGORY } from '../runtime/delegation.ts';
import { InferenceFailure, type InferenceRequest, type LlmExecutor } from '../runtime/llm.ts';
import type { ModelEntry } from '../runtime/resolve.ts';
import type { CircuitBreakerConfig } from '../runtime/circuit-breaker.ts';
import type { AgentRunResult } from '../contract/run-result.ts';
import type { Decision } from '../contract/decision.ts';
import { isToolOutput, ToolFailure, type Tool, type ToolCallContext } from '../runtime/tool.ts';
import { ObservedContext } from './observed-context.ts';
import { pluginEntryOf } from './plugins.ts';
import {
  clientFieldsOf,
  configDigest,
  endRecordOf,
  llmLine,
  parseRecord,
  recordedDecision,
  RequestChain,
  SuspensionModes,
  TRANSCRIPT_FORMAT,
  type Header,
  type PluginEntry,
} from './transcript.ts';

/** The ports' traffic, one canonical line per exchange, in the order it happened. */
export class TranscriptLog {
  readonly lines: string[] = [];
  /** The run's requests, each written as its change from the one before (whatever provider it went to). */
  readonly requests: RequestChain;
  #events = 0;
  #llm = 0;
  /** Whether a random number was drawn (`dropInertSeed`), noted as it is written rather than searched for at the end. */
  #drewRandom = false;
  /**
   * Whether each tool call runs in the recorder's async context (`insideTool`), so that what a
   * delegate's sub-run does inside it is not written as the run's own traffic. Once any async
   * context has been entered, Node hooks every promise of the process.
   */
  readonly toolsInContext: boolean = true;

  constructor(requests = new RequestChain()) {
    this.requests = requests;
  }

  get eventCount(): number {
    return this.#events;
  }

  nextLlmSeq(): number {
    return ++this.#llm;
  }

  /** Writes a record in its canonical form (the schema's key order, defaults filled, extras dropped). */
  push(record: object): void {
    const line = this.lineOf(record);
    this.lines.push(line);
    if (!this.#drewRandom && line.startsWith('{"type":"env","draw":"random"')) this.#drewRandom = true;
  }

  /**
   * The canonical line of a record: an env draw's built directly (they are a third of a transcript),
   * a model request's around the change its chain gave (`llmLine`), any other by the schema.
   */
  protected lineOf(record: object): string {
    const env = envLineOf(record);
    if (env !== undefined) return env;
    const llm = llmLine(record);
    if (llm !== undefined) return llm;
    const parsed = parseRecord(record);
    if (!parsed.success) throw new Error(`recorder: invalid ${String((record as { type?: unknown }).type)} record: ${parsed.error.message}`);
    return JSON.stringify(parsed.data);
  }

  /** A deterministic env's seed only matters to random draws: without any, it is not written. */
  dropInertSeed(): void {
    if (this.#drewRandom) return;
    const header = JSON.parse(this.lines[0] as string) as { env: { seed?: number } };
    if (header.env.seed === undefined) return;
    delete header.env.seed;
    this.lines[0] = JSON.stringify(parseRecord(header).data);
  }

  /** Writes an event; `payload`, its JSON when the caller already has it (`serialiseEvent(e)`). */
  event(e: AgentEvent, payload: string = serialiseEvent(e)): void {
    this.lines.push(this.eventLine(this.#events++, payload));
  }

  /** The line of event `seq`, given its JSON. */
  protected eventLine(seq: number, payload: string): string {
    return `{"type":"event","seq":${seq},"event":${payload}}`;
  }

  text(): string {
    return `${this.lines.join('\n')}\n`;
  }
}

/**
 * An env record's canonical line, written as the schema would write it (its keys in the schema's
 * order), or undefined for the schema to judge: a draw that is not a finite number or a string.
 */
export function envLineOf(record: object): string | undefined {
  if (Array.isArray(record)) return undefined;
  // Each field read once, as the schema reads it.
  const { type, draw, value, kind, ms } = record as { type?: unknown; draw?: unknown; value?: unknown; kind?: unknown; ms?: unknown };
  if (type !== 'env') return undefined;
  switch (draw) {
    case 'now':
    case 'random':
      return typeof value === 'number' && Number.isFinite(value) ? `{"type":"env","draw":"${draw}","value":${JSON.stringify(value)}}` : undefined;
    case 'id':
      return typeof kind === 'string' && typeof value === 'string'
        ? `{"type":"env","draw":"id","kind":${JSON.stringify(kind)},"value":${JSON.stringify(value)}}`
        : undefined;
    case 'sleep':
      return typeof ms === 'number' && Number.isFinite(ms) ? `{"type":"env","draw":"sleep","ms":${JSON.stringify(ms)}}` : undefined;
    default:
      return undefined;
  }
}

/**
 * The transcript whose tool port is executing now: what a tool does inside (a delegation's sub-run
 * calling models and tools) is the tool's own business, not the run's — its result is the record.
 */
const insideTool = new AsyncLocalStorage<TranscriptLog>();

/** Records every draw of an `Env`. */
export function recordingEnv(inner: Env, log: TranscriptLog): Env {
  return {
    clock: {
      now: () => {
        const value = inner.clock.now();
        log.push({ type: 'env', draw: 'now', value });
        return value;
      },
    },
    ids: {
      next: (kind: IdKind) => {
        const value = inner.ids.next(kind);
        log.push({ type: 'env', draw: 'id', kind, value });
        return value;
      },
    },
    random: () => {
      const value = inner.random();
      log.push({ type: 'env', draw: 'random', value });
      return value;
    },
    sleep: (ms, signal) => {
      log.push({ type: 'env', draw: 'sleep', ms });
      return inner.sleep(ms, signal);
    },
  };
}

/** Records each inference: the normalised request, its digest, and every part (or the error). */
export function recordingLlm(inner: LlmExecutor, log: TranscriptLog): LlmExecutor {
  return {
    name: inner.name,
    stream: (request: InferenceRequest) =>
      insideTool.getStore() === log
        ? inner.stream(request)
        : (async function* (): AsyncGenerator<StreamPart> {
            const seq = log.nextLlmSeq();
            // Taken at the call: a request's messages are valid while its stream is read.
            const { delta, digest } = log.requests.next(request);
            const parts: StreamPart[] = [];
            let written = false;
            const write = (extra: { error?: unknown; interrupted?: boolean } = {}): void => {
              written = true;
              log.push({ type: 'llm', seq, digest, request: delta, parts, ...extra });
            };
            try {
              for await (const part of inner.stream(request)) {
                parts.push(part);
                yield part;
              }
              write();
            } catch (e) {
              write({ error: e instanceof InferenceFailure ? e.error : { code: 'provider', message: e instanceof Error ? e.message : String(e) } });
              throw e;
            } finally {
              // The loop stopped reading (a cancel mid-stream): what was streamed so far is the record.
              if (!written) write({ interrupted: true });
            }
          })(),
  };
}

function commandRecord(command: StateCommand): { ops: unknown[]; actions: unknown[]; effects: unknown[] } {
  return {
    ops: command.patch.ops.map((op) => (op.kind === 'clear' ? { kind: 'clear', key: op.key } : { kind: 'update', key: op.key, update: op.update })),
    actions: command.scheduledActions.map((a) => ({ phase: a.phase, key: a.key, payload: a.payload })),
    effects: command.effects.map((e) => ({ key: e.key, payload: e.payload })),
  };
}

/** Records each call of a tool: arguments, the activity it reported, and its result or error. */
export function recordingTool(inner: Tool, log: TranscriptLog): Tool {
  return {
    descriptor: inner.descriptor,
    ...(inner.recovery !== undefined ? { recovery: inner.recovery } : {}),
    ...(inner.activityTypes !== undefined ? { activityTypes: inner.activityTypes } : {}),
    // The tool an agent is offered (its version, say) is recorded as this one is.
    ...(inner.forAgent !== undefined
      ? { forAgent: (spec: AgentSpec) => recordingTool((inner.forAgent as (s: AgentSpec) => Tool).call(inner, spec), log) }
      : {}),
    ...(inner.askBefore !== undefined ? { askBefore: recordingAsk(inner, log) } : {}),
    // Validation runs inside the recorded execute, so a refusal is recorded like any other outcome.
    execute: async (args: JsonValue, ctx: ToolCallContext) => {
      if (insideTool.getStore() === log) return inner.execute(args, ctx);
      const spy = new ObservedContext(ctx);
      const base = {
        type: 'tool',
        call_id: ctx.callId,
        name: inner.descriptor.id,
        arguments: args,
        ...(ctx.resume !== undefined ? { resume: ctx.resume.decision } : {}),
        activity: ObservedContext.activityOf(spy),
      };
      try {
        inner.validateArgs?.(args);
        const out = await (log.toolsInContext ? insideTool.run(log, () => inner.execute(args, spy)) : inner.execute(args, spy));
        if (isToolOutput(out)) {
          log.push({ ...base, result: out.result, ...(out.command !== undefined ? { command: commandRecord(out.command) } : {}) });
        } else log.push({ ...base, result: out });
        return out;
      } catch (e) {
        if (e instanceof ToolFailure) log.push({ ...base, tool_error: e.error });
        else log.push({ ...base, thrown: e instanceof Error ? e.message : String(e) });
        throw e;
      }
    },
  };
}

/** A tool's question at the gate (`Tool.askBefore`), its answer recorded (`ask`): the ticket, null, or what it threw. */
export function recordingAsk(inner: Tool, log: TranscriptLog): NonNullable<Tool['askBefore']> {
  const ask = (inner.askBefore as NonNullable<Tool['askBefore']>).bind(inner);
  return async (args, call) => {
    // A delegate's sub-run asking inside a recorded call is not the run's traffic (its call is recorded whole).
    if (insideTool.getStore() === log) return ask(args, call);
    const base = { type: 'ask', call_id: call.id, name: inner.descriptor.id, arguments: args };
    let ticket: Awaited<ReturnType<typeof ask>>;
    try {
      ticket = await ask(args, call);
    } catch (e) {
      log.push({ ...base, thrown: e instanceof Error ? e.message : String(e) });
      throw e;
    }
    log.push({ ...base, ticket: ticket ?? null });
    return ticket;
  };
}

/** Everything needed to run (and later rebuild) one recorded run. */
export interface RecordingSetup {
  readonly agent: AgentSpecInput;
  /** Model id → provider and provider-side name; every provider below must be listed. */
  readonly models: Readonly<Record<string, ModelEntry>>;
  readonly providers: Readonly<Record<string, LlmExecutor>>;
  readonly tools: readonly Tool[];
  /**
   * Plugins: ids from the plugin catalog (`tool-gate`, `finish-on`), or plugins (an app's, each under
   * its name) — one a `pluginFactory` made is recorded with its factory and config.
   */
  readonly plugins?: readonly (string | RuntimePlugin)[];
  /** Instances of catalog plugins to use in place of the catalog's (the same plugin on another port, e.g. an observability sink). */
  readonly pluginInstances?: ReadonlyMap<string, RuntimePlugin>;
  /** The app module the run's code came from and its version, written in the header (not an input of the run). */
  readonly app?: { readonly file: string; readonly version: string };
  readonly stopPolicies?: readonly StopPolicy[];
  readonly circuitBreaker?: Partial<CircuitBreakerConfig>;
  readonly env: { readonly env: Env; readonly header: Header['env'] };
  /**
   * What the run is asked: its messages and overrides, and what its client brought besides them —
   * the tools the client runs, its state and its context (written in the header exactly when given).
   */
  readonly request: {
    readonly threadId?: string;
    /**
     * The thread's messages as a store held them when the run started (a later run on `threadId`):
     * the run loads them from a store holding that thread, and the header writes them (`history`),
     * so that its replay loads them too.
     */
    readonly history?: readonly Message[];
    readonly messages: readonly Message[];
    readonly overrides?: InferenceOverride;
  } & ClientInputs;
  /** Answer a suspension: given the suspended call ids, the decisions to send (none: stay parked). */
  readonly decide?: (suspended: readonly string[], round: number) => readonly Decision[] | undefined;
  /** Cancel the run right after this many events. */
  readonly cancelAfterEvent?: number;
  /**
   * The agents the run's agent delegates to: registered beside it. Their sub-runs go through the
   * delegation tools, recorded as tool calls (replayed from those records, without the sub-run); they
   * draw from an environment of their own (a deterministic one's ids prefixed `sub-`).
   */
  readonly delegates?: readonly AgentSpecInput[];
}

export interface Recording {
  readonly transcript: string;
  readonly result: AgentRunResult;
  /** The thread's messages as the run left them (its `end` record's): the history of a run after it on the thread. */
  readonly messages: readonly Message[];
}

/** Runs `setup` with every port recorded and returns the transcript. */
export async function recordRun(setup: RecordingSetup): Promise<Recording> {
  const log = new TranscriptLog();
  const built = new AgentRuntimeBuilder().withEnv(recordingEnv(setup.env.env, log)).withAgentSpec(setup.agent);
  for (const [id, p] of Object.entries(setup.providers)) built.withProvider(id, recordingLlm(p, log));
  for (const [id, m] of Object.entries(setup.models)) built.withModel(id, m);
  for (const tool of setup.tools) built.withTool(recordingTool(tool, log));
  for (const agent of setup.delegates ?? []) built.withAgentSpec(agent);
  if ((setup.delegates ?? []).length > 0) {
    const h = setup.env.header;
    const subEnv =
      h.kind === 'deterministic'
        ? withIdPrefix(deterministicEnv({ start: h.start, tick: h.tick, ...(h.seed !== undefined ? { seed: h.seed } : {}) }), 'sub-')
        : setup.env.env;
    built.withDelegation({ env: subEnv, wrap: (tool) => recordingTool(tool, log) });
  }
  const plugins: PluginEntry[] = [];
  for (const p of setup.plugins ?? []) {
    if (typeof p !== 'string') {
      built.withPlugin(p.name, p);
      plugins.push(pluginEntryOf(p));
      continue;
    }
    const plugin = PLUGIN_CATALOG.get(p);
    if (plugin === undefined) throw new Error(`unknown plugin '${p}' (catalog: ${[...PLUGIN_CATALOG.keys()].join(', ')})`);
    built.withPlugin(p, setup.pluginInstances?.get(p) ?? plugin);
    plugins.push({ id: p });
  }
  for (const policy of setup.stopPolicies ?? []) built.withStopPolicy(policy);
  if (setup.circuitBreaker !== undefined) built.withCircuitBreaker(setup.circuitBreaker);
  const history = setup.request.history;
  if (history !== undefined) {
    // The store a replay builds from the header (`request.history`): the same class, so that its checkpoints draw alike.
    const store = new MemoryThreadRunStore();
    store.threads.set(setup.request.threadId ?? '', { messages: [...history] });
    built.withThreadRunStore(store);
  }
  const runtime = built.build();
  if (!runtime.ok) throw new Error(`cannot build the runtime: ${JSON.stringify(runtime.error)}`);
  const agentSpec = runtime.value.resolve(typeof setup.agent.id === 'string' ? setup.agent.id : '');
  if (!agentSpec.ok) throw new Error(`cannot resolve the agent: ${JSON.stringify(agentSpec.error)}`);

  const headerBase = {
    agent: agentSpec.value.spec,
    models: Object.fromEntries(Object.entries(setup.models).map(([k, v]) => [k, { provider: v.provider, model_name: v.model_name }])),
    // The delegation tools are the run's ports too (their descriptors say which delegate they run).
    tools: [
      ...setup.tools.map((t) => t.descriptor),
      ...[...agentSpec.value.tools.values()].filter((t) => t.descriptor.category === DELEGATION_CATEGORY).map((t) => t.descriptor),
    ],
    plugins,
    stop_policies: (setup.stopPolicies ?? []).map((p) => p.id),
    ...(setup.circuitBreaker !== undefined ? { circuit_breaker: setup.circuitBreaker } : {}),
  };
  // Written first, so that it is line 1; its `env.seed` is dropped at the end if no random number was drawn.
  log.push({
    type: 'header',
    format: TRANSCRIPT_FORMAT,
    config_digest: configDigest(headerBase),
    ...headerBase,
    ...(setup.app !== undefined ? { app: setup.app } : {}),
    env: setup.env.header,
    request: {
      ...(setup.request.threadId !== undefined ? { thread_id: setup.request.threadId } : {}),
      agent_id: agentSpec.value.spec.id,
      messages: setup.request.messages,
      ...(history !== undefined ? { history } : {}),
      ...(setup.request.overrides !== undefined ? { overrides: setup.request.overrides } : {}),
      ...clientFieldsOf(setup.request),
    },
  });

  const controller = new AbortController();
  const suspended = new Set<string>();
  const modes = new SuspensionModes();
  let round = 0;
  let threadId = '';
  let finished = false;
  const answer = (): void => {
    if (finished) return;
    if (!runtime.value.isWaiting(threadId)) {
      setImmediate(answer);
      return;
    }
    const decisions = setup.decide?.([...suspended], round++);
    if (decisions === undefined || decisions.length === 0) {
      // Nobody answers: the run would stay parked, so it is cancelled (and the cancel recorded).
      log.push({ type: 'cancel', after_event: log.eventCount });
      controller.abort();
      return;
    }
    for (const d of decisions) suspended.delete(d.targetId);
    log.push({
      type: 'decision',
      after_event: log.eventCount,
      decisions: decisions.map((d) => ({ target_id: d.targetId, decision: recordedDecision(d.decision, modes.of(d.targetId)) })),
    });
    runtime.value.decide(threadId, decisions);
  };
  const started = await runtime.value.start(
    {
      ...(setup.request.threadId !== undefined ? { threadId: setup.request.threadId } : {}),
      agentId: agentSpec.value.spec.id,
      messages: setup.request.messages,
      ...(setup.request.overrides !== undefined ? { overrides: setup.request.overrides } : {}),
      ...clientInputs(setup.request),
    },
    {
      emit: (event) => {
        log.event(event);
        modes.note(event);
        if (event.event_type === 'tool_call_done' && event.outcome === 'suspended') suspended.add(event.id);
        // Nothing is left to cancel once the run has finished for good (it does not wait for decisions).
        const over = event.event_type === 'run_finish' && setup.decide === undefined;
        if (setup.cancelAfterEvent !== undefined && log.eventCount === setup.cancelAfterEvent && !controller.signal.aborted && !over) {
          log.push({ type: 'cancel', after_event: log.eventCount });
          controller.abort();
        }
        if (event.event_type === 'run_finish' && event.termination.type === 'suspended' && setup.decide !== undefined) {
          threadId = event.thread_id;
          setImmediate(answer);
        }
      },
    },
    { signal: controller.signal, waitForDecisions: setup.decide !== undefined },
  );
  if (!started.ok) throw new Error(`cannot start the run: ${JSON.stringify(started.error)}`);
  const result = await started.value.done;
  finished = true;
  const messages = started.value.messages();
  log.push(endRecordOf(result, messages));
  log.dropInertSeed();
  return { transcript: log.text(), result, messages };
}
