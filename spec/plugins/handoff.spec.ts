import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import type { PluginRegistrar } from '../../src/core/phase/plugin.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { defineStateKey } from '../../src/core/state/state-key.ts';
import { clearHandoff, handoffPlugin, HandoffState, requestHandoff } from '../../src/plugins/handoff.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { MemoryThreadRunStore } from '../../src/runtime/thread-run-store.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { fuzzPlugin } from '../../src/testing/fuzz-plugin.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { echoTool } from '../support/runtime.ts';

/** A tool that hands off to `agent` (or back, with `clear`). */
const handTo = defineTool({
  id: 'hand_to',
  description: 'Hand the conversation to another agent',
  args: z.object({ agent: z.string() }),
  execute: ({ agent }) => ({
    result: ToolResults.success('hand_to', { agent }),
    command: StateCommand.empty().update(HandoffState, agent === 'clear' ? clearHandoff() : requestHandoff(agent)),
  }),
});

function setup(
  main: ScriptStep[],
  second: ScriptStep[],
  overlays: Parameters<typeof handoffPlugin>[0] = { researcher: { system_prompt: 'You research.', model_id: 'm2', allowed_tools: ['echo'] } },
  sections: Record<string, unknown> = {},
) {
  const a = new ScriptedLlm(main);
  const b = new ScriptedLlm(second);
  const store = new MemoryThreadRunStore();
  const plugin = handoffPlugin(overlays);
  const built = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('a', a)
    .withProvider('b', b)
    .withModel('m', { provider: 'a', model_name: 'model-a' })
    .withModel('m2', { provider: 'b', model_name: 'model-b' })
    .withThreadRunStore(store)
    .withTool(echoTool)
    .withTool(handTo)
    .withPlugin(plugin.name, plugin)
    .withAgentSpec({ id: 'agent', model: 'm', system_prompt: 'You are the front desk.', plugin_ids: ['agent_handoff'], sections: sections as never })
    .withAgentSpec({ id: 'writer', model: 'm', system_prompt: 'You write.', allowed_tools: ['hand_to'] })
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return { runtime: built.value, a, b, store };
}
const call = (id: string, agent: string): ScriptStep => ({ tool_calls: [{ id, name: 'hand_to', arguments: { agent } }] });
const systemOf = (llm: ScriptedLlm, i: number) => llm.requests[i]?.messages.find((m) => m.role === 'system');
const textOf = (m: unknown) => JSON.stringify(m);

