import type { Tokenizer } from '../core/context/index.ts';
import type { Summarizer } from './context.ts';
import type { AgentSpec, AgentSpecInput } from '../contract/agent-spec.ts';
import { AgentSpecSchema, applyOverlay } from '../contract/agent-spec.ts';
import { RuntimeBuildError, type BuildError, type InferenceExecutionError, type ResolveError, type RuntimeError } from '../contract/errors.ts';
import type { InferenceOverride } from '../contract/inference.ts';
import type { Message } from '../contract/message.ts';
import { err, ok, type Result } from '../contract/result.ts';
import { PhaseRuntime } from './phase-runtime.ts';
import { buildExecutionEnv } from '../core/phase/plugin.ts';
import { AgentOverlayKey } from './loop-keys.ts';
import type { StopPolicy } from '../core/policies/stop-policy.ts';
import { stepsAfter } from '../core/steps-after.ts';
import { StateStore } from './state-store.ts';
import { CircuitBreaker, CircuitBreakerConfigSchema, type CircuitBreakerConfig } from './circuit-breaker.ts';
import { realEnv, type Env } from './env.ts';
import type { InferenceObserver } from './retry.ts';
import type { EventSink } from './event-sink.ts';
import { combinedTap, type RunTap, type TapRun } from './tap.ts';
import type { LlmExecutor } from './llm.ts';
import { describeResolveError, resolveAgent, type ModelEntry, type Registries, type ResolvedAgent, type RuntimePlugin } from './resolve.ts';
import { RunLoop, type AgentRunResult, type Decision, type RunParams } from './run-loop.ts';
import type { ThreadRunStore } from './thread-run-store.ts';
import type { Tool } from './tool.ts';
import type { ToolBatch } from './tool-batch.ts';
import type { AgentEvent } from '../contract/event.ts';
import type { TerminationReason } from '../contract/lifecycle.ts';
import { Messages } from '../contract/message.ts';
import {
  delegationOf,
  outcomeOfTermination,
  type DelegateBackend,
  type DelegateChild,
  type DelegateOutcome,
  type DelegateRequest,
  type DelegationHost,
  type RemoteBackendFactory,
} from './delegation.ts';
import { a2aBackend } from './a2a-backend.ts';

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

/** How the runtime runs delegations (`AgentRuntimeBuilder.withDelegation`). */
export interface DelegationOptions {
  /** What sub-runs draw time, ids and randomness from (default: the runtime's `Env`). */
  readonly env?: Env;
  /** Backends of remote agents by `endpoint.backend` (default: `a2a`, over `@a2a-js/sdk`). */
  readonly remote?: Readonly<Record<string, RemoteBackendFactory>>;
  /** Wraps each delegation tool the runtime makes (a recorder makes it a port of its transcript). */
  readonly wrap?: (tool: Tool) => Tool;
  /** Tools standing in for the delegation tools, by delegate id (a replay answers from its recording). */
  readonly standIns?: ReadonlyMap<string, Tool>;
  /** Told before a local sub-run starts, with its thread (a server gives the child thread to the parent's owner). */
  readonly beforeChild?: (child: DelegateChild & { readonly parentThreadId: string; readonly parentRunId: string }) => Promise<void> | void;
}

/** Where a sub-run's events go: to the parent call following it now, and each `run_finish` noted for whoever waits on it. */
class ChildRelay {
  target: (event: AgentEvent) => void | Promise<void>;
  steps = 0;
  readonly #finishes: TerminationReason[] = [];
  #waiter: ((t: TerminationReason | undefined) => void) | undefined;

  constructor(target: (event: AgentEvent) => void | Promise<void>) {
    this.target = target;
  }

  emit(event: AgentEvent): void | Promise<void> {
    this.steps = stepsAfter(this.steps, event);
    if (event.event_type === 'run_finish') {
      const w = this.#waiter;
      this.#waiter = undefined;
      if (w !== undefined) w(event.termination);
      else this.#finishes.push(event.termination);
    }
    return this.target(event);
  }

