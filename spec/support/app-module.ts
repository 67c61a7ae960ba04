/** An app module's text, for specs that run `awaken` on a user's app in a folder of its own. */

/** An app: agent `helper` with plugin `counter` (made by a factory), tool `shout`, a scripted model answering `answer`. */
export const app = (
  answer: string,
  step = 1,
): string => `import { defineApp, defineStateKey, defineTool, pluginFactory, scriptedProvider, StateCommand } from 'awaken-ts';
import { z } from 'zod';

const Calls = defineStateKey<number, number>({ key: 'counter.calls', init: () => 0, apply: (s, u) => s + u, codec: z.number() });
export const counter = pluginFactory('counter', (config: { step: number }) => ({
  name: 'counter',
  register(r) {
    r.registerKey(Calls);
    r.registerPhaseHook('after_tool_execute', () => StateCommand.empty().update(Calls, config.step));
  },
}));

const shout = defineTool({
  id: 'shout',
  description: 'Says the text louder.',
  args: z.object({ text: z.string() }),
  execute: ({ text }) => ({ tool_name: 'shout', status: 'success', data: text.toUpperCase() }),
});

export default defineApp({
  agents: [{ id: 'helper', model: 'default', system_prompt: 'You help.', plugin_ids: ['counter'] }],
  tools: [shout],
  plugins: [counter({ step: ${step} })],
  models: { default: { provider: 'script', model_name: 'scripted' } },
  providers: {
    script: scriptedProvider([
      { tool_calls: [{ id: 'c1', name: 'shout', arguments: { text: 'hi' } }] },
      { text: ${JSON.stringify(answer)} },
    ]),
  },
});
`;
