import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import type { Message } from '../../src/contract/message.ts';
import { ask, block, definePlugin, PluginDefinitionError, refuse, type PluginDefinition } from '../../src/plugins/define-plugin.ts';
import fc from 'fast-check';
import { fuzzPlugin } from '../../src/testing/fuzz-plugin.ts';
import { echoTool, harness, waitFor } from '../support/runtime.ts';

const go: Message[] = [{ role: 'user', content: [{ type: 'text', text: 'go' }] }];
const echo = (id: string, text = id) => ({ id, name: 'echo', arguments: { text } });
const done = (events: readonly AgentEvent[]) =>
  events
    .filter((e): e is Extract<AgentEvent, { event_type: 'tool_call_done' }> => e.event_type === 'tool_call_done')
    .map((e) => [e.id, e.outcome, e.result.message]);
const systemTexts = (messages: readonly Message[]) =>
  messages.filter((m) => m.role === 'system').map((m) => m.content.map((c) => (c.type === 'text' ? c.text : '')).join(''));

describe('definePlugin: a tool gate', () => {
  const gate = definePlugin({
    name: 'gate',
    gateTool: (call) => {
      const text = (call.arguments as { text: string }).text;
      if (text === 'no') return refuse('not this one');
      if (text === 'stop') return block('stop here');
      if (text === 'ask') return ask('May I echo?');
      return;
    },
  });

  it('lets a call it says nothing about run, and refuses one: it does not run, the model reads the reason, the run goes on', async () => {
    const h = harness([{ tool_calls: [echo('c1', 'yes'), echo('c2', 'no')] }, { text: 'fine' }], { plugins: [gate], tools: [echoTool] });
    const r = await h.runtime.run({ messages: go }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    expect(done(h.sink.events)).toEqual([
      ['c1', 'succeeded', null],
      ['c2', 'failed', 'not this one'],
    ]);
    const refused = h.sink.events.find((e) => e.event_type === 'tool_call_done' && e.id === 'c2');
    expect(refused).toMatchObject({ result: { status: 'error', data: null, message: 'not this one', metadata: { rejected: true } } });
    expect(h.llm.requests[1]?.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'c2', content: [{ type: 'text', text: 'not this one' }] });
  });

  it('blocks: the call does not run, the calls after it are interrupted, and the run ends blocked with the reason', async () => {
    const h = harness([{ tool_calls: [echo('c1', 'stop'), echo('c2', 'yes')] }, { text: 'never' }], { plugins: [gate], tools: [echoTool] });
    const r = await h.runtime.run({ messages: go }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'blocked', value: 'stop here' });
    expect(done(h.sink.events)).toEqual([
      ['c1', 'failed', 'stop here'],
      ['c2', 'failed', '[Tool execution was interrupted]'],
    ]);
  });

  it('asks: the call waits with a ticket carrying the message; approved, it runs as it was asked', async () => {
    const h = harness([{ tool_calls: [echo('c1', 'ask')] }, { text: 'done' }], { plugins: [gate], tools: [echoTool] });
    const started = await h.runtime.start({ messages: go }, h.sink);
    if (!started.ok) throw new Error(JSON.stringify(started.error));
    await waitFor(() => h.runtime.isWaiting(started.value.threadId));
    const suspended = h.sink.events.find((e) => e.event_type === 'tool_call_done' && e.id === 'c1');
    expect(suspended).toMatchObject({
      outcome: 'suspended',
      result: {
        suspension: {
          suspension: { id: 'ask-c1', action: 'tool:echo', message: 'May I echo?' },
          pending: { id: 'c1', name: 'echo', arguments: { text: 'ask' } },
          resume_mode: 'replay_tool_call',
        },
      },
    });
    expect(started.value.decide([{ targetId: 'ask-c1', decision: { decision_id: 'd1', action: 'resume', updated_at: 0 } }]).ok).toBe(true);
    const result = await started.value.done;
    expect(result.termination).toEqual({ type: 'natural_end' });
    expect(h.sink.events.filter((e) => e.event_type === 'tool_call_resumed')).toEqual([
      { event_type: 'tool_call_resumed', target_id: 'c1', result: { echoed: 'ask' } },
    ]);
  });

  it('may be async', async () => {
    const slow = definePlugin({ name: 'slow', gateTool: async (call) => (call.id === 'c1' ? refuse('later') : undefined) });
    const h = harness([{ tool_calls: [echo('c1'), echo('c2')] }, { text: 'ok' }], { plugins: [slow], tools: [echoTool] });
    await h.runtime.run({ messages: go }, h.sink);
    expect(done(h.sink.events)).toEqual([
      ['c1', 'failed', 'later'],
      ['c2', 'succeeded', null],
    ]);
  });
});

