import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serialiseEvent, type AgentEvent } from '../../src/contract/event.ts';
import type { ToolCall } from '../../src/contract/message.ts';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { ToolInterceptAction } from '../../src/runtime/builtin-plugins.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { approvalTool, echoTool, failTool, harness, throwTool, types, waitFor } from '../support/runtime.ts';

const call = (id: string, name: string, args: Record<string, unknown> = {}) => ({ id, name, arguments: args as never });

const dangerTool = defineTool({
  id: 'danger',
  description: 'blocked by the gate',
  args: z.object({}).loose(),
  execute: () => ToolResults.success('danger', 'ran'),
});
const askTool = defineTool({ id: 'ask', description: 'suspended by the gate', args: z.object({}).loose(), execute: () => ToolResults.success('ask', 'ran') });

/** A gate: blocks `danger`, suspends `ask` with a ticket (book: 工具拦截优先级). */
const gatePlugin: RuntimePlugin = {
  name: 'gate',
  register: (r) =>
    r.registerPhaseHook('before_tool_execute', (ctx) => {
      const tc = ctx.input['toolCall'] as ToolCall;
      if (tc.name === 'danger')
        return StateCommand.empty().scheduleAction(ToolInterceptAction, { call_id: tc.id, intercept: { type: 'block', reason: 'danger is denied' } });
      if (tc.name === 'ask')
        return StateCommand.empty().scheduleAction(ToolInterceptAction, {
          call_id: tc.id,
          intercept: {
            type: 'suspend',
            ticket: {
              suspension: { id: `perm-${tc.id}`, action: 'tool:ask' },
              pending: { id: tc.id, name: 'ask', arguments: tc.arguments },
              resume_mode: 'replay_tool_call',
            },
          },
        });
      return StateCommand.empty();
    }),
};

const tools = [echoTool, failTool, throwTool, approvalTool, dangerTool, askTool];

async function run(
  script: Parameters<typeof harness>[0],
  opts: { plugins?: RuntimePlugin[]; abortOn?: (e: AgentEvent) => boolean; abortFirst?: boolean; wait?: boolean } = {},
) {
  const h = harness(script, { tools, ...(opts.plugins !== undefined ? { plugins: opts.plugins } : {}) });
  const controller = new AbortController();
  if (opts.abortFirst === true) controller.abort();
  const sink = {
    emit: (e: AgentEvent) => {
      h.sink.emit(e);
      if (opts.abortOn?.(e) === true) controller.abort();
    },
  };
  const r = await h.runtime.run({ messages: [Messages.user('go')] }, sink, { signal: controller.signal, waitForDecisions: opts.wait ?? false });
  if (!r.ok) throw new Error(JSON.stringify(r.error));
  expect(checkRunInvariants(h.sink.events)).toEqual([]);
  return { h, result: r.value, events: h.sink.events };
}

const done = (events: readonly AgentEvent[]) =>
  events.filter((e) => e.event_type === 'tool_call_done') as Extract<AgentEvent, { event_type: 'tool_call_done' }>[];
const finish = (events: readonly AgentEvent[]) => events.filter((e) => e.event_type === 'run_finish') as Extract<AgentEvent, { event_type: 'run_finish' }>[];

