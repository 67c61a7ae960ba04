import type { Tokenizer } from '../core/context/index.ts';
import type { Summarizer } from './context.ts';
import type { AgentSpec, AgentSpecInput } from '../contract/agent-spec.ts';
import { AgentSpecSchema, applyOverlay } from '../contract/agent-spec.ts';
import type { BuildError, InferenceExecutionError, ResolveError, RuntimeError } from '../contract/errors.ts';
import type { InferenceOverride } from '../contract/inference.ts';
import type { Message } from '../contract/message.ts';
import { err, ok, type Result } from '../contract/result.ts';
import { PhaseRuntime } from './phase-runtime.ts';
import type { StopPolicy } from '../core/policies/stop-policy.ts';
import { StateStore } from './state-store.ts';
import { CircuitBreaker, CircuitBreakerConfigSchema, type CircuitBreakerConfig } from './circuit-breaker.ts';
import { realEnv, type Env } from './env.ts';
import type { InferenceObserver } from './retry.ts';
import type { EventSink } from './event-sink.ts';
import type { LlmExecutor } from './llm.ts';
import { describeResolveError, resolveAgent, type ModelEntry, type Registries, type ResolvedAgent, type RuntimePlugin } from './resolve.ts';
import { RunLoop, type AgentRunResult, type Decision, type RunParams } from './run-loop.ts';
import type { ThreadRunStore } from './thread-run-store.ts';
import type { Tool } from './tool.ts';
import type { ToolBatch } from './tool-batch.ts';

/** What to run (book: RunRequest). */
export interface RunRequest {
  readonly threadId?: string;
  readonly agentId?: string;
  readonly messages: readonly Message[];
  readonly overrides?: InferenceOverride;
  /**
   * Answer again from this stored message: the thread's messages after it are left out of the run's
   * history and replaced in the store by what the run adds (a regenerated answer). Ignored when the
   * thread does not hold the id.
   */
  readonly rewindTo?: string;
  /** The run's id when the caller chose it (a server takes the thread's lease for it first); else a new one. */
  readonly runId?: string;
}

export interface RunOptions {
  readonly signal?: AbortSignal;
  /**
   * On a suspension, keep the run parked until decisions arrive (`decide`) or it is cancelled
   * (default), or return at once with termination `suspended`.
   */
  readonly waitForDecisions?: boolean;
}

/** A started run: its ids, its decision and cancel controls, and its final result. */
export interface RunHandle {
  readonly threadId: string;
  readonly runId: string;
  /**
   * Decisions for the parked run; `messages` (new input sent with them) join the thread after the
   * results of the calls they settle, before the next inference.
   */
  decide(decisions: readonly Decision[], messages?: readonly Message[]): Result<void, RuntimeError>;
  /**
   * Resolves `true` once the run is parked waiting for decisions (at once if it is), `false` if it
   * ends first. A decision sent after `true` is accepted (its target permitting).
   */
  parked(): Promise<boolean>;
  /** The calls the parked run waits on, in model order (none unless it is parked). */
  waitingOn(): readonly SuspendedCall[];
  /**
   * Lets a parked run go without deciding or cancelling it (a server shutting down): `done` resolves
   * with termination `suspended`, nothing more is emitted or stored, and the run stays waiting in the
   * store for `AgentRuntime.revive`. False (nothing done) when the run is not parked.
   */
  detach(): boolean;
  cancel(): void;
  /**
   * The thread's messages as the run holds them: the history, the input and what the run added. Once
   * `done` has resolved, what a store keeps for the thread (empty until the run has started).
   */
  messages(): readonly Message[];
  readonly done: Promise<AgentRunResult>;
}

/** A call a parked run waits on, and the ticket it suspended with. */
export type SuspendedCall = ReturnType<ToolBatch['suspendedCalls']>[number];

interface ActiveRun {
  readonly handle: RunHandle;
  suspended: ToolBatch | undefined;
  readonly queue: Decision[][];
  readonly inbox: Message[];
  wake: (() => void) | undefined;
  /** Waiting `parked()` callers; `undefined` once the run has ended. */
  parkWaiters: ((parked: boolean) => void)[] | undefined;
  /** Let go while parked (`RunHandle.detach`). */
  detached: boolean;
  loop: RunLoop | undefined;
}

