import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AGENT_EVENT_TYPES,
  AgentEventSchema,
  deserialiseEvent,
  extractResponse,
  isTerminalEvent,
  serialiseEvent,
  serialiseToolResult,
  type AgentEvent,
} from '../../src/contract/event.ts';
import { TerminationReasons } from '../../src/contract/lifecycle.ts';
import { ToolResults, ToolResultSchema } from '../../src/contract/tool.ts';
import * as arb from '../../src/testing/arbitraries.ts';

describe('AgentEvent', () => {
  it('has exactly the variants of the book (事件 section)', () => {
    expect([...AGENT_EVENT_TYPES].sort()).toEqual(
      [
        'run_start',
        'run_finish',
        'text_delta',
        'reasoning_delta',
        'tool_call_start',
        'tool_call_delta',
        'tool_call_ready',
        'tool_call_done',
        'tool_call_stream_delta',
        'reasoning_encrypted_value',
        'messages_snapshot',
        'activity_snapshot',
        'activity_delta',
        'tool_call_resumed',
        'step_start',
        'step_end',
        'inference_complete',
        'state_snapshot',
        'state_delta',
        'error',
      ].sort(),
    );
  });

  it.each([
    [{ event_type: 'run_start', thread_id: 't1', run_id: 'r1' }, '{"event_type":"run_start","thread_id":"t1","run_id":"r1"}'],
    [
      { event_type: 'run_start', run_id: 'r1', parent_run_id: 'p', thread_id: 't1' },
      '{"event_type":"run_start","thread_id":"t1","run_id":"r1","parent_run_id":"p"}',
    ],
    [
      { event_type: 'run_finish', thread_id: 't1', run_id: 'r1', result: { response: 'hi', status: 'done' }, termination: { type: 'natural_end' } },
      '{"event_type":"run_finish","thread_id":"t1","run_id":"r1","result":{"response":"hi","status":"done"},"termination":{"type":"natural_end"}}',
    ],
    [
      { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: TerminationReasons.stopped('max_rounds_reached') },
      '{"event_type":"run_finish","thread_id":"t","run_id":"r","termination":{"type":"stopped","value":{"code":"max_rounds_reached"}}}',
    ],
    [{ event_type: 'step_end' }, '{"event_type":"step_end"}'],
    [{ event_type: 'inference_complete', model: 'm', duration_ms: 3 }, '{"event_type":"inference_complete","model":"m","duration_ms":3}'],
    [
      { event_type: 'inference_complete', duration_ms: 3, model: 'm', usage: { total_tokens: 5, prompt_tokens: 2 } },
      '{"event_type":"inference_complete","model":"m","usage":{"prompt_tokens":2,"total_tokens":5},"duration_ms":3}',
    ],
    [{ event_type: 'inference_complete', model: 'm', usage: {}, duration_ms: 0 }, '{"event_type":"inference_complete","model":"m","usage":{},"duration_ms":0}'],
    [{ event_type: 'error', message: 'boom' }, '{"event_type":"error","message":"boom"}'],
    [
      { event_type: 'activity_snapshot', message_id: 'c1', activity_type: 'progress', content: 'x' },
      '{"event_type":"activity_snapshot","message_id":"c1","activity_type":"progress","content":"x"}',
    ],
    [
      { event_type: 'tool_call_done', id: 'c1', message_id: 'm1', result: ToolResults.success('calc', 42), outcome: 'succeeded' },
      '{"event_type":"tool_call_done","id":"c1","message_id":"m1","result":{"tool_name":"calc","status":"success","data":42,"message":null},"outcome":"succeeded"}',
    ],
  ] as [AgentEvent, string][])('serialises %j canonically', (event, wire) => {
    expect(serialiseEvent(event)).toBe(wire);
    expect(deserialiseEvent(wire)).toStrictEqual(AgentEventSchema.parse(event));
  });

  it.each(AGENT_EVENT_TYPES)('the hand-written serialiser of %s equals the schema-ordered form', (type) => {
    fc.assert(
      fc.property(arb.agentEventOf(type), (event) => {
        expect(serialiseEvent(event)).toBe(JSON.stringify(AgentEventSchema.parse(event)));
        expect(deserialiseEvent(serialiseEvent(event))).toStrictEqual(structuredClone(event));
      }),
      { numRuns: 50 },
    );
  });

  it('writes fields in canonical order whatever order the object was built in', () => {
    const scrambled = {
      outcome: 'failed',
      result: { message: 'bad', data: null, status: 'error', tool_name: 't' },
      message_id: 'm',
      id: 'c',
      event_type: 'tool_call_done',
    } as unknown as AgentEvent;
    expect(serialiseEvent(scrambled)).toBe(
      '{"event_type":"tool_call_done","id":"c","message_id":"m","result":{"tool_name":"t","status":"error","data":null,"message":"bad"},"outcome":"failed"}',
    );
  });

  it('reads a missing step_start message_id as ""', () => {
    expect(deserialiseEvent('{"event_type":"step_start"}')).toEqual({ event_type: 'step_start', message_id: '' });
  });

  it('rejects unknown event types and wrong field types', () => {
    expect(() => deserialiseEvent('{"event_type":"nope"}')).toThrow();
    expect(() => deserialiseEvent('{"event_type":"text_delta","delta":3}')).toThrow();
    expect(() => serialiseEvent({ event_type: 'nope' } as unknown as AgentEvent)).toThrow(TypeError);
  });

  it('marks run_finish and error as terminal, nothing else', () => {
    const terminal = AGENT_EVENT_TYPES.filter((t) => isTerminalEvent(fc.sample(arb.agentEventOf(t), { numRuns: 1, seed: 1 })[0] as AgentEvent));
    expect(terminal.sort()).toEqual(['error', 'run_finish']);
  });

  it('extracts the response text from a run_finish result', () => {
    expect(extractResponse({ response: 'hi' })).toBe('hi');
    expect(extractResponse({ response: 3 })).toBe('');
    expect(extractResponse(undefined)).toBe('');
    expect(extractResponse(['response'])).toBe('');
  });
});