describe('exact event sequences (core-spec §3.10, with the publication barrier of seed 003)', () => {
  it('plain answer: bytes pinned', async () => {
    const { events, result } = await run([{ text: 'Hello there.' }]);
    expect(events.map(serialiseEvent)).toEqual([
      '{"event_type":"run_start","thread_id":"thread-1","run_id":"run-1"}',
      '{"event_type":"step_start","message_id":"message-1"}',
      '{"event_type":"text_delta","delta":"Hello there."}',
      '{"event_type":"inference_complete","model":"scripted-model","duration_ms":0}',
      expect.stringMatching(/^\{"event_type":"state_snapshot","snapshot":\{"revision":\d+,"extensions":\{/),
      '{"event_type":"step_end"}',
      expect.stringMatching(/^\{"event_type":"state_snapshot"/),
      '{"event_type":"run_finish","thread_id":"thread-1","run_id":"run-1","result":{"response":"Hello there.","status":"done","status_reason":"natural"},"termination":{"type":"natural_end"}}',
    ]);
    expect(result).toMatchObject({ response: 'Hello there.', steps: 1, termination: { type: 'natural_end' } });
  });

  it('one tool call, then an answer', async () => {
    const { events, result } = await run([{ tool_calls: [call('c1', 'echo', { text: 'x' })] }, { text: 'done' }]);
    expect(types(events)).toEqual([
      'run_start',
      'step_start',
      'tool_call_start',
      'tool_call_delta',
      'tool_call_ready',
      'inference_complete',
      'tool_call_done',
      'state_snapshot',
      'step_end',
      'step_start',
      'text_delta',
      'inference_complete',
      'state_snapshot',
      'step_end',
      'state_snapshot',
      'run_finish',
    ]);
    expect(done(events)[0]).toMatchObject({ id: 'c1', outcome: 'succeeded', result: { tool_name: 'echo', data: { echoed: 'x' } } });
    expect(result.steps).toBe(2);
  });

  it('two tool calls in one step: starts, deltas, readies in order, then done events in model order', async () => {
    const { events } = await run([{ tool_calls: [call('c1', 'echo', { text: 'a' }), call('c2', 'echo', { text: 'b' })] }, { text: 'ok' }]);
    const step1 = events.slice(0, events.findIndex((e) => e.event_type === 'step_end') + 1);
    expect(step1.map((e) => `${e.event_type}${'id' in e ? `:${e.id}` : ''}`)).toEqual([
      'run_start',
      'step_start',
      'tool_call_start:c1',
      'tool_call_delta:c1',
      'tool_call_start:c2',
      'tool_call_delta:c2',
      'tool_call_ready:c1',
      'tool_call_ready:c2',
      'inference_complete',
      'tool_call_done:c1',
      'tool_call_done:c2',
      'state_snapshot',
      'step_end',
    ]);
  });

  it('a tool returning ToolResult.error: failed outcome, its message goes back to the model, the run goes on', async () => {
    const { events, h, result } = await run([{ tool_calls: [call('c1', 'fail')] }, { text: 'recovered' }]);
    expect(done(events)[0]).toMatchObject({ outcome: 'failed', result: { status: 'error', message: 'it failed' } });
    expect(h.llm.requests[1]?.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'c1', content: [{ text: 'it failed' }] });
    expect(result.termination).toEqual({ type: 'natural_end' });
  });

  it('a tool throwing a ToolError: the call fails with the error text, the run goes on', async () => {
    const { events, result } = await run([{ tool_calls: [call('c1', 'throw')] }, { text: 'recovered' }]);
    expect(done(events)[0]).toMatchObject({ outcome: 'failed', result: { status: 'error', message: 'Execution failed: boom' } });
    expect(result.termination).toEqual({ type: 'natural_end' });
  });

  it('invalid arguments and an unknown tool fail the call, naming the problem', async () => {
    const { events } = await run([{ tool_calls: [call('c1', 'echo', { text: 3 }), call('c2', 'nope')] }, { text: 'ok' }]);
    expect(done(events).map((d) => d.result.message)).toEqual([
      'Invalid arguments: text: Invalid input: expected string, received number',
      "tool 'nope' not found",
    ]);
  });

  it('suspension: tool_call_done{suspended}, step_end, then exactly one run_finish{suspended}', async () => {
    const { events, result } = await run([{ tool_calls: [call('c1', 'approve', { what: 'deploy' })] }]);
    expect(types(events)).toEqual([
      'run_start',
      'step_start',
      'tool_call_start',
      'tool_call_delta',
      'tool_call_ready',
      'inference_complete',
      'tool_call_done',
      'state_snapshot',
      'step_end',
      'state_snapshot',
      'run_finish',
    ]);
    expect(done(events)[0]).toMatchObject({ outcome: 'suspended', result: { status: 'pending', suspension: { suspension: { id: 's-c1' } } } });
    expect(finish(events)).toEqual([{ event_type: 'run_finish', thread_id: 'thread-1', run_id: 'run-1', termination: { type: 'suspended' } }]);
    expect(result.termination).toEqual({ type: 'suspended' });
  });

  it('resume: a decision reopens the same run: run_start, tool_call_resumed, next step, run_finish', async () => {
    const h = harness([{ tool_calls: [call('c1', 'approve', { what: 'deploy' })] }, { text: 'deployed' }], { tools });
    const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error('start');
    await waitFor(() => h.runtime.isWaiting(started.value.threadId));
    expect(started.value.decide([{ targetId: 's-c1', decision: { decision_id: 'd1', action: 'resume', result: 'yes', updated_at: 1 } }])).toEqual({
      ok: true,
      value: undefined,
    });
    const result = await started.value.done;
    const events = h.sink.events;
    expect(checkRunInvariants(events)).toEqual([]);
    const after = events.slice(events.findIndex((e) => e.event_type === 'run_finish') + 1);
    expect(types(after)).toEqual([
      'run_start',
      'tool_call_resumed',
      'step_start',
      'text_delta',
      'inference_complete',
      'state_snapshot',
      'step_end',
      'state_snapshot',
      'run_finish',
    ]);
    expect(after[0]).toEqual({ event_type: 'run_start', thread_id: 'thread-1', run_id: 'run-1' });
    expect(after[1]).toEqual({ event_type: 'tool_call_resumed', target_id: 'c1', result: { approved: 'deploy', decision: 'yes' } });
    expect(result).toMatchObject({ runId: 'run-1', response: 'deployed', termination: { type: 'natural_end' } });
  });

  it('cancellation mid-stream: the partial text is streamed, the step ends, run_finish{cancelled}', async () => {
    const { events, result } = await run([{ text: ['Hel', 'lo', ' world'] }], { abortOn: (e) => e.event_type === 'text_delta' });
    expect(types(events)).toEqual([
      'run_start',
      'step_start',
      'text_delta',
      'inference_complete',
      'state_snapshot',
      'step_end',
      'state_snapshot',
      'run_finish',
    ]);
    expect(finish(events)[0]?.termination).toEqual({ type: 'cancelled' });
    expect(result.response).toBe('');
  });

  it('cancellation mid-stream after a tool call started closes that call as interrupted', async () => {
    const { events } = await run([{ tool_calls: [call('c1', 'echo', { text: 'x' })] }], { abortOn: (e) => e.event_type === 'tool_call_start' });
    expect(done(events)).toEqual([
      expect.objectContaining({ id: 'c1', outcome: 'failed', result: expect.objectContaining({ message: '[Tool execution was interrupted]' }) }),
    ]);
  });

  it('cancellation before the first step: run_start then run_finish{cancelled} (0.6 emits nothing)', async () => {
    const { events, result } = await run([{ text: 'never' }], { abortFirst: true });
    expect(types(events)).toEqual(['run_start', 'state_snapshot', 'run_finish']);
    expect(result).toMatchObject({ steps: 0, termination: { type: 'cancelled' } });
  });

  it('a blocked call: rejected, the rest interrupted, run_finish{blocked}', async () => {
    const { events, result, h } = await run([{ tool_calls: [call('c1', 'echo', { text: 'a' }), call('c2', 'danger'), call('c3', 'echo', { text: 'c' })] }], {
      plugins: [gatePlugin],
    });
    expect(done(events).map((d) => [d.id, d.outcome, d.result.message])).toEqual([
      ['c1', 'succeeded', null],
      ['c2', 'failed', 'danger is denied'],
      ['c3', 'failed', '[Tool execution was interrupted]'],
    ]);
    expect(done(events)[1]?.result.metadata).toEqual({ rejected: true });
    expect(result.termination).toEqual({ type: 'blocked', value: 'danger is denied' });
    expect(h.llm.requests).toHaveLength(1);
  });

  it('a gate suspension parks the call with the gate ticket and keeps gating the others', async () => {
    const { events, result } = await run([{ tool_calls: [call('c1', 'ask'), call('c2', 'echo', { text: 'b' })] }], { plugins: [gatePlugin] });
    expect(done(events).map((d) => [d.id, d.outcome])).toEqual([
      ['c1', 'suspended'],
      ['c2', 'succeeded'],
    ]);
    expect(done(events)[0]?.result).toMatchObject({ message: "Tool 'ask' suspended: awaiting approval", suspension: { suspension: { id: 'perm-c1' } } });
    expect(result.termination).toEqual({ type: 'suspended' });
  });
});
