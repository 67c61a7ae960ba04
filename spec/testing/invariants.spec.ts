import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';

const rs: AgentEvent = { event_type: 'run_start', thread_id: 't', run_id: 'r' };
const rf: AgentEvent = { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'natural_end' } };
const ss: AgentEvent = { event_type: 'step_start', message_id: 'm' };
const se: AgentEvent = { event_type: 'step_end' };
const tcs: AgentEvent = { event_type: 'tool_call_start', id: 'c', name: 'x' };
const tcd: AgentEvent = {
  event_type: 'tool_call_done',
  id: 'c',
  message_id: 'm',
  result: { tool_name: 'x', status: 'success', data: null, message: null },
  outcome: 'succeeded',
};

describe('checkRunInvariants', () => {
  it('accepts a well-formed stream, including a resumed run', () => {
    expect(checkRunInvariants([rs, ss, tcs, tcd, se, rf])).toEqual([]);
    expect(checkRunInvariants([rs, ss, se, rf, rs, ss, se, rf])).toEqual([]);
  });

  it.each([
    [[], 'empty stream'],
    [[ss, se, rf], 'stream starts with step_start'],
    [[rs, ss, se], 'stream ends with step_end'],
    [[rs, rs, rf], 'run_start inside an open run'],
    [[rs, rf, rf], 'run_finish without run_start'],
    [[rs, ss, rf], 'run_finish inside an open step'],
    [[rs, ss, ss, se, rf], 'step_start before the previous step_end'],
    [[rs, se, rf], 'step_end without step_start'],
    [[rs, ss, tcs, se, rf], 'open tool calls c'],
    [[rs, rf, tcs, rf], 'event outside a run'],
    [[rs, rf, ss, se, rf], 'step outside a run'],
  ] as [AgentEvent[], string][])('flags %#: %s', (events, message) => {
    expect(checkRunInvariants(events).join('\n')).toContain(message);
  });
});
