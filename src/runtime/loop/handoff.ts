import type { AgentEvent } from '../../contract/event.ts';
import { describeStateError, type ResolveError, type StateError } from '../../contract/errors.ts';
import { TerminationReasons, type TerminationReason } from '../../contract/lifecycle.ts';
import { unreachable } from '../../contract/never.ts';
import type { Result } from '../../contract/result.ts';
import type { LoopCommand } from '../../core/loop/step.ts';
import { StateCommand } from '../../core/state/state-command.ts';
import { AgentOverlayKey, RunLifecycle, type AgentOverlayState } from '../loop-keys.ts';
import type { PhaseRuntime } from '../phase-runtime.ts';
import { andThen, eachInOrder, type MaybePromise } from '../maybe-promise.ts';
import { describeResolveError, type ResolvedAgent, type RuntimePlugin } from '../resolve.ts';

export type Handoff =
  | { readonly type: 'blocked'; readonly termination: TerminationReason }
  | { readonly type: 'acting'; readonly agent: ResolvedAgent; readonly name: string | undefined; readonly from: string; readonly to: string };

/**
 * The agent a handoff made active, when it changed (`undefined`: it did not). The agent named in
 * `AgentOverlayKey` is resolved — the run's own agent with the overlay, or a registered agent — and
 * acted as from this step on, with its plugins: the phases run with its env, the plugins it lacks
 * uninstalled and its own installed (`PhaseRuntime.swapEnv`, done here; an overlay keeps the run's).
 * No target: back to the run's own agent. A target that does not resolve blocks the run with the reason.
 */
export function handoffOf(
  phase: PhaseRuntime,
  acting: string | undefined,
  base: ResolvedAgent,
  reresolve: ((target: AgentOverlayState, base: ResolvedAgent) => Result<ResolvedAgent, ResolveError>) | undefined,
): Handoff | undefined {
  const target = phase.store.snapshot().get(AgentOverlayKey);
  if (target?.name === acting) return undefined;
  let next = base;
  if (target !== undefined) {
    const r = reresolve?.(target, base);
    if (r === undefined || !r.ok)
      return {
        type: 'blocked',
        termination: TerminationReasons.blocked(`handoff resolve failed: ${r === undefined ? 'no resolver' : describeResolveError(r.error)}`),
      };
    next = r.value;
  }
  const swapped = phase.swapEnv(next.executionEnv);
  if (!swapped.ok) return { type: 'blocked', termination: TerminationReasons.blocked(`handoff resolve failed: ${describeStateError(swapped.error)}`) };
  return { type: 'acting', agent: next, name: target?.name, from: acting ?? base.spec.id, to: target?.name ?? base.spec.id };
}

/** The activity that says a handoff took effect, between one step's end and the next one's start. */
export const handoffAnnounced = (handoff: Extract<Handoff, { type: 'acting' }>, messageId: string): AgentEvent => ({
  event_type: 'activity_snapshot',
  message_id: messageId,
  activity_type: 'agent_handoff',
  content: { from: handoff.from, to: handoff.to },
  replace: true,
});

/**
 * The agent a run taken up from the store acts as, before anything of it runs: each active plugin's
 * `takenUp` derives its run keys from the stored state (the handoff plugin: the agent it made
 * active), and the agent they name is resolved as at a step boundary (`handoffOf`) — so a batch taken
 * up inside its step calls that agent's tools. `undefined`: the run's own agent; a failed commit, or a
 * target that no longer resolves, blocks the run.
 */
export function takenUpAs(
  phase: PhaseRuntime,
  base: ResolvedAgent,
  reresolve: ((target: AgentOverlayState, base: ResolvedAgent) => Result<ResolvedAgent, ResolveError>) | undefined,
): MaybePromise<Handoff | undefined> {
  const snapshot = phase.store.snapshot();
  const derived: { readonly plugin: string; readonly command: StateCommand }[] = [];
  for (const plugin of base.plugins as readonly RuntimePlugin[]) {
    if (plugin.takenUp === undefined || (base.activePlugins.length > 0 && !base.activePlugins.includes(plugin.name))) continue;
    let command: StateCommand | undefined;
    try {
      command = plugin.takenUp(snapshot, base.spec);
    } catch (e) {
      return notTakenUp(plugin.name, e instanceof Error ? e.message : String(e));
    }
    if (command !== undefined && !command.isEmpty()) derived.push({ plugin: plugin.name, command });
  }
  if (derived.length === 0) return undefined;
  const committed = eachInOrder(
    derived,
    ({ plugin, command }): MaybePromise<Handoff | undefined> =>
      andThen(phase.submitOrFail(command), (error: StateError | undefined) =>
        error === undefined ? undefined : notTakenUp(plugin, describeStateError(error)),
      ),
  );
  return andThen(committed, (refused: Handoff | undefined) => refused ?? handoffOf(phase, undefined, base, reresolve));
}

const notTakenUp = (plugin: string, why: string): Handoff => ({
  type: 'blocked',
  termination: TerminationReasons.error(`plugin ${plugin} could not take the run up: ${why}`),
});

/** The step machine's lifecycle commands as one command, stamped with one time. */
export function lifecycleCommand(commands: readonly LoopCommand[], runId: string, at: number): StateCommand {
  const command = StateCommand.empty();
  for (const c of commands) {
    switch (c.op) {
      case 'start':
        command.update(RunLifecycle, { op: 'start', run_id: runId, at });
        break;
      case 'step_completed':
        command.update(RunLifecycle, { op: 'step_completed', at });
        break;
      case 'set_waiting':
        command.update(RunLifecycle, { op: 'set_waiting', reason: 'suspended', at });
        break;
      default:
        unreachable(c, 'lifecycle command');
    }
  }
  return command;
}
