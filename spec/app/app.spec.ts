import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { appOf, AppFieldError } from '../../src/app/app.ts';
import { MockLanguageModelV3 } from 'ai/test';
import { simulateReadableStream } from 'ai';
import { addApp, appProblem } from '../../src/app/compose.ts';
import { Messages } from '../../src/contract/message.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { defineApp, originOf, pluginFactory, PluginConfigError } from '../../src/app/define.ts';
import { scriptedProvider } from '../../src/app/scripted-provider.ts';
import type { LoadedApp } from '../../src/app/load.ts';
import { defineTool } from '../../src/runtime/tool.ts';

const echo = defineTool({
  id: 'echo',
  description: 'Echo.',
  args: z.object({ text: z.string() }),
  execute: ({ text }) => ({ tool_name: 'echo', status: 'success', data: text, message: null }),
});
const plugin = (name: string) => ({ name, register: () => undefined });
const base = { agents: [{ id: 'a', model: 'm' }], models: { m: { provider: 'p', model_name: 'n' } }, providers: { p: scriptedProvider([{ text: 'x' }]) } };

/** The field and reason `appOf` refuses `definition` with. */
function refusal(definition: unknown): string {
  try {
    appOf(definition);
  } catch (e) {
    if (e instanceof AppFieldError) return e.message;
    throw e;
  }
  return 'accepted';
}

describe('pluginFactory', () => {
  it('remembers the factory and the config of each plugin it makes, and makes it again from a config', () => {
    const counter = pluginFactory('counter', (config: { step: number }) => ({ name: 'counter', register: () => undefined, step: config.step }));
    const made = counter({ step: 2 });
    expect(counter.factoryName).toBe('counter');
    expect(originOf(made)).toMatchObject({ factory: 'counter', config: { step: 2 } });
    expect((originOf(made)!.make({ step: 5 }) as unknown as { step: number }).step).toBe(5);
    expect(originOf(plugin('plain'))).toBeUndefined();
  });

  it('checks the config with its schema, naming the field', () => {
    const counter = pluginFactory('counter', (config: { step: number }) => ({ name: 'counter', register: () => undefined, step: config.step }), {
      config: z.object({ step: z.number().int() }).strict(),
    });
    expect(() => counter({ step: 'two' } as never)).toThrow(new PluginConfigError('counter', 'step: Invalid input: expected number, received string'));
  });
});