describe('definePlugin: a prompt addition', () => {
  it('adds its text as a system message of each inference, after the system prompt; nothing or an empty text adds nothing', async () => {
    let n = 0;
    const prompt = definePlugin({
      name: 'prompt',
      addToPrompt: async (ctx) => (++n === 2 ? '' : `${ctx.agentId} in ${ctx.threadId === '' ? '?' : 'a thread'}, inference ${n}`),
    });
    const h = harness([{ tool_calls: [echo('c1')] }, { tool_calls: [echo('c2')] }, { text: 'ok' }], { plugins: [prompt], tools: [echoTool] });
    await h.runtime.run({ messages: go }, h.sink);
    expect(h.llm.requests.map((r) => systemTexts(r.messages))).toEqual([
      ['be brief', 'agent in a thread, inference 1'],
      ['be brief'],
      ['be brief', 'agent in a thread, inference 3'],
    ]);
  });
});

describe('definePlugin: a count per thread', () => {
  it('counts the tool calls of the thread across its runs, in the thread state under <name>.count; the gate reads the count before the call', async () => {
    const seen: number[] = [];
    const counted = definePlugin({
      name: 'counted',
      countPerThread: 'toolCalls',
      gateTool: (_call, ctx) => {
        seen.push(ctx.count);
        return ctx.count >= 2 ? refuse('two calls per thread') : undefined;
      },
      addToPrompt: (ctx) => `calls so far: ${ctx.count}`,
    });
    const h = harness([{ tool_calls: [echo('c1')] }, { text: 'one' }, { tool_calls: [echo('c2'), echo('c3')] }, { text: 'two' }], {
      plugins: [counted],
      tools: [echoTool],
    });
    const first = await h.runtime.run({ messages: go }, h.sink);
    const threadId = first.ok ? first.value.threadId : '';
    await h.runtime.run({ threadId, messages: go }, h.sink);
    expect(seen).toEqual([0, 1, 2]);
    expect(done(h.sink.events)).toEqual([
      ['c1', 'succeeded', null],
      ['c2', 'succeeded', null],
      ['c3', 'failed', 'two calls per thread'],
    ]);
    expect(h.llm.requests.map((r) => systemTexts(r.messages).at(-1))).toEqual(['calls so far: 0', 'calls so far: 1', 'calls so far: 1', 'calls so far: 3']);
    const stored = await h.store.loadThread(threadId);
    expect(stored?.threadState?.extensions['counted.count']).toBe(3);
  });

  it("counts runs with 'runs', as each run starts", async () => {
    const counts: number[] = [];
    const runs = definePlugin({ name: 'runs', countPerThread: 'runs', addToPrompt: (ctx) => void counts.push(ctx.count) });
    const h = harness([{ text: 'one' }, { text: 'two' }], { plugins: [runs] });
    const first = await h.runtime.run({ messages: go }, h.sink);
    await h.runtime.run({ threadId: first.ok ? first.value.threadId : '', messages: go }, h.sink);
    expect(counts).toEqual([1, 2]);
  });
});

describe('definePlugin: registration', () => {
  it('is registered once, when it is made: an agent of such plugins shares one execution env between its runs', () => {
    const h = harness([{ text: 'x' }], { plugins: [definePlugin({ name: 'once', gateTool: () => undefined })] });
    const a = h.runtime.resolve('agent');
    const b = h.runtime.resolve('agent');
    expect(a.ok && b.ok && a.value.executionEnv === b.value.executionEnv).toBe(true);
  });

  it('passes the plugin fuzzer, whose checks call its hooks as the engine does (they often return nothing)', async () => {
    const plugin = definePlugin({
      name: 'fuzzed',
      countPerThread: 'toolCalls',
      gateTool: (call, ctx) => (call.name.length % 2 === 0 && ctx.count > 1 ? refuse('even') : undefined),
      addToPrompt: async (ctx) => (ctx.count > 0 ? `count ${ctx.count}` : undefined),
    });
    const report = await fuzzPlugin(plugin, { updates: { 'fuzzed.count': fc.nat(5) }, numRuns: 25, seed: 7 });
    expect(report.failures).toEqual([]);
    expect(report.phases).toEqual(['before_inference', 'before_tool_execute']);
  });

  it('a definition it cannot use is a PluginDefinitionError naming the field', () => {
    const bad = (d: unknown) => {
      try {
        definePlugin(d as PluginDefinition);
      } catch (e) {
        return e instanceof PluginDefinitionError ? [e.field, e.message] : e;
      }
      return 'accepted';
    };
    expect(bad({ name: '' })).toEqual(['name', 'definePlugin: name: a non-empty string']);
    expect(bad(null)).toEqual(['definition', 'definePlugin: definition: an object with at least a name']);
    expect(bad({ name: 'x', gateTool: 'deny all' })).toEqual(['gateTool', 'definePlugin: gateTool: a function']);
    expect(bad({ name: 'x', addToPrompt: 3 })).toEqual(['addToPrompt', 'definePlugin: addToPrompt: a function']);
    expect(bad({ name: 'x', countPerThread: 'steps' })).toEqual(['countPerThread', `definePlugin: countPerThread: 'toolCalls' or 'runs', not "steps"`]);
    expect(bad({ name: 'x' })).toBe('accepted');
  });
});
