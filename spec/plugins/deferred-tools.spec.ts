import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages, messageText } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { AGENT_PRIORS_KEY, deferredToolsPlugin, PromoteToolAction, type DeferredToolsOptions } from '../../src/plugins/deferred-tools.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { MemoryProfileStore } from '../../src/runtime/profile-store.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { echoTool } from '../support/runtime.ts';

/** A tool with a large schema: deferring it saves tokens. */
const bigTool = (id: string, description: string) =>
  defineTool({
    id,
    description,
    args: z.object(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`option_${i}`, z.string().optional().describe(`Option number ${i} of ${id}`)]))),
    execute: () => ToolResults.success(id, { ok: true }),
  });
const weather = bigTool('get_weather', 'Weather forecast for a city');
const news = bigTool('get_news', 'News headlines');

function build(script: readonly ScriptStep[], config: Record<string, unknown>, options: DeferredToolsOptions = {}, extra: readonly RuntimePlugin[] = []) {
  const llm = new ScriptedLlm(script);
  const plugin = deferredToolsPlugin(options);
  const builder = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('scripted', llm)
    .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
    .withTool(weather)
    .withTool(news)
    .withTool(echoTool)
    .withPlugin(plugin.name, plugin)
    .withAgentSpec({ id: 'agent', model: 'm', plugin_ids: [plugin.name, ...extra.map((p) => p.name)], sections: { deferred_tools: config } });
  for (const p of extra) builder.withPlugin(p.name, p);
  const built = builder.build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return { runtime: built.value, llm };
}

async function run(h: ReturnType<typeof build>, threadId = 't') {
  const sink = new VecEventSink();
  const r = await h.runtime.run({ threadId, messages: [Messages.user('hi')] }, sink);
  if (!r.ok) throw new Error(JSON.stringify(r.error));
  return sink.events;
}

const toolsPerRequest = (llm: ScriptedLlm) => llm.requests.map((r) => r.tools.map((t) => t.id).sort());
const modesOf = (events: readonly AgentEvent[], id: string) =>
  events.flatMap((e) => {
    if (e.event_type !== 'state_snapshot') return [];
    const ext = (e.snapshot as { extensions?: Record<string, { modes?: Record<string, string> }> }).extensions ?? {};
    const mode = ext['deferred_tools.state']?.modes?.[id];
    return mode === undefined ? [] : [mode];
  });
const collapse = (xs: readonly string[]) => xs.filter((x, i) => i === 0 || xs[i - 1] !== x);

const config = { enabled: true, rules: [{ tool: 'echo', mode: 'eager' }], disc_beta: { defer_after: 2, gamma: 500 } };
const cycle: ScriptStep[] = [
  { tool_calls: [{ id: 's', name: 'ToolSearch', arguments: { query: 'weather' } }] },
  { tool_calls: [{ id: 'w', name: 'get_weather', arguments: { option_0: 'Paris' } }] },
  ...[1, 2, 3, 4].map((i): ScriptStep => ({ tool_calls: [{ id: `e${i}`, name: 'echo', arguments: { text: String(i) } }] })),
  { text: 'done' },
];

