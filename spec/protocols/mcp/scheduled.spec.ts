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
  it('answers the call at once: where the host wakes scheduled calls, that the run goes on there (no error); over stdio, that nothing wakes them', () => {
    const waits = 'scheduled: waits until 1970-01-01T00:01:00.000Z';
    const served = encodeMcp(suspendedRun(false), { serverWakes: true });
    expect(served).toEqual({
      progress: [
        { progress: 1, message: 'starting agent run' },
        { progress: 2, message: `tool later ${waits}` },
      ],
      result: {
        content: [{ type: 'text', text: `agent run waiting: its scheduled calls (${waits}) go on by themselves on the server (run r)` }],
        structuredContent: { termination: { type: 'suspended' }, runId: 'r', threadId: 't' },
        isError: false,
      },
    });
    expect(encodeMcp(suspendedRun(false)).result).toEqual({
      content: [{ type: 'text', text: `agent run suspended: its scheduled calls wait (${waits}) and nothing here wakes them` }],
      structuredContent: { termination: { type: 'suspended' }, runId: 'r', threadId: 't' },
      isError: true,
    });
  });

  it('a run that also waits on a person’s decision ends the call as before: MCP cannot carry the question', () => {
    expect(encodeMcp(suspendedRun(true), { serverWakes: true }).result.content.at(-1)).toEqual({
      type: 'text',
      text: 'agent run suspended: it waits for a decision this protocol cannot carry',
    });
  });
});