  /** The next `run_finish` of the child, or `undefined` when its run ends without one. */
  nextFinish(done: Promise<unknown>): Promise<TerminationReason | undefined> {
    const queued = this.#finishes.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise((resolve) => {
      this.#waiter = resolve;
      void done.then(
        () => resolve(this.#finishes.shift()),
        () => resolve(undefined),
      );
    });
  }
}

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
  readonly #delegation: DelegationOptions;
  readonly #host: DelegationHost;
  /** How deep each run in flight is (a root run is absent: 0). */
  readonly #depth = new Map<string, number>();
  /** Sub-runs going per run (the fan-out limit). */
  readonly #going = new Map<string, number>();
  /** Sub-runs left waiting on a decision, per parent run: cancelled when the parent ends without them. */
  readonly #waitingChildren = new Map<string, Map<string, DelegateChild>>();
  /** Parked sub-runs kept in memory (without a store that can revive them). */
  readonly #parkedChildren = new Map<string, { readonly handle: RunHandle; readonly relay: ChildRelay }>();
  readonly #remote = new WeakMap<AgentSpec, DelegateBackend>();

  constructor(registries: Registries, env: Env, store: ThreadRunStore | undefined, breaker: CircuitBreaker, delegation: DelegationOptions = {}) {
    this.#env = env;
    this.#store = store;
    this.#breaker = breaker;
    this.#delegation = delegation;
    const local: DelegateBackend = { run: (request) => this.#delegate(request) };
    const remote: Readonly<Record<string, RemoteBackendFactory>> = { a2a: a2aBackend, ...delegation.remote };
    this.#host = {
      backendOf: (spec) => {
        if (spec.endpoint === undefined) return local;
        const known = this.#remote.get(spec);
        if (known !== undefined) return known;
        const factory = Object.hasOwn(remote, spec.endpoint.backend) ? remote[spec.endpoint.backend] : undefined;
        if (factory === undefined) return undefined;
        const made = factory(spec.endpoint, delegation.env ?? env);
        this.#remote.set(spec, made);
        return made;
      },
      enter: (runId, max) => {
        const n = this.#going.get(runId) ?? 0;
        if (n >= max) return false;
        this.#going.set(runId, n + 1);
        return true;
      },
      leave: (runId) => {
        const n = (this.#going.get(runId) ?? 1) - 1;
        if (n <= 0) this.#going.delete(runId);
        else this.#going.set(runId, n);
      },
      ...(delegation.wrap !== undefined ? { wrap: delegation.wrap } : {}),
      ...(delegation.standIns !== undefined ? { stand_ins: delegation.standIns } : {}),
    };
    this.#registries = { ...registries, delegation: this.#host };
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
    const withHost = { ...next, delegation: this.#host };
    for (const id of [...next.agents.keys()].sort()) {
      const failure = this.#validate(withHost, id);
      if (failure !== undefined) failures.push(`agent '${id}': ${failure}`);
    }
    if (failures.length > 0) return err({ code: 'validation_failed', message: failures.join('; ') });
    this.#registries = { ...next, delegation: this.#host };
    return ok(undefined);
  }

  /**
   * Why an agent of `registries` cannot run, if it cannot: a local agent must resolve; a remote one
   * (with an `endpoint`, runnable only as a delegate) must have a backend here.
   */
  #validate(registries: Registries, agentId: string): string | undefined {
    const spec = registries.agents.get(agentId);
    if (spec?.endpoint !== undefined) {
      return this.#host.backendOf(spec) === undefined ? describeResolveError({ code: 'unsupported_remote_backend', agentId, backend: spec.endpoint.backend }) : undefined;
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
  async run(request: RunRequest, sink: EventSink, options: RunOptions = {}): Promise<Result<AgentRunResult, RuntimeError>> {
    const started = await this.start(request, sink, options);
    if (!started.ok) return started;
    return ok(await started.value.done);
  }

  /** Starts a run and returns its handle at once. */
  async start(request: RunRequest, sink: EventSink, options: RunOptions = {}): Promise<Result<RunHandle, RuntimeError>> {
    return this.#start(request, sink, options, {});
  }

  #start(request: RunRequest, sink: EventSink, options: RunOptions, sub: SubRun): Promise<Result<RunHandle, RuntimeError>> {
    return this.#launch(request.agentId, request.threadId, request.runId, sink, options, sub, async (prepared) => {
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
    const revived = await this.#revive(request, sink, options, {});
    // The sub-runs its suspended calls wait on are its own again: they end with it.
    if (revived.ok) void revived.value.parked().then((parked) => parked && this.#adoptChildren(request.runId, revived.value.waitingOn()));
    return revived;
  }

  #revive(request: { readonly threadId: string; readonly runId: string; readonly agentId?: string }, sink: EventSink, options: RunOptions, sub: SubRun): Promise<Result<RunHandle, RuntimeError>> {
    const store = this.#store;
    if (store?.loadRunState === undefined) return Promise.resolve(err({ code: 'resolve_failed', message: 'reviving a run needs a store that keeps run state' }));
    return this.#launch(request.agentId, request.threadId, request.runId, sink, { ...options, waitForDecisions: true }, sub, async (prepared) => {
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
    sub: SubRun,
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
    const env = sub.env ?? this.#env;
    const resolved = resolveAgent(this.#registries, agentId, { onModel: (m) => (answeredBy = m), onAbsorbed: (e) => inferenceErrors.push(e), env, breaker: this.#breaker });
    if (!resolved.ok) {
      if (resolved.error.code === 'agent_not_found') return err({ code: 'agent_not_found', agentId });
      return err({ code: 'resolve_failed', message: describeResolveError(resolved.error) });
    }
    const threadId = threadIdAsked ?? env.ids.next('thread');
    if (this.#active.has(threadId)) return err({ code: 'thread_already_running', threadId });
    const runId = runIdAsked ?? env.ids.next('run');

    // The taps of the agent's active plugins watch the run: its events before the sink gets them.
    const tap = tapOf(resolved.value, { env, threadId, runId, agent: resolved.value.spec, ...(sub.parentRunId !== undefined ? { parentRunId: sub.parentRunId } : {}) });
    const watched: EventSink = tap?.event === undefined ? sink : tappedSink(sink, tap as Required<Pick<RunTap, 'event'>>);

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
          env,
          ...(sub.parentRunId !== undefined ? { parentRunId: sub.parentRunId } : {}),
          resolved: resolved.value,
          phase: phase.value,
          sink: watched,
          ...(tap !== undefined ? { tap } : {}),
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
            const deps = { onModel: (m: string) => (answeredBy = m), onAbsorbed: (e: InferenceExecutionError) => inferenceErrors.push(e), env, breaker: this.#breaker };
            if (target.overlay === undefined) {
              // A registered agent, resolved whole: its prompt, model, tools and plugins.
              const other = resolveAgent(this.#registries, target.name, deps);
              return other.ok ? handoffKept(other.value, base) : other;
            }
            const spec = applyOverlay(base.spec, target.overlay);
            const overlaid = resolveAgent({ ...this.#registries, agents: new Map([...this.#registries.agents, [spec.id, spec]]) }, spec.id, deps);
            // An overlay changes prompt, model and tools; the plugins stay the run's.
            return overlaid.ok ? ok({ ...overlaid.value, plugins: base.plugins, activePlugins: base.activePlugins, executionEnv: base.executionEnv }) : overlaid;
          },
        })),
    });
    if (!prepared.ok) return prepared;
    if (this.#active.has(threadId)) return err({ code: 'thread_already_running', threadId });

    const onOuterAbort = (): void => controller.abort();
    options.signal?.addEventListener('abort', onOuterAbort, { once: true });
    if (options.signal?.aborted === true) controller.abort();
    controller.signal.addEventListener('abort', onAbort, { once: true });
    if (sub.depth !== undefined) this.#depth.set(runId, sub.depth);
    const done = prepared.value().finally(() => {
      options.signal?.removeEventListener('abort', onOuterAbort);
      controller.signal.removeEventListener('abort', onAbort);
      this.#active.delete(threadId);
      this.#depth.delete(runId);
      settleParked(false);
      // A run that ends (not one let go while parked) takes the sub-runs still waiting on it along.
      if (!active.detached) this.#endChildren(runId);
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

  // ---- delegation: the local backend ---------------------------------------------------------------

  /** A delegation to a local agent: a new sub-run in a child thread, or a suspended one going on with its decision. */
  async #delegate(request: DelegateRequest): Promise<DelegateOutcome> {
    if (request.resume !== undefined) return this.#resumeChild(request, request.resume);
    const depth = (this.#depth.get(request.parent.runId) ?? 0) + 1;
    const max = request.maxDepth;
    if (depth > max) {
      return { status: 'failed', code: 'delegation_depth_exceeded', message: `${request.agentId} would run at depth ${depth}, past delegation.max_depth ${max}`, steps: 0 };
    }
    const env = this.#delegation.env ?? this.#env;
    const child: DelegateChild = { agent_id: request.agentId, backend: 'local', thread_id: env.ids.next('thread'), run_id: env.ids.next('run'), depth };
    try {
      await this.#delegation.beforeChild?.({ ...child, parentThreadId: request.parent.threadId, parentRunId: request.parent.runId });
    } catch (e) {
      return { status: 'failed', child, message: `the sub-run could not start: ${e instanceof Error ? e.message : String(e)}`, steps: 0 };
    }
    const relay = new ChildRelay(request.onEvent);
    const started = await this.#start(
      { threadId: child.thread_id, runId: child.run_id, agentId: request.agentId, messages: [Messages.user(request.prompt)] },
      relay,
      { signal: request.signal, waitForDecisions: true },
      { env, parentRunId: request.parent.runId, depth },
    );
    if (!started.ok) return { status: 'failed', child, message: `the sub-run could not start: ${describeRuntimeError(started.error)}`, steps: 0 };
    return this.#settleChild(started.value, relay, child, request.parent.runId);
  }

  /** A decision for a sub-run that suspended: to it where it is parked, or to it revived from the store. */
  async #resumeChild(request: DelegateRequest, resume: NonNullable<DelegateRequest['resume']>): Promise<DelegateOutcome> {
    const { child, targetId, decision } = resume;
    this.#waitingChildren.get(request.parent.runId)?.delete(child.run_id);
    let entry = this.#parkedChildren.get(child.run_id);
    if (entry !== undefined) {
      this.#parkedChildren.delete(child.run_id);
      entry.relay.target = request.onEvent;
    } else {
      const relay = new ChildRelay(request.onEvent);
      const revived = await this.#revive(
        { threadId: child.thread_id, runId: child.run_id, agentId: child.agent_id },
        relay,
        { signal: request.signal },
        { env: this.#delegation.env ?? this.#env, parentRunId: request.parent.runId, depth: child.depth },
      );
      if (!revived.ok) return { status: 'failed', child, message: `the sub-run cannot go on: ${describeRuntimeError(revived.error)}`, steps: 0 };
      entry = { handle: revived.value, relay };
    }
    const decided = entry.handle.decide([{ targetId, decision }]);
    if (!decided.ok) {
      entry.handle.cancel();
      return { status: 'failed', child, message: `the sub-run refused the decision: ${describeRuntimeError(decided.error)}`, steps: 0 };
    }
    return this.#settleChild(entry.handle, entry.relay, child, request.parent.runId);
  }

  /** Follows a sub-run to its end, or to where it parks on a decision (left waiting: in the store, else here). */
  async #settleChild(handle: RunHandle, relay: ChildRelay, child: DelegateChild, parentRunId: string): Promise<DelegateOutcome> {
    const finish = await relay.nextFinish(handle.done);
    if (finish?.type === 'suspended' && (await handle.parked())) {
      const waiting = handle.waitingOn()[0] as SuspendedCall;
      const suspension = waiting.ticket?.suspension ?? { id: waiting.call.id, action: 'confirm' };
      // Its steps: the run's own count (a child revived from the store has steps this relay never saw).
      let steps = relay.steps;
      if (this.#store?.loadRunState !== undefined) {
        handle.detach();
        steps = (await handle.done).steps;
      } else this.#parkedChildren.set(child.run_id, { handle, relay });
      this.#noteWaiting(parentRunId, child);
      return { status: 'suspended', child, targetId: waiting.call.id, suspension, steps };
    }
    const result = await handle.done;
    return outcomeOfTermination(result.termination, child, result.response, result.steps);
  }

  #noteWaiting(parentRunId: string, child: DelegateChild): void {
    let children = this.#waitingChildren.get(parentRunId);
    if (children === undefined) this.#waitingChildren.set(parentRunId, (children = new Map()));
    children.set(child.run_id, child);
  }

  /** The sub-runs a revived run's suspended calls wait on. */
  #adoptChildren(runId: string, calls: readonly SuspendedCall[]): void {
    for (const c of calls) {
      const d = delegationOf(c.ticket);
      if (d !== undefined && d.child.backend === 'local') this.#noteWaiting(runId, d.child);
    }
  }

  /** A run has ended: the sub-runs still waiting on it are cancelled (parked here, or revived from the store to be). */
  #endChildren(runId: string): void {
    const children = this.#waitingChildren.get(runId);
    if (children === undefined) return;
    this.#waitingChildren.delete(runId);
    for (const child of children.values()) {
      const parked = this.#parkedChildren.get(child.run_id);
      if (parked !== undefined) {
        this.#parkedChildren.delete(child.run_id);
        parked.handle.cancel();
        continue;
      }
      void this.#revive({ threadId: child.thread_id, runId: child.run_id, agentId: child.agent_id }, { emit: () => undefined }, {}, { env: this.#delegation.env ?? this.#env, depth: child.depth }).then(
        (r) => {
          if (r.ok) r.value.cancel();
        },
        () => undefined,
      );
    }
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

