import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { encodeAcp, frameAcp, initialAcpState, stopReasonOf, transcodeAcp } from '../../src/protocols/acp/encoder.ts';
import { judgeAcp, type AcpVerdict } from '../../src/protocols/acp/judge.ts';
import { runResumedOf, runResumedText } from '../../src/protocols/resumed.ts';
import { runResumed, takenUp } from '../resumed.ts';
import { eventsOf, goldenOf, runEvents, streams } from '../support.ts';

/** What the official client received must be the turn: its text, thoughts, tool calls and ending. */
function expectSameContent(events: readonly AgentEvent[], v: AcpVerdict): void {
  // The turn: every run up to the first terminal that is not a suspension.
  const end = events.findIndex((e) => e.event_type === 'error' || (e.event_type === 'run_finish' && e.termination.type !== 'suspended'));
  const turn = end < 0 ? events : events.slice(0, end + 1);
  const chunks = (kind: string): string => v.updates.map((u) => (u.sessionUpdate === kind ? ((u['content'] as { text?: string }).text ?? '') : '')).join('');
  expect(chunks('agent_message_chunk')).toBe(turn.map((e) => (e.event_type === 'text_delta' ? e.delta : '')).join(''));
  // The thoughts: the reasoning, and where a run taken up again went on, each in a paragraph of its own.
  const thought = (e: AgentEvent): string => {
    const r = runResumedOf(e);
    return e.event_type === 'reasoning_delta' ? e.delta : r !== undefined ? `${runResumedText(r)}\n\n` : '';
  };
  expect(chunks('agent_thought_chunk')).toBe(turn.map(thought).join(''));
  // Every tool call is announced once, then ends completed / failed, or asks for permission.
  const announced = v.updates.filter((u) => u.sessionUpdate === 'tool_call').map((u) => u['toolCallId']);
  expect(new Set(announced).size).toBe(announced.length);
  const final = new Map<string, string>();
  for (const u of v.updates) if (u.sessionUpdate === 'tool_call_update' && typeof u['status'] === 'string') final.set(u['toolCallId'] as string, u['status']);
  for (const e of turn) {
    if (e.event_type === 'tool_call_start' || e.event_type === 'tool_call_ready') expect(announced).toContain(e.id);
    if (e.event_type === 'tool_call_done' && e.outcome !== 'suspended') expect(final.get(e.id)).toBe(e.outcome === 'succeeded' ? 'completed' : 'failed');
  }
  expect(v.permissions).toBe(turn.filter((e) => e.event_type === 'tool_call_done' && e.outcome === 'suspended').length);
  const last = turn.at(-1);
  if (last?.event_type === 'error') expect(v.error).toBe(last.message);
  else if (last?.event_type === 'run_finish' && last.termination.type === 'error') expect(v.error).toBe(last.termination.value);
  else if (last?.event_type === 'run_finish') expect(v.stopReason).toBe(stopReasonOf(last.termination));
  else expect(v.stopReason ?? v.error).toBeDefined();
}