/** The runtime: resolves agents and runs them, one run per thread at a time (book: AgentRuntime). */
export class AgentRuntime {
  #registries: Registries;
  readonly #env: Env;
  readonly #store: ThreadRunStore | undefined;
  readonly #breaker: CircuitBreaker;
  readonly #active = new Map<string, ActiveRun>();

  constructor(registries: Registries, env: Env, store: ThreadRunStore | undefined, breaker: CircuitBreaker) {
    this.#registries = registries;
    this.#env = env;
    this.#store = store;
    this.#breaker = breaker;
  }

  get env(): Env {
    return this.#env;
  }

  agentIds(): string[] {
    return [...this.#registries.agents.keys()].sort();
  }

  /** The first of `agentIds()` (the agent a request without one runs), without sorting them all. */
  #firstAgentId(): string | undefined {
    let first: string | undefined;
    for (const id of this.#registries.agents.keys()) if (first === undefined || id < first) first = id;
    return first;
  }

  /** The registries runs resolve against now (a snapshot: `publish` replaces it, never mutates it). */
  get registries(): Registries {
    return this.#registries;
  }

  /**
   * Publishes new registries (book: 配置 → writes validated then published): every agent must resolve
   * against them, or nothing changes. Runs already started keep what they resolved.
   */
  publish(next: Registries): Result<void, BuildError> {
    const failures: string[] = [];
    for (const id of [...next.agents.keys()].sort()) {
      const r = resolveAgent(next, id, { env: this.#env, breaker: this.#breaker });
      if (!r.ok) failures.push(`agent '${id}': ${describeResolveError(r.error)}`);
    }
    if (failures.length > 0) return err({ code: 'validation_failed', message: failures.join('; ') });
    this.#registries = next;
    return ok(undefined);
  }

  /** Resolves an agent afresh (nothing is cached between runs). */
  resolve(agentId: string, observer: InferenceObserver = {}): Result<ResolvedAgent, ResolveError> {
    return resolveAgent(this.#registries, agentId, { ...observer, env: this.#env, breaker: this.#breaker });
  }

  /** Runs to completion (through any suspensions, while decisions arrive) and returns the result. */
  async run(request: RunRequest, sink: EventSink, options: RunOptions = {}): Promise<Result<AgentRunResult, RuntimeError>> {
    const started = await this.start(request, sink, options);
    if (!started.ok) return started;
    return ok(await started.value.done);
  }

  /** Starts a run and returns its handle at once. */
  async start(request: RunRequest, sink: EventSink, options: RunOptions = {}): Promise<Result<RunHandle, RuntimeError>> {
    return this.#launch(request.agentId, request.threadId, request.runId, sink, options, async (prepared) => {
      const threadId = prepared.threadId;
      const thread = this.#store === undefined ? undefined : await this.#store.loadThread(threadId);
      if (thread?.threadState !== undefined) {
        const restored = prepared.state.restoreThreadScoped(thread.threadState, 'skip');
        if (!restored.ok) return err({ code: 'state', error: restored.error });
      }
      const stored = thread?.messages ?? [];
      const rewound = request.rewindTo === undefined ? -1 : stored.findIndex((m) => m.id === request.rewindTo);
      const history = rewound >= 0 ? stored.slice(0, rewound + 1) : stored;
      const loop = prepared.loop({ history, storedCount: stored.length, input: newInput(history, request.messages), overrides: request.overrides });
      return ok(() => loop.execute());
    });
  }

  /**
   * Takes up a run that parked waiting for decisions in another process (one that died or shut
   * down): its thread's history and state and its own run-scoped state come from the store, its
   * suspended calls are rebuilt, and the handle is parked at once — `decide` resumes it under its own
   * run id. Fails when the store does not hold the run as waiting.
   */
  async revive(request: { readonly threadId: string; readonly runId: string; readonly agentId?: string }, sink: EventSink, options: RunOptions = {}): Promise<Result<RunHandle, RuntimeError>> {
    const store = this.#store;
    if (store?.loadRunState === undefined) return err({ code: 'resolve_failed', message: 'reviving a run needs a store that keeps run state' });
    return this.#launch(request.agentId, request.threadId, request.runId, sink, { ...options, waitForDecisions: true }, async (prepared) => {
      const [thread, runState] = await Promise.all([store.loadThread(request.threadId), store.loadRunState?.(request.runId)]);
      if (thread === undefined || runState === undefined) return err({ code: 'resolve_failed', message: `run ${request.runId} is not waiting in the store` });
      const restored = prepared.state.restorePersisted(runState, 'skip');
      if (!restored.ok) return err({ code: 'state', error: restored.error });
      if (thread.threadState !== undefined) {
        const merged = prepared.state.restoreThreadScoped(thread.threadState, 'skip');
        if (!merged.ok) return err({ code: 'state', error: merged.error });
      }
      const loop = prepared.loop({ history: thread.messages, storedCount: thread.messages.length, input: [], overrides: undefined });
      return ok(() => loop.revive());
    });
  }

