import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults, type ToolCallResumeMode } from '../../src/contract/tool.ts';
import { ToolCallStates } from '../../src/runtime/loop-keys.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { harness, types, waitFor } from '../support/runtime.ts';

/** A tool that suspends with the given resume mode and records how it was run. */
function modal(mode: ToolCallResumeMode, runs: unknown[]) {
  return defineTool({
    id: `modal_${mode}`,
    description: mode,
    args: z.object({ n: z.number() }).loose(),
    execute: (args, ctx) => {
      runs.push({ args, resume: ctx.resume?.mode ?? null });
      if (ctx.resume !== undefined) return ToolResults.success(`modal_${mode}`, { ranWith: args as never });
      return ToolResults.suspended(`modal_${mode}`, 'waiting', {
        suspension: { id: `s-${ctx.callId}`, action: 'confirm' },
        pending: { id: ctx.callId, name: `modal_${mode}`, arguments: args as never },
        resume_mode: mode,
      });
    },
  });
}

async function suspendAndDecide(mode: ToolCallResumeMode, decision: { action: 'resume' | 'cancel'; result?: unknown }) {
  const runs: unknown[] = [];
  const tool = modal(mode, runs);
  const h = harness([{ tool_calls: [{ id: 'c1', name: tool.descriptor.id, arguments: { n: 1 } }] }, { text: 'after' }], { tools: [tool] });
  const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
  if (!started.ok) throw new Error('start');
  await waitFor(() => h.runtime.isWaiting(started.value.threadId));
  const sent = h.runtime.decide(started.value.threadId, [
    {
      targetId: 'c1',
      decision: { decision_id: 'd', action: decision.action, ...(decision.result !== undefined ? { result: decision.result as never } : {}), updated_at: 0 },
    },
  ]);
  expect(sent.ok).toBe(true);
  const result = await started.value.done;
  expect(checkRunInvariants(h.sink.events)).toEqual([]);
  const resumed = h.sink.events.find((e) => e.event_type === 'tool_call_resumed') as Extract<AgentEvent, { event_type: 'tool_call_resumed' }>;
  const toolMessage = h.llm.requests[1]?.messages.find((m) => m.role === 'tool');
  return { runs, result, resumed, toolMessage, h, messages: started.value.messages() };
}

