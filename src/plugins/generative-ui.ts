import { z } from 'zod';
import { definePluginConfigKey, readPluginConfig, type AgentSpec } from '../contract/agent-spec.ts';
import type { JsonValue } from '../contract/json.ts';
import { StateCommand } from '../core/state/state-command.ts';
import { AddContextMessage } from '../runtime/builtin-plugins.ts';
import type { RuntimePlugin } from '../runtime/resolve.ts';
import { ToolFailure, type Tool } from '../runtime/tool.ts';
import { perAgentSpec } from './per-spec.ts';
import { unreachable } from '../contract/never.ts';
import { A2UI_BASIC_CATALOG } from './a2ui-basic-catalog.ts';
import type { A2uiCatalog, A2uiPropertySpec } from './a2ui-catalog.ts';
import { a2uiV09Instructions, a2uiV09RenderTool } from './a2ui-v09.ts';

/**
 * Generative UI with A2UI (book: 使用 Generative UI（A2UI））: the `render_a2ui` tool carries A2UI
 * messages from the model to the client, which renders them with its component catalog. A2UI v0.9
 * by default (src/plugins/a2ui-v09.ts: the catalog is the model's vocabulary, each call one
 * `a2ui-surface` activity); v0.8 when an agent's `generative-ui` section says `version: v0.8` (this
 * file), as recorded runs from before v0.9 were made (docs/adr/0067-a2ui-v0-9.md).
 *
 * v0.8: the book's example writes `{"version": "v0.8", "createSurface": …}`, which mixes two
 * versions of the format: A2UI v0.8 as published (and as `@a2ui/lit`'s v0.8 renderer and 0.6's
 * validation accept) has four messages — `surfaceUpdate` (a flat list of components),
 * `dataModelUpdate`, `beginRendering` (the root, once the components exist) and `deleteSurface` —
 * with no version field. Under v0.8 a v0.9 message (`createSurface`, `updateComponents`,
 * `updateDataModel`) is refused saying it is v0.9 and that v0.8 is rendered.
 *
 * One v0.8 call carries one message (`{"surfaceUpdate": {…}}`, the flat form `{surfaceId, components}`)
 * or several (`{"messages": [...]}`); each is checked, and a malformed one is an invalid argument
 * naming it (`messages[1].surfaceUpdate.components[0].component: …`). The result is
 * `{"a2ui": [messages], "rendered": true}` (the book's), and the messages are also the call's
 * `a2ui` activity (`{schema: "a2ui.v0.8", catalog_id, messages}`), which every encoder carries.
 * Before each inference the plugin tells the model how to use the tool: the standard instructions
 * for the version and catalog (and examples), or instructions of your own.
 */

export const A2UI_PLUGIN_ID = 'generative-ui';
export const A2UI_TOOL_ID = 'render_a2ui';
export const A2UI_ACTIVITY = 'a2ui';
export const DEFAULT_A2UI_CATALOG_ID = 'https://a2ui.org/specification/v0_8/standard_catalog_definition.json';
export const A2UI_MESSAGE_KEYS = ['surfaceUpdate', 'dataModelUpdate', 'beginRendering', 'deleteSurface'] as const;
/**
 * The message types A2UI v0.9 has and v0.8 has not (its `deleteSurface` is v0.8's): a model that
 * writes one — the book's example does — is told which version it wrote and which this agent renders.
 */
const A2UI_V09_KEYS = ['createSurface', 'updateComponents', 'updateDataModel'] as const;
const INSTRUCTIONS_KEY = 'generative_ui.instructions';

const PropertySpecSchema: z.ZodType<A2uiPropertySpec> = z.lazy(() =>
  z
    .object({
      type: z.string(),
      description: z.string().optional(),
      enum: z.array(z.string()).optional(),
      items: z
        .object({ properties: z.record(z.string(), PropertySpecSchema), required: z.array(z.string()) })
        .strict()
        .optional(),
    })
    .strict(),
) as z.ZodType<A2uiPropertySpec>;