/** Where and how deep a run runs, when the runtime starts it as a sub-run. */
interface SubRun {
  readonly env?: Env;
  readonly parentRunId?: string;
  readonly depth?: number;
}

/** The depth limit a delegation runs under: the delegating agent's `delegation.max_depth`. */

function describeRuntimeError(e: RuntimeError): string {
  switch (e.code) {
    case 'state':
      return `state: ${e.error.code}`;
    case 'thread_already_running':
      return `thread ${e.threadId} already has a run`;
    case 'agent_not_found':
      return `agent '${e.agentId}' not found`;
    case 'resolve_failed':
      return e.message;
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

/**
 * `next` with the plugin that keeps the handoff itself (the one whose keys hold `AgentOverlayKey`)
 * taken along from `base` when `next` lacks it: the agent handed to can still hand back, and the
 * thread keeps which agent is active.
 */
function handoffKept(next: ResolvedAgent, base: ResolvedAgent): Result<ResolvedAgent, ResolveError> {
  const keeper = base.executionEnv.plugins.find((p) => p.keys.some((k) => k.key.key === AgentOverlayKey.key));
  if (keeper === undefined || next.executionEnv.plugins.some((p) => p.name === keeper.name)) return ok(next);
  const plugin = base.plugins.find((p) => p.name === keeper.name);
  if (plugin === undefined) return ok(next);
  const plugins = [...next.plugins, plugin];
  const activePlugins = next.activePlugins.length === 0 ? next.activePlugins : [...next.activePlugins, plugin.name];
  const env = buildExecutionEnv(plugins, { activePlugins });
  return env.ok ? ok({ ...next, plugins, activePlugins, executionEnv: env.value }) : err({ code: 'env_build', error: env.error });
}

/** The combined tap of the resolved agent's active plugins that have one (`RuntimePlugin.tap`). */
function tapOf(resolved: ResolvedAgent, run: TapRun): RunTap | undefined {
  const taps: RunTap[] = [];
  for (const plugin of resolved.plugins as readonly RuntimePlugin[]) {
    if (plugin.tap === undefined || (resolved.activePlugins.length > 0 && !resolved.activePlugins.includes(plugin.name))) continue;
    const t = plugin.tap(run);
    if (t !== undefined) taps.push(t);
  }
  return combinedTap(taps);
}

/** `sink`, with the tap told of each event first. */
const tappedSink = (sink: EventSink, tap: Required<Pick<RunTap, 'event'>>): EventSink => ({
  emit: (event) => {
    tap.event(event);
    return sink.emit(event);
  },
});