describe('agent handoff (book: 使用 Agent Handoff; core-spec §11.1)', () => {
  it('a request promoted at the step’s end switches prompt, model and tools before the next step; the stream shows it; the thread keeps it', async () => {
    const h = setup([call('c1', 'researcher')], [{ text: 'Researched.' }]);
    const sink = new VecEventSink();
    const r = await h.runtime.run({ threadId: 't', messages: [Messages.user('find sources')] }, sink);
    expect(r.ok && r.value).toMatchObject({ response: 'Researched.', termination: { type: 'natural_end' } });
    expect(h.a.requests).toHaveLength(1);
    expect(h.b.requests).toHaveLength(1);
    expect(textOf(systemOf(h.b, 0))).toContain('You research.');
    expect(h.b.requests[0]?.model).toBe('model-b');
    expect(h.b.requests[0]?.tools.map((t) => t.id)).toEqual(['echo']);
    expect(h.a.requests[0]?.tools.map((t) => t.id)).toEqual(['echo', 'hand_to']);
    // The switch is in the stream, between the first step's end and the second step's start.
    const types = sink.events.map((e) => e.event_type);
    const at = sink.events.findIndex((e) => e.event_type === 'activity_snapshot' && e.activity_type === 'agent_handoff');
    expect(sink.events[at]).toMatchObject({ content: { from: 'agent', to: 'researcher' } });
    expect(types.slice(0, at).filter((t) => t === 'step_start')).toHaveLength(1);
    expect(types[at + 1]).toBe('step_start');
    expect(checkRunInvariants(sink.events)).toEqual([]);
    expect(h.store.checkpoints.at(-1)?.threadState.extensions['agent_handoff']).toEqual({ active_agent: 'researcher' });
    // The next run on the thread starts as the researcher.
    await h.runtime.run({ threadId: 't', messages: [Messages.user('more')] }, new VecEventSink());
    expect(h.a.requests).toHaveLength(1);
    expect(h.b.requests).toHaveLength(2);
  });

  it('a registered agent’s prompt, model and tools; clearing goes back to the run’s own agent', async () => {
    const h = setup([call('c1', 'writer'), call('c2', 'clear'), { text: 'Back at the desk.' }], []);
    const r = await h.runtime.run({ messages: [Messages.user('write it')] }, new VecEventSink());
    expect(r.ok && r.value).toMatchObject({ response: 'Back at the desk.', termination: { type: 'natural_end' } });
    expect(textOf(systemOf(h.a, 1))).toContain('You write.');
    expect(h.a.requests[1]?.tools.map((t) => t.id)).toEqual(['hand_to']);
    expect(textOf(systemOf(h.a, 2))).toContain('You are the front desk.');
    expect(h.a.requests[2]?.tools.map((t) => t.id)).toEqual(['echo', 'hand_to']);
  });

  it('to a registered agent: its plugins replace the run’s (keys uninstalled and installed, hooks swapped) and come back on clearing; the handoff itself stays', async () => {
    const seen: string[] = [];
    /** A plugin with a run-scoped, persisted counter that its step_start hook bumps, and a log of the hooks that ran. */
    const tagPlugin = (name: string) => {
      const Count = defineStateKey<number, number>({ key: `${name}.count`, init: () => 0, apply: (n, by) => n + by, codec: z.number() });
      return {
        name,
        register: (r: PluginRegistrar) => {
          r.registerKey(Count, { persistent: true });
          r.registerPhaseHook('step_start', () => {
            seen.push(name);
            return StateCommand.empty().update(Count, 1);
          });
        },
      };
    };
    const llm = new ScriptedLlm([call('c1', 'writer'), call('c2', 'clear'), { text: 'Back at the desk.' }]);
    const plugin = handoffPlugin();
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('a', llm)
      .withModel('m', { provider: 'a', model_name: 'model-a' })
      .withTool(handTo)
      .withPlugin(plugin.name, plugin)
      .withPlugin('desk_tags', tagPlugin('desk_tags'))
      .withPlugin('writer_tags', tagPlugin('writer_tags'))
      .withAgentSpec({ id: 'agent', model: 'm', system_prompt: 'You are the front desk.', plugin_ids: ['agent_handoff', 'desk_tags'] })
      .withAgentSpec({ id: 'writer', model: 'm', system_prompt: 'You write.', plugin_ids: ['writer_tags'] })
      .build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    const sink = new VecEventSink();
    const r = await built.value.run({ messages: [Messages.user('write it')] }, sink);
    expect(r.ok && r.value).toMatchObject({ response: 'Back at the desk.', termination: { type: 'natural_end' } });
    // Step 1 as the desk, step 2 as the writer (its plugin only), step 3 as the desk again.
    expect(seen).toEqual(['desk_tags', 'writer_tags', 'desk_tags']);
    const snapshots = sink.events.flatMap((e) =>
      e.event_type === 'state_snapshot' ? [(e.snapshot as { extensions: Record<string, unknown> }).extensions] : [],
    );
    const counts = snapshots.map((x) => [x['desk_tags.count'], x['writer_tags.count']]);
    // The desk's key is gone while the writer acts, and starts again from its init when the desk is back.
    expect(counts.slice(0, 3)).toEqual([
      [1, undefined],
      [undefined, 1],
      [1, undefined],
    ]);
    expect(JSON.stringify(llm.requests[1]?.messages.find((m) => m.role === 'system'))).toContain('You write.');
    expect(checkRunInvariants(sink.events)).toEqual([]);
  });

  it('a target that does not resolve blocks the run with the reason', async () => {
    const h = setup([call('c1', 'nobody'), { text: 'never' }], []);
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, new VecEventSink());
    expect(r.ok && r.value.termination).toEqual({ type: 'blocked', value: "handoff resolve failed: agent 'nobody' not found" });
    const bad = setup([call('c1', 'fast')], [], { fast: { model_id: 'no-such-model' } });
    const r2 = await bad.runtime.run({ messages: [Messages.user('go')] }, new VecEventSink());
    expect(r2.ok && r2.value.termination).toEqual({ type: 'blocked', value: "handoff resolve failed: model 'no-such-model' not found" });
  });

  it('the plugin reads back the overlays it was made with (book: handoff.overlay(name))', () => {
    const plugin = handoffPlugin({ researcher: { system_prompt: 'You research.', model_id: 'm2' } });
    expect(plugin.overlay('researcher')).toEqual({ system_prompt: 'You research.', model_id: 'm2' });
    expect(plugin.overlay('writer')).toBeUndefined();
    expect(plugin.overlay('__proto__')).toBeUndefined();
  });

  it('an overlay with an unknown field is refused, naming it (the book’s `model` is `model_id`)', () => {
    expect(() => handoffPlugin({ researcher: { model: 'claude' } as never })).toThrow(/handoff overlay 'researcher': .*model/);
  });

  it('without a handoff nothing changes: no event, same agent', async () => {
    const h = setup([{ text: 'plain' }], []);
    const sink = new VecEventSink();
    await h.runtime.run({ messages: [Messages.user('hi')] }, sink);
    expect(sink.events.some((e: AgentEvent) => e.event_type === 'activity_snapshot')).toBe(false);
  });

  it('overlays from the agent’s handoff section (as awaken serve --config gives them); a name declared twice keeps the agent from being built', async () => {
    const h = setup(
      [call('c1', 'critic'), { text: 'never' }],
      [{ text: 'Criticised.' }],
      {},
      { handoff: { overlays: { critic: { system_prompt: 'You criticise.', model_id: 'm2' } } } },
    );
    const r = await h.runtime.run({ messages: [Messages.user('review')] }, new VecEventSink());
    expect(r.ok && r.value.response).toBe('Criticised.');
    expect(textOf(systemOf(h.b, 0))).toContain('You criticise.');
    const failed = (() => {
      try {
        setup([], [], { critic: { system_prompt: 'x' } }, { handoff: { overlays: { critic: { system_prompt: 'y' } } } });
        return 'built';
      } catch (e) {
        return String(e);
      }
    })();
    expect(failed).toMatch(/overlay 'critic' is declared by the plugin and by the handoff section/);
  });

  it('transfer_to_agent (with { tool: true }): the model hands off on its own, and back without an agent; not offered otherwise', async () => {
    const llm = new ScriptedLlm([
      { tool_calls: [{ id: 't1', name: 'transfer_to_agent', arguments: { agent: 'researcher' } }] },
      { tool_calls: [{ id: 't2', name: 'transfer_to_agent', arguments: {} }] },
      { text: 'Back.' },
    ]);
    const withTool = handoffPlugin({ researcher: { system_prompt: 'You research.' } }, { tool: true });
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('a', llm)
      .withModel('m', { provider: 'a', model_name: 'model-a' })
      .withPlugin(withTool.name, withTool)
      .withAgentSpec({ id: 'agent', model: 'm', system_prompt: 'You are the front desk.', plugin_ids: ['agent_handoff'] })
      .build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    const r = await built.value.run({ messages: [Messages.user('go')] }, new VecEventSink());
    expect(r.ok && r.value).toMatchObject({ response: 'Back.', termination: { type: 'natural_end' } });
    expect(llm.requests.map((q) => textOf(q.messages.find((m) => m.role === 'system')).includes('You research.'))).toEqual([false, true, false]);
    expect(llm.requests[0]?.tools.map((t) => t.id)).toEqual(['transfer_to_agent']);
    const h = setup([{ text: 'plain' }], []);
    await h.runtime.run({ messages: [Messages.user('hi')] }, new VecEventSink());
    expect(h.a.requests[0]?.tools.map((t) => t.id)).toEqual(['echo', 'hand_to']);
  });

  it('passes fuzzPlugin', async () => {
    const report = await fuzzPlugin(handoffPlugin({ researcher: { system_prompt: 'x' } }), { numRuns: 40, seed: 9 });
    expect(report.failures).toEqual([]);
    expect(report.phases).toEqual(['run_start', 'step_end']);
  });
});
