import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MessageProcessor } from '@a2ui/web_core/v0_9';
import { basicCatalog } from '@a2ui/web_core/v0_9/basic_catalog';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/contract/json.ts';
import { Messages } from '../../src/contract/message.ts';
import { A2UI_BASIC_CATALOG } from '../../src/plugins/a2ui-basic-catalog.ts';
import { catalogOfSchema, type A2uiCatalog } from '../../src/plugins/a2ui-catalog.ts';
import { a2uiOperations, a2uiV09Instructions, a2uiV09MessagesOf, validateA2uiV09Messages } from '../../src/plugins/a2ui-v09.ts';
import { a2uiPlugin } from '../../src/plugins/generative-ui.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';

const repo = join(import.meta.dirname, '../..');
const BASIC = 'https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json';

/** One surface as the model writes it with the flat form: components, then data. */
const ORDER = {
  surfaceId: 's1',
  components: [
    { id: 'root', component: 'Card', child: 'content' },
    { id: 'content', component: 'Column', children: ['title', 'name', 'submit'] },
    { id: 'title', component: 'Text', variant: 'h2', text: 'Order' },
    { id: 'name', component: 'TextField', label: 'Name', value: { path: '/order/name' } },
    { id: 'submit_label', component: 'Text', text: 'Place the order' },
    { id: 'submit', component: 'Button', child: 'submit_label', action: { event: { name: 'order.submit', context: { name: { path: '/order/name' } } } } },
  ],
  data: { order: { name: 'Ada' } },
} satisfies JsonValue;

/** What one render call of ORDER is on the wire: createSurface, updateComponents, updateDataModel. */
const ORDER_OPERATIONS: JsonValue[] = [
  { version: 'v0.9', createSurface: { surfaceId: 's1', catalogId: BASIC } },
  { version: 'v0.9', updateComponents: { surfaceId: 's1', components: ORDER.components } },
  { version: 'v0.9', updateDataModel: { surfaceId: 's1', path: '/', value: ORDER.data } },
];

const comps = (surfaceId: string, components: JsonValue[]): JsonValue => ({ version: 'v0.9', updateComponents: { surfaceId, components } });
const ROOT_TEXT = { id: 'root', component: 'Text', text: 'hi' };

describe('the A2UI v0.9 basic catalog', () => {
  it('is generated from @a2ui/web_core’s basic catalog.json: 18 components, their properties, descriptions, enums and required ones', () => {
    const schema = JSON.parse(readFileSync(join(repo, 'node_modules/@a2ui/web_core/src/v0_9/schemas/catalogs/basic/catalog.json'), 'utf8'));
    expect(catalogOfSchema(schema)).toEqual(A2UI_BASIC_CATALOG);
    expect(A2UI_BASIC_CATALOG.catalogId).toBe(BASIC);
    expect(Object.keys(A2UI_BASIC_CATALOG.components)).toEqual([
      'Text',
      'Image',
      'Icon',
      'Video',
      'AudioPlayer',
      'Row',
      'Column',
      'List',
      'Card',
      'Tabs',
      'Modal',
      'Divider',
      'Button',
      'TextField',
      'CheckBox',
      'ChoicePicker',
      'Slider',
      'DateTimeInput',
    ]);
    expect(A2UI_BASIC_CATALOG.components['Text']).toEqual({
      properties: {
        text: {
          type: 'DynamicString',
          description:
            'The text content to display. While simple Markdown formatting is supported (i.e. without HTML, images, or links), utilizing dedicated UI components is generally preferred for a richer and more structured presentation.',
        },
        variant: { type: 'string', description: 'A hint for the base text style.', enum: ['h1', 'h2', 'h3', 'h4', 'h5', 'caption', 'body'] },
      },
      required: ['text'],
    });
    expect(A2UI_BASIC_CATALOG.components['Button']?.required).toEqual(['child', 'action']);
    expect(Object.keys(A2UI_BASIC_CATALOG.components['Button']?.properties ?? {})).toEqual(['child', 'variant', 'action', 'checks']);
    // No JSON Schema reference is left for the model to read.
    expect(JSON.stringify(A2UI_BASIC_CATALOG)).not.toContain('$ref');
  });
});

