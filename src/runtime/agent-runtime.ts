import type { Tokenizer } from '../core/context/index.ts';
import type { Summarizer } from './context.ts';
import type { AgentSpec, AgentSpecInput } from '../contract/agent-spec.ts';
import { AgentSpecSchema } from '../contract/agent-spec.ts';
import type { Decision } from '../contract/decision.ts';
import { RuntimeBuildError, type BuildError, type ResolveError, type RuntimeError } from '../contract/errors.ts';
import type { Message } from '../contract/message.ts';
import { err, ok, type Result } from '../contract/result.ts';
import type { AgentRunResult } from '../contract/run-result.ts';
import type { StopPolicy } from '../core/policies/stop-policy.ts';
import { CircuitBreaker, CircuitBreakerConfigSchema, type CircuitBreakerConfig } from './circuit-breaker.ts';
import { realEnv, type Env } from './env.ts';
import type { InferenceObserver } from './retry.ts';
import type { EventSink } from './event-sink.ts';
import type { LlmExecutor } from './llm.ts';
import { describeResolveError, resolveAgent, type ModelEntry, type Registries, type ResolvedAgent, type RuntimePlugin } from './resolve.ts';
import type { ThreadRunStore } from './thread-run-store.ts';
import type { Tool } from './tool.ts';
import { clientStateProblem } from './client-state.ts';
import { launch, type ActiveRun, type LaunchHost } from './launch.ts';
import { LocalDelegation, type DelegationOptions } from './local-delegation.ts';
import type { ReviveRequest, RunHandle, RunOptions, RunRequest, SubRun } from './run-handle.ts';

export type { DelegationOptions } from './local-delegation.ts';
export type { ReviveRequest, RunHandle, RunOptions, RunRequest, SuspendedCall } from './run-handle.ts';

/** The runtime: resolves agents and runs them, one run per thread at a time (book: AgentRuntime). */
export class AgentRuntime {
  #registries: Registries;
  readonly #env: Env;
  readonly #store: ThreadRunStore | undefined;
  readonly #breaker: CircuitBreaker;
  readonly #active = new Map<string, ActiveRun>();
  /** The runtime as the backend of its local delegates: their sub-runs, how deep each run is. */
  readonly #delegation: LocalDelegation;
  readonly #launchHost: LaunchHost;

