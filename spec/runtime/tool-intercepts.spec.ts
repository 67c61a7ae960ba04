import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import type { Message } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { ToolInterceptAction } from '../../src/runtime/builtin-plugins.ts';
import { INTERCEPT_PRECEDENCE, InterceptConflicts, type ToolIntercept } from '../../src/runtime/loop-keys.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';
import { refusedResult } from '../../src/runtime/tool-batch.ts';
import { echoTool, harness } from '../support/runtime.ts';
import { encodeAgUi } from '../../src/protocols/ag-ui/encoder.ts';
import { encodeAiSdk } from '../../src/protocols/ai-sdk-v6/encoder.ts';

const go: Message[] = [{ role: 'user', content: [{ type: 'text', text: 'go' }] }];
const call = { id: 'c1', name: 'echo', arguments: { text: 'hi' } };

/** A plugin that answers `intercept` for every call. */
const intercepting = (name: string, intercept: ToolIntercept): RuntimePlugin => ({
  name,
  register: (r) =>
    void r.registerPhaseHook('before_tool_execute', (ctx) =>
      StateCommand.empty().scheduleAction(ToolInterceptAction, { call_id: ctx.input.toolCall.id, intercept }),
    ),
});

const ticket = {
  suspension: { id: 's1', action: 'confirm', message: 'ok?' },
  pending: { id: 'c1', name: 'echo', arguments: { text: 'hi' } },
  resume_mode: 'replay_tool_call',
};
const INTERCEPTS: Record<ToolIntercept['type'], ToolIntercept> = {
  block: { type: 'block', reason: 'blocked here' },
  refuse: { type: 'refuse', reason: 'refused here' },
  suspend: { type: 'suspend', ticket },
  set_result: { type: 'set_result', result: ToolResults.success('echo', { canned: true }) },
};

async function runWith(plugins: readonly RuntimePlugin[]) {
  const h = harness([{ tool_calls: [call] }, { text: 'after' }], { plugins, tools: [echoTool] });
  const r = await h.runtime.run({ messages: go }, h.sink, { waitForDecisions: false });
  if (!r.ok) throw new Error(JSON.stringify(r.error));
  const done = h.sink.events.find((e): e is Extract<AgentEvent, { event_type: 'tool_call_done' }> => e.event_type === 'tool_call_done');
  return { h, result: r.value, done };
}

describe('a refusal: { type: "refuse", reason }', () => {
  it('the call does not run, its result is an error with the reason the model reads, and the run goes on', async () => {
    const { h, result, done } = await runWith([intercepting('gate', INTERCEPTS.refuse)]);
    expect(result.termination).toEqual({ type: 'natural_end' });
    expect(result.response).toBe('after');
    expect(done).toMatchObject({
      id: 'c1',
      outcome: 'failed',
      result: { tool_name: 'echo', status: 'error', data: null, message: 'refused here', metadata: { rejected: true } },
    });
    expect(h.llm.requests[1]?.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'refused here' }] });
    expect(h.sink.events.some((e) => e.event_type === 'tool_call_done' && e.result.status === 'success')).toBe(false);
  });

  it('is recorded, sent and encoded as the rejected set_result that stood for it before: the same events, the same AG-UI and AI SDK output', async () => {
    const refused = await runWith([intercepting('gate', INTERCEPTS.refuse)]);
    const legacy = await runWith([intercepting('gate', { type: 'set_result', result: refusedResult('echo', 'refused here') })]);
    expect(refused.h.sink.events).toEqual(legacy.h.sink.events);
    expect(encodeAgUi(refused.h.sink.events)).toEqual(encodeAgUi(legacy.h.sink.events));
    expect(encodeAiSdk(refused.h.sink.events)).toEqual(encodeAiSdk(legacy.h.sink.events));
    // What a client sees of it: an output error with the reason (AI SDK), the reason as the call's result (AG-UI).
    expect(encodeAiSdk(refused.h.sink.events)).toContainEqual({ type: 'tool-output-error', toolCallId: 'c1', errorText: 'refused here' });
    expect(encodeAgUi(refused.h.sink.events)).toContainEqual({
      type: 'TOOL_CALL_RESULT',
      messageId: 'result:c1',
      toolCallId: 'c1',
      content: 'refused here',
      role: 'tool',
    });
  });
});

describe('INTERCEPT_PRECEDENCE: block, refuse, suspend, set_result', () => {
  it('is that order', () => {
    expect(INTERCEPT_PRECEDENCE).toEqual(['block', 'refuse', 'suspend', 'set_result']);
  });

  it('of any two intercepts for one call, the one earlier in the list wins, whichever plugin answered first', async () => {
    const outcomes: Record<ToolIntercept['type'], string> = { block: 'blocked', refuse: 'refused', suspend: 'suspended', set_result: 'set' };
    const seen = (r: Awaited<ReturnType<typeof runWith>>): string => {
      if (r.result.termination.type === 'blocked') return 'blocked';
      if (r.done?.outcome === 'suspended') return 'suspended';
      if (r.done?.result.metadata?.['rejected'] === true) return 'refused';
      return r.done?.result.status === 'success' && JSON.stringify(r.done.result.data) === '{"canned":true}' ? 'set' : 'ran';
    };
    for (const [i, strong] of INTERCEPT_PRECEDENCE.entries()) {
      for (const weak of INTERCEPT_PRECEDENCE.slice(i + 1)) {
        for (const order of [
          [strong, weak],
          [weak, strong],
        ]) {
          const r = await runWith(order.map((type, n) => intercepting(`p${n}`, INTERCEPTS[type])));
          expect([order.join(' then '), seen(r)]).toEqual([order.join(' then '), outcomes[strong]]);
        }
      }
    }
  });

  it('a set_result whose result is a rejected error ranks as a refusal: it beats a question', async () => {
    const r = await runWith([intercepting('ask', INTERCEPTS.suspend), intercepting('deny', { type: 'set_result', result: refusedResult('echo', 'no') })]);
    expect(r.done).toMatchObject({ outcome: 'failed', result: { message: 'no', metadata: { rejected: true } } });
    expect(r.result.termination).toEqual({ type: 'natural_end' });
  });

  it('two refusals: the first wins, the second is recorded as a conflict', async () => {
    const r = await runWith([intercepting('first', { type: 'refuse', reason: 'first' }), intercepting('second', { type: 'refuse', reason: 'second' })]);
    expect(r.done?.result.message).toBe('first');
    const last = r.h.sink.events.filter((e) => e.event_type === 'state_snapshot').at(-1);
    const extensions = (last?.snapshot as { extensions?: Record<string, unknown> } | undefined)?.extensions;
    expect(extensions?.[InterceptConflicts.key]).toEqual([{ call_id: 'c1', intercept: { type: 'refuse', reason: 'second' } }]);
  });
});