describe('A2UI v0.9 message validation against the catalog', () => {
  it('accepts each of the four messages, and the flat form', () => {
    expect(
      validateA2uiV09Messages([
        { version: 'v0.9', createSurface: { surfaceId: 's1', catalogId: BASIC } },
        comps('s1', ORDER.components),
        { version: 'v0.9', updateDataModel: { surfaceId: 's1', path: '/order', value: { name: 'x' } } },
        { version: 'v0.9', deleteSurface: { surfaceId: 'old' } },
      ]),
    ).toEqual([]);
    expect(validateA2uiV09Messages(a2uiV09MessagesOf(ORDER))).toEqual([]);
  });

  it.each([
    ['no message type', {}, 'messages[0]: missing message type; expected one of: createSurface, updateComponents, updateDataModel, deleteSurface'],
    [
      'two message types',
      { version: 'v0.9', deleteSurface: { surfaceId: 's' }, createSurface: { surfaceId: 's' } },
      'messages[0]: multiple message types in one object: createSurface, deleteSurface',
    ],
    [
      'a v0.8 message',
      { beginRendering: { surfaceId: 's', root: 'root' } },
      "messages[0]: 'beginRendering' is an A2UI v0.8 message; this agent renders A2UI v0.9, whose messages are createSurface, updateComponents, updateDataModel and deleteSurface",
    ],
    [
      'another version',
      { version: 'v0.8', deleteSurface: { surfaceId: 's' } },
      `messages[0].version: 'v0.8' is not the A2UI version this agent renders; write "v0.9" (or leave it out)`,
    ],
    ['a field beside the message', { version: 'v0.9', id: 1, deleteSurface: { surfaceId: 's' } }, "messages[0]: unknown field 'id' beside deleteSurface"],
    ['a missing surfaceId', { version: 'v0.9', deleteSurface: {} }, 'messages[0].deleteSurface.surfaceId: is required'],
    [
      'another catalog',
      { version: 'v0.9', createSurface: { surfaceId: 's', catalogId: 'basic' } },
      `messages[0].createSurface.catalogId: 'basic' is not the catalog this agent renders with (${BASIC}); leave it out and the agent names its catalog`,
    ],
    [
      'an unknown field of createSurface',
      { version: 'v0.9', createSurface: { surfaceId: 's', root: 'root' } },
      "messages[0].createSurface: unknown field 'root' (createSurface has surfaceId, catalogId, theme and sendDataModel)",
    ],
    ['empty components', comps('s', []), 'messages[0].updateComponents.components: must not be empty'],
    [
      'a component the catalog has not',
      comps('s', [ROOT_TEXT, { id: 'chart', component: 'Chart', data: [] }]),
      `messages[0].updateComponents.components[1].component: 'Chart' is not in the catalog ${BASIC}; its components are Text, Image, Icon, Video, AudioPlayer, Row, Column, List, Card, Tabs, Modal, Divider, Button, TextField, CheckBox, ChoicePicker, Slider and DateTimeInput`,
    ],
    [
      'a v0.8 component payload',
      comps('s', [{ id: 'root', component: { Text: { text: { literalString: 'hi' } } } }]),
      'messages[0].updateComponents.components[0].component: must be a component name: A2UI v0.9 writes {"id": …, "component": "Text", "text": …}, the properties beside it',
    ],
    ['a component without id', comps('s', [{ component: 'Text', text: 'x' }]), 'messages[0].updateComponents.components[0].id: is required'],
    ['a missing required property', comps('s', [{ id: 'root', component: 'Text' }]), 'messages[0].updateComponents.components[0].text: is required'],
    [
      'a property the component has not',
      comps('s', [{ id: 'root', component: 'Text', text: 'x', usageHint: 'h2' }]),
      "messages[0].updateComponents.components[0].usageHint: Text has no property 'usageHint'; its properties are text and variant",
    ],
    [
      'a value outside the enum',
      comps('s', [{ id: 'root', component: 'Text', text: 'x', variant: 'huge' }]),
      "messages[0].updateComponents.components[0].variant: 'huge' is not one of h1, h2, h3, h4, h5, caption, body",
    ],
    [
      'v0.8 children',
      comps('s', [{ id: 'root', component: 'Column', children: { explicitList: ['a'] } }]),
      'messages[0].updateComponents.components[0].children: must be a list of component ids or {"componentId": …, "path": …}',
    ],
    [
      'a v0.8 button action',
      comps('s', [{ id: 'root', component: 'Button', child: 'l', action: { name: 'go' } }]),
      'messages[0].updateComponents.components[0].action: must be {"event": {"name": …, "context": {…}}} or {"functionCall": {"call": …}}',
    ],
    [
      'a v0.8 literal',
      comps('s', [{ id: 'root', component: 'Text', text: { literalString: 'x' } }]),
      'messages[0].updateComponents.components[0].text: must be a string, {"path": …} or {"call": …}',
    ],
    [
      'an option without value',
      comps('s', [{ id: 'root', component: 'ChoicePicker', options: [{ label: 'High' }], value: [] }]),
      'messages[0].updateComponents.components[0].options[0].value: is required',
    ],
    [
      'a repeated id',
      comps('s', [ROOT_TEXT, { id: 'root', component: 'Divider' }]),
      "messages[0].updateComponents.components[1].id: 'root' is already the id of components[0]",
    ],
    [
      'a relative path',
      { version: 'v0.9', updateDataModel: { surfaceId: 's', path: 'order', value: 1 } },
      'messages[0].updateDataModel.path: must be a JSON Pointer starting with "/" ("/" is the whole data model)',
    ],
  ] as const)('refuses %s, naming the message and the field', (_n, m, error) => {
    expect(validateA2uiV09Messages([m as JsonValue])).toEqual([error]);
  });

  it('refuses what a call as a whole may not be: a surface without components or root, created twice, drawn and removed', () => {
    expect(
      validateA2uiV09Messages([
        { version: 'v0.9', updateDataModel: { surfaceId: 'a', value: {} } },
        comps('b', [{ id: 'top', component: 'Divider' }]),
        { version: 'v0.9', createSurface: { surfaceId: 'c' } },
        comps('c', [{ id: 'root', component: 'Divider' }]),
        { version: 'v0.9', createSurface: { surfaceId: 'c' } },
        { version: 'v0.9', deleteSurface: { surfaceId: 'c' } },
      ]),
    ).toEqual([
      "messages[0].updateDataModel.surfaceId: surface 'a' has no updateComponents in this call; each call draws whole surfaces",
      "messages[1].updateComponents.components: surface 'b' has no component with id 'root'",
      "messages[4].createSurface.surfaceId: surface 'c' is already created by messages[2]",
      "messages[5].deleteSurface.surfaceId: surface 'c' is drawn in this call too",
    ]);
  });

  it('refuses a surface id or a component id longer than a click may name back (200 characters)', () => {
    const long = 's'.repeat(201);
    expect(
      validateA2uiV09Messages([
        comps(long, [{ id: 'root', component: 'Divider' }]),
        comps('ok', [
          { id: 'root', component: 'Column', children: [long] },
          { id: long, component: 'Divider' },
        ]),
        comps('s'.repeat(200), [{ id: 'root', component: 'Divider' }]),
      ]),
    ).toEqual([
      'messages[0].updateComponents.surfaceId: at most 200 characters (a click in the surface names it back)',
      'messages[1].updateComponents.components[1].id: at most 200 characters (a click in the surface names it back)',
    ]);
  });

  it('refuses a button action whose name is longer than its click may name back (200 characters)', () => {
    const button = (name: string): JsonValue[] => [
      { id: 'root', component: 'Button', child: 'label', action: { event: { name } } },
      { id: 'label', component: 'Text', text: 'Go' },
    ];
    expect(validateA2uiV09Messages([comps('a', button('n'.repeat(201))), comps('b', button('n'.repeat(200)))])).toEqual([
      'messages[0].updateComponents.components[0].action.event.name: at most 200 characters (a click in the surface names it back)',
    ]);
  });

  it('reports each malformed message of several by its index', () => {
    expect(validateA2uiV09Messages([comps('s', [ROOT_TEXT]), 42, {}])).toEqual([
      'messages[1]: expected a JSON object',
      'messages[2]: missing message type; expected one of: createSurface, updateComponents, updateDataModel, deleteSurface',
    ]);
  });

  it('checks against a catalog of one’s own: its components, and no other', () => {
    const own: A2uiCatalog = {
      catalogId: 'https://example.com/catalogs/shop.json',
      components: {
        Stack: { properties: { items: { type: 'ChildList' } }, required: ['items'] },
        Price: { properties: { amount: { type: 'DynamicNumber' } }, required: ['amount'] },
      },
    };
    expect(
      validateA2uiV09Messages(
        [
          comps('s', [
            { id: 'root', component: 'Stack', items: ['p'] },
            { id: 'p', component: 'Price', amount: 3 },
          ]),
        ],
        own,
      ),
    ).toEqual([]);
    expect(validateA2uiV09Messages([comps('s', [{ id: 'root', component: 'Text', text: 'x' }])], own)).toEqual([
      "messages[0].updateComponents.components[0].component: 'Text' is not in the catalog https://example.com/catalogs/shop.json; its components are Stack and Price",
    ]);
  });
});

