import type { AgentEvent } from '../../contract/event.ts';
import { TerminationReasons, type TerminationReason } from '../../contract/lifecycle.ts';
import type { Message } from '../../contract/message.ts';
import { RUN_RESUMED, type RunResumed } from '../../contract/resumed.ts';
import { recoveredRun, revivedRun, type LoopStep } from '../../core/loop/step.ts';
import { failed, thrown } from '../halt.ts';
import { RunLifecycle } from '../loop-keys.ts';
import { ToolBatch, ToolBatchKey, type BatchHost } from '../tool-batch.ts';
import type { PhaseRuntime } from '../phase-runtime.ts';
import type { StepBatch } from './step-batch.ts';

/**
 * How a run is taken up again from its stored state: refused (nothing is emitted; `steps`, when
 * known, is what the run had counted), or from `from` — a step of the machine, or the termination
 * the run ends with at once — with the steps it had, where it went on (a recovery: its `run_resumed` activity), and a
 * `step_start` to emit again first.
 */
export type TakeUp =
  | { readonly type: 'refused'; readonly termination: TerminationReason; readonly steps: number | undefined }
  | {
      readonly type: 'from';
      readonly from: LoopStep | TerminationReason;
      readonly steps: number;
      readonly resumed: RunResumed | undefined;
      readonly stepStart: AgentEvent | undefined;
    };

/** The activity a segment taken up from the store opens with, naming where the run went on. */
export const resumedEvent = (resumed: RunResumed, messageId: string): AgentEvent => ({
  event_type: 'activity_snapshot',
  message_id: messageId,
  activity_type: RUN_RESUMED,
  content: { from: resumed.from, step: resumed.step },
  replace: true,
});

/** A run that ends as it is taken up (its agent cannot be acted as): with the steps it had, and nothing more done. */
export function endedAtTakeUp(phase: PhaseRuntime, termination: TerminationReason): TakeUp {
  const steps = phase.store.snapshot().get(RunLifecycle)?.step_count ?? 0;
  return { type: 'from', from: termination, steps, resumed: undefined, stepStart: undefined };
}

const refused = (termination: TerminationReason, steps?: number): TakeUp => ({ type: 'refused', termination, steps });

/** A batch stored for a step that had ended is not taken up: which of its stages ran is not known. */
const RECOVERY_ENDED_BATCH = TerminationReasons.error('interrupted: the run was ending a step when its process stopped, and is not taken up from there');

/**
 * A run that parked in another process (it died, or shut down): its suspended batch is rebuilt
 * from the restored state and the run waits for decisions as if it had never left — the suspended
 * segment already ended there, so nothing is emitted until a decision resumes it. Every step of a
 * waiting run has ended and was counted, the one that parked it too.
 */
export function revival(host: BatchHost, batches: StepBatch): TakeUp {
  try {
    const lifecycle = host.phase.store.snapshot().get(RunLifecycle);
    const batch = lifecycle?.status === 'waiting' && lifecycle.run_id === host.runId ? ToolBatch.restore(host) : undefined;
    if (batch === undefined) return refused(failed(`run ${host.runId} is not waiting for a decision in the stored state`));
    batches.revived(batch);
    return { type: 'from', from: revivedRun(), steps: lifecycle?.step_count ?? 0, resumed: undefined, stepStart: undefined };
  } catch (e) {
    return refused(thrown(e));
  }
}

/**
 * A run that was running when its process died (seed 003): its state is what the store last held.
 * `storedSteps`: the steps its stored record says it had begun. The run goes on from there:
 *
 * - a tool batch stored for a step that had begun and not ended: inside it (calls that never left
 *   run, calls that left run again only where their recovery allows, else end indeterminate);
 * - no batch, and the history ends with the model's answer: the run had answered, and ends so;
 * - no batch otherwise: from the start of the step that was cut off (the model is asked again).
 *
 * A batch stored for a step that had ended (the step halted, or its batch was being finished after
 * a decision) is not taken up: the run ends interrupted, with the reason.
 */
export function recovery(host: BatchHost, batches: StepBatch, storedSteps: number | undefined, messages: readonly Message[]): TakeUp {
  let steps: number | undefined;
  try {
    const snapshot = host.phase.store.snapshot();
    const lifecycle = snapshot.get(RunLifecycle);
    if (lifecycle?.status !== 'running' || lifecycle.run_id !== host.runId) return refused(failed(`run ${host.runId} is not running in the stored state`));
    steps = storedSteps ?? lifecycle.step_count;
    const record = snapshot.get(ToolBatchKey);
    if (record === undefined || record === null) {
      const last = messages.at(-1);
      const answered = last?.role === 'assistant' && (last.tool_calls?.length ?? 0) === 0;
      const resumed: RunResumed = answered ? { from: 'answered', step: steps } : { from: 'inference', step: lifecycle.step_count + 1 };
      return { type: 'from', from: answered ? TerminationReasons.naturalEnd() : recoveredRun(false), steps, resumed, stepStart: undefined };
    }
    if (storedSteps === undefined || storedSteps <= lifecycle.step_count)
      return { type: 'from', from: RECOVERY_ENDED_BATCH, steps, resumed: { from: 'step_end', step: lifecycle.step_count }, stepStart: undefined };
    const batch = ToolBatch.recovered(host);
    if (typeof batch === 'string') return refused(failed(`run ${host.runId} cannot go on from the store: ${batch}`), steps);
    batches.recovered(batch);
    // The step goes on in this segment: it opens again (a follower's protocol pairs each step's end
    // with a start), under the message id its batch publishes with, and counts once.
    return {
      type: 'from',
      from: recoveredRun(true),
      steps: storedSteps - 1,
      resumed: { from: 'tool_batch', step: storedSteps },
      stepStart: { event_type: 'step_start', message_id: record.message_id },
    };
  } catch (e) {
    return refused(thrown(e), steps);
  }
}
