import { newAgentSpec } from '../contract/agent-spec.ts';
import type { AgentEvent } from '../contract/event.ts';
import { Snapshot } from '../core/state/snapshot.ts';
import type { ToolCallContext } from '../runtime/tool.ts';

/**
 * A `ToolCallContext` for unit-testing a tool without a runtime (book: 测试策略 →
 * `ToolCallContext::test_default()`): an empty snapshot, and the activity it reports collected.
 */
export function testToolContext(
  overrides: Partial<Omit<ToolCallContext, 'reportActivity' | 'reportActivityDelta' | 'reportProgress' | 'streamOutput' | 'state'>> = {},
): ToolCallContext & {
  readonly activity: AgentEvent[];
} {
  const activity: AgentEvent[] = [];
  const snapshot = overrides.snapshot ?? new Snapshot(0, new Map());
  const callId = overrides.callId ?? 'call-test';
  return {
    callId,
    toolName: overrides.toolName ?? 'tool',
    threadId: overrides.threadId ?? 'thread-test',
    runId: overrides.runId ?? 'run-test',
    agentSpec: overrides.agentSpec ?? newAgentSpec('agent'),
    snapshot,
    signal: overrides.signal ?? new AbortController().signal,
    ...(overrides.resume !== undefined ? { resume: overrides.resume } : {}),
    state: (key) => snapshot.get(key),
    reportActivity: (activityType, content) => {
      activity.push({ event_type: 'activity_snapshot', message_id: callId, activity_type: activityType, content, replace: true });
      return Promise.resolve();
    },
    reportActivityDelta: (activityType, patch) => {
      activity.push({ event_type: 'activity_delta', message_id: callId, activity_type: activityType, patch: Array.isArray(patch) ? patch : [patch] });
      return Promise.resolve();
    },
    reportProgress: (status, message, progress) => {
      activity.push({
        event_type: 'activity_snapshot',
        message_id: callId,
        activity_type: 'tool-call-progress',
        content: { status, ...(message !== undefined ? { message } : {}), ...(progress !== undefined ? { progress } : {}) },
        replace: true,
      });
      return Promise.resolve();
    },
    streamOutput: (delta) => {
      activity.push({ event_type: 'tool_call_stream_delta', id: callId, name: overrides.toolName ?? 'tool', delta });
      return Promise.resolve();
    },
    activity,
  };
}