describe('ToolResult wire rules (book: 事件 → ToolResult)', () => {
  it('always writes message, null when absent', () => {
    expect(serialiseToolResult(ToolResults.success('t', { a: 1 }))).toBe('{"tool_name":"t","status":"success","data":{"a":1},"message":null}');
    expect(ToolResultSchema.parse({ tool_name: 't', status: 'success', data: 1 }).message).toBeNull();
  });

  it('omits empty metadata and an absent suspension', () => {
    const parsed = ToolResultSchema.parse({ tool_name: 't', status: 'success', data: 1, message: null, metadata: {} });
    expect('metadata' in parsed).toBe(false);
    expect(serialiseToolResult({ ...ToolResults.success('t', 1), metadata: {} })).toBe('{"tool_name":"t","status":"success","data":1,"message":null}');
    expect(serialiseToolResult({ ...ToolResults.success('t', 1), metadata: { k: 'v' } })).toBe(
      '{"tool_name":"t","status":"success","data":1,"message":null,"metadata":{"k":"v"}}',
    );
  });

  it('writes a suspension ticket with its omission rules', () => {
    const result = ToolResults.suspended('t', 'waiting', {
      suspension: { id: 's1', action: 'confirm', message: '', parameters: null },
      pending: { id: 'c1', name: 't', arguments: {} },
      resume_mode: 'replay_tool_call',
    });
    expect(serialiseToolResult(result)).toBe(
      '{"tool_name":"t","status":"pending","data":null,"message":"waiting","suspension":{"suspension":{"id":"s1","action":"confirm"},"pending":{"id":"c1","name":"t","arguments":{}},"resume_mode":"replay_tool_call"}}',
    );
    expect(JSON.stringify(ToolResultSchema.parse(result))).toBe(serialiseToolResult(result));
  });
});
