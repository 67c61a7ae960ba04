import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/contract/json.ts';
import { Messages } from '../../src/contract/message.ts';
import { a2uiInstructions, a2uiMessagesOf, a2uiPlugin, DEFAULT_A2UI_CATALOG_ID, validateA2uiMessages } from '../../src/plugins/generative-ui.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { fuzzPlugin } from '../../src/testing/fuzz-plugin.ts';

/** A surface as the book and A2UI v0.8 build it: components, data, then the root. */
const ORDER_FORM: JsonValue[] = [
  {
    surfaceUpdate: {
      surfaceId: 'order-form-1',
      components: [
        { id: 'root', component: { Column: { children: { explicitList: ['title', 'name'] } } } },
        { id: 'title', component: { Text: { usageHint: 'h2', text: { literalString: 'Order' } } } },
        { id: 'name', component: { TextField: { label: { literalString: 'Name' }, text: { path: '/order/name' } } } },
      ],
    },
  },
  { dataModelUpdate: { surfaceId: 'order-form-1', path: '/order', contents: [{ key: 'name', valueString: 'Ada' }] } },
  { beginRendering: { surfaceId: 'order-form-1', root: 'root' } },
];

/** What the book's `createSurface` (A2UI v0.9) is refused with: the version it belongs to, and the one this agent renders. */
const V09_CREATE =
  "messages[0]: 'createSurface' is an A2UI v0.9 message; this agent renders A2UI v0.8, whose messages are surfaceUpdate, dataModelUpdate, beginRendering and deleteSurface";

