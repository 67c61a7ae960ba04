import { describeStateError, type ResolveError } from '../../contract/errors.ts';
import { TerminationReasons, type TerminationReason } from '../../contract/lifecycle.ts';
import { unreachable } from '../../contract/never.ts';
import type { Result } from '../../contract/result.ts';
import type { LoopCommand } from '../../core/loop/step.ts';
import { StateCommand } from '../../core/state/state-command.ts';
import { AgentOverlayKey, RunLifecycle, type AgentOverlayState } from '../loop-keys.ts';
import type { PhaseRuntime } from '../phase-runtime.ts';
import { describeResolveError, type ResolvedAgent } from '../resolve.ts';

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