/** A catalog of one's own (`A2uiCatalog`): what the model may draw with, the components the client has registered. */
export const A2uiCatalogSchema = z
  .object({
    catalogId: z.string().min(1),
    components: z.record(
      z.string().min(1),
      z
        .object({ description: z.string().optional(), properties: z.record(z.string(), PropertySpecSchema), required: z.array(z.string()).default([]) })
        .strict(),
    ),
  })
  .strict();

const CATALOG_UNDER_V08 = 'catalog is an A2UI v0.9 setting; v0.8 names its catalog with catalog_id';

/** The `generative-ui` section (0.6 `A2uiPromptConfig`): overrides of the plugin's own settings. */
export const A2uiPromptConfigSchema = z
  .object({
    /** Which A2UI the tool speaks: `v0.9` (the default) or `v0.8`. */
    version: z.enum(['v0.8', 'v0.9']).optional(),
    /** v0.8: the catalog named to the model. v0.9: the id the client knows the catalog by (its `catalogId` otherwise). */
    catalog_id: z.string().min(1).optional(),
    /** v0.9: the components the model may draw with (the basic catalog otherwise). */
    catalog: A2uiCatalogSchema.optional(),
    examples: z.string().optional(),
    instructions: z.string().optional(),
  })
  .strict()
  .refine((c) => !(c.version === 'v0.8' && c.catalog !== undefined), { message: CATALOG_UNDER_V08, path: ['catalog'] });
/** The plugin's settings: the section's fields, a catalog taken as the library types one (`A2uiCatalog`, read-only). */
export type A2uiPromptConfig = Omit<z.input<typeof A2uiPromptConfigSchema>, 'catalog'> & { readonly catalog?: A2uiCatalog };
type A2uiSettings = z.output<typeof A2uiPromptConfigSchema>;

/** An agent's settings: the plugin's, each field the section sets overriding it. */
const mergedSettings = (plugin: A2uiSettings, section: A2uiSettings): A2uiSettings => ({
  ...plugin,
  ...Object.fromEntries(Object.entries(section).filter(([, v]) => v !== undefined)),
});

/**
 * The section as a plugin with these settings reads it: checked as merged with them, so a catalog on
 * one side and `version: v0.8` on the other are refused as they would be on one side.
 */
const a2uiConfigKey = (plugin: A2uiSettings) =>
  definePluginConfigKey<A2uiSettings>(
    A2UI_PLUGIN_ID,
    A2uiPromptConfigSchema.superRefine((own, ctx) => {
      const merged = mergedSettings(plugin, own);
      const refusedAlready = own.version === 'v0.8' && own.catalog !== undefined;
      if (!refusedAlready && merged.version === 'v0.8' && merged.catalog !== undefined)
        ctx.addIssue({ code: 'custom', message: CATALOG_UNDER_V08, path: ['catalog'] });
    }) as z.ZodType<A2uiSettings>,
    () => ({}),
  );

// ---- validation ------------------------------------------------------------------------------------------

type Obj = { readonly [k: string]: JsonValue };
const isObj = (v: JsonValue | undefined): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Why each malformed message is malformed (empty when all are well formed), each naming the message and field. */
export function validateA2uiMessages(messages: readonly JsonValue[]): string[] {
  const errors: string[] = [];
  messages.forEach((m, i) => {
    const e = checkMessage(m);
    if (e !== undefined) errors.push(`messages[${i}]${e.startsWith('.') ? '' : ': '}${e}`);
  });
  return errors;
}

