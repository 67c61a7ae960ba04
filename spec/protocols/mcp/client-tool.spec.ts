import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../../src/contract/event.ts';
import { pendingClientResult, ToolResults } from '../../../src/contract/tool.ts';
import { encodeMcp } from '../../../src/protocols/mcp/encoder.ts';

/**
 * A run that ends suspended on a call its client runs (`dispositionOf`: `pending_client`): the
 * `tools/call` result names the tool, since what the run waits for is that tool's result, which a
 * tool call's answer cannot carry back — not a decision.
 */
const clientCall = (id: string, name: string): AgentEvent => ({
  event_type: 'tool_call_done',
  id,
  message_id: 'm1',
  outcome: 'suspended',
  result: pendingClientResult({ id, name, arguments: {} }),
});
const asked: AgentEvent = {
  event_type: 'tool_call_done',
  id: 'c9',
  message_id: 'm1',
  outcome: 'suspended',
  result: ToolResults.suspended('approve', 'Confirm: pay?', {
    suspension: { id: 's-c9', action: 'confirm', message: 'Confirm: pay?' },
    pending: { id: 'c9', name: 'approve', arguments: {} },
    resume_mode: 'replay_tool_call',
  }),
};
const run = (...calls: AgentEvent[]): AgentEvent[] => [
  { event_type: 'run_start', thread_id: 't', run_id: 'r' },
  { event_type: 'text_delta', delta: 'Let me ask.' },
  ...calls,
  { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'suspended' } },
];

describe('MCP: a run suspended on a call its client runs', () => {
  it('ends the call naming the tool whose result a tools/call cannot carry, after the text so far', () => {
    expect(encodeMcp(run(clientCall('c1', 'pick_color')))).toMatchObject({
      result: {
        content: [
          { type: 'text', text: 'Let me ask.' },
          { type: 'text', text: 'agent run suspended: it waits for its client to run pick_color, whose result a tools/call cannot carry' },
        ],
        structuredContent: { termination: { type: 'suspended' }, runId: 'r', threadId: 't' },
        isError: true,
      },
    });
  });

  it('names every such tool, joined by ", ", and only those; an approval waiting beside them is named as a decision', () => {
    expect(encodeMcp(run(clientCall('c1', 'pick_color'), clientCall('c2', 'pick_size'))).result.content.at(-1)).toEqual({
      type: 'text',
      text: 'agent run suspended: it waits for its client to run pick_color, pick_size, whose result a tools/call cannot carry',
    });
    expect(encodeMcp(run(clientCall('c1', 'pick_color'), asked, clientCall('c2', 'pick_size'))).result.content.at(-1)).toEqual({
      type: 'text',
      text: 'agent run suspended: it waits for its client to run pick_color, pick_size, whose result a tools/call cannot carry, and for a decision this protocol cannot carry',
    });
  });

  it('a run waiting on a decision alone keeps its words', () => {
    expect(encodeMcp(run(asked)).result.content.at(-1)).toEqual({
      type: 'text',
      text: 'agent run suspended: it waits for a decision this protocol cannot carry',
    });
  });
});
