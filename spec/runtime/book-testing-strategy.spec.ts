import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { defineStateKey } from '../../src/core/state/state-key.ts';
import { StateStore } from '../../src/runtime/state-store.ts';
import { MutationBatch } from '../../src/core/state/mutation-batch.ts';
import { buildExecutionEnv, type Plugin } from '../../src/core/phase/plugin.ts';
import { MockLlmExecutor, ScriptedLlm } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { collectStream } from '../../src/runtime/llm.ts';
import type { StopPolicy } from '../../src/core/policies/stop-policy.ts';
import { defineTool, ToolFailure } from '../../src/runtime/tool.ts';
import { testToolContext } from '../../src/testing/tool-context.ts';

// The book's 测试策略 page, example by example.

const GreetTool = defineTool({
  id: 'greet',
  description: 'Greet a user by name',
  args: z.object({ name: z.string() }).loose(),
  execute: (args) => {
    if (typeof args.name !== 'string') throw new ToolFailure({ code: 'invalid_arguments', message: "missing 'name'" });
    return ToolResults.success('greet', { greeting: `Hello, ${args.name}!` });
  },
});

describe('1. unit-testing a tool', () => {
  it('greet_tool_returns_greeting', async () => {
    const out = await GreetTool.execute({ name: 'Alice' }, testToolContext());
    expect(out).toEqual(ToolResults.success('greet', { greeting: 'Hello, Alice!' }));
  });

  it('greet_tool_rejects_missing_name', async () => {
    await expect(async () => GreetTool.execute({}, testToolContext())).rejects.toMatchObject({ error: { code: 'invalid_arguments' } });
  });

  it('tool_produces_state_command', async () => {
    const Counter = defineStateKey({ key: 'test.counter', merge: 'commutative', init: () => 0, apply: (v: number, u: number) => v + u, codec: z.number() });
    const tool = defineTool({
      id: 'count',
      description: 'adds',
      args: z.object({}),
      execute: () => ({ result: ToolResults.success('count', null), command: StateCommand.empty().update(Counter, 5) }),
    });
    const out = await tool.execute({}, testToolContext());
    expect('command' in out && out.command?.isEmpty()).toBe(false);
  });

  it('the test context collects reported activity', async () => {
    const ctx = testToolContext({ callId: 'c' });
    await ctx.reportActivity('log', 'x');
    await ctx.reportActivityDelta('log', { op: 'add' });
    await ctx.reportProgress('done', 'ok', 1);
    expect(ctx.activity.map((e) => e.event_type)).toEqual(['activity_snapshot', 'activity_delta', 'activity_snapshot']);
  });
});

describe('2. unit-testing a plugin', () => {
  const Counter = defineStateKey({ key: 'test.counter', merge: 'commutative', init: () => 0, apply: (v: number, u: number) => v + u, codec: z.number() });
  const CounterPlugin: Plugin = { name: 'counter', register: (r) => r.registerKey(Counter) };

  it('counter_plugin_registers_key', () => {
    const env = buildExecutionEnv([CounterPlugin]);
    if (!env.ok) throw new Error('env');
    const store = new StateStore();
    expect(store.installPlugin('counter', env.value.plugins[0]!.keys).ok).toBe(true);
    expect(store.snapshot().getOrDefault(Counter)).toBe(0);
  });

  it('counter_plugin_rejects_double_registration', () => {
    const store = new StateStore();
    store.installPlugin('counter', [{ key: Counter }]);
    expect(store.installPlugin('counter', [{ key: Counter }]).ok).toBe(false);
  });
});

describe('3. unit-testing a StateKey', () => {
  const HitCounter = defineStateKey({
    key: 'test.hit_counter',
    merge: 'commutative',
    init: () => 0,
    apply: (v: number, u: number) => v + u,
    codec: z.number(),
  });
  it('apply_increments_counter', () => {
    expect(HitCounter.apply(HitCounter.apply(HitCounter.init(), 5), 3)).toBe(8);
  });
  it('apply_from_default_is_identity_free', () => {
    expect(HitCounter.apply(HitCounter.init(), 0)).toBe(0);
  });
  it('apply_merge_replaces_entries (exclusive)', () => {
    const AuditLog = defineStateKey({
      key: 'audit',
      init: () => ({ entries: [] as string[] }),
      apply: (_v: { entries: string[] }, u: { entries: string[] }) => u,
      codec: z.object({ entries: z.array(z.string()) }),
    });
    expect(AuditLog.apply({ entries: ['old'] }, { entries: ['new'] })).toEqual({ entries: ['new'] });
    const store = new StateStore();
    store.registerKeys([{ key: AuditLog }]);
    store.commit(new MutationBatch().update(AuditLog, { entries: ['x'] }));
    expect(store.snapshot().get(AuditLog)).toEqual({ entries: ['x'] });
  });
});