function checkMessage(m: JsonValue): string | undefined {
  if (!isObj(m)) return 'expected a JSON object';
  const v09 = A2UI_V09_KEYS.find((k) => Object.hasOwn(m, k));
  if (v09 !== undefined)
    return `'${v09}' is an A2UI v0.9 message; this agent renders A2UI v0.8, whose messages are ${A2UI_MESSAGE_KEYS.slice(0, -1).join(', ')} and ${A2UI_MESSAGE_KEYS.at(-1)}`;
  const keys = A2UI_MESSAGE_KEYS.filter((k) => Object.hasOwn(m, k));
  if (keys.length === 0) return `missing message type; expected one of: ${A2UI_MESSAGE_KEYS.join(', ')}`;
  if (keys.length > 1) return `multiple message types in one object: ${keys.join(', ')}`;
  const extra = Object.keys(m).filter((k) => k !== keys[0]);
  if (extra.length > 0) return `unknown field ${extra.map((k) => `'${k}'`).join(', ')} beside ${keys[0]} (A2UI v0.8 has no version field or wrapper)`;
  const type = keys[0] as (typeof A2UI_MESSAGE_KEYS)[number];
  const body = m[type];
  if (!isObj(body)) return `.${type}: must be a JSON object`;
  const surface = body['surfaceId'];
  if (typeof surface !== 'string') return `.${type}.surfaceId: is required`;
  if (surface === '') return `.${type}.surfaceId: must not be empty`;
  switch (type) {
    case 'beginRendering': {
      const root = body['root'];
      if (typeof root !== 'string') return '.beginRendering.root: is required';
      if (root === '') return '.beginRendering.root: must not be empty';
      if (body['styles'] !== undefined && !isObj(body['styles'])) return '.beginRendering.styles: must be a JSON object';
      return undefined;
    }
    case 'surfaceUpdate': {
      const components = body['components'];
      if (!Array.isArray(components)) return '.surfaceUpdate.components: is required and must be an array';
      if (components.length === 0) return '.surfaceUpdate.components: must not be empty';
      for (const [ci, c] of components.entries()) {
        const at = `.surfaceUpdate.components[${ci}]`;
        if (!isObj(c)) return `${at}: must be a JSON object`;
        if (typeof c['id'] !== 'string' || c['id'] === '') return `${at}.id: is required`;
        if (c['weight'] !== undefined && typeof c['weight'] !== 'number') return `${at}.weight: must be a number`;
        const component = c['component'];
        if (!isObj(component)) return `${at}.component: must be a JSON object`;
        const names = Object.keys(component);
        if (names.length !== 1) return `${at}.component: must contain exactly one component payload, such as {"Text": {…}}`;
        const name = names[0] as string;
        const payload = component[name];
        if (!isObj(payload)) return `${at}.component.${name}: must be a JSON object`;
        const wrong = checkComponent(name, payload);
        if (wrong !== undefined) return `${at}.component.${name}${wrong}`;
      }
      return undefined;
    }
    case 'dataModelUpdate': {
      if (body['path'] !== undefined && typeof body['path'] !== 'string') return '.dataModelUpdate.path: must be a string';
      const contents = body['contents'];
      if (!Array.isArray(contents)) return '.dataModelUpdate.contents: is required and must be an array';
      if (contents.length === 0) return '.dataModelUpdate.contents: must not be empty';
      for (const [ci, entry] of contents.entries()) {
        const wrong = checkEntry(entry);
        if (wrong !== undefined) return `.dataModelUpdate.contents[${ci}]${wrong}`;
      }
      return undefined;
    }
    case 'deleteSurface':
      return undefined;
    default:
      return unreachable(type);
  }
}

/** The v0.8 shapes the renderer is strict about (0.6's checks). */
function checkComponent(name: string, p: Obj): string | undefined {
  switch (name) {
    case 'Text':
      return isObj(p['text']) ? undefined : '.text: must be a JSON object ({"literalString": …} or {"path": …})';
    case 'Button': {
      const action = p['action'];
      if (!isObj(action)) return '.action: must be a JSON object';
      if (typeof action['name'] !== 'string') return '.action.name: is required';
      const context = action['context'];
      if (context === undefined) return undefined;
      if (!Array.isArray(context)) return '.action.context: must be an array';
      for (const [i, entry] of context.entries()) {
        if (!isObj(entry)) return `.action.context[${i}]: must be a JSON object`;
        if (typeof entry['key'] !== 'string') return `.action.context[${i}].key: is required`;
        if (!isObj(entry['value'])) return `.action.context[${i}].value: must be a JSON object`;
      }
      return undefined;
    }
    case 'MultipleChoice':
      if (p['choices'] !== undefined || p['label'] !== undefined || p['value'] !== undefined) return ': must use the v0.8 fields options and selections';
      if (!Array.isArray(p['options'])) return '.options: is required';
      return isObj(p['selections']) ? undefined : '.selections: must be a JSON object';
    default:
      return undefined;
  }
}

