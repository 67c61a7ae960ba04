import fc from 'fast-check';
import type { AgentEvent } from '../src/contract/event.ts';
import { RUN_RESUMED, type RunResumed } from '../src/protocols/resumed.ts';

/** Where a run taken up again after its process stopped may go on from. */
export const runResumed: fc.Arbitrary<RunResumed> = fc.record({
  from: fc.constantFrom('tool_batch', 'inference', 'answered', 'step_end' as const),
  step: fc.integer({ min: 1, max: 8 }),
});

/**
 * The events of a run as the segment of a run taken up again: its `run_resumed` activity right after
 * its `run_start`, as the runtime emits it (the rest is the run's own; the encoders read each event
 * on its own, so where the run went on need not match what follows).
 */
export function takenUp(events: readonly AgentEvent[], at: RunResumed): AgentEvent[] {
  const start = events.findIndex((e) => e.event_type === 'run_start');
  const activity: AgentEvent = {
    event_type: 'activity_snapshot',
    message_id: 'run-resumed-1',
    activity_type: RUN_RESUMED,
    content: { from: at.from, step: at.step },
    replace: true,
  };
  return [...events.slice(0, start + 1), activity, ...events.slice(start + 1)];
}
