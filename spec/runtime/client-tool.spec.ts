import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decisionFor } from '../../src/contract/decision.ts';
import type { AgentEvent } from '../../src/contract/event.ts';
import type { JsonValue } from '../../src/contract/json.ts';
import { Messages } from '../../src/contract/message.ts';
import { decisionResult, dispositionOf, ToolResults, type ToolDescriptor } from '../../src/contract/tool.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { clientTool } from '../../src/runtime/client-tool.ts';
import { MemoryThreadRunStore } from '../../src/runtime/thread-run-store.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { echoTool, harness } from '../support/runtime.ts';

/** Tools the client runs: offered to the model, a call parks the run, the client's answer is the result. */

const pickColor: ToolDescriptor = {
  id: 'pick_color',
  name: 'pick_color',
  description: 'Asks the user to pick a colour in the page',
  parameters: { type: 'object', properties: { palette: { type: 'string' } } },
};

const script: ScriptStep[] = [{ tool_calls: [{ id: 'c1', name: 'pick_color', arguments: { palette: 'warm' } }] }, { text: 'You picked red.' }];

const doneOf = (events: readonly AgentEvent[]) =>
  events.filter((e): e is Extract<AgentEvent, { event_type: 'tool_call_done' }> => e.event_type === 'tool_call_done');

describe('client tools in a run', () => {
  it('are offered after the agent’s own tools; a call parks the run, and the client’s result is what the model reads', async () => {
    const h = harness(script, { tools: [echoTool] });
    const started = await h.runtime.start({ threadId: 't', messages: [Messages.user('pick')], clientTools: [pickColor] }, h.sink);
    if (!started.ok) throw new Error(JSON.stringify(started.error));
    expect(await started.value.parked()).toBe(true);
    expect(h.llm.requests[0]?.tools.map((t) => t.id)).toEqual(['echo', 'pick_color']);
    expect(h.llm.requests[0]?.tools[1]).toEqual(pickColor);
    const [pending] = doneOf(h.sink.events);
    expect(pending?.result).toEqual({
      tool_name: 'pick_color',
      status: 'pending',
      data: null,
      message: "Tool 'pick_color' runs on the client: awaiting its result",
      suspension: {
        suspension: { id: 'c1', action: 'client_tool', message: "Tool 'pick_color' runs on the client: awaiting its result", parameters: { palette: 'warm' } },
        pending: { id: 'c1', name: 'pick_color', arguments: { palette: 'warm' } },
        resume_mode: 'use_decision_as_tool_result',
      },
    });
    expect(dispositionOf(pending?.result ?? ToolResults.success('x', null))).toBe('pending_client');

    expect(started.value.decide([decisionFor('c1', 'resume', 1, { result: { color: 'red' } })]).ok).toBe(true);
    const result = await started.value.done;
    expect(result.termination).toEqual({ type: 'natural_end' });
    const toolMessage = h.llm.requests[1]?.messages.find((m) => m.role === 'tool');
    expect(toolMessage?.tool_call_id).toBe('c1');
    expect(toolMessage?.content).toEqual([{ type: 'text', text: '{"color":"red"}' }]);
    // The second inference still offers the client's tool: the model may call it again.
    expect(h.llm.requests[1]?.tools.map((t) => t.id)).toEqual(['echo', 'pick_color']);
  });

  it('a result the client reports as an error fails the call with its text', async () => {
    const h = harness(script, { tools: [] });
    const started = await h.runtime.start({ threadId: 't', messages: [Messages.user('pick')], clientTools: [pickColor] }, h.sink);
    if (!started.ok) throw new Error(JSON.stringify(started.error));
    await started.value.parked();
    started.value.decide([decisionFor('c1', 'resume', 1, { result: { error: 'the user closed the picker' } })]);
    await started.value.done;
    const toolMessage = h.llm.requests[1]?.messages.find((m) => m.role === 'tool');
    expect(toolMessage?.content).toEqual([{ type: 'text', text: 'the user closed the picker' }]);
  });

  it('a client tool named as one of the agent’s tools is refused, naming it', async () => {
    const h = harness(script, { tools: [echoTool] });
    const started = await h.runtime.start(
      { threadId: 't', messages: [Messages.user('pick')], clientTools: [{ ...pickColor, id: 'echo', name: 'echo' }] },
      h.sink,
    );
    expect(started).toEqual({
      ok: false,
      error: { code: 'resolve_failed', message: "client tool 'echo' has the name of a tool of agent 'agent': a client tool may not take a server tool's name" },
    });
    expect(h.llm.requests).toEqual([]);
  });

  it('a run parked on a client tool is taken up by another runtime with the client’s tools still offered', async () => {
    const store = new MemoryThreadRunStore();
    const build = (llm: ScriptedLlm) => {
      const built = new AgentRuntimeBuilder()
        .withEnv(deterministicEnv())
        .withProvider('scripted', llm)
        .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
        .withThreadRunStore(store)
        .withAgentSpec({ id: 'agent', model: 'm', system_prompt: 'be brief' })
        .withTool(echoTool)
        .build();
      if (!built.ok) throw new Error(JSON.stringify(built.error));
      return built.value;
    };
    const first = await build(new ScriptedLlm(script)).run({ threadId: 't', messages: [Messages.user('pick')], clientTools: [pickColor] }, new VecEventSink(), {
      waitForDecisions: false,
    });
    if (!first.ok) throw new Error(JSON.stringify(first.error));
    expect(first.value.termination).toEqual({ type: 'suspended' });

    const llm = new ScriptedLlm([{ text: 'You picked blue.' }]);
    const revived = await build(llm).revive({ threadId: 't', runId: first.value.runId }, new VecEventSink());
    if (!revived.ok) throw new Error(JSON.stringify(revived.error));
    expect(await revived.value.parked()).toBe(true);
    revived.value.decide([decisionFor('c1', 'resume', 1, { result: { color: 'blue' } })]);
    expect((await revived.value.done).termination).toEqual({ type: 'natural_end' });
    expect(llm.requests[0]?.tools.map((t) => t.id)).toEqual(['echo', 'pick_color']);
    expect(llm.requests[0]?.messages.find((m) => m.role === 'tool')?.content).toEqual([{ type: 'text', text: '{"color":"blue"}' }]);
  });
});

