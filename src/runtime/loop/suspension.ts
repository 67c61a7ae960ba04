import type { Decision } from '../../contract/decision.ts';
import type { AgentEvent } from '../../contract/event.ts';
import { TerminationReasons, type TerminationReason } from '../../contract/lifecycle.ts';
import type { Message } from '../../contract/message.ts';
import type { ToolCallResume } from '../../contract/tool.ts';
import type { LoopInput } from '../../core/loop/step.ts';
import { StateCommand } from '../../core/state/state-command.ts';
import type { Env } from '../env.ts';
import { thrown, type Halting } from '../halt.ts';
import { RunLifecycle } from '../loop-keys.ts';
import type { ResolvedAgent } from '../resolve.ts';
import type { ToolBatch } from '../tool-batch.ts';

type Parked = Extract<LoopInput, { type: 'parked' }>;

/** What a parked run needs of its loop and of its owner. */
export interface SuspensionHost {
  readonly env: Env;
  readonly resolved: ResolvedAgent;
  readonly threadId: string;
  readonly runId: string;
  emit(event: AgentEvent): Promise<void> | undefined;
  submit(command: StateCommand): Halting;
  checkpoint(termination: TerminationReason | undefined): Halting;
  emitSnapshot(): Promise<void> | undefined;
  runStart(): AgentEvent;
  /** Publishes a batch the resume finished (the step it belonged to ended already). */
  publishResumed(batch: ToolBatch): Halting;
  /** Messages that came with the decisions join the history (after the results they answered). */
  accept(messages: readonly Message[]): void;
  checkTermination(): TerminationReason | undefined;
}

/** What the run's owner gives a parked run: decisions, the messages that came with them, and whether to wait at all. */
export interface DecisionSource {
  readonly waitForDecisions: boolean;
  /** The next decisions, `undefined` when the run's signal aborts, `detached` when the run is let go while it waits. */
  readonly nextDecisions: () => Promise<readonly Decision[] | undefined | 'detached'>;
  readonly takeInput?: () => readonly Message[];
  /** Tells the owner which calls are suspended (so decisions can be validated). */
  readonly onSuspended: (batch: ToolBatch | undefined) => void;
}

const stopped = (stop: TerminationReason | undefined): Parked => ({ type: 'parked', left: undefined, stop });
const left = (termination: TerminationReason): Parked => ({ type: 'parked', left: termination, stop: undefined });

/**
 * Ends the suspended segment (a checkpoint, `state_snapshot`, `run_finish{suspended}`), waits for
 * decisions and resumes the batch under the same run id. After a restart the segment ended in the
 * process that parked the run: only the wait is left.
 */
export async function park(host: SuspensionHost, source: DecisionSource, batch: ToolBatch, afterRestart: boolean): Promise<Parked> {
  if (!afterRestart) {
    const halt = await host.checkpoint(TerminationReasons.suspended());
    if (halt !== undefined) return stopped(halt);
    await host.emitSnapshot();
    await host.emit({ event_type: 'run_finish', thread_id: host.threadId, run_id: host.runId, termination: TerminationReasons.suspended() });
    if (!source.waitForDecisions) return left(TerminationReasons.suspended());
  }
  return awaitDecisions(host, source, batch);
}

/**
 * Waits for decisions on a parked batch and resumes it. Left `suspended` when the run is let go
 * while it waits (a server shutting down): it stays waiting in the store, decidable after a restart.
 * A resume that leaves calls suspended ends another segment and waits again.
 */
async function awaitDecisions(host: SuspensionHost, source: DecisionSource, batch: ToolBatch): Promise<Parked> {
  const pending = new Map<string, ToolCallResume>();
  for (;;) {
    source.onSuspended(batch);
    const decisions = await source.nextDecisions();
    if (decisions === 'detached') {
      source.onSuspended(undefined);
      return left(TerminationReasons.suspended());
    }
    if (decisions === undefined) {
      source.onSuspended(undefined);
      await abandon(host, batch);
      return left(TerminationReasons.cancelled());
    }
    for (const d of decisions) {
      const target = batch.targetOf(d.targetId);
      if (target !== undefined) pending.set(target, d.decision);
    }
    const suspended = batch.suspendedIds();
    const ready =
      host.resolved.toolExecution.decisionReplay === 'batch_all_suspended' ? suspended.every((id) => pending.has(id)) : suspended.some((id) => pending.has(id));
    if (!ready) continue;
    source.onSuspended(undefined);
    try {
      await host.emit(host.runStart());
      let halt = await host.submit(StateCommand.empty().update(RunLifecycle, { op: 'set_running', at: host.env.clock.now() }));
      if (halt !== undefined) return stopped(halt);
      // The store learns the run is going again before any tool runs: a process that dies from here
      // on leaves it running (to be marked interrupted), never waiting on a decision already taken.
      halt = await host.checkpoint(undefined);
      if (halt !== undefined) return stopped(halt);
      const now = new Map([...pending].filter(([id]) => suspended.includes(id)));
      for (const id of now.keys()) pending.delete(id);
      halt = await batch.resume(now);
      if (halt !== undefined) return stopped(halt);
      if (!batch.allTerminal()) {
        halt = await host.submit(StateCommand.empty().update(RunLifecycle, { op: 'set_waiting', reason: 'suspended', at: host.env.clock.now() }));
        if (halt !== undefined) return stopped(halt);
        halt = await host.checkpoint(TerminationReasons.suspended());
        if (halt !== undefined) return stopped(halt);
        await host.emitSnapshot();
        await host.emit({ event_type: 'run_finish', thread_id: host.threadId, run_id: host.runId, termination: TerminationReasons.suspended() });
        continue;
      }
      halt = await host.publishResumed(batch);
      if (halt !== undefined) return stopped(halt);
      host.accept(source.takeInput?.() ?? []);
      return stopped(host.checkTermination());
    } catch (e) {
      return stopped(thrown(e));
    }
  }
}

/** A parked run cancelled before its decisions: its suspended calls are cancelled, and so is the run in the store. */
async function abandon(host: SuspensionHost, batch: ToolBatch): Promise<void> {
  const cancel: ToolCallResume = { decision_id: '', action: 'cancel', reason: 'run cancelled', updated_at: host.env.clock.now() };
  const decisions = new Map(batch.suspendedIds().map((id) => [id, cancel] as const));
  // The run is over either way: a halt or a failure on the way changes nothing for the caller, and
  // the stream already ended with run_finish{suspended} (nothing more is emitted for this run).
  try {
    await batch.resume(decisions, { silent: true });
  } catch {
    // See above.
  }
  try {
    const halt = await host.submit(StateCommand.empty().update(RunLifecycle, { op: 'done', reason: 'cancelled', at: host.env.clock.now() }));
    // The stored run record ends cancelled too (the stream already ended with the suspension).
    if (halt === undefined) await host.checkpoint(TerminationReasons.cancelled());
  } catch {
    // See above.
  }
}
