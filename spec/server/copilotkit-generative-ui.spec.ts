import { HttpAgent } from '@ag-ui/client';
import { describe, expect, it } from 'vitest';
import { openGenerativeUiPlugin } from '../../src/plugins/open-generative-ui.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { createHttpApp } from '../../src/server/http.ts';
import { listen } from '../../src/server/node.ts';
import { RunRegistry } from '../../src/server/run-registry.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';

/**
 * Open Generative UI through the server (seed 001 §9.12): an agent that runs the plugin streams its
 * `generateSandboxedUi` calls to AG-UI clients as an `open-generative-ui` activity — a snapshot, its
 * deltas, the call — and `/v1/copilotkit/info` says `openGenerativeUIEnabled`, so CopilotKit's page
 * declares the tool; an agent without the plugin streams the same call as a plain call.
 */

const CALL = { id: 'g1', name: 'generateSandboxedUi', arguments: { html: '<b>hi</b>', initialHeight: 80 } };

function server(plugin: boolean) {
  const store = new MemoryStore();
  const builder = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('scripted', new ScriptedLlm([{ tool_calls: [CALL] }, { text: 'Drawn.' }]))
    .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
    .withThreadRunStore(store)
    .withPlugin(openGenerativeUiPlugin.name, openGenerativeUiPlugin)
    .withAgentSpec({ id: 'agent', model: 'm', system_prompt: 'draw', plugin_ids: plugin ? ['open-generative-ui'] : [] });
  const built = builder.build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return createHttpApp({ runtime: built.value, store, registry: new RunRegistry(built.value, store) });
}

async function typesOf(plugin: boolean): Promise<string[]> {
  const s = await listen(server(plugin), { port: 0 });
  try {
    const agent = new HttpAgent({ url: `${s.url}/v1/ag-ui/run`, threadId: 't1' });
    agent.messages.push({ id: 'u1', role: 'user', content: 'draw' });
    const types: string[] = [];
    await agent.runAgent(
      { runId: 'r1', tools: [{ name: 'generateSandboxedUi', description: 'draws', parameters: { type: 'object', properties: {} } }] },
      { onEvent: ({ event }) => void types.push(event.type) },
    );
    return types;
  } finally {
    await s.close();
  }
}

describe('Open Generative UI on the server', () => {
  it('an agent with the plugin streams the call as a snapshot, its deltas, then the call; /info says so', async () => {
    const types = await typesOf(true);
    const from = types.indexOf('ACTIVITY_SNAPSHOT');
    expect(types.slice(from, from + 3)).toEqual(['ACTIVITY_SNAPSHOT', 'TOOL_CALL_START', 'TOOL_CALL_ARGS']);
    expect(types.filter((t) => t === 'ACTIVITY_DELTA')).toHaveLength(4);
    expect(types.lastIndexOf('ACTIVITY_DELTA')).toBeLessThan(types.indexOf('TOOL_CALL_END'));
    const info = (await (await server(true).request('/v1/copilotkit/info')).json()) as { openGenerativeUIEnabled?: boolean };
    expect(info.openGenerativeUIEnabled).toBe(true);
  });

  it('an agent without it streams the call as any call, and /info says nothing of it', async () => {
    const types = await typesOf(false);
    expect(types).not.toContain('ACTIVITY_SNAPSHOT');
    expect(types).toContain('TOOL_CALL_START');
    const info = (await (await server(false).request('/v1/copilotkit/info')).json()) as Record<string, unknown>;
    expect(Object.hasOwn(info, 'openGenerativeUIEnabled')).toBe(false);
  });
});