function checkEntry(entry: JsonValue): string | undefined {
  if (!isObj(entry)) return ': must be a JSON object';
  const key = entry['key'];
  if (typeof key !== 'string') return '.key: is required';
  if (key === '') return '.key: must not be empty';
  const values = ['valueString', 'valueNumber', 'valueBoolean', 'valueMap'].filter((k) => Object.hasOwn(entry, k));
  if (values.length > 1) return `: one value field, not ${values.join(' and ')}`;
  if (entry['valueString'] !== undefined && typeof entry['valueString'] !== 'string') return '.valueString: must be a string';
  if (entry['valueNumber'] !== undefined && typeof entry['valueNumber'] !== 'number') return '.valueNumber: must be a number';
  if (entry['valueBoolean'] !== undefined && typeof entry['valueBoolean'] !== 'boolean') return '.valueBoolean: must be a boolean';
  const map = entry['valueMap'];
  if (map !== undefined) {
    if (!Array.isArray(map)) return '.valueMap: must be an array';
    for (const [i, e] of map.entries()) {
      const wrong = checkEntry(e);
      if (wrong !== undefined) return `.valueMap[${i}]${wrong}`;
    }
  }
  return undefined;
}

/** The messages a call carries: `{messages: [...]}`, one message, or the flat form `{surfaceId, components, …}` (0.6 `normalize_args`). */
export function a2uiMessagesOf(args: JsonValue): JsonValue[] {
  if (!isObj(args)) return [];
  const listed = args['messages'];
  if (Array.isArray(listed)) return listed;
  if ([...A2UI_MESSAGE_KEYS, ...A2UI_V09_KEYS].some((k) => Object.hasOwn(args, k))) return [args];
  if (typeof args['surfaceId'] === 'string') {
    const { surfaceId, components, contents, path, root } = args as Record<string, JsonValue>;
    const inner: Record<string, JsonValue> = { surfaceId: surfaceId as JsonValue };
    if (components !== undefined) return [{ surfaceUpdate: { ...inner, components } }];
    if (contents !== undefined) return [{ dataModelUpdate: { ...inner, ...(path !== undefined ? { path } : {}), contents } }];
    if (root !== undefined) return [{ beginRendering: { ...inner, root } }];
    return [{ deleteSurface: inner }];
  }
  return [];
}

// ---- the tool and the plugin -------------------------------------------------------------------------------

const messageSchema: JsonValue = {
  type: 'object',
  description: 'One A2UI v0.8 message: exactly one of surfaceUpdate, dataModelUpdate, beginRendering, deleteSurface',
  properties: {
    surfaceUpdate: {
      type: 'object',
      required: ['surfaceId', 'components'],
      properties: {
        surfaceId: { type: 'string', minLength: 1 },
        components: {
          type: 'array',
          minItems: 1,
          description: 'A flat component list; each {id, component: {"Text": {...}}}',
          items: {
            type: 'object',
            required: ['id', 'component'],
            properties: { id: { type: 'string', minLength: 1 }, weight: { type: 'number' }, component: { type: 'object' } },
          },
        },
      },
    },
    dataModelUpdate: {
      type: 'object',
      required: ['surfaceId', 'contents'],
      properties: {
        surfaceId: { type: 'string', minLength: 1 },
        path: { type: 'string' },
        contents: {
          type: 'array',
          minItems: 1,
          items: {
            type: 'object',
            required: ['key'],
            properties: {
              key: { type: 'string' },
              valueString: { type: 'string' },
              valueNumber: { type: 'number' },
              valueBoolean: { type: 'boolean' },
              valueMap: { type: 'array' },
            },
          },
        },
      },
    },
    beginRendering: {
      type: 'object',
      required: ['surfaceId', 'root'],
      properties: { surfaceId: { type: 'string', minLength: 1 }, root: { type: 'string', minLength: 1 }, styles: { type: 'object' } },
    },
    deleteSurface: { type: 'object', required: ['surfaceId'], properties: { surfaceId: { type: 'string', minLength: 1 } } },
  },
};