describe('4. integration test with a scripted LLM', () => {
  const GetWeatherTool = defineTool({
    id: 'get_weather',
    description: 'weather',
    args: z.object({ city: z.string() }),
    execute: ({ city }) => ToolResults.success('get_weather', { city, weather: 'sunny' }),
  });

  it('tool_call_flow_end_to_end', async () => {
    const llm = new ScriptedLlm([
      { tool_calls: [{ id: 'c1', name: 'get_weather', arguments: { city: 'Tokyo' } }] },
      { text: 'The weather in Tokyo is sunny.' },
    ]);
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('scripted', llm)
      .withModel('model', { provider: 'scripted', model_name: 'model' })
      .withAgentSpec({ id: 'test', model: 'model', system_prompt: 'You are helpful.' })
      .withTool(GetWeatherTool)
      .build();
    if (!built.ok) throw new Error('build');
    const sink = new VecEventSink();
    const result = await built.value.run({ threadId: 'thread-test', messages: [Messages.user("What's the weather?")] }, sink);
    expect(result.ok && result.value.response).toBe('The weather in Tokyo is sunny.');
    expect(result.ok && result.value.steps).toBe(2);
  });

  it('falls back to "Done." once the script is exhausted; MockLlmExecutor answers text only', async () => {
    const scripted = new ScriptedLlm([]);
    expect(await collectStream(scripted.stream({ model: 'm', messages: [], tools: [] }))).toMatchObject({
      content: [{ type: 'text', text: 'Done.' }],
      stopReason: 'EndTurn',
    });
    const mock = new MockLlmExecutor(['Hello!']);
    expect(await collectStream(mock.stream({ model: 'm', messages: [], tools: [] }))).toMatchObject({ content: [{ type: 'text', text: 'Hello!' }] });
  });
});

describe('5. testing the event stream', () => {
  it('events_follow_expected_lifecycle', async () => {
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('scripted', new ScriptedLlm([{ tool_calls: [{ id: 'c1', name: 'greet', arguments: { name: 'Bo' } }] }, { text: 'hi Bo' }]))
      .withModel('model', { provider: 'scripted', model_name: 'model' })
      .withAgentSpec({ id: 'test', model: 'model' })
      .withTool(GreetTool)
      .build();
    if (!built.ok) throw new Error('build');
    const sink = new VecEventSink();
    await built.value.run({ messages: [Messages.user('greet Bo')] }, sink);
    const events = sink.take();
    expect(events[0]?.event_type).toBe('run_start');
    expect(events.at(-1)?.event_type).toBe('run_finish');
    const count = (t: AgentEvent['event_type']) => events.filter((e) => e.event_type === t).length;
    expect(count('step_start')).toBe(count('step_end'));
    expect((events.at(-1) as Extract<AgentEvent, { event_type: 'run_finish' }>).termination).toEqual({ type: 'natural_end' });
    expect(events.findIndex((e) => e.event_type === 'tool_call_start')).toBeLessThan(events.findIndex((e) => e.event_type === 'tool_call_done'));
    expect(sink.take()).toEqual([]);
  });
});

describe('custom StopPolicy (book: 配置停止策略 → StopPolicy Trait)', () => {
  it('a policy added to the builder stops every agent, with its code and detail', async () => {
    const MyCustomPolicy: StopPolicy = {
      id: 'two_tools',
      evaluate: (s) => (s.lastToolNames.length >= 2 ? { stop: true, code: 'two_tools', detail: 'asked for two tools at once' } : { stop: false }),
    };
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider(
        'scripted',
        new ScriptedLlm([
          {
            tool_calls: [
              { id: 'a', name: 'greet', arguments: { name: 'x' } },
              { id: 'b', name: 'greet', arguments: { name: 'y' } },
            ],
          },
        ]),
      )
      .withModel('model', { provider: 'scripted', model_name: 'model' })
      .withAgentSpec({ id: 'test', model: 'model' })
      .withTool(GreetTool)
      .withStopPolicy(MyCustomPolicy)
      .build();
    if (!built.ok) throw new Error('build');
    const r = await built.value.run({ messages: [Messages.user('x')] }, new VecEventSink());
    expect(r.ok && r.value.termination).toEqual({ type: 'stopped', value: { code: 'two_tools', detail: 'asked for two tools at once' } });
  });
});