describe('RunHandle.messages', () => {
  it("is the thread as the run ends it: what the store keeps, the input, the decision's result and the answer included", async () => {
    const { h, result, messages } = await suspendAndDecide('use_decision_as_tool_result', { action: 'resume', result: { answer: 42 } });
    const thread = await h.store.loadThread(result.threadId);
    expect(thread?.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(messages).toEqual(thread?.messages);
  });
});

describe('resume modes (book: HITL 与 Mailbox → ToolCallResumeMode)', () => {
  it('ReplayToolCall re-runs the tool with its original arguments', async () => {
    const { runs, resumed } = await suspendAndDecide('replay_tool_call', { action: 'resume', result: { n: 99 } });
    expect(runs).toEqual([
      { args: { n: 1 }, resume: null },
      { args: { n: 1 }, resume: 'replay_tool_call' },
    ]);
    expect(resumed.result).toEqual({ ranWith: { n: 1 } });
  });

  it('UseDecisionAsToolResult takes the decision as the result without running the tool again', async () => {
    const { runs, resumed, toolMessage } = await suspendAndDecide('use_decision_as_tool_result', { action: 'resume', result: { answer: 42 } });
    expect(runs).toHaveLength(1);
    expect(resumed.result).toEqual({ answer: 42 });
    expect(toolMessage?.content).toEqual([{ type: 'text', text: '{"answer":42}' }]);
  });

  it('PassDecisionToTool re-runs the tool with the decision as its arguments', async () => {
    const { runs, resumed } = await suspendAndDecide('pass_decision_to_tool', { action: 'resume', result: { n: 7 } });
    expect(runs.at(-1)).toEqual({ args: { n: 7 }, resume: 'pass_decision_to_tool' });
    expect(resumed.result).toEqual({ ranWith: { n: 7 } });
  });

  it('a cancel decision cancels the call; the model is told so', async () => {
    const { runs, resumed, toolMessage, h, result } = await suspendAndDecide('replay_tool_call', { action: 'cancel' });
    expect(runs).toHaveLength(1);
    expect(resumed).toEqual({ event_type: 'tool_call_resumed', target_id: 'c1', result: { approved: false } });
    expect(toolMessage?.content).toEqual([{ type: 'text', text: 'Tool call cancelled: cancelled by decision' }]);
    expect(result.termination).toEqual({ type: 'natural_end' });
    const states = h.store.checkpoints.at(-1)?.threadState.extensions['__runtime.tool_call_states'] as Record<
      string,
      { status: string; resume_input?: unknown }
    >;
    expect(states['c1']).toMatchObject({ status: 'cancelled', resume_input: { action: 'cancel' } });
  });
});

describe('decisions', () => {
  const twoApprovals = [
    {
      tool_calls: [
        { id: 'a', name: 'approve', arguments: { what: 'x' } },
        { id: 'b', name: 'approve', arguments: { what: 'y' } },
      ],
    },
    { text: 'fin' },
  ];

  it('Immediate (default) replays each decision at once and re-suspends while others wait', async () => {
    const h = harness(twoApprovals, { spec: { sections: { tool_execution: { mode: 'parallel_streaming' } } } });
    const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error('start');
    const decide = (id: string) => started.value.decide([{ targetId: id, decision: { decision_id: id, action: 'resume', updated_at: 0 } }]);
    await waitFor(() => h.runtime.isWaiting('thread-1'));
    expect(decide('a').ok).toBe(true);
    await waitFor(() => h.sink.events.filter((e) => e.event_type === 'run_finish').length === 2 && h.runtime.isWaiting('thread-1'));
    expect(decide('b').ok).toBe(true);
    const result = await started.value.done;
    const seq = types(h.sink.events).filter((t) => ['run_start', 'run_finish', 'tool_call_resumed'].includes(t));
    expect(seq).toEqual(['run_start', 'run_finish', 'run_start', 'tool_call_resumed', 'run_finish', 'run_start', 'tool_call_resumed', 'run_finish']);
    expect(checkRunInvariants(h.sink.events)).toEqual([]);
    expect(result.response).toBe('fin');
  });

  it('BatchAllSuspended waits until every suspended call has a decision, then replays them together', async () => {
    const h = harness(twoApprovals, { spec: { sections: { tool_execution: { mode: 'parallel_batch_approval' } } } });
    const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error('start');
    await waitFor(() => h.runtime.isWaiting('thread-1'));
    started.value.decide([{ targetId: 'a', decision: { decision_id: 'a', action: 'resume', updated_at: 0 } }]);
    await new Promise((r) => setTimeout(r, 5));
    expect(types(h.sink.events).filter((t) => t === 'run_start')).toHaveLength(1);
    started.value.decide([{ targetId: 'b', decision: { decision_id: 'b', action: 'resume', updated_at: 0 } }]);
    await started.value.done;
    const seq = types(h.sink.events).filter((t) => ['run_start', 'run_finish', 'tool_call_resumed'].includes(t));
    expect(seq).toEqual(['run_start', 'run_finish', 'run_start', 'tool_call_resumed', 'tool_call_resumed', 'run_finish']);
  });

  it('Sequential stops at the first call that suspends itself: the rest are interrupted', async () => {
    const h = harness(twoApprovals);
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink, { waitForDecisions: false });
    expect(r.ok && r.value.termination).toEqual({ type: 'suspended' });
    const dones = h.sink.events.filter((e) => e.event_type === 'tool_call_done');
    expect(dones.map((d) => (d.event_type === 'tool_call_done' ? [d.id, d.outcome] : []))).toEqual([
      ['a', 'suspended'],
      ['b', 'failed'],
    ]);
  });

  it('rejects a decision for an unknown call, and decisions when nothing waits', async () => {
    const h = harness(twoApprovals);
    expect(h.runtime.decide('thread-1', []).ok).toBe(false);
    const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error('start');
    expect(started.value.decide([{ targetId: 'a', decision: { decision_id: '', action: 'resume', updated_at: 0 } }]).ok).toBe(false);
    await waitFor(() => h.runtime.isWaiting('thread-1'));
    expect(started.value.decide([{ targetId: 'zzz', decision: { decision_id: '', action: 'resume', updated_at: 0 } }])).toMatchObject({
      ok: false,
      error: { code: 'resolve_failed' },
    });
    started.value.cancel();
    const result = await started.value.done;
    expect(result.termination).toEqual({ type: 'cancelled' });
  });

  it('cancelling a parked run emits nothing more and cancels its suspended calls', async () => {
    const h = harness(twoApprovals);
    const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error('start');
    await waitFor(() => h.runtime.isWaiting('thread-1'));
    const before = h.sink.events.length;
    expect(h.runtime.cancel('thread-1')).toBe(true);
    const result = await started.value.done;
    expect(h.sink.events.length).toBe(before);
    expect(result.termination).toEqual({ type: 'cancelled' });
    expect(h.runtime.cancel('thread-1')).toBe(false);
  });

  it('the run status follows the calls: waiting while suspended (book: 从 ToolCall 状态推导 RunStatus)', async () => {
    const h = harness(twoApprovals, { spec: { sections: { tool_execution: { mode: 'parallel_streaming' } } } });
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink, { waitForDecisions: false });
    expect(r.ok && r.value.termination).toEqual({ type: 'suspended' });
    const cp = h.store.checkpoints.at(-1);
    expect(cp?.status).toBe('waiting');
    const states = cp?.threadState.extensions[ToolCallStates.key] as Record<string, { status: string }>;
    expect(Object.values(states).map((s) => s.status)).toEqual(['suspended', 'suspended']);
  });
});

