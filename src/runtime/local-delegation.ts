import type { AgentSpec } from '../contract/agent-spec.ts';
import type { RuntimeError } from '../contract/errors.ts';
import type { AgentEvent } from '../contract/event.ts';
import type { TerminationReason } from '../contract/lifecycle.ts';
import { Messages } from '../contract/message.ts';
import type { Result } from '../contract/result.ts';
import { stepsAfter } from '../core/steps-after.ts';
import { a2aBackend } from './a2a-backend.ts';
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
import type { Env } from './env.ts';
import type { EventSink } from './event-sink.ts';
import { describeRuntimeError, type ReviveRequest, type RunHandle, type RunOptions, type RunRequest, type SubRun, type SuspendedCall } from './run-handle.ts';
import type { Tool } from './tool.ts';

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

/** How the local backend starts and takes up sub-runs: the runtime's own `start` and `revive`, as sub-runs. */
export interface ChildRuns {
  start(request: RunRequest, sink: EventSink, options: RunOptions, sub: SubRun): Promise<Result<RunHandle, RuntimeError>>;
  revive(request: ReviveRequest, sink: EventSink, options: RunOptions, sub: SubRun): Promise<Result<RunHandle, RuntimeError>>;
  /** Whether the store keeps run state: a parked sub-run is then let go into it, not kept in memory. */
  readonly keepsRunState: boolean;
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

/**
 * The runtime as the backend of its own delegates: a sub-run per delegation, in a child thread, how
 * deep each run is and how many sub-runs each has going, and the sub-runs left waiting on a decision
 * (kept parked here, or let go into the store) until their parent decides them or ends.
 */
export class LocalDelegation {
  /** What the delegation tools made at resolve borrow from the runtime. */
  readonly host: DelegationHost;
  readonly #options: DelegationOptions;
  readonly #env: Env;
  readonly #runs: ChildRuns;
  /** How deep each run in flight is (a root run is absent: 0). */
  readonly #depth = new Map<string, number>();
  /** Sub-runs going per run (the fan-out limit). */
  readonly #going = new Map<string, number>();
  /** Sub-runs left waiting on a decision, per parent run: cancelled when the parent ends without them. */
  readonly #waitingChildren = new Map<string, Map<string, DelegateChild>>();
  /** Parked sub-runs kept in memory (without a store that can revive them). */
  readonly #parkedChildren = new Map<string, { readonly handle: RunHandle; readonly relay: ChildRelay }>();
  readonly #remote = new WeakMap<AgentSpec, DelegateBackend>();

  /** `env` is the runtime's: sub-runs draw from `options.env` when given, else from it. */
  constructor(options: DelegationOptions, env: Env, runs: ChildRuns) {
    this.#options = options;
    this.#env = options.env ?? env;
    this.#runs = runs;
    const local: DelegateBackend = { run: (request) => this.#delegate(request) };
    const remote: Readonly<Record<string, RemoteBackendFactory>> = { a2a: a2aBackend, ...options.remote };
    this.host = {
      backendOf: (spec) => {
        if (spec.endpoint === undefined) return local;
        const known = this.#remote.get(spec);
        if (known !== undefined) return known;
        const factory = Object.hasOwn(remote, spec.endpoint.backend) ? remote[spec.endpoint.backend] : undefined;
        if (factory === undefined) return undefined;
        const made = factory(spec.endpoint, this.#env);
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
      ...(options.wrap !== undefined ? { wrap: options.wrap } : {}),
      ...(options.standIns !== undefined ? { stand_ins: options.standIns } : {}),
    };
  }

  /** A run starts at `depth` below its root (a sub-run); a root run needs no entry. */
  began(runId: string, depth: number | undefined): void {
    if (depth !== undefined) this.#depth.set(runId, depth);
  }

  /** A run has ended: its depth is forgotten (its waiting sub-runs end with `endChildren`). */
  ended(runId: string): void {
    this.#depth.delete(runId);
  }

  /** The sub-runs a revived run's suspended calls wait on: they are its own again, and end with it. */
  adoptChildren(runId: string, calls: readonly SuspendedCall[]): void {
    for (const c of calls) {
      const d = delegationOf(c.ticket);
      if (d !== undefined && d.child.backend === 'local') this.#noteWaiting(runId, d.child);
    }
  }

  /** A run has ended: the sub-runs still waiting on it are cancelled (parked here, or revived from the store to be). */
  endChildren(runId: string): void {
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
      void this.#runs
        .revive(
          { threadId: child.thread_id, runId: child.run_id, agentId: child.agent_id },
          { emit: () => undefined },
          {},
          { env: this.#env, depth: child.depth },
        )
        .then(
          (r) => {
            if (r.ok) r.value.cancel();
          },
          () => undefined,
        );
    }
  }

  /** A delegation to a local agent: a new sub-run in a child thread, or a suspended one going on with its decision. */
  async #delegate(request: DelegateRequest): Promise<DelegateOutcome> {
    if (request.resume !== undefined) return this.#resumeChild(request, request.resume);
    const depth = (this.#depth.get(request.parent.runId) ?? 0) + 1;
    const max = request.maxDepth;
    if (depth > max) {
      return {
        status: 'failed',
        code: 'delegation_depth_exceeded',
        message: `${request.agentId} would run at depth ${depth}, past delegation.max_depth ${max}`,
        steps: 0,
      };
    }
    const env = this.#env;
    const child: DelegateChild = { agent_id: request.agentId, backend: 'local', thread_id: env.ids.next('thread'), run_id: env.ids.next('run'), depth };
    try {
      await this.#options.beforeChild?.({ ...child, parentThreadId: request.parent.threadId, parentRunId: request.parent.runId });
    } catch (e) {
      return { status: 'failed', child, message: `the sub-run could not start: ${e instanceof Error ? e.message : String(e)}`, steps: 0 };
    }
    const relay = new ChildRelay(request.onEvent);
    const started = await this.#runs.start(
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
      const revived = await this.#runs.revive(
        { threadId: child.thread_id, runId: child.run_id, agentId: child.agent_id },
        relay,
        { signal: request.signal },
        { env: this.#env, parentRunId: request.parent.runId, depth: child.depth },
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
      if (this.#runs.keepsRunState) {
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
}
