import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../../src/contract/event.ts';
import { ToolResults } from '../../../src/contract/tool.ts';
import { encodeMcp } from '../../../src/protocols/mcp/encoder.ts';

/** A run that ends suspended, on a call scheduled for a time and (in `withConfirm`) on one asking a person. */
function suspendedRun(withConfirm: boolean): AgentEvent[] {
  const call = { id: 'c1', name: 'later', arguments: {} };
  const asked = ToolResults.suspended('approve', 'Confirm: pay?', {
    suspension: { id: 's-c2', action: 'confirm', message: 'Confirm: pay?' },
    pending: { id: 'c2', name: 'approve', arguments: {} },
    resume_mode: 'replay_tool_call',
  });
  return [
    { event_type: 'run_start', thread_id: 't', run_id: 'r' },
    { event_type: 'tool_call_done', id: 'c1', message_id: 'm1', outcome: 'suspended', result: ToolResults.scheduled(call, { not_before: 60_000 }) },
    ...(withConfirm ? [{ event_type: 'tool_call_done', id: 'c2', message_id: 'm1', outcome: 'suspended', result: asked } as AgentEvent] : []),
    { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'suspended' } },
  ];
}

describe('MCP: a run waiting on a scheduled call', () => {
  it('reports the wait as progress; a host where nothing wakes it (awaken mcp over stdio) answers that it is suspended and why', () => {
    expect(encodeMcp(suspendedRun(false))).toEqual({
      progress: [
        { progress: 1, message: 'starting agent run' },
        { progress: 2, message: 'tool later scheduled: waits until 1970-01-01T00:01:00.000Z' },
        { progress: 3, message: 'waiting: scheduled: waits until 1970-01-01T00:01:00.000Z' },
      ],
      result: {
        content: [
          { type: 'text', text: 'agent run suspended: its scheduled calls wait (scheduled: waits until 1970-01-01T00:01:00.000Z) and nothing here wakes them' },
        ],
        structuredContent: { termination: { type: 'suspended' }, runId: 'r', threadId: 't' },
        isError: true,
      },
    });
  });

  it('a run that also waits on a person’s decision ends the call as before: MCP cannot carry the question', () => {
    expect(encodeMcp(suspendedRun(true)).result.content.at(-1)).toEqual({
      type: 'text',
      text: 'agent run suspended: it waits for a decision this protocol cannot carry',
    });
  });
});
