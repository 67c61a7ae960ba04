import { describe, expect, it } from 'vitest';
import { A2UI_SURFACE_ACTIVITY } from '../../src/contract/a2ui.ts';
import { a2uiPlugin } from '../../src/plugins/generative-ui.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import type { Tool } from '../../src/runtime/tool.ts';
import { createHttpApp } from '../../src/server/http.ts';
import { RunRegistry } from '../../src/server/run-registry.ts';
import { MemoryStore } from '../../src/stores/memory.ts';

/**
 * Which agents `/v1/copilotkit/info` says draw A2UI v0.9 (`a2ui.agents`): CopilotKit's page renders
 * `a2ui-surface` activities only from those. It is asked of each agent's tools as the agent is
 * resolved — the plugin's settings merged with the agent's section, and a tool of one's own that
 * reports the activity — not read off the section alone.
 */

/** A tool of one's own that draws a surface itself, and says so. */
const ownSurfaceTool: Tool = {
  descriptor: { id: 'draw_dashboard', name: 'draw_dashboard', description: 'Draws the dashboard', parameters: { type: 'object', properties: {} } },
  activityTypes: [A2UI_SURFACE_ACTIVITY],
  execute: () => ({ tool_name: 'draw_dashboard', status: 'success', data: null, message: null }),
};

async function infoOf(plugin: ReturnType<typeof a2uiPlugin>): Promise<unknown> {
  const store = new MemoryStore();
  const builder = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('scripted', new ScriptedLlm([]))
    .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
    .withThreadRunStore(store)
    .withPlugin(plugin.name, plugin)
    .withTool(ownSurfaceTool);
  const agent = (id: string, more: object) => builder.withAgentSpec({ id, model: 'm', system_prompt: id, excluded_tools: ['draw_dashboard'], ...more });
  agent('plain', {});
  agent('drawn', { plugin_ids: ['generative-ui'] });
  agent('v08-section', { plugin_ids: ['generative-ui'], sections: { 'generative-ui': { version: 'v0.8' } } });
  agent('v09-section', { plugin_ids: ['generative-ui'], sections: { 'generative-ui': { version: 'v0.9' } } });
  agent('own-tool', { excluded_tools: [] });
  const built = builder.build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  const app = createHttpApp({ runtime: built.value, store, registry: new RunRegistry(built.value, store) });
  const info = (await (await app.request('/v1/copilotkit/info')).json()) as { a2ui?: unknown };
  return info.a2ui;
}

describe('/v1/copilotkit/info: the agents that draw A2UI v0.9', () => {
  it('the plugin at its default: its agents, but one whose section says v0.8; and an agent with a tool of its own that draws a surface', async () => {
    expect(await infoOf(a2uiPlugin())).toEqual({ enabled: true, agents: ['drawn', 'own-tool', 'v09-section'] });
  });

  it('the plugin set to v0.8: only the agent whose section says v0.9, and the tool of its own', async () => {
    expect(await infoOf(a2uiPlugin({ version: 'v0.8' }))).toEqual({ enabled: true, agents: ['own-tool', 'v09-section'] });
  });
});
