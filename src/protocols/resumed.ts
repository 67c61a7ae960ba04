import type { AgentEvent } from '../contract/event.ts';
import { unreachable } from '../contract/never.ts';
import { RUN_RESUMED, RunResumedSchema, type RunResumed } from '../contract/resumed.ts';

export { RUN_RESUMED, type RunResumed } from '../contract/resumed.ts';

/**
 * Where a run went on, when the event is a `run_resumed` activity whose content reads as one;
 * `undefined` otherwise (a content another version wrote, that this one cannot read, is not shown).
 */
export function runResumedOf(event: AgentEvent): RunResumed | undefined {
  if (event.event_type !== 'activity_snapshot' || event.activity_type !== RUN_RESUMED) return undefined;
  const parsed = RunResumedSchema.safeParse(event.content);
  return parsed.success ? parsed.data : undefined;
}

/** One sentence for a person: that the run was taken up again, and where it went on. */
export function runResumedText(r: RunResumed): string {
  return `The run was taken up again after its process stopped: ${whereOf(r)}.`;
}

function whereOf(r: RunResumed): string {
  switch (r.from) {
    case 'tool_batch':
      return `inside the tool batch of step ${r.step}`;
    case 'inference':
      return `at the start of step ${r.step}, asking the model again`;
    case 'answered':
      return `after the answer of step ${r.step}, which ends it`;
    case 'step_end':
      return `at the end of step ${r.step}, whose tool calls are not taken up; it ends interrupted`;
    default:
      return unreachable(r.from, 'place a run went on from');
  }
}
