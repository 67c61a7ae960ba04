import type { AgentEvent } from '../../contract/event.ts';
import { toRunStatus, type TerminationReason } from '../../contract/lifecycle.ts';
import type { Message } from '../../contract/message.ts';
import type { Phase } from '../../contract/phase.ts';
import type { PhaseFields } from '../../core/phase/plugin.ts';
import { StateCommand } from '../../core/state/state-command.ts';
import type { Env } from '../env.ts';
import { thrown, type Halt, type Halting } from '../halt.ts';
import { RunLifecycle } from '../loop-keys.ts';
import type { PhaseRuntime } from '../phase-runtime.ts';

/** What the end of a run needs of its loop. */
export interface FinishHost {
  readonly env: Env;
  readonly phase: PhaseRuntime;
  readonly threadId: string;
  readonly runId: string;
  messages(): readonly Message[];
  /** The run's answer: its last assistant message after the input. */
  response(): string;
  emit(event: AgentEvent): Promise<void> | undefined;
  submit(command: StateCommand): Halting;
  runPhase<P extends Phase>(phase: P, fields: PhaseFields<P>, cancellable?: boolean): Halting;
  checkpoint(termination: TerminationReason | undefined): Halting;
  emitSnapshot(): Promise<void> | undefined;
}

/**
 * The end of a run (book: RunEnd): the lifecycle marked done when the termination ends it, the
 * RunEnd phase, the final checkpoint (attempted: the run's result does not depend on it),
 * `state_snapshot` and `run_finish`. A halt on the way replaces the termination unless the run
 * failed already (it keeps its first error). Resolves with the termination the run ended with.
 */
export async function finishRun(host: FinishHost, termination: TerminationReason): Promise<TerminationReason> {
  let final = termination;
  try {
    const lifecycle = host.phase.store.snapshot().get(RunLifecycle);
    const target = toRunStatus(final);
    let halt: Halt | undefined;
    if (target.status === 'done' && lifecycle !== undefined && lifecycle.status !== 'done') {
      halt = await host.submit(StateCommand.empty().update(RunLifecycle, { op: 'done', reason: target.doneReason ?? 'unknown', at: host.env.clock.now() }));
    }
    if (halt === undefined) halt = await host.runPhase('run_end', { messages: host.messages() }, false);
    if (halt !== undefined && final.type !== 'error') final = halt;
  } catch (e) {
    if (final.type !== 'error') final = thrown(e);
  }
  const response = host.response();
  try {
    await host.checkpoint(final);
  } catch {
    // The final checkpoint is attempted; the run's result does not depend on it.
  }
  await host.emitSnapshot();
  const lifecycle = host.phase.store.snapshot().get(RunLifecycle);
  await host.emit({
    event_type: 'run_finish',
    thread_id: host.threadId,
    run_id: host.runId,
    result: { response, status: lifecycle?.status ?? 'done', ...(lifecycle?.status_reason !== undefined ? { status_reason: lifecycle.status_reason } : {}) },
    termination: final,
  });
  return final;
}