/** The `render_a2ui` tool; its activity names the catalog the agent renders with. */
export function a2uiRenderTool(catalogOf: (spec: Parameters<Tool['execute']>[1]['agentSpec']) => string = () => DEFAULT_A2UI_CATALOG_ID): Tool {
  const check = (args: JsonValue): JsonValue[] => {
    const messages = a2uiMessagesOf(args);
    if (messages.length === 0) {
      throw new ToolFailure({ code: 'invalid_arguments', message: `expected messages, or one A2UI message key (${A2UI_MESSAGE_KEYS.join(', ')})` });
    }
    const errors = validateA2uiMessages(messages);
    if (errors.length > 0) throw new ToolFailure({ code: 'invalid_arguments', message: `A2UI validation failed: ${errors.join('; ')}` });
    return messages;
  };
  return {
    activityTypes: [A2UI_ACTIVITY],
    descriptor: {
      id: A2UI_TOOL_ID,
      name: A2UI_TOOL_ID,
      description:
        'Sends A2UI v0.8 declarative UI to the client: {"messages": [...]} with surfaceUpdate (the flat component list), dataModelUpdate, beginRendering (the root, after its components) or deleteSurface messages, in that order; or one message as the argument.',
      parameters: {
        type: 'object',
        properties: {
          messages: { type: 'array', minItems: 1, items: messageSchema },
          ...(messageSchema as { properties: Record<string, JsonValue> }).properties,
        },
      },
    },
    validateArgs: (args) => void check(args),
    execute: async (args, ctx) => {
      const messages = check(args);
      await ctx.reportActivity(A2UI_ACTIVITY, { schema: 'a2ui.v0.8', catalog_id: catalogOf(ctx.agentSpec), messages });
      return { tool_name: A2UI_TOOL_ID, status: 'success', data: { a2ui: messages, rendered: true }, message: null };
    },
  };
}

/** The standard instructions for a catalog, with examples when given (0.6 `build_instructions`). */
export function a2uiInstructions(catalogId: string = DEFAULT_A2UI_CATALOG_ID, examples?: string): string {
  const base = INSTRUCTIONS.replace('{{CATALOG_ID}}', catalogId);
  return examples === undefined ? base : `${base}\n\n---BEGIN A2UI EXAMPLES---\n${examples}\n---END A2UI EXAMPLES---`;
}

/**
 * The plugin (book: A2uiPlugin): `a2uiPlugin()` (A2UI v0.9, the basic catalog), `{catalog}` (a
 * catalog of one's own), `{catalog_id}`, `{catalog_id, examples}` (0.6 `with_catalog_and_examples`),
 * `{instructions}` (0.6 `with_custom_instructions`), `{version: 'v0.8'}`. An agent's `generative-ui`
 * section overrides each field.
 */
