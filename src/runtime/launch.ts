import { applyOverlay } from '../contract/agent-spec.ts';
import type { InferenceExecutionError, ResolveError, RuntimeError } from '../contract/errors.ts';
import { err, ok, type Result } from '../contract/result.ts';
import type { AgentRunResult } from '../contract/run-result.ts';
import { buildExecutionEnv } from '../core/phase/plugin.ts';
import type { CircuitBreaker } from './circuit-breaker.ts';
import type { Env } from './env.ts';
import type { EventSink } from './event-sink.ts';
import type { LocalDelegation } from './local-delegation.ts';
import type { ToolDescriptor } from '../contract/tool.ts';
import { StateCommand } from '../core/state/state-command.ts';
import { clientContextCommand } from './client-state.ts';
import type { ClientContext } from './run-handle.ts';
import type { AgentSpec } from '../contract/agent-spec.ts';
import { clientClashMessage, clientToolClash, ClientToolsKey, withClientTools } from './client-tool.ts';
import { AgentOverlayKey } from './loop-keys.ts';
import { PhaseRuntime } from './phase-runtime.ts';
import { describeResolveError, resolveAgent, type Registries, type ResolvedAgent, type RuntimePlugin } from './resolve.ts';
import { RunControls, type RunHandle, type RunOptions, type SubRun } from './run-handle.ts';
import { RunLoop, type RunParams } from './run-loop.ts';
import type { StateStore } from './state-store.ts';
import { combinedTap, type RunTap, type TapRun } from './tap.ts';
import type { ThreadRunStore } from './thread-run-store.ts';

/** A run holding its thread: its handle, and the controls behind it. */
export interface ActiveRun {
  readonly handle: RunHandle;
  readonly controls: RunControls;
}

/** What a launch needs of the runtime: what runs resolve against, and where a run is kept while it goes. */
export interface LaunchHost {
  /** The registries now (read at each use: a handoff resolves against those published since the run started). */
  registries(): Registries;
  readonly env: Env;
  readonly breaker: CircuitBreaker;
  readonly store: ThreadRunStore | undefined;
  readonly delegation: LocalDelegation;
  /** The runs holding their threads, by thread id. */
  readonly active: Map<string, ActiveRun>;
  /** The agent a request without one runs. */
  firstAgentId(): string | undefined;
}

/** What a launch lends the caller that sets the run up: its thread, its state, and how to make its loop. */
export interface Prepared {
  readonly threadId: string;
  /** The agent the run runs (its spec as resolved). */
  readonly agent: AgentSpec;
  readonly state: StateStore;
  readonly loop: (fields: Pick<RunParams, 'history' | 'storedCount' | 'input' | 'overrides'>) => RunLoop;
}

/** Sets the run up (loads what it starts from, makes its loop): how to run it, or why it cannot. */
export type Prepare = (prepared: Prepared) => Promise<Result<() => Promise<AgentRunResult>, RuntimeError>>;

/** The ids a run was asked to have; what is missing is the runtime's to choose. */
export interface Asked {
  readonly agentId: string | undefined;
  readonly threadId: string | undefined;
  readonly runId: string | undefined;
  /** The tools the client declared for a run it starts (a revived run has them in its state: `ClientToolsKey`). */
  readonly clientTools?: readonly ToolDescriptor[];
  /** The client's context for a run it starts (kept in the run's state, as a context message). */
  readonly clientContext?: readonly ClientContext[];
}

/**
 * What starting and reviving a run share: the agent resolved, the run's ids, tap, phase runtime and
 * controls, its loop made by `prepare`, and its handle — the run holding its thread until it ends.
 * Ids are drawn in this order: the thread (when not asked), then the run (when not asked).
 */