describe('ACP session/prompt encoder, judged by the ACP v1 JSON Schema and @agentclientprotocol/sdk', () => {
  it.each(streams)('%s matches its golden messages byte for byte', (file) => {
    expect(frameAcp(encodeAcp(eventsOf(file)))).toBe(goldenOf('acp', file));
  });

  it.each(streams)('%s passes the judge and the official client receives the turn', async (file) => {
    const events = eventsOf(file);
    const v = await judgeAcp(frameAcp(encodeAcp(events)));
    expect(v.problems).toEqual([]);
    expectSameContent(events, v);
  });

  it('a tool’s progress reaches the client in the call’s title while it runs, set back when it ends (book: 上报 Tool 进度)', async () => {
    const v = await judgeAcp(frameAcp(encodeAcp(eventsOf('run-tool-activity-and-stream-output.events.jsonl'))));
    expect(v.problems).toEqual([]);
    const titles = v.updates.filter((u) => u.sessionUpdate === 'tool_call_update' && u['title'] !== undefined).map((u) => [u['status'], u['title']]);
    expect(titles).toEqual([
      ['in_progress', 'report: step 1 (50%)'],
      ['in_progress', 'report: step 2 (100%)'],
      ['completed', 'report'],
    ]);
  });

  it('a run taken up again after its process stopped: the client hears where it went on as a thought', async () => {
    const v = await judgeAcp(frameAcp(encodeAcp(takenUp(eventsOf('run-one-tool.events.jsonl'), { from: 'inference', step: 3 }))));
    expect(v.problems).toEqual([]);
    expect(v.updates[0]).toEqual({
      sessionUpdate: 'agent_thought_chunk',
      content: { type: 'text', text: 'The run was taken up again after its process stopped: at the start of step 3, asking the model again.\n\n' },
    });
  });

  it('maps terminations to stop reasons', () => {
    expect(stopReasonOf({ type: 'natural_end' })).toBe('end_turn');
    expect(stopReasonOf({ type: 'cancelled' })).toBe('cancelled');
    expect(stopReasonOf({ type: 'blocked', value: 'denied' })).toBe('refusal');
    expect(stopReasonOf({ type: 'stopped', value: { code: 'max_rounds' } })).toBe('max_turn_requests');
    expect(stopReasonOf({ type: 'stopped', value: { code: 'token_budget' } })).toBe('max_tokens');
    expect(stopReasonOf({ type: 'stopped', value: { code: 'timeout' } })).toBe('end_turn');
    expect(stopReasonOf({ type: 'error', value: 'x' })).toBeUndefined();
  });

  it('a suspension asks for permission and the resumed run continues the same turn', () => {
    const out = encodeAcp(eventsOf('run-gate-ask-resumed.events.jsonl'));
    expect(out.filter((m) => m.kind === 'permission')).toHaveLength(1);
    expect(out.filter((m) => m.kind === 'response' || m.kind === 'error')).toEqual([{ kind: 'response', result: { stopReason: 'end_turn' } }]);
    const permission = out.find((m) => m.kind === 'permission');
    expect(permission?.kind === 'permission' && permission.params['options']).toEqual([
      { optionId: 'approve', name: 'Allow', kind: 'allow_once' },
      { optionId: 'deny', name: 'Reject', kind: 'reject_once' },
    ]);
  });

  it('nothing after the turn ends, not even a new run; a run cut short is an error response', () => {
    let s = initialAcpState();
    [s] = transcodeAcp(s, { event_type: 'run_start', thread_id: 't', run_id: 'r' });
    [s] = transcodeAcp(s, { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'cancelled' } });
    expect(transcodeAcp(s, { event_type: 'run_start', thread_id: 't', run_id: 'r2' })[1]).toEqual([]);
    expect(transcodeAcp(s, { event_type: 'text_delta', delta: 'late' })[1]).toEqual([]);
    expect(encodeAcp(eventsOf('run-one-tool.events.jsonl').slice(0, 3)).at(-1)).toEqual({
      kind: 'error',
      error: { code: -32603, message: 'the event stream ended before the run finished' },
    });
  });

  const update = (u: unknown): string => JSON.stringify({ jsonrpc: '2.0', method: 'session/update', params: { sessionId: 's', update: u } });
  const respond = (result: unknown, id: unknown = 1): string => JSON.stringify({ jsonrpc: '2.0', id, result });
  const permission = (kind: string): string =>
    JSON.stringify({
      jsonrpc: '2.0',
      id: 'p',
      method: 'session/request_permission',
      params: { sessionId: 's', toolCall: { toolCallId: 'c' }, options: [{ optionId: 'o', name: 'O', kind }] },
    });
  const end = respond({ stopReason: 'end_turn' });
  it.each([
    ['a bad stop reason', [respond({ stopReason: 'done' })]],
    ['an unknown update kind', [update({ sessionUpdate: 'agent_message_delta', content: { type: 'text', text: 'x' } }), end]],
    ['bad content', [update({ sessionUpdate: 'agent_message_chunk', content: { type: 'txt', text: 'x' } }), end]],
    ['a tool call without an id', [update({ sessionUpdate: 'tool_call', title: 'x' }), end]],
    ['a bad permission kind', [permission('allow_sometimes'), end]],
    ['an update after the response', [end, update({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'x' } })]],
    ['two responses', [end, end]],
    ['no response', [update({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'x' } })]],
    ['a response to another request', [respond({ stopReason: 'end_turn' }, 2)]],
  ])('the judge rejects %s (it is live)', async (_name, lines) => {
    const v = await judgeAcp(`${lines.join('\n')}\n`);
    expect(v.problems.length).toBeGreaterThan(0);
  });

  it('property: the turn of any run, taken up again or not, passes the judge and the client receives it', async () => {
    await fc.assert(
      fc.asyncProperty(runEvents, fc.option(runResumed, { nil: undefined }), async (run, at) => {
        const events = at === undefined ? await run : takenUp(await run, at);
        const v = await judgeAcp(frameAcp(encodeAcp(events)));
        expect(v.problems).toEqual([]);
        expectSameContent(events, v);
      }),
      { numRuns: 50 },
    );
  });
});