describe('A2UI v0.8 message validation (0.6 a2ui/tests.rs vectors)', () => {
  it.each([
    ['beginRendering', { beginRendering: { surfaceId: 's1', root: 'root' } }],
    ['surfaceUpdate', { surfaceUpdate: { surfaceId: 's1', components: [{ id: 'root', component: { Text: { text: { literalString: 'hi' } } } }] } }],
    [
      'dataModelUpdate',
      {
        dataModelUpdate: {
          surfaceId: 's1',
          contents: [
            { key: 'name', valueString: 'x' },
            { key: 'tags', valueMap: [{ key: '0', valueString: 'a' }] },
          ],
        },
      },
    ],
    ['deleteSurface', { deleteSurface: { surfaceId: 's1' } }],
  ] as const)('accepts a valid %s', (_n, m) => {
    expect(validateA2uiMessages([m as JsonValue])).toEqual([]);
  });

  it.each([
    ['no message type', {}, 'messages[0]: missing message type; expected one of: surfaceUpdate, dataModelUpdate, beginRendering, deleteSurface'],
    [
      'two message types',
      { beginRendering: { surfaceId: 's', root: 'r' }, deleteSurface: { surfaceId: 's' } },
      'messages[0]: multiple message types in one object: beginRendering, deleteSurface',
    ],
    ['the book’s mixed-version form', { version: 'v0.8', createSurface: { surfaceId: 's', catalogId: 'c' } }, V09_CREATE],
    [
      'A2UI v0.9’s updateComponents',
      { version: 'v0.9', updateComponents: { surfaceId: 's', components: [] } },
      "messages[0]: 'updateComponents' is an A2UI v0.9 message; this agent renders A2UI v0.8, whose messages are surfaceUpdate, dataModelUpdate, beginRendering and deleteSurface",
    ],
    [
      'A2UI v0.9’s updateDataModel',
      { updateDataModel: { surfaceId: 's', value: {} } },
      "messages[0]: 'updateDataModel' is an A2UI v0.9 message; this agent renders A2UI v0.8, whose messages are surfaceUpdate, dataModelUpdate, beginRendering and deleteSurface",
    ],
    [
      'a version field beside a message',
      { version: 'v0.8', deleteSurface: { surfaceId: 's' } },
      "messages[0]: unknown field 'version' beside deleteSurface (A2UI v0.8 has no version field or wrapper)",
    ],
    ['a missing surfaceId', { beginRendering: { root: 'r' } }, 'messages[0].beginRendering.surfaceId: is required'],
    ['an empty surfaceId', { deleteSurface: { surfaceId: '' } }, 'messages[0].deleteSurface.surfaceId: must not be empty'],
    ['a missing root', { beginRendering: { surfaceId: 's' } }, 'messages[0].beginRendering.root: is required'],
    ['empty components', { surfaceUpdate: { surfaceId: 's', components: [] } }, 'messages[0].surfaceUpdate.components: must not be empty'],
    [
      'a component without id',
      { surfaceUpdate: { surfaceId: 's', components: [{ component: { Text: { text: {} } } }] } },
      'messages[0].surfaceUpdate.components[0].id: is required',
    ],
    [
      'a component without payload',
      { surfaceUpdate: { surfaceId: 's', components: [{ id: 'a' }] } },
      'messages[0].surfaceUpdate.components[0].component: must be a JSON object',
    ],
    [
      'two component payloads',
      { surfaceUpdate: { surfaceId: 's', components: [{ id: 'a', component: { Text: {}, Row: {} } }] } },
      'messages[0].surfaceUpdate.components[0].component: must contain exactly one component payload, such as {"Text": {…}}',
    ],
    [
      'Text copy not nested',
      { surfaceUpdate: { surfaceId: 's', components: [{ id: 'a', component: { Text: { text: 'hi' } } }] } },
      'messages[0].surfaceUpdate.components[0].component.Text.text: must be a JSON object ({"literalString": …} or {"path": …})',
    ],
    [
      'a Button without action name',
      { surfaceUpdate: { surfaceId: 's', components: [{ id: 'b', component: { Button: { child: 'l', action: {} } } }] } },
      'messages[0].surfaceUpdate.components[0].component.Button.action.name: is required',
    ],
    [
      'a Button context as an object',
      { surfaceUpdate: { surfaceId: 's', components: [{ id: 'b', component: { Button: { child: 'l', action: { name: 'go', context: { k: 'v' } } } } }] } },
      'messages[0].surfaceUpdate.components[0].component.Button.action.context: must be an array',
    ],
    [
      'a legacy MultipleChoice',
      { surfaceUpdate: { surfaceId: 's', components: [{ id: 'm', component: { MultipleChoice: { choices: [], label: 'x' } } }] } },
      'messages[0].surfaceUpdate.components[0].component.MultipleChoice: must use the v0.8 fields options and selections',
    ],
    ['empty contents', { dataModelUpdate: { surfaceId: 's', contents: [] } }, 'messages[0].dataModelUpdate.contents: must not be empty'],
    [
      'an entry without key',
      { dataModelUpdate: { surfaceId: 's', contents: [{ valueString: 'x' }] } },
      'messages[0].dataModelUpdate.contents[0].key: is required',
    ],
    [
      'two values in an entry',
      { dataModelUpdate: { surfaceId: 's', contents: [{ key: 'k', valueString: 'x', valueNumber: 1 }] } },
      'messages[0].dataModelUpdate.contents[0]: one value field, not valueString and valueNumber',
    ],
    [
      'a nested entry without key',
      { dataModelUpdate: { surfaceId: 's', contents: [{ key: 'k', valueMap: [{ valueString: 'x' }] }] } },
      'messages[0].dataModelUpdate.contents[0].valueMap[0].key: is required',
    ],
  ] as const)('refuses %s, naming the message and the field', (_n, m, error) => {
    expect(validateA2uiMessages([m as JsonValue])).toEqual([error]);
  });

  it('reports each malformed message of several by its index', () => {
    expect(validateA2uiMessages([{ deleteSurface: { surfaceId: 'ok' } }, {}, { deleteSurface: { surfaceId: 'ok' } }, 42])).toEqual([
      'messages[1]: missing message type; expected one of: surfaceUpdate, dataModelUpdate, beginRendering, deleteSurface',
      'messages[3]: expected a JSON object',
    ]);
  });

  it('reads several messages, one, or the flat form', () => {
    expect(a2uiMessagesOf({ messages: ORDER_FORM })).toEqual(ORDER_FORM);
    expect(a2uiMessagesOf({ deleteSurface: { surfaceId: 's' } })).toEqual([{ deleteSurface: { surfaceId: 's' } }]);
    expect(a2uiMessagesOf({ surfaceId: 's', root: 'root' })).toEqual([{ beginRendering: { surfaceId: 's', root: 'root' } }]);
    expect(a2uiMessagesOf({ surfaceId: 's', components: [] })).toEqual([{ surfaceUpdate: { surfaceId: 's', components: [] } }]);
    expect(a2uiMessagesOf({ surfaceId: 's', path: '/a', contents: [] })).toEqual([{ dataModelUpdate: { surfaceId: 's', path: '/a', contents: [] } }]);
    expect(a2uiMessagesOf({ surfaceId: 's' })).toEqual([{ deleteSurface: { surfaceId: 's' } }]);
    expect(a2uiMessagesOf({})).toEqual([]);
  });
});