describe('a call’s operations', () => {
  it('are createSurface (with the agent’s catalog), updateComponents, updateDataModel: the flat form', () => {
    expect(a2uiOperations(a2uiV09MessagesOf(ORDER), BASIC)).toEqual(ORDER_OPERATIONS);
  });

  it('a call’s operations render in A2UI’s own message processor (@a2ui/web_core): the surface, its root, its data', () => {
    const processor = new MessageProcessor([basicCatalog], () => undefined);
    processor.processMessages(a2uiOperations(a2uiV09MessagesOf(ORDER), BASIC) as never);
    const surface = processor.model.getSurface('s1');
    expect(surface?.componentsModel.get('root')?.type).toBe('Card');
    expect(surface?.dataModel.get('/order/name')).toBe('Ada');
    expect(basicCatalog.id).toBe(A2UI_BASIC_CATALOG.catalogId);
  });

  /** A valid call: surfaces drawn (an optional createSurface, components with a root, optional data) or removed, its messages in any order. */
  const call = fc
    .uniqueArray(fc.constantFrom('a', 'b', 'c', 'd'), { minLength: 1, maxLength: 4 })
    .chain((ids) =>
      fc.tuple(
        ...ids.map((id) =>
          fc
            .record({ create: fc.boolean(), extra: fc.nat(2), data: fc.nat(2), drop: fc.boolean() })
            .map(({ create, extra, data, drop }): JsonValue[] =>
              drop && !create
                ? [{ version: 'v0.9', deleteSurface: { surfaceId: id } }]
                : [
                    ...(create ? [{ version: 'v0.9', createSurface: { surfaceId: id } }] : []),
                    comps(id, [ROOT_TEXT]),
                    ...Array.from({ length: extra }, (_, i) => comps(id, [{ id: `x${i}`, component: 'Divider' }])),
                    ...Array.from({ length: data }, (_, i) => ({ version: 'v0.9', updateDataModel: { surfaceId: id, path: `/v${i}`, value: i } })),
                  ],
            ),
        ),
      ),
    )
    .chain((groups) => fc.shuffledSubarray(groups.flat(), { minLength: groups.flat().length }));
  const TYPES = ['createSurface', 'updateComponents', 'updateDataModel', 'deleteSurface'] as const;
  const typeOf = (op: JsonValue): string => TYPES.find((t) => Object.hasOwn(op as object, t)) as string;
  const surfaceOf = (op: JsonValue): string => ((op as Record<string, Record<string, string>>)[typeOf(op)] as Record<string, string>)['surfaceId'] as string;

  it('for any valid call, in any order: per surface createSurface → updateComponents → updateDataModel (or a deleteSurface alone), each message kept, each v0.9', () => {
    fc.assert(
      fc.property(call, (messages) => {
        expect(validateA2uiV09Messages(messages)).toEqual([]);
        const ops = a2uiOperations(messages, BASIC);
        const surfaces = [...new Set(messages.map(surfaceOf))];
        // Surfaces in the order the call first names them, each one's operations together.
        expect([...new Set(ops.map(surfaceOf))]).toEqual(surfaces);
        for (const s of surfaces) {
          const mine = ops.filter((o) => surfaceOf(o) === s);
          const ranks = mine.map((o) => TYPES.indexOf(typeOf(o) as (typeof TYPES)[number]));
          expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
          if (ranks[0] === 3) expect(ranks).toEqual([3]);
          else expect(ranks.filter((r) => r === 0)).toEqual([0]);
          // Each of the call's messages for the surface is there, in the call's order within its type.
          const written = messages.filter((m) => surfaceOf(m) === s && typeOf(m) !== 'createSurface');
          expect(mine.filter((o) => typeOf(o) !== 'createSurface')).toEqual(
            [...written].sort((a, b) => TYPES.indexOf(typeOf(a) as never) - TYPES.indexOf(typeOf(b) as never)),
          );
        }
        for (const o of ops) expect((o as Record<string, JsonValue>)['version']).toBe('v0.9');
        for (const o of ops)
          if (typeOf(o) === 'createSurface') expect((o as Record<string, Record<string, string>>)['createSurface']?.['catalogId']).toBe(BASIC);
      }),
      { numRuns: 200, seed: 9 },
    );
  });
});