export function a2uiPlugin(defaults: A2uiPromptConfig = {}): RuntimePlugin {
  const checked = A2uiPromptConfigSchema.parse(defaults);
  const configKey = a2uiConfigKey(checked);
  const settingsOf = perAgentSpec((spec): A2uiSettings => {
    const section = readPluginConfig(spec, configKey);
    return mergedSettings(checked, section.ok ? section.value : {});
  });
  const versionOf = (spec: AgentSpec): 'v0.8' | 'v0.9' => settingsOf(spec).version ?? 'v0.9';
  const catalogOf = (spec: AgentSpec): string => settingsOf(spec).catalog_id ?? DEFAULT_A2UI_CATALOG_ID;
  const v09CatalogOf = perAgentSpec((spec): A2uiCatalog => {
    const s = settingsOf(spec);
    const catalog = (s.catalog as A2uiCatalog | undefined) ?? A2UI_BASIC_CATALOG;
    return s.catalog_id === undefined ? catalog : { ...catalog, catalogId: s.catalog_id };
  });
  const v08 = a2uiRenderTool(catalogOf);
  const v09 = a2uiV09RenderTool((spec) => ({ catalog: v09CatalogOf(spec) }), A2UI_TOOL_ID);
  // Registered once, before any agent is known: each agent is offered the tool of its version.
  const tool: Tool = { ...v09, forAgent: (spec) => (versionOf(spec) === 'v0.8' ? v08 : v09) };
  return {
    name: A2UI_PLUGIN_ID,
    configKeys: [configKey as never],
    register: (r) => {
      r.registerTool(tool);
      r.registerPhaseHook('before_inference', (ctx) => {
        const spec = ctx.input.agentSpec;
        const s = settingsOf(spec);
        const text =
          s.instructions ?? (versionOf(spec) === 'v0.8' ? a2uiInstructions(s.catalog_id, s.examples) : a2uiV09Instructions(v09CatalogOf(spec), s.examples));
        if (text.trim() === '') return StateCommand.empty();
        return StateCommand.empty().scheduleAction(AddContextMessage, {
          key: INSTRUCTIONS_KEY,
          role: 'system',
          content: text,
          target: 'system',
          priority: 0,
          cooldown_turns: 0,
          persistent: false,
        });
      });
    },
  };
}

const INSTRUCTIONS = `## A2UI Declarative UI

You have access to the \`render_a2ui\` tool. It sends A2UI v0.8 messages to the client, which renders
them. Pass {"messages": [...]} with the messages in this order: surfaceUpdate, then dataModelUpdate,
then beginRendering (or one message as the argument). Do not add a version field or other wrappers.

1. surfaceUpdate — the components, as a flat list:
{"surfaceUpdate": {"surfaceId": "order", "components": [
  {"id": "root", "component": {"Card": {"child": "content"}}},
  {"id": "content", "component": {"Column": {"children": {"explicitList": ["title", "name", "submit"]}}}},
  {"id": "title", "component": {"Text": {"usageHint": "h2", "text": {"literalString": "Order"}}}},
  {"id": "name", "component": {"TextField": {"label": {"literalString": "Name"}, "text": {"path": "/order/name"}}}},
  {"id": "submit_label", "component": {"Text": {"text": {"literalString": "Submit"}}}},
  {"id": "submit", "component": {"Button": {"child": "submit_label", "action": {"name": "order.submit", "context": [{"key": "name", "value": {"path": "/order/name"}}]}}}}
]}}
2. dataModelUpdate — the values the components bind to:
{"dataModelUpdate": {"surfaceId": "order", "path": "/order", "contents": [{"key": "name", "valueString": ""}]}}
3. beginRendering — the root, once its components exist:
{"beginRendering": {"surfaceId": "order", "root": "root"}}
Use {"deleteSurface": {"surfaceId": "order"}} when the surface is done.

Rules:
- The client renders with the catalog {{CATALOG_ID}}.
- Each component has "id" and "component", an object with one component: {"Text": {...}}.
- Text nests its copy under "text": {"literalString": "..."} or {"path": "/json/pointer"}.
- Containers list children as {"children": {"explicitList": ["id1", "id2"]}}; Card and Button take "child".
- Properties bind data with {"path": "/json/pointer"}; dataModelUpdate.contents holds {key, valueString|valueNumber|valueBoolean|valueMap} entries.
- MultipleChoice uses options ([{"label": {"literalString": "High"}, "value": "high"}]), selections and maxAllowedSelections.
- Buttons: "action": {"name": "...", "context": [{"key": "field", "value": {"path": "/field"}}]}.`;
