import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentSpecInput } from '../../src/contract/agent-spec.ts';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { handoffPlugin, HandoffState, requestHandoff } from '../../src/plugins/handoff.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { clientStateKey } from '../../src/runtime/client-state.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { MemoryThreadRunStore } from '../../src/runtime/thread-run-store.ts';
import { defineTool } from '../../src/runtime/tool.ts';

/** The state keys agents share with their clients, on a thread whose runs change agents (a handoff, another agent's run). */

const handTo = defineTool({
  id: 'hand_to',
  description: 'hands the conversation to another agent',
  args: z.object({ agent: z.string() }),
  execute: ({ agent }) => ({ result: ToolResults.success('hand_to', { agent }), command: StateCommand.empty().update(HandoffState, requestHandoff(agent)) }),
});
const setNote = defineTool({
  id: 'set_note',
  description: 'writes the shared note',
  args: z.object({ v: z.string() }),
  execute: ({ v }) => ({ result: ToolResults.success('set_note', { v }), command: StateCommand.empty().update(clientStateKey('notes'), v) }),
});

function build(script: readonly ScriptStep[], writer: Partial<AgentSpecInput>, store = new MemoryThreadRunStore()) {
  const plugin = handoffPlugin({});
  const built = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('p', new ScriptedLlm(script))
    .withModel('m', { provider: 'p', model_name: 'x' })
    .withThreadRunStore(store)
    .withTool(handTo)
    .withTool(setNote)
    .withPlugin(plugin.name, plugin)
    .withAgentSpec({ id: 'front', model: 'm', system_prompt: 'front', plugin_ids: ['agent_handoff'], client_state: ['todos'] })
    .withAgentSpec({ id: 'writer', model: 'm', system_prompt: 'w', allowed_tools: ['set_note'], ...writer })
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return { runtime: built.value, store };
}

const shared = (store: MemoryThreadRunStore) => {
  const ext = store.checkpoints.at(-1)?.threadState.extensions ?? {};
  return Object.fromEntries(Object.entries(ext).filter(([k]) => k === 'notes' || k === 'todos'));
};

describe('client state across agents', () => {
  it('a handoff to an agent that shares other keys keeps both: the page’s list, and what the new agent writes', async () => {
    const h = build(
      [
        { tool_calls: [{ id: 'c1', name: 'hand_to', arguments: { agent: 'writer' } }] },
        { tool_calls: [{ id: 'c2', name: 'set_note', arguments: { v: 'hello' } }] },
        { text: 'done' },
      ],
      { client_state: ['notes'] },
    );
    const r = await h.runtime.run({ threadId: 't', agentId: 'front', messages: [Messages.user('go')], clientState: { todos: ['milk'] } }, new VecEventSink());
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    expect(shared(h.store)).toEqual({ notes: 'hello', todos: ['milk'] });
  });

  it('a handoff to an agent that shares nothing leaves the shared keys on the thread', async () => {
    const h = build([{ tool_calls: [{ id: 'c1', name: 'hand_to', arguments: { agent: 'writer' } }] }, { text: 'done' }], {});
    const r = await h.runtime.run({ threadId: 't', agentId: 'front', messages: [Messages.user('go')], clientState: { todos: ['milk'] } }, new VecEventSink());
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    expect(shared(h.store)).toEqual({ todos: ['milk'] });
  });

  it('a key one agent writes survives a later run of an agent that does not share it', async () => {
    const store = new MemoryThreadRunStore();
    const first = build([{ tool_calls: [{ id: 'c2', name: 'set_note', arguments: { v: 'kept' } }] }, { text: 'noted' }], { client_state: ['notes'] }, store);
    await first.runtime.run({ threadId: 't', agentId: 'writer', messages: [Messages.user('note')] }, new VecEventSink());
    const second = build([{ text: 'hi' }], { client_state: ['notes'] }, store);
    await second.runtime.run({ threadId: 't', agentId: 'front', messages: [Messages.user('hi')] }, new VecEventSink());
    expect(shared(store)).toEqual({ notes: 'kept' });
  });

  it('a client may set only its agent’s own keys, though the runtime knows every agent’s', async () => {
    const h = build([{ text: 'x' }], { client_state: ['notes'] });
    const r = await h.runtime.start({ threadId: 't', agentId: 'front', messages: [Messages.user('go')], clientState: { notes: 'forged' } }, new VecEventSink());
    expect(r).toEqual({
      ok: false,
      error: { code: 'resolve_failed', message: "state.notes: agent 'front' shares no such key with its clients (client_state: todos)" },
    });
  });

  it('a name an agent shares that is a plugin’s key is refused when the runtime is built', () => {
    const plugin = handoffPlugin({});
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('p', new ScriptedLlm([]))
      .withModel('m', { provider: 'p', model_name: 'x' })
      .withPlugin(plugin.name, plugin)
      .withAgentSpec({ id: 'front', model: 'm', plugin_ids: ['agent_handoff'] })
      .withAgentSpec({ id: 'page', model: 'm', client_state: ['handoff_notes'] })
      .build();
    expect(built.ok).toBe(true);
    const clash = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('p', new ScriptedLlm([]))
      .withModel('m', { provider: 'p', model_name: 'x' })
      .withPlugin(plugin.name, plugin)
      .withAgentSpec({ id: 'front', model: 'm', plugin_ids: ['agent_handoff'] })
      .withAgentSpec({ id: 'page', model: 'm', client_state: [HandoffState.key] })
      .build();
    expect(clash.ok).toBe(false);
    expect(clash.ok ? '' : JSON.stringify(clash.error)).toContain("agent 'front'");
  });
});