export async function launch(
  host: LaunchHost,
  asked: Asked,
  sink: EventSink,
  options: RunOptions,
  sub: SubRun,
  prepare: Prepare,
): Promise<Result<RunHandle, RuntimeError>> {
  const agentId = asked.agentId ?? host.firstAgentId();
  if (agentId === undefined) return err({ code: 'agent_not_found', agentId: '' });
  let answeredBy: string | undefined;
  const inferenceErrors: InferenceExecutionError[] = [];
  const env = sub.env ?? host.env;
  const resolved = resolveAgent(host.registries(), agentId, {
    onModel: (m) => (answeredBy = m),
    onAbsorbed: (e) => inferenceErrors.push(e),
    env,
    breaker: host.breaker,
  });
  if (!resolved.ok) {
    if (resolved.error.code === 'agent_not_found') return err({ code: 'agent_not_found', agentId });
    return err({ code: 'resolve_failed', message: describeResolveError(resolved.error) });
  }
  const clash = clientToolClash(resolved.value.tools, asked.clientTools ?? []);
  if (clash !== undefined) return err({ code: 'resolve_failed', message: clientClashMessage(clash.id, agentId) });
  const threadId = asked.threadId ?? env.ids.next('thread');
  if (host.active.has(threadId)) return err({ code: 'thread_already_running', threadId });
  const runId = asked.runId ?? env.ids.next('run');

  // The taps of the agent's active plugins watch the run: its events before the sink gets them.
  const tap = tapOf(
    resolved.value,
    {
      env,
      threadId,
      runId,
      agent: resolved.value.spec,
      ...(sub.parentRunId !== undefined ? { parentRunId: sub.parentRunId } : {}),
    },
    options.tap,
  );
  const watched: EventSink = tap?.event === undefined ? sink : tappedSink(sink, tap as Required<Pick<RunTap, 'event'>>);

  // The plugins registered when the agent was resolved drive the run's engine, over a new store.
  const phase = PhaseRuntime.forRun(resolved.value.executionEnv);
  if (!phase.ok) return err({ code: 'state', error: phase.error });

  const client = asked.clientTools ?? [];
  const context = asked.clientContext ?? [];
  if (client.length > 0 || context.length > 0) {
    const command = context.length > 0 ? clientContextCommand(context) : StateCommand.empty();
    if (client.length > 0) command.update(ClientToolsKey, client);
    const failure = phase.value.store.tryCommit(command);
    if (failure !== undefined) return err({ code: 'state', error: failure });
  }

  const controls = new RunControls(threadId, runId);
  const channel = controls.channel;
  const prepared = await prepare({
    threadId,
    agent: resolved.value.spec,
    state: phase.value.store,
    loop: (fields) => {
      // The client's tools, as the run keeps them: declared by this start, or restored with a revived run's state.
      const offered = phase.value.store.snapshot().get(ClientToolsKey) ?? [];
      return (controls.loop = new RunLoop({
        env,
        ...(sub.parentRunId !== undefined ? { parentRunId: sub.parentRunId } : {}),
        resolved: withClientTools(resolved.value, offered),
        phase: phase.value,
        sink: watched,
        ...(tap !== undefined ? { tap } : {}),
        store: host.store,
        threadId,
        runId,
        ...fields,
        cancellation: controls.cancellation,
        waitForDecisions: options.waitForDecisions ?? true,
        ...(options.checkpoint !== undefined ? { stamp: options.checkpoint } : {}),
        nextDecisions: () => channel.next(),
        takeInput: () => channel.takeInput(),
        onSuspended: (batch) => (controls.suspended = batch),
        answeredBy: () => answeredBy,
        inferenceErrors,
        reresolve: (target, base) => {
          const deps = {
            onModel: (m: string) => (answeredBy = m),
            onAbsorbed: (e: InferenceExecutionError) => inferenceErrors.push(e),
            env,
            breaker: host.breaker,
          };
          const registries = host.registries();
          if (target.overlay === undefined) {
            // A registered agent, resolved whole: its prompt, model, tools and plugins.
            const other = resolveAgent(registries, target.name, deps);
            return other.ok ? handoffKept(withClientTools(other.value, offered), base) : other;
          }
          const spec = applyOverlay(base.spec, target.overlay);
          const overlaid = resolveAgent({ ...registries, agents: new Map([...registries.agents, [spec.id, spec]]) }, spec.id, deps);
          // An overlay changes prompt, model and tools; the plugins stay the run's.
          return overlaid.ok
            ? ok({ ...withClientTools(overlaid.value, offered), plugins: base.plugins, activePlugins: base.activePlugins, executionEnv: base.executionEnv })
            : overlaid;
        },
      }));
    },
  });
  if (!prepared.ok) return prepared;
  if (host.active.has(threadId)) return err({ code: 'thread_already_running', threadId });

  const cancellation = controls.cancellation;
  const onOuterAbort = (): void => cancellation.abort();
  options.signal?.addEventListener('abort', onOuterAbort, { once: true });
  if (options.signal?.aborted === true) cancellation.abort();
  cancellation.listen(controls.onAbort);
  host.delegation.began(runId, sub.depth);
  const done = prepared.value().finally(() => {
    options.signal?.removeEventListener('abort', onOuterAbort);
    cancellation.release();
    host.active.delete(threadId);
    host.delegation.ended(runId);
    channel.close();
    // A run that ends (not one let go while parked) takes the sub-runs still waiting on it along.
    if (!channel.detached) host.delegation.endChildren(runId);
  });
  const handle = controls.handle(done);
  host.active.set(threadId, { handle, controls });
  return ok(handle);
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

/** The combined tap of the resolved agent's active plugins that have one (`RuntimePlugin.tap`), and the caller's (`RunOptions.tap`). */
function tapOf(resolved: ResolvedAgent, run: TapRun, own: RunTap | undefined): RunTap | undefined {
  const taps: RunTap[] = [];
  for (const plugin of resolved.plugins as readonly RuntimePlugin[]) {
    if (plugin.tap === undefined || (resolved.activePlugins.length > 0 && !resolved.activePlugins.includes(plugin.name))) continue;
    const t = plugin.tap(run);
    if (t !== undefined) taps.push(t);
  }
  if (own !== undefined) taps.push(own);
  return combinedTap(taps);
}

/** `sink`, with the tap told of each event first. */
const tappedSink = (sink: EventSink, tap: Required<Pick<RunTap, 'event'>>): EventSink => ({
  emit: (event) => {
    tap.event(event);
    return sink.emit(event);
  },
});