function run(script: readonly ScriptStep[], plugin = a2uiPlugin({ version: 'v0.8' }), sections: Record<string, unknown> = {}) {
  const llm = new ScriptedLlm(script);
  const built = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('p', llm)
    .withModel('m', { provider: 'p', model_name: 'ui-model' })
    .withPlugin(plugin.name, plugin)
    .withAgentSpec({
      id: 'ui',
      model: 'm',
      system_prompt: 'Render structured UI when visual output helps.',
      plugin_ids: ['generative-ui'],
      active_hook_filter: ['generative-ui'],
      sections: sections as never,
    })
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return { runtime: built.value, llm };
}
const systemText = (llm: ScriptedLlm, i = 0): string =>
  (llm.requests[i]?.messages ?? [])
    .filter((m) => m.role === 'system')
    .map((m) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join(''))
    .join('\n');

describe('the generative-ui plugin under A2UI v0.8 (book: 使用 Generative UI（A2UI））', () => {
  it('render_a2ui carries several messages in one call: the result is {a2ui, rendered: true}, and the a2ui activity names the catalog', async () => {
    const { runtime, llm } = run(
      [{ tool_calls: [{ id: 'u1', name: 'render_a2ui', arguments: { messages: ORDER_FORM } }] }, { text: 'Here is the form.' }],
      a2uiPlugin({ version: 'v0.8', catalog_id: 'my-catalog' }),
    );
    const sink = new VecEventSink();
    const r = await runtime.run({ threadId: 't', agentId: 'ui', messages: [Messages.user('show me an order form')] }, sink);
    expect(r.ok && r.value.response).toBe('Here is the form.');
    const done = sink.events.find((e) => e.event_type === 'tool_call_done');
    expect(done?.event_type === 'tool_call_done' && done.result).toEqual({
      tool_name: 'render_a2ui',
      status: 'success',
      data: { a2ui: ORDER_FORM, rendered: true },
      message: null,
    });
    const activity = sink.events.find((e) => e.event_type === 'activity_snapshot' && e.activity_type === 'a2ui');
    expect(activity).toEqual({
      event_type: 'activity_snapshot',
      message_id: 'u1',
      activity_type: 'a2ui',
      content: { schema: 'a2ui.v0.8', catalog_id: 'my-catalog', messages: ORDER_FORM },
      replace: true,
    });
    // The model was told how, with the catalog.
    expect(systemText(llm)).toContain('## A2UI Declarative UI');
    expect(systemText(llm)).toContain('The client renders with the catalog my-catalog.');
    expect(llm.requests[0]?.tools.map((t) => t.id)).toEqual(['render_a2ui']);
  });

  it('a malformed message is an invalid argument the model reads, naming the message and field', async () => {
    const { runtime } = run([
      {
        tool_calls: [
          { id: 'u1', name: 'render_a2ui', arguments: { messages: [ORDER_FORM[0] as JsonValue, { beginRendering: { surfaceId: 'order-form-1' } }] } },
        ],
      },
      { text: 'Let me fix that.' },
    ]);
    const sink = new VecEventSink();
    await runtime.run({ threadId: 't', agentId: 'ui', messages: [Messages.user('form')] }, sink);
    const done = sink.events.find((e) => e.event_type === 'tool_call_done');
    expect(done?.event_type === 'tool_call_done' && done.result.message).toBe(
      'Invalid arguments: A2UI validation failed: messages[1].beginRendering.root: is required',
    );
    expect(sink.events.some((e) => e.event_type === 'activity_snapshot' && e.activity_type === 'a2ui')).toBe(false);
  });

  it('the book’s createSurface call is refused naming A2UI v0.9 and the v0.8 this agent renders, in the whole message the model reads', async () => {
    // The book's step 3, as the model would send it: in `messages`, and as the one message of the call.
    const book = { version: 'v0.8', createSurface: { surfaceId: 'order-form-1', catalogId: 'my-catalog' } };
    for (const args of [{ messages: [book] }, book]) {
      const { runtime } = run([{ tool_calls: [{ id: 'u1', name: 'render_a2ui', arguments: args }] }, { text: 'Let me use v0.8.' }]);
      const sink = new VecEventSink();
      await runtime.run({ threadId: 't', agentId: 'ui', messages: [Messages.user('form')] }, sink);
      const done = sink.events.find((e) => e.event_type === 'tool_call_done');
      expect(done?.event_type === 'tool_call_done' && done.result.message, JSON.stringify(args)).toBe(
        `Invalid arguments: A2UI validation failed: ${V09_CREATE}`,
      );
    }
    // The doc quotes it as the model reads it.
    const doc = readFileSync(join(import.meta.dirname, '../../docs/plugins/generative-ui.md'), 'utf8');
    expect(doc).toContain(`\n\`\`\`\nInvalid arguments: A2UI validation failed: ${V09_CREATE}\n\`\`\`\n`);
  });

  it('instructions: the standard catalog by default, examples appended, custom instructions instead, and the agent’s section over the plugin’s', async () => {
    expect(a2uiInstructions()).toContain(`The client renders with the catalog ${DEFAULT_A2UI_CATALOG_ID}.`);
    for (const key of ['surfaceUpdate', 'dataModelUpdate', 'beginRendering', 'deleteSurface']) expect(a2uiInstructions()).toContain(key);
    expect(a2uiInstructions('c', 'Example: a card')).toMatch(/---BEGIN A2UI EXAMPLES---\nExample: a card\n---END A2UI EXAMPLES---$/);
    const custom = run([{ text: 'ok' }], a2uiPlugin({ version: 'v0.8', instructions: 'You can render UI by calling render_a2ui.' }));
    await custom.runtime.run({ threadId: 't', agentId: 'ui', messages: [Messages.user('hi')] }, new VecEventSink());
    expect(systemText(custom.llm)).toContain('You can render UI by calling render_a2ui.');
    expect(systemText(custom.llm)).not.toContain('## A2UI Declarative UI');
    const overridden = run([{ text: 'ok' }], a2uiPlugin({ version: 'v0.8', catalog_id: 'plugin-catalog' }), {
      'generative-ui': { catalog_id: 'agent-catalog' },
    });
    await overridden.runtime.run({ threadId: 't', agentId: 'ui', messages: [Messages.user('hi')] }, new VecEventSink());
    expect(systemText(overridden.llm)).toContain('The client renders with the catalog agent-catalog.');
  });

  it('an unknown field in the agent’s section stops the agent from being built, naming it', () => {
    expect(() => run([], a2uiPlugin(), { 'generative-ui': { catalogs: 'x' } })).toThrow("invalid config section 'generative-ui' of plugin 'generative-ui'");
  });

  it('passes the fuzz kit (deterministic hooks, its own keys only)', async () => {
    const report = await fuzzPlugin(a2uiPlugin(), { numRuns: 30, seed: 7 });
    expect(report.failures).toEqual([]);
  });
});