describe('decisionResult', () => {
  it('is an error exactly when the client sent `{error: text}` alone; anything else is the output as sent', () => {
    fc.assert(
      fc.property(fc.jsonValue() as fc.Arbitrary<JsonValue>, (sent) => {
        const r = decisionResult('t', sent);
        const lone = typeof sent === 'object' && sent !== null && !Array.isArray(sent) && Object.keys(sent).length === 1 && typeof sent['error'] === 'string';
        expect(r).toEqual(lone ? ToolResults.error('t', (sent as { error: string }).error) : ToolResults.success('t', sent));
      }),
    );
    expect(decisionResult('t', undefined)).toEqual(ToolResults.success('t', null));
  });

  it('a client tool is replay-safe: it runs nothing here, so a call taken up after a crash only asks again', () => {
    expect(clientTool(pickColor).recovery).toBe('replay_safe');
  });
});

describe('dispositionOf', () => {
  it('projects a committed call: executed, pending on the client, or pending on the server (an approval, a schedule)', () => {
    const call = { id: 'c', name: 'n', arguments: {} };
    expect(dispositionOf(ToolResults.success('n', 1))).toBe('executed');
    expect(dispositionOf(ToolResults.error('n', 'no'))).toBe('executed');
    expect(dispositionOf(ToolResults.scheduled(call, { trigger: true }))).toBe('pending_builtin');
    expect(
      dispositionOf(ToolResults.suspended('n', 'ask', { suspension: { id: 's', action: 'confirm' }, pending: call, resume_mode: 'replay_tool_call' })),
    ).toBe('pending_builtin');
  });
});
