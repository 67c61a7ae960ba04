import type { AgentEvent } from '../../src/contract/event.ts';
import type { JsonValue } from '../../src/contract/json.ts';

/** A `run_resumed` activity with `content` as given (well-formed or not). */
export const resumed = (content: JsonValue): AgentEvent => ({
  event_type: 'activity_snapshot',
  message_id: 'm-resumed',
  activity_type: 'run_resumed',
  content,
  replace: true,
});

/**
 * The new segment of a run taken up again, as the runtime emits it: `run_start`, the activity, then
 * one step (`stepEvents` between its start under `messageId` and its end) and the run's end.
 */
export const resumedSegment = (content: JsonValue, messageId: string, stepEvents: readonly AgentEvent[]): AgentEvent[] => [
  { event_type: 'run_start', thread_id: 't', run_id: 'r' },
  resumed(content),
  { event_type: 'step_start', message_id: messageId },
  ...stepEvents,
  { event_type: 'step_end' },
  { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'natural_end' } },
];