  /** What `start` and `revive` share: the agent resolved, the run's state and controls, its handle. */
  async #launch(
    agentIdAsked: string | undefined,
    threadIdAsked: string | undefined,
    runIdAsked: string | undefined,
    sink: EventSink,
    options: RunOptions,
    prepare: (prepared: {
      readonly threadId: string;
      readonly state: StateStore;
      readonly loop: (fields: Pick<RunParams, 'history' | 'storedCount' | 'input' | 'overrides'>) => RunLoop;
    }) => Promise<Result<() => Promise<AgentRunResult>, RuntimeError>>,
  ): Promise<Result<RunHandle, RuntimeError>> {
    const agentId = agentIdAsked ?? this.#firstAgentId();
    if (agentId === undefined) return err({ code: 'agent_not_found', agentId: '' });
    let answeredBy: string | undefined;
    const inferenceErrors: InferenceExecutionError[] = [];
    const resolved = this.resolve(agentId, { onModel: (m) => (answeredBy = m), onAbsorbed: (e) => inferenceErrors.push(e) });
    if (!resolved.ok) {
      if (resolved.error.code === 'agent_not_found') return err({ code: 'agent_not_found', agentId });
      return err({ code: 'resolve_failed', message: describeResolveError(resolved.error) });
    }
    const threadId = threadIdAsked ?? this.#env.ids.next('thread');
    if (this.#active.has(threadId)) return err({ code: 'thread_already_running', threadId });
    const runId = runIdAsked ?? this.#env.ids.next('run');

    // The plugins registered when the agent was resolved drive the run's engine, over a new store.
    const phase = PhaseRuntime.forRun(resolved.value.executionEnv);
    if (!phase.ok) return err({ code: 'state', error: phase.error });
    const state = phase.value.store;

    const controller = new AbortController();
    const active: ActiveRun = { handle: undefined as unknown as RunHandle, suspended: undefined, queue: [], inbox: [], wake: undefined, parkWaiters: [], detached: false, loop: undefined };
    const settleParked = (parked: boolean): void => {
      const waiters = active.parkWaiters ?? [];
      active.parkWaiters = parked ? [] : undefined;
      for (const w of waiters) w(parked);
    };
    const wakeUp = (): void => {
      const w = active.wake;
      active.wake = undefined;
      w?.();
    };
    // The run's one listener on its signal: a run waiting for decisions, or on a provider, wakes.
    const onAbort = (): void => {
      wakeUp();
      active.loop?.aborted();
    };
    const prepared = await prepare({
      threadId,
      state,
      loop: (fields) =>
        (active.loop = new RunLoop({
          env: this.#env,
          resolved: resolved.value,
          phase: phase.value,
          sink,
          store: this.#store,
          threadId,
          runId,
          ...fields,
          signal: controller.signal,
          waitForDecisions: options.waitForDecisions ?? true,
          nextDecisions: async () => {
            while (active.queue.length === 0 && !controller.signal.aborted && !active.detached) await new Promise<void>((resolve) => (active.wake = resolve));
            if (controller.signal.aborted) return undefined;
            if (active.queue.length === 0) return 'detached';
            return active.queue.splice(0).flat();
          },
          takeInput: () => active.inbox.splice(0),
          onSuspended: (batch) => {
            active.suspended = batch;
            if (batch !== undefined) settleParked(true);
          },
          answeredBy: () => answeredBy,
          inferenceErrors,
          reresolve: (target, base) => {
            const other = target.overlay === undefined ? this.#registries.agents.get(target.name) : undefined;
            if (target.overlay === undefined && other === undefined) return err({ code: 'agent_not_found', agentId: target.name });
            const overlay = target.overlay ?? {
              system_prompt: (other as AgentSpec).system_prompt,
              model_id: (other as AgentSpec).model,
              ...((other as AgentSpec).allowed_tools !== undefined ? { allowed_tools: (other as AgentSpec).allowed_tools } : {}),
              ...((other as AgentSpec).excluded_tools !== undefined ? { excluded_tools: (other as AgentSpec).excluded_tools } : {}),
            };
            const spec = applyOverlay(base, overlay);
            return resolveAgent({ ...this.#registries, agents: new Map([...this.#registries.agents, [spec.id, spec]]) }, spec.id, { onModel: (m) => (answeredBy = m), onAbsorbed: (e) => inferenceErrors.push(e), env: this.#env, breaker: this.#breaker });
          },
        })),
    });
    if (!prepared.ok) return prepared;
    if (this.#active.has(threadId)) return err({ code: 'thread_already_running', threadId });

    const onOuterAbort = (): void => controller.abort();
    options.signal?.addEventListener('abort', onOuterAbort, { once: true });
    if (options.signal?.aborted === true) controller.abort();
    controller.signal.addEventListener('abort', onAbort, { once: true });
    const done = prepared.value().finally(() => {
      options.signal?.removeEventListener('abort', onOuterAbort);
      controller.signal.removeEventListener('abort', onAbort);
      this.#active.delete(threadId);
      settleParked(false);
    });
    const handle: RunHandle = {
      threadId,
      runId,
      decide: (decisions, messages = []) => {
        const batch = active.suspended;
        if (batch === undefined) return err({ code: 'resolve_failed', message: `run ${runId} is not waiting for a decision` });
        for (const d of decisions) {
          if (batch.targetOf(d.targetId) === undefined) return err({ code: 'resolve_failed', message: `no suspended tool call or suspension '${d.targetId}'` });
        }
        active.inbox.push(...messages);
        active.queue.push([...decisions]);
        wakeUp();
        return ok(undefined);
      },
      parked: () =>
        active.suspended !== undefined
          ? Promise.resolve(true)
          : active.parkWaiters === undefined
            ? Promise.resolve(false)
            : new Promise<boolean>((resolve) => (active.parkWaiters as ((parked: boolean) => void)[]).push(resolve)),
      waitingOn: () => active.suspended?.suspendedCalls() ?? [],
      detach: () => {
        if (active.suspended === undefined) return false;
        active.detached = true;
        wakeUp();
        return true;
      },
      cancel: () => controller.abort(),
      messages: () => [...(active.loop?.messages() ?? [])],
      done,
    };
    (active as { handle: RunHandle }).handle = handle;
    this.#active.set(threadId, active);
    return ok(handle);
  }

  /** Sends decisions to the run active on a thread (book: decision channel). */
  decide(threadId: string, decisions: readonly Decision[]): Result<void, RuntimeError> {
    const active = this.#active.get(threadId);
    if (active === undefined) return err({ code: 'resolve_failed', message: `no active run on thread ${threadId}` });
    return active.handle.decide(decisions);
  }

  /** Cancels the run active on a thread; false when there is none. */
  cancel(threadId: string): boolean {
    const active = this.#active.get(threadId);
    active?.handle.cancel();
    return active !== undefined;
  }

  /** Whether a run on the thread is parked, waiting for decisions. */
  isWaiting(threadId: string): boolean {
    return this.#active.get(threadId)?.suspended !== undefined;
  }
}

/** Assembles a runtime; duplicate ids are collected and reported by `build()` (book: AgentRuntimeBuilder). */
/**
 * The input the thread does not hold yet: at-least-once delivery may bring the same messages twice (a
 * queued job re-run after its consumer died), and a message whose id is already stored is not added again.
 */
function newInput(history: readonly Message[], input: readonly Message[]): readonly Message[] {
  if (history.length === 0 || input.every((m) => m.id === undefined)) return input;
  const held = new Set(history.map((m) => m.id));
  return input.filter((m) => m.id === undefined || !held.has(m.id));
}

export class AgentRuntimeBuilder {
  readonly #agents = new Map<string, AgentSpec>();
  readonly #tools = new Map<string, Tool>();
  readonly #providers = new Map<string, LlmExecutor>();
  readonly #models = new Map<string, ModelEntry>();
  readonly #plugins = new Map<string, RuntimePlugin>();
  readonly #errors: BuildError[] = [];
  #store: ThreadRunStore | undefined;
  #env: Env | undefined;
  #breaker: Partial<CircuitBreakerConfig> = {};
  readonly #stopPolicies: StopPolicy[] = [];
  #tokenizer: Tokenizer | undefined;
  #summarizer: Summarizer | undefined;

  withAgentSpec(spec: AgentSpec | AgentSpecInput): this {
    const parsed = AgentSpecSchema.safeParse(spec);
    if (!parsed.success) {
      this.#errors.push({ code: 'validation_failed', message: `agent spec: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` });
      return this;
    }
    if (this.#agents.has(parsed.data.id)) this.#errors.push({ code: 'agent_registry_conflict', id: parsed.data.id });
    else this.#agents.set(parsed.data.id, parsed.data);
    return this;
  }

  withTool(tool: Tool): this {
    const id = tool.descriptor.id;
    if (this.#tools.has(id)) this.#errors.push({ code: 'tool_registry_conflict', id });
    else this.#tools.set(id, tool);
    return this;
  }

  withProvider(id: string, executor: LlmExecutor): this {
    if (this.#providers.has(id)) this.#errors.push({ code: 'provider_registry_conflict', id });
    else this.#providers.set(id, executor);
    return this;
  }

  withModel(id: string, entry: ModelEntry): this {
    if (this.#models.has(id)) this.#errors.push({ code: 'model_registry_conflict', id });
    else this.#models.set(id, entry);
    return this;
  }

  withPlugin(id: string, plugin: RuntimePlugin): this {
    if (this.#plugins.has(id)) this.#errors.push({ code: 'plugin_registry_conflict', id });
    else this.#plugins.set(id, plugin);
    return this;
  }

  withThreadRunStore(store: ThreadRunStore): this {
    this.#store = store;
    return this;
  }

  withEnv(env: Env): this {
    this.#env = env;
    return this;
  }

  /** A custom stop policy (book: 配置停止策略 → StopPolicy), evaluated for every agent after its own. */
  withStopPolicy(policy: StopPolicy): this {
    this.#stopPolicies.push(policy);
    return this;
  }

  /** The token estimator of context management (default: the byte heuristic, docs/context-window.md). */
  withTokenizer(tokenizer: Tokenizer): this {
    this.#tokenizer = tokenizer;
    return this;
  }

  /** The summarizer of auto-compaction (default: the DefaultSummarizer on the agent's own model). */
  withSummarizer(summarizer: Summarizer): this {
    this.#summarizer = summarizer;
    return this;
  }

  withCircuitBreaker(config: Partial<CircuitBreakerConfig>): this {
    const parsed = CircuitBreakerConfigSchema.safeParse(config);
    if (!parsed.success) {
      this.#errors.push({ code: 'validation_failed', message: `circuit breaker: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` });
    }
    this.#breaker = config;
    return this;
  }

  /** Builds, then dry-run resolves every agent: each failure is listed in `validation_failed`. */
  build(): Result<AgentRuntime, BuildError> {
    const built = this.buildUnchecked();
    if (!built.ok) return built;
    const failures: string[] = [];
    for (const id of built.value.agentIds()) {
      const r = built.value.resolve(id);
      if (!r.ok) failures.push(`agent '${id}': ${describeResolveError(r.error)}`);
    }
    if (failures.length > 0) return err({ code: 'validation_failed', message: failures.join('; ') });
    return built;
  }

  /** Builds without resolving the agents (they may fail at their first run). */
  buildUnchecked(): Result<AgentRuntime, BuildError> {
    const first = this.#errors[0];
    if (first !== undefined) return err(first);
    const env = this.#env ?? realEnv();
    const registries: Registries = {
      agents: new Map(this.#agents),
      tools: new Map(this.#tools),
      providers: new Map(this.#providers),
      models: new Map(this.#models),
      plugins: new Map(this.#plugins),
      stopPolicies: [...this.#stopPolicies],
      ...(this.#tokenizer !== undefined ? { tokenizer: this.#tokenizer } : {}),
      ...(this.#summarizer !== undefined ? { summarizer: this.#summarizer } : {}),
    };
    return ok(new AgentRuntime(registries, env, this.#store, new CircuitBreaker(env.clock, this.#breaker)));
  }
}
