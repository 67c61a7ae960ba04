import { describe, expect, it } from 'vitest';
import { ToolCallResumeSchema, ToolDescriptors, ToolResults, outcomeOf, SuspendTicketSchema } from '../../src/contract/tool.ts';

describe('ToolResult constructors', () => {
  it('builds success, error and coded error results', () => {
    expect(ToolResults.success('calc', 42)).toEqual({ tool_name: 'calc', status: 'success', data: 42, message: null });
    expect(ToolResults.successWithMessage('calc', 1, 'ok').message).toBe('ok');
    expect(ToolResults.error('calc', 'bad')).toEqual({ tool_name: 'calc', status: 'error', data: null, message: 'bad' });
    expect(ToolResults.errorWithCode('calc', 'E1', 'bad')).toEqual({
      tool_name: 'calc',
      status: 'error',
      data: { error: { code: 'E1', message: 'bad' } },
      message: '[E1] bad',
    });
  });

  it('derives the outcome from the status', () => {
    expect(outcomeOf(ToolResults.success('t', null))).toBe('succeeded');
    expect(outcomeOf(ToolResults.error('t', 'x'))).toBe('failed');
    const ticket = SuspendTicketSchema.parse({ suspension: { id: 's', action: 'a' }, pending: { id: 'c', name: 't', arguments: {} } });
    expect(ticket.resume_mode).toBe('replay_tool_call');
    expect(outcomeOf(ToolResults.suspended('t', 'm', ticket))).toBe('suspended');
  });
});

describe('ToolDescriptor', () => {
  it('starts with an empty object schema and takes parameters and a category', () => {
    const d = ToolDescriptors.withCategory(ToolDescriptors.withParameters(ToolDescriptors.new('g', 'Greet', 'Greets'), { type: 'object' }), 'social');
    expect(d).toEqual({ id: 'g', name: 'Greet', description: 'Greets', parameters: { type: 'object' }, category: 'social' });
    expect(ToolDescriptors.new('g', 'n', 'd').parameters).toEqual({ type: 'object', properties: {} });
  });
});

describe('ToolCallResume', () => {
  it('defaults decision_id to "" and omits a null result', () => {
    const parsed = ToolCallResumeSchema.parse({ action: 'resume', result: null, updated_at: 5 });
    expect(parsed).toEqual({ decision_id: '', action: 'resume', updated_at: 5 });
    expect('result' in parsed).toBe(false);
  });

  it('rejects an unknown action', () => {
    expect(ToolCallResumeSchema.safeParse({ action: 'maybe', updated_at: 1 }).success).toBe(false);
  });
});