describe('appOf', () => {
  it('takes an app by parts: tools as a list or a record, plugins, models, providers, stop policies', () => {
    const app = appOf(defineApp({ ...base, tools: { echo }, plugins: [plugin('x')], stopPolicies: [{ id: 'never', evaluate: () => ({ stop: false }) }] }));
    expect(app.agents.map((a) => a.id)).toEqual(['a']);
    expect(app.tools.map((t) => t.descriptor.id)).toEqual(['echo']);
    expect(app.plugins.map((p) => p.name)).toEqual(['x']);
    expect(Object.keys(app.providers)).toEqual(['p']);
    expect(app.stopPolicies.map((s) => s.id)).toEqual(['never']);
  });

  it('an AI SDK model (specification v3) is a provider through the AI SDK adapter: the app runs on it', async () => {
    const model = new MockLanguageModelV3({
      doStream: async () => ({
        stream: simulateReadableStream({
          chunks: [
            { type: 'text-start', id: 't' },
            { type: 'text-delta', id: 't', delta: 'from the model' },
            { type: 'text-end', id: 't' },
            {
              type: 'finish',
              finishReason: { unified: 'stop', raw: 'stop' },
              usage: { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } },
            },
          ],
        }),
      }),
    });
    const app = appOf(defineApp({ ...base, providers: { p: model } }));
    const runtime = addApp(new AgentRuntimeBuilder(), app).build();
    if (!runtime.ok) throw new Error(JSON.stringify(runtime.error));
    const events: { event_type: string; delta?: string }[] = [];
    const r = await runtime.value.run({ agentId: 'a', messages: [Messages.user('hi')] }, { emit: (e) => void events.push(e as never) });
    expect(r.ok).toBe(true);
    expect(
      events
        .filter((e) => e.event_type === 'text_delta')
        .map((e) => e.delta)
        .join(''),
    ).toBe('from the model');
  });

  it('refuses each wrong field in one line naming it', () => {
    expect(refusal(42)).toBe('(export): not an app: export default defineApp({ agents, tools, plugins, models, providers })');
    expect(refusal({ nothing: 1 })).toBe('nothing: unknown field (an app has agents, tools, plugins, models, providers, stopPolicies)');
    expect(refusal({})).toBe('(export): not an app: export default defineApp({ agents, tools, plugins, models, providers })');
    expect(refusal({ agents: [{ id: 'a', modle: 'm' }] })).toBe('agents[0].modle: unknown field');
    expect(refusal({ agents: [{ id: 'a' }, { id: 'a' }] })).toBe("agents[1].id: 'a' is named twice (agents[0])");
    expect(refusal({ tools: [echo, echo] })).toBe("tools[1]: tool 'echo' is named twice (tools[0])");
    expect(refusal({ tools: { shout: echo } })).toBe("tools.shout: the tool's id is 'echo', not 'shout'");
    expect(refusal({ tools: [{ name: 'x' }] })).toBe(
      'tools[0]: not a tool (defineTool({ id, description, args, execute }); an AI SDK tool() goes in a record: tools: { id: tool({...}) })',
    );
    expect(refusal({ tools: { x: 3 } })).toBe('tools.x: not a tool (an AI SDK tool() or defineTool(...))');
    expect(refusal({ plugins: [plugin('x'), plugin('x')] })).toBe("plugins[1]: plugin 'x' is named twice (plugins[0])");
    expect(refusal({ plugins: [{ name: 'x' }] })).toBe('plugins[0]: not a plugin ({ name, register(registrar) }, or what a pluginFactory makes)');
    expect(refusal({ models: { m: { provider: 'p' } } })).toBe('models.m.model_name: Invalid input: expected string, received undefined');
    expect(refusal({ providers: { p: {} } })).toBe(
      'providers.p: not a provider (an LlmExecutor such as scriptedProvider(...), or an AI SDK model such as openai("gpt-4o-mini"))',
    );
    expect(refusal({ providers: { p: { specificationVersion: 'v2', provider: 'x', modelId: 'y', doStream: () => undefined } } })).toBe(
      'providers.p: an AI SDK model of specification v2 (this awaken speaks v3: ai@6 providers)',
    );
    expect(refusal({ stopPolicies: [{ id: 'x' }] })).toBe('stopPolicies[0]: not a stop policy ({ id, evaluate(stats) })');
    expect(refusal({ agents: {} })).toBe('agents: not a list');
    expect(
      refusal({
        plugins: [
          {
            name: 'bad',
            register: () => {
              throw new Error('no database');
            },
          },
        ],
      }),
    ).toBe("plugins[0]: plugin 'bad': register threw: no database");
  });
});

describe('appProblem', () => {
  const loaded = (definition: object): LoadedApp => ({ app: appOf(definition), file: 'app.ts', version: 'sha256:000000000000', module: {} });

  it('an id the app and its config both define is refused, naming both places', () => {
    const config = { file: 'awaken.yaml', agents: ['b', 'a'], models: {}, providers: [] };
    expect(appProblem(loaded(base), config)).toBe("awaken.yaml: agents[1].id: 'a' is also defined in app.ts (agents[0])");
    expect(appProblem(loaded(base), { ...config, agents: [], models: { m: { provider: 'p' } } })).toBe(
      "awaken.yaml: models.m: 'm' is also defined in app.ts (models.m)",
    );
    expect(appProblem(loaded(base), { ...config, agents: [], providers: ['p'] })).toBe("awaken.yaml: providers.p: 'p' is also defined in app.ts (providers.p)");
  });

  it('what an agent names must be there; a plugin may not take a built-in name; an app needs an agent', () => {
    expect(appProblem(loaded({ ...base, agents: [{ id: 'a', model: 'gpt' }] }))).toBe("app.ts: agents[0].model: no model 'gpt' (models: m)");
    expect(appProblem(loaded({ ...base, models: { m: { provider: 'q', model_name: 'n' } } }))).toBe(
      "app.ts: models.m.provider: no provider 'q' (providers: p)",
    );
    expect(appProblem(loaded({ ...base, agents: [{ id: 'a', model: 'm', plugin_ids: ['counter'] }] }))).toBe(
      "app.ts: agents[0].plugin_ids[0]: no plugin 'counter' (the app's: none; built in: tool-gate, finish-on, deferred-tools, permission, reminder, state_machine, agent_handoff, generative-ui, open-generative-ui, skills-discovery, skills-active-instructions, observability)",
    );
    expect(appProblem(loaded({ ...base, plugins: [plugin('permission')] }))).toBe(
      "app.ts: plugins[0]: 'permission' is the name of a built-in plugin: choose another",
    );
    expect(appProblem(loaded({ models: base.models, providers: base.providers }))).toBe('app.ts: agents: the app declares no agent');
    expect(appProblem(loaded(base))).toBeUndefined();
  });
});