describe('deferred tools through the loop (book: 使用延迟加载工具)', () => {
  it('promote → idle → re-defer: ToolSearch promotes, DiscBeta defers again after defer_after idle turns', async () => {
    const h = build(cycle, config);
    const events = await run(h);
    const tools = toolsPerRequest(h.llm);
    expect(tools[0]).toEqual(['ToolSearch', 'echo']);
    expect(tools[1]).toEqual(['ToolSearch', 'echo', 'get_weather']);
    // Used at turn 1, idle at turns 2 and 3 (defer_after = 2): deferred again from turn 4 on.
    expect(tools[2]).toContain('get_weather');
    expect(tools[3]).toContain('get_weather');
    expect(tools.slice(4)).toEqual([
      ['ToolSearch', 'echo'],
      ['ToolSearch', 'echo'],
      ['ToolSearch', 'echo'],
    ]);
    // In the event stream: ToolSearch's result promotes, the snapshots go eager, then deferred.
    const promotedAt = events.findIndex((e) => e.event_type === 'tool_call_done' && e.id === 's');
    const snapshots = modesOf(events.slice(promotedAt), 'get_weather');
    expect(collapse(snapshots)).toEqual(['eager', 'deferred']);
    expect(collapse(modesOf(events, 'get_news'))).toEqual(['deferred']);
    // The model is told what it can search for.
    const system = h.llm.requests[0]?.messages.filter((m) => m.role === 'system').map(messageText) ?? [];
    expect(system).toContain('The following deferred tools are available via ToolSearch:\nget_news, get_weather');
    // ToolSearch answered with the schema block and the ids it promotes.
    const done = events.find((e) => e.event_type === 'tool_call_done' && e.id === 's');
    const data = done?.event_type === 'tool_call_done' ? (done.result.data as Record<string, unknown>) : {};
    expect(data['__promote']).toEqual(['get_weather']);
    expect(String(data['tools'])).toMatch(/^<functions>\n<function>\{"description": "Weather forecast for a city", "name": "get_weather"/);
  });

  it('a tool used every turn is never re-deferred', async () => {
    const steps: ScriptStep[] = [
      { tool_calls: [{ id: 's', name: 'ToolSearch', arguments: { query: 'select:get_weather' } }] },
      ...[1, 2, 3, 4, 5, 6].map((i): ScriptStep => ({ tool_calls: [{ id: `w${i}`, name: 'get_weather', arguments: {} }] })),
      { text: 'done' },
    ];
    const h = build(steps, config);
    const events = await run(h);
    expect(collapse(modesOf(events, 'get_weather'))).toEqual(['eager']);
    for (const t of toolsPerRequest(h.llm).slice(1)) expect(t).toContain('get_weather');
  });

  it('auto mode stays off when deferring saves less than beta_overhead, and hides ToolSearch', async () => {
    const h = build([{ text: 'hi' }], { beta_overhead: 1e9 });
    const events = await run(h);
    expect(toolsPerRequest(h.llm)[0]).toEqual(['echo', 'get_news', 'get_weather']);
    expect(modesOf(events, 'get_weather')).toEqual([]);
    const on = build([{ text: 'hi' }], {});
    await run(on);
    expect(toolsPerRequest(on.llm)[0]).toEqual(['ToolSearch']);
  });

  it('PromoteToolAction from another plugin takes effect at the next inference', async () => {
    const promoter: RuntimePlugin = {
      name: 'promoter',
      register: (r) => r.registerPhaseHook('before_inference', () => StateCommand.empty().scheduleAction(PromoteToolAction, ['get_news'])),
    };
    const h = build([{ tool_calls: [{ id: 'e', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }], config, {}, [promoter]);
    await run(h);
    expect(toolsPerRequest(h.llm)[0]).not.toContain('get_news');
    expect(toolsPerRequest(h.llm)[1]).toContain('get_news');
  });

  it('learns priors across sessions through the profile store and starts the next session from them', async () => {
    const profiles = new MemoryProfileStore();
    const steps: ScriptStep[] = [
      { tool_calls: [{ id: 's', name: 'ToolSearch', arguments: { query: 'select:get_weather' } }] },
      { tool_calls: [{ id: 'w', name: 'get_weather', arguments: {} }] },
      { text: 'done' },
    ];
    const first = build(steps, config, { profiles });
    await run(first, 'a');
    // Three turns; get_weather and ToolSearch each used in one: p_s = 1/3 with λ = 1 for the first session.
    expect(await profiles.read('agent', AGENT_PRIORS_KEY)).toEqual({ tools: { ToolSearch: 1 / 3, get_weather: 1 / 3 }, session_count: 1 });
    const second = build([{ text: 'hi' }], config, { profiles });
    const events = await run(second, 'b');
    const snap = events.find((e) => e.event_type === 'state_snapshot');
    const entry = (
      snap?.event_type === 'state_snapshot' ? (snap.snapshot as { extensions: Record<string, { tools: Record<string, { alpha: number }> }> }) : undefined
    )?.extensions['deferred_tools.disc_beta']?.tools['get_weather'];
    // α = p·n0 with the learned p (then one turn's decay and miss): 0.6 never applies learned priors.
    expect(entry?.alpha).toBeCloseTo((1 / 3) * 5 * 0.95, 9);
  });
});