describe('RunHandle.parked', () => {
  it('resolves true once the run waits for decisions, and a decision sent then is taken', async () => {
    const runs: unknown[] = [];
    const tool = modal('replay_tool_call', runs);
    const h = harness([{ tool_calls: [{ id: 'c1', name: tool.descriptor.id, arguments: { n: 1 } }] }, { text: 'after' }], { tools: [tool] });
    const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error('start');
    expect(await started.value.parked()).toBe(true);
    expect(h.runtime.isWaiting(started.value.threadId)).toBe(true);
    expect(started.value.decide([{ targetId: 'c1', decision: { decision_id: 'd', action: 'resume', updated_at: 0 } }]).ok).toBe(true);
    expect((await started.value.done).termination).toEqual({ type: 'natural_end' });
    expect(runs).toHaveLength(2);
  });

  it('resolves false when the run ends without waiting, also when asked after the end', async () => {
    const h = harness([{ text: 'no tools' }]);
    const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error('start');
    const early = started.value.parked();
    await started.value.done;
    expect(await early).toBe(false);
    expect(await started.value.parked()).toBe(false);
  });
});

describe('input sent with decisions (a chat answers an approval and writes a message at once)', () => {
  it('joins the thread after the resumed call, before the next inference', async () => {
    const h = harness([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }] }, { text: 'Shipped, and noted.' }]);
    const started = await h.runtime.start({ threadId: 't', messages: [Messages.user('ship it', { id: 'u1' })] }, h.sink);
    if (!started.ok) throw new Error('start');
    expect(await started.value.parked()).toBe(true);
    const sent = started.value.decide(
      [{ targetId: 's-c1', decision: { decision_id: 'd', action: 'resume', result: { approved: true }, updated_at: 0 } }],
      [Messages.user('also tell me when', { id: 'u2' }), Messages.user('ship it', { id: 'u1' })],
    );
    expect(sent.ok).toBe(true);
    const result = await started.value.done;
    expect(result.termination.type).toBe('natural_end');
    const roles = (h.llm.requests[1]?.messages ?? []).map((m) => `${m.role}:${m.id ?? ''}`);
    const tool = roles.findIndex((r) => r.startsWith('tool:'));
    expect(roles.indexOf('user:u2')).toBeGreaterThan(tool);
    expect(roles.filter((r) => r === 'user:u1')).toHaveLength(1);
    expect(h.store.threads.get('t')?.messages.map((m) => m.id)).toContain('u2');
  });
});

describe('rewindTo (regenerating an answer)', () => {
  it('answers again from the named message: later messages leave the history and the store', async () => {
    const h = harness([{ text: 'First answer.' }, { text: 'Second answer.' }]);
    const first = await h.runtime.run({ threadId: 't', messages: [Messages.user('hello', { id: 'u1' })] }, h.sink);
    expect(first.ok).toBe(true);
    expect(h.store.threads.get('t')?.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    const again = await h.runtime.run({ threadId: 't', messages: [], rewindTo: 'u1' }, h.sink);
    if (!again.ok) throw new Error('run');
    expect(again.value.response).toBe('Second answer.');
    expect(h.llm.requests[1]?.messages.filter((m) => m.role !== 'system').map((m) => m.id)).toEqual(['u1']);
    const stored = h.store.threads.get('t')?.messages ?? [];
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(stored[1]?.content).toEqual([{ type: 'text', text: 'Second answer.' }]);
  });

  it('an id the thread does not hold rewinds nothing', async () => {
    const h = harness([{ text: 'One.' }, { text: 'Two.' }]);
    await h.runtime.run({ threadId: 't', messages: [Messages.user('hello', { id: 'u1' })] }, h.sink);
    await h.runtime.run({ threadId: 't', messages: [Messages.user('more', { id: 'u2' })], rewindTo: 'nope' }, h.sink);
    expect(h.store.threads.get('t')?.messages.map((m) => m.id ?? m.role)).toHaveLength(4);
  });
});