function run(script: readonly ScriptStep[], plugin = a2uiPlugin(), sections: Record<string, unknown> = {}) {
  const llm = new ScriptedLlm(script);
  const built = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('p', llm)
    .withModel('m', { provider: 'p', model_name: 'ui-model' })
    .withPlugin(plugin.name, plugin)
    .withAgentSpec({
      id: 'ui',
      model: 'm',
      system_prompt: 'Render UI.',
      plugin_ids: ['generative-ui'],
      active_hook_filter: ['generative-ui'],
      sections: sections as never,
    })
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return { runtime: built.value, llm };
}
const systemText = (llm: ScriptedLlm): string =>
  (llm.requests[0]?.messages ?? [])
    .filter((m) => m.role === 'system')
    .map((m) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join(''))
    .join('\n');
const render = async (args: JsonValue, plugin = a2uiPlugin(), sections: Record<string, unknown> = {}) => {
  const { runtime, llm } = run([{ tool_calls: [{ id: 'call-1', name: 'render_a2ui', arguments: args }] }, { text: 'Drawn.' }], plugin, sections);
  const sink = new VecEventSink();
  await runtime.run({ threadId: 't', agentId: 'ui', messages: [Messages.user('an order form')] }, sink);
  const done = sink.events.find((e) => e.event_type === 'tool_call_done');
  return { llm, activities: sink.events.filter((e) => e.event_type === 'activity_snapshot' || e.event_type === 'activity_delta'), done };
};