  constructor(registries: Registries, env: Env, store: ThreadRunStore | undefined, breaker: CircuitBreaker, delegation: DelegationOptions = {}) {
    this.#env = env;
    this.#store = store;
    this.#breaker = breaker;
    this.#delegation = new LocalDelegation(delegation, env, {
      start: (request, sink, options, sub) => this.#start(request, sink, options, sub),
      revive: (request, sink, options, sub) => this.#revive(request, sink, options, sub),
      keepsRunState: store?.loadRunState !== undefined,
    });
    this.#registries = { ...registries, delegation: this.#delegation.host };
    this.#launchHost = {
      registries: () => this.#registries,
      env,
      breaker,
      store,
      delegation: this.#delegation,
      active: this.#active,
      firstAgentId: () => this.#firstAgentId(),
    };
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
    const withHost = { ...next, delegation: this.#delegation.host };
    for (const id of [...next.agents.keys()].sort()) {
      const failure = this.#validate(withHost, id);
      if (failure !== undefined) failures.push(`agent '${id}': ${failure}`);
    }
    if (failures.length > 0) return err({ code: 'validation_failed', message: failures.join('; ') });
    this.#registries = { ...next, delegation: this.#delegation.host };
    return ok(undefined);
  }

  /**
   * Why an agent of `registries` cannot run, if it cannot: a local agent must resolve; a remote one
   * (with an `endpoint`, runnable only as a delegate) must have a backend here.
   */
  #validate(registries: Registries, agentId: string): string | undefined {
    const spec = registries.agents.get(agentId);
    if (spec?.endpoint !== undefined) {
      return this.#delegation.host.backendOf(spec) === undefined
        ? describeResolveError({ code: 'unsupported_remote_backend', agentId, backend: spec.endpoint.backend })
        : undefined;
    }
    const r = resolveAgent(registries, agentId, { env: this.#env, breaker: this.#breaker });
    return r.ok ? undefined : describeResolveError(r.error);
  }

  /** Why an agent cannot run (`build`'s check), if it cannot. */
  validate(agentId: string): string | undefined {
    return this.#validate(this.#registries, agentId);
  }

  /** Resolves an agent afresh (nothing is cached between runs). */
  resolve(agentId: string, observer: InferenceObserver = {}): Result<ResolvedAgent, ResolveError> {
    return resolveAgent(this.#registries, agentId, { ...observer, env: this.#env, breaker: this.#breaker });
  }

  /** Runs to completion (through any suspensions, while decisions arrive) and returns the result. */
  run(request: RunRequest, sink: EventSink, options: RunOptions = {}): Promise<Result<AgentRunResult, RuntimeError>> {
    // Chained, not awaited (an `async` frame and two promises less a run); through `start`, which a wrapper may replace.
    try {
      return this.start(request, sink, options).then(AgentRuntime.#whenDone);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  static #whenDone(this: void, started: Result<RunHandle, RuntimeError>): Result<AgentRunResult, RuntimeError> | Promise<Result<AgentRunResult, RuntimeError>> {
    return started.ok ? started.value.done.then(ok) : started;
  }

  /** Starts a run and returns its handle at once (a failure, even of a request that is no object, rejects the promise). */
  start(request: RunRequest, sink: EventSink, options: RunOptions = {}): Promise<Result<RunHandle, RuntimeError>> {
    try {
      return this.#start(request, sink, options, {});
    } catch (e) {
      return Promise.reject(e);
    }
  }

  #start(request: RunRequest, sink: EventSink, options: RunOptions, sub: SubRun): Promise<Result<RunHandle, RuntimeError>> {
    const asked = {
      agentId: request.agentId,
      threadId: request.threadId,
      runId: request.runId,
      ...(request.clientTools !== undefined ? { clientTools: request.clientTools } : {}),
      ...(request.clientContext !== undefined ? { clientContext: request.clientContext } : {}),
    };
    return launch(this.#launchHost, asked, sink, options, sub, async (prepared) => {
      const threadId = prepared.threadId;
      const thread = this.#store === undefined ? undefined : await this.#store.loadThread(threadId);
      if (thread?.threadState !== undefined) {
        const restored = prepared.state.restoreThreadScoped(thread.threadState, 'skip');
        if (!restored.ok) return err({ code: 'state', error: restored.error });
      }
      // The client's state is set over the thread's: its keys' values as the run starts.
      if (request.clientState !== undefined && Object.keys(request.clientState).length > 0) {
        const problem = clientStateProblem(prepared.agent, request.clientState);
        if (problem !== undefined) return err({ code: 'resolve_failed', message: problem.message });
        const seeded = prepared.state.applySeed({ revision: 0, extensions: request.clientState }, 'error');
        if (!seeded.ok) return err({ code: 'state', error: seeded.error });
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
  async revive(request: ReviveRequest, sink: EventSink, options: RunOptions = {}): Promise<Result<RunHandle, RuntimeError>> {
    const revived = await this.#revive(request, sink, options, {});
    // The sub-runs its suspended calls wait on are its own again: they end with it.
    if (revived.ok) void revived.value.parked().then((parked) => parked && this.#delegation.adoptChildren(request.runId, revived.value.waitingOn()));
    return revived;
  }

  /**
   * Takes up a run that was running when its process died (a crash, a kill -9): its thread's history
   * and state and its own run-scoped state come from the store as the run last wrote them — a
   * step's end, or a phase of a tool call (seed 003's durable call phases) — and it goes on under
   * its own run id: a call that never left runs, one that left runs again only where its tool's
   * recovery capability and its pinned policy allow, else it ends indeterminate. Fails when the store
   * does not hold the run as running.
   */
  recover(request: ReviveRequest, sink: EventSink, options: RunOptions = {}): Promise<Result<RunHandle, RuntimeError>> {
    return this.#revive(request, sink, options, {}, 'recover');
  }

  #revive(
    request: ReviveRequest,
    sink: EventSink,
    options: RunOptions,
    sub: SubRun,
    how: 'revive' | 'recover' = 'revive',
  ): Promise<Result<RunHandle, RuntimeError>> {
    const store = this.#store;
    if (store?.loadRunState === undefined)
      return Promise.resolve(
        err({ code: 'resolve_failed', message: `${how === 'revive' ? 'reviving' : 'recovering'} a run needs a store that keeps run state` }),
      );
    const asked = { agentId: request.agentId, threadId: request.threadId, runId: request.runId };
    const launched = how === 'revive' ? { ...options, waitForDecisions: true } : options;
    return launch(this.#launchHost, asked, sink, launched, sub, async (prepared) => {
      const [thread, runState, record] = await Promise.all([
        store.loadThread(request.threadId),
        store.loadRunState?.(request.runId),
        how === 'recover' ? store.getRun?.(request.runId) : undefined,
      ]);
      if (thread === undefined || runState === undefined)
        return err({ code: 'resolve_failed', message: `run ${request.runId} is not ${how === 'revive' ? 'waiting' : 'running'} in the store` });
      const restored = prepared.state.restorePersisted(runState, 'skip');
      if (!restored.ok) return err({ code: 'state', error: restored.error });
      if (thread.threadState !== undefined) {
        const merged = prepared.state.restoreThreadScoped(thread.threadState, 'skip');
        if (!merged.ok) return err({ code: 'state', error: merged.error });
      }
      const loop = prepared.loop({ history: thread.messages, storedCount: thread.messages.length, input: [], overrides: undefined });
      return ok(how === 'revive' ? () => loop.revive() : () => loop.recover(record?.steps));
    });
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
    return this.#active.get(threadId)?.controls.suspended !== undefined;
  }
}

/**
 * The input the thread does not hold yet: at-least-once delivery may bring the same messages twice (a
 * queued job re-run after its consumer died), and a message whose id is already stored is not added again.
 */
function newInput(history: readonly Message[], input: readonly Message[]): readonly Message[] {
  if (history.length === 0 || input.every((m) => m.id === undefined)) return input;
  const held = new Set(history.map((m) => m.id));
  return input.filter((m) => m.id === undefined || !held.has(m.id));
}

/** Assembles a runtime; duplicate ids are collected and reported by `build()` (book: AgentRuntimeBuilder). */
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
  #delegation: DelegationOptions = {};

  withAgentSpec(spec: AgentSpec | AgentSpecInput): this {
    const parsed = AgentSpecSchema.safeParse(spec);
    if (!parsed.success) {
      this.#errors.push({
        code: 'validation_failed',
        message: `agent spec: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      });
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

  /**
   * Registers a plugin under its name: agents name it so in `plugin_ids` and `active_hook_filter`,
   * and its hooks, tap and state are known by it (ADR 0005). An id that is not the plugin's name is
   * refused — a hook filter by that id would silently leave the plugin's hooks out.
   */
  withPlugin(id: string, plugin: RuntimePlugin): this {
    if (id !== plugin.name) this.#errors.push({ code: 'plugin_id_mismatch', id, name: plugin.name });
    else if (this.#plugins.has(id)) this.#errors.push({ code: 'plugin_registry_conflict', id });
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

  /** How delegations run: the env of sub-runs, remote backends, a wrapper for the delegation tools (docs/delegation.md). */
  withDelegation(options: DelegationOptions): this {
    this.#delegation = { ...this.#delegation, ...options };
    return this;
  }

  withCircuitBreaker(config: Partial<CircuitBreakerConfig>): this {
    const parsed = CircuitBreakerConfigSchema.safeParse(config);
    if (!parsed.success) {
      this.#errors.push({
        code: 'validation_failed',
        message: `circuit breaker: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      });
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
      const failure = built.value.validate(id);
      if (failure !== undefined) failures.push(`agent '${id}': ${failure}`);
    }
    if (failures.length > 0) return err({ code: 'validation_failed', message: failures.join('; ') });
    return built;
  }

  /**
   * `build()` for a program that cannot go on without its runtime: the runtime, or a thrown
   * `RuntimeBuildError` whose `error` is the `BuildError` and whose message is one line naming it.
   */
  buildOrThrow(): AgentRuntime {
    const built = this.build();
    if (!built.ok) throw new RuntimeBuildError(built.error);
    return built.value;
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
    return ok(new AgentRuntime(registries, env, this.#store, new CircuitBreaker(env.clock, this.#breaker), this.#delegation));
  }
}