describe('the generative-ui plugin under A2UI v0.9 (the default)', () => {
  it('one render call is one a2ui-surface activity, replacing, with the operations in the protocol’s order; the result carries them too', async () => {
    const { activities, done } = await render(ORDER);
    expect(activities).toEqual([
      { event_type: 'activity_snapshot', message_id: 'call-1', activity_type: 'a2ui-surface', content: { a2ui_operations: ORDER_OPERATIONS }, replace: true },
    ]);
    expect(done?.event_type === 'tool_call_done' && done.result).toEqual({
      tool_name: 'render_a2ui',
      status: 'success',
      data: { a2ui_operations: ORDER_OPERATIONS, rendered: true },
      message: null,
    });
  });

  it('a component the catalog has not is refused, naming it, in the message the model reads; nothing is drawn', async () => {
    const { activities, done } = await render({
      surfaceId: 's1',
      components: [
        { id: 'root', component: 'Column', children: ['sales'] },
        { id: 'sales', component: 'Chart', series: [1, 2] },
      ],
    });
    const read = `Invalid arguments: A2UI validation failed: messages[0].updateComponents.components[1].component: 'Chart' is not in the catalog ${BASIC}; its components are Text, Image, Icon, Video, AudioPlayer, Row, Column, List, Card, Tabs, Modal, Divider, Button, TextField, CheckBox, ChoicePicker, Slider and DateTimeInput`;
    expect(done?.event_type === 'tool_call_done' && done.result.message).toBe(read);
    expect(activities).toEqual([]);
    // The doc quotes it as the model reads it.
    expect(readFileSync(join(repo, 'docs/plugins/generative-ui.md'), 'utf8')).toContain(`\n\`\`\`\n${read}\n\`\`\`\n`);
  });

  it('the model is offered the v0.9 tool and told the catalog: every component, with its properties', async () => {
    const { llm } = await render(ORDER);
    const text = systemText(llm);
    expect(text).toContain('## A2UI Declarative UI (v0.9)');
    expect(text).toBe(`Render UI.\n${a2uiV09Instructions()}`);
    for (const name of Object.keys(A2UI_BASIC_CATALOG.components)) expect(text).toContain(`\n- ${name}`);
    expect(text).toContain('    - variant (one of h1|h2|h3|h4|h5|caption|body): A hint for the base text style.');
    expect(text).toContain('    - action (Action, required)');
    const tool = llm.requests[0]?.tools.find((t) => t.id === 'render_a2ui');
    expect(tool?.description).toContain('A2UI v0.9');
  });

  it('a catalog of one’s own, and the id its client knows it by', async () => {
    const own = {
      catalogId: 'https://example.com/shop.json',
      components: { Price: { properties: { amount: { type: 'DynamicNumber' } }, required: ['amount'] } },
    };
    const { activities, llm } = await render({ surfaceId: 'p', components: [{ id: 'root', component: 'Price', amount: 3 }] }, a2uiPlugin({ catalog: own }));
    expect(activities[0]?.event_type === 'activity_snapshot' && activities[0].content).toEqual({
      a2ui_operations: [
        { version: 'v0.9', createSurface: { surfaceId: 'p', catalogId: 'https://example.com/shop.json' } },
        { version: 'v0.9', updateComponents: { surfaceId: 'p', components: [{ id: 'root', component: 'Price', amount: 3 }] } },
      ],
    });
    expect(systemText(llm)).toContain('- Price\n    - amount (DynamicNumber, required)');
    expect(systemText(llm)).not.toContain('Example — an order form');
    // CopilotKit 1.74's React renderer registers the basic catalog under another id.
    const renamed = await render(ORDER, a2uiPlugin(), { 'generative-ui': { catalog_id: 'https://a2ui.org/specification/v0_9/basic_catalog.json' } });
    expect(renamed.activities[0]?.event_type === 'activity_snapshot' && renamed.activities[0].content).toEqual({
      a2ui_operations: [
        { version: 'v0.9', createSurface: { surfaceId: 's1', catalogId: 'https://a2ui.org/specification/v0_9/basic_catalog.json' } },
        ...ORDER_OPERATIONS.slice(1),
      ],
    });
  });

  it('v0.8 stays selectable per agent: its section’s version gives the v0.8 tool, instructions and activity', async () => {
    const { activities, llm } = await render({ messages: [{ deleteSurface: { surfaceId: 'old' } }] }, a2uiPlugin(), { 'generative-ui': { version: 'v0.8' } });
    expect(activities).toEqual([
      {
        event_type: 'activity_snapshot',
        message_id: 'call-1',
        activity_type: 'a2ui',
        content: {
          schema: 'a2ui.v0.8',
          catalog_id: 'https://a2ui.org/specification/v0_8/standard_catalog_definition.json',
          messages: [{ deleteSurface: { surfaceId: 'old' } }],
        },
        replace: true,
      },
    ]);
    expect(systemText(llm)).toContain('It sends A2UI v0.8 messages to the client');
    expect(llm.requests[0]?.tools.find((t) => t.id === 'render_a2ui')?.description).toContain('A2UI v0.8');
  });

  it('a catalog under v0.8 stops the agent from being built, naming it', () => {
    expect(() => run([], a2uiPlugin(), { 'generative-ui': { version: 'v0.8', catalog: A2UI_BASIC_CATALOG } })).toThrow(
      "invalid config section 'generative-ui' of plugin 'generative-ui'",
    );
  });

  it('the plugin’s settings and the section’s are checked as one: a catalog on one side and v0.8 on the other stop the build too', () => {
    const refused =
      "invalid config section 'generative-ui' of plugin 'generative-ui': catalog: catalog is an A2UI v0.9 setting; v0.8 names its catalog with catalog_id";
    expect(() => run([], a2uiPlugin({ catalog: A2UI_BASIC_CATALOG }), { 'generative-ui': { version: 'v0.8' } })).toThrow(refused);
    expect(() => run([], a2uiPlugin({ version: 'v0.8' }), { 'generative-ui': { catalog: A2UI_BASIC_CATALOG } })).toThrow(refused);
    // The section's version wins over the plugin's: v0.9 there makes the plugin's catalog one it uses.
    expect(() => run([], a2uiPlugin({ version: 'v0.8' }), { 'generative-ui': { version: 'v0.9', catalog: A2UI_BASIC_CATALOG } })).not.toThrow();
    expect(() => run([], a2uiPlugin({ catalog: A2UI_BASIC_CATALOG }), { 'generative-ui': { catalog_id: 'mine' } })).not.toThrow();
  });
});
