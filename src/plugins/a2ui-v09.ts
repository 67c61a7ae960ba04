import { A2UI_ID_MAX_CHARS, A2UI_OPERATIONS_KEY, A2UI_SURFACE_ACTIVITY } from '../contract/a2ui.ts';
import type { JsonValue } from '../contract/json.ts';
import { unreachable } from '../contract/never.ts';
import { ToolFailure, type Tool } from '../runtime/tool.ts';
import { A2UI_BASIC_CATALOG } from './a2ui-basic-catalog.ts';
import type { A2uiCatalog, A2uiComponentSpec, A2uiPropertySpec } from './a2ui-catalog.ts';

/** A click names a surface's ids back (`forwardedProps.a2uiAction`), and the server takes them only this long there. */
const TOO_LONG = `at most ${A2UI_ID_MAX_CHARS} characters (a click in the surface names it back)`;

/**
 * A2UI v0.9 for the `render_a2ui` tool: the four messages checked against the agent's catalog, a
 * call's messages as the operations of one `a2ui-surface` activity, and the instructions that teach
 * the model the catalog.
 *
 * One call draws whole surfaces. A client renders each call's activity on its own (CopilotKit's
 * renderer gives each activity message a message processor of its own), so the operations of a
 * surface the call draws start with its `createSurface` — the model's, or one made with the agent's
 * catalog — then its `updateComponents`, then its `updateDataModel`, the order the protocol requires,
 * whatever order the model wrote them in; a surface the call removes is its `deleteSurface` alone.
 */

export const A2UI_V09 = 'v0.9';
export const A2UI_V09_MESSAGE_KEYS = ['createSurface', 'updateComponents', 'updateDataModel', 'deleteSurface'] as const;
type MessageKey = (typeof A2UI_V09_MESSAGE_KEYS)[number];
/** v0.8's messages that v0.9 has not (its `deleteSurface` is v0.9's too). */
const V08_KEYS = ['surfaceUpdate', 'dataModelUpdate', 'beginRendering'] as const;
/** The properties every component has besides its catalog's. */
const COMMON_PROPERTIES = ['id', 'component', 'accessibility', 'weight'] as const;
const ROOT = 'root';

type Obj = { readonly [k: string]: JsonValue };
const isObj = (v: JsonValue | undefined): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const listed = (names: readonly string[]): string => (names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`);
const quoted = (v: JsonValue): string => (typeof v === 'string' ? `'${v}'` : JSON.stringify(v));

/**
 * The messages a call carries: `{messages: [...]}`, one message, or one surface
 * `{surfaceId, components, data?}` (`@ag-ui/a2ui-middleware`'s render tool) — its components, then its
 * data at `/`.
 */
export function a2uiV09MessagesOf(args: JsonValue): JsonValue[] {
  if (!isObj(args)) return [];
  const messages = args['messages'];
  if (Array.isArray(messages)) return messages;
  if ([...A2UI_V09_MESSAGE_KEYS, ...V08_KEYS].some((k) => Object.hasOwn(args, k))) return [args];
  const { surfaceId, components, data } = args;
  if (typeof surfaceId !== 'string' || components === undefined) return [];
  return [
    { version: A2UI_V09, updateComponents: { surfaceId, components } },
    ...(data !== undefined ? [{ version: A2UI_V09, updateDataModel: { surfaceId, path: '/', value: data } }] : []),
  ];
}

// ---- one message -------------------------------------------------------------------------------------------

/**
 * Why each malformed message is malformed (empty when the call is well formed), each naming the
 * message and the field: `messages[1].updateComponents.components[0].component: 'Chart' is not in
 * the catalog …`. Then what the call as a whole must be: each surface it draws has components and a
 * `root`, is created at most once, and is not also removed.
 */
export function validateA2uiV09Messages(messages: readonly JsonValue[], catalog: A2uiCatalog = A2UI_BASIC_CATALOG): string[] {
  const errors: string[] = [];
  messages.forEach((m, i) => {
    const e = checkMessage(m, catalog);
    if (e !== undefined) errors.push(`messages[${i}]${e.startsWith('.') ? '' : ': '}${e}`);
  });
  return errors.length > 0 ? errors : checkCall(messages as readonly Obj[]);
}

function checkMessage(m: JsonValue, catalog: A2uiCatalog): string | undefined {
  if (!isObj(m)) return 'expected a JSON object';
  const v08 = V08_KEYS.find((k) => Object.hasOwn(m, k));
  if (v08 !== undefined) return `'${v08}' is an A2UI v0.8 message; this agent renders A2UI v0.9, whose messages are ${listed([...A2UI_V09_MESSAGE_KEYS])}`;
  const keys = A2UI_V09_MESSAGE_KEYS.filter((k) => Object.hasOwn(m, k));
  if (keys.length === 0) return `missing message type; expected one of: ${A2UI_V09_MESSAGE_KEYS.join(', ')}`;
  if (keys.length > 1) return `multiple message types in one object: ${keys.join(', ')}`;
  const type = keys[0] as MessageKey;
  const version = m['version'];
  if (version !== undefined && version !== A2UI_V09)
    return `.version: ${quoted(version)} is not the A2UI version this agent renders; write "${A2UI_V09}" (or leave it out)`;
  const extra = Object.keys(m).filter((k) => k !== type && k !== 'version');
  if (extra.length > 0) return `unknown field ${extra.map((k) => `'${k}'`).join(', ')} beside ${type}`;
  const body = m[type];
  if (!isObj(body)) return `.${type}: must be a JSON object`;
  const surface = body['surfaceId'];
  if (typeof surface !== 'string') return `.${type}.surfaceId: is required`;
  if (surface === '') return `.${type}.surfaceId: must not be empty`;
  if (surface.length > A2UI_ID_MAX_CHARS) return `.${type}.surfaceId: ${TOO_LONG}`;
  const unknown = (allowed: readonly string[]): string | undefined => {
    const field = Object.keys(body).find((k) => !allowed.includes(k));
    return field === undefined ? undefined : `.${type}: unknown field '${field}' (${type} has ${listed(allowed)})`;
  };
  switch (type) {
    case 'createSurface': {
      const wrong = unknown(['surfaceId', 'catalogId', 'theme', 'sendDataModel']);
      if (wrong !== undefined) return wrong;
      const id = body['catalogId'];
      if (id !== undefined && id !== catalog.catalogId)
        return `.createSurface.catalogId: ${quoted(id)} is not the catalog this agent renders with (${catalog.catalogId}); leave it out and the agent names its catalog`;
      if (body['theme'] !== undefined && !isObj(body['theme'])) return '.createSurface.theme: must be a JSON object';
      if (body['sendDataModel'] !== undefined && typeof body['sendDataModel'] !== 'boolean') return '.createSurface.sendDataModel: must be a boolean';
      return undefined;
    }
    case 'updateComponents': {
      const wrong = unknown(['surfaceId', 'components']);
      if (wrong !== undefined) return wrong;
      const components = body['components'];
      if (!Array.isArray(components)) return '.updateComponents.components: is required and must be an array';
      if (components.length === 0) return '.updateComponents.components: must not be empty';
      const seen = new Map<string, number>();
      for (const [ci, c] of components.entries()) {
        const at = `.updateComponents.components[${ci}]`;
        const e = checkComponent(c, catalog);
        if (e !== undefined) return `${at}${e}`;
        const id = (c as Obj)['id'] as string;
        const first = seen.get(id);
        if (first !== undefined) return `${at}.id: '${id}' is already the id of components[${first}]`;
        seen.set(id, ci);
      }
      return undefined;
    }
    case 'updateDataModel': {
      const wrong = unknown(['surfaceId', 'path', 'value']);
      if (wrong !== undefined) return wrong;
      const path = body['path'];
      if (path !== undefined && (typeof path !== 'string' || !path.startsWith('/')))
        return '.updateDataModel.path: must be a JSON Pointer starting with "/" ("/" is the whole data model)';
      return undefined;
    }
    case 'deleteSurface':
      return unknown(['surfaceId']);
    default:
      return unreachable(type);
  }
}

/** What a component must be: an id, a component of the catalog, its required properties, and each property of the kind the catalog says. */
function checkComponent(c: JsonValue, catalog: A2uiCatalog): string | undefined {
  if (!isObj(c)) return ': must be a JSON object';
  if (typeof c['id'] !== 'string' || c['id'] === '') return '.id: is required';
  if (c['id'].length > A2UI_ID_MAX_CHARS) return `.id: ${TOO_LONG}`;
  const name = c['component'];
  if (isObj(name)) return `.component: must be a component name: A2UI v0.9 writes {"id": …, "component": "Text", "text": …}, the properties beside it`;
  if (typeof name !== 'string' || name === '') return '.component: is required';
  const spec = Object.hasOwn(catalog.components, name) ? catalog.components[name] : undefined;
  if (spec === undefined)
    return `.component: '${name}' is not in the catalog ${catalog.catalogId}; its components are ${listed(Object.keys(catalog.components))}`;
  if (c['weight'] !== undefined && typeof c['weight'] !== 'number') return '.weight: must be a number';
  if (c['accessibility'] !== undefined && !isObj(c['accessibility'])) return '.accessibility: must be a JSON object';
  return checkProperties(c, spec, name, COMMON_PROPERTIES);
}

function checkProperties(value: Obj, spec: Pick<A2uiComponentSpec, 'properties' | 'required'>, owner: string, common: readonly string[]): string | undefined {
  const own = Object.keys(spec.properties);
  for (const key of Object.keys(value)) {
    if (common.includes(key) || own.includes(key)) continue;
    return `.${key}: ${owner} has no property '${key}'; its properties are ${own.length > 0 ? listed(own) : 'none'}`;
  }
  for (const r of spec.required) if (value[r] === undefined) return `.${r}: is required`;
  for (const [key, p] of Object.entries(spec.properties)) {
    const v = value[key];
    if (v === undefined) continue;
    const e = checkValue(v, p);
    if (e !== undefined) return `.${key}${e}`;
  }
  return undefined;
}

function checkValue(v: JsonValue, p: A2uiPropertySpec): string | undefined {
  if (p.enum !== undefined && typeof v === 'string' && !p.enum.includes(v)) return `: '${v}' is not one of ${p.enum.join(', ')}`;
  const kinds = p.type.split(' | ').filter((k) => k !== '');
  if (kinds.length > 0 && !kinds.some((k) => fits(k, v))) return `: must be ${kinds.map(kindText).join(' or ')}`;
  // A click names its action back (`forwardedProps.a2uiAction.name`), under the bound a click is read with.
  if (kinds.includes('Action') && isObj(v) && isObj(v['event']) && typeof v['event']['name'] === 'string' && v['event']['name'].length > A2UI_ID_MAX_CHARS)
    return `.event.name: ${TOO_LONG}`;
  if (p.items !== undefined && Array.isArray(v)) {
    for (const [i, item] of v.entries()) {
      if (!isObj(item)) return `[${i}]: must be a JSON object`;
      const e = checkProperties(item, p.items, 'an item', []);
      if (e !== undefined) return `[${i}]${e}`;
    }
  }
  return undefined;
}

/** A dynamic value that is not a literal: a binding to the data model, or a function the client calls. */
const dynamic = (v: JsonValue): boolean => isObj(v) && (typeof v['path'] === 'string' || typeof v['call'] === 'string');

/** Whether a value fits a kind (a kind this does not know, from a catalog of one's own, fits anything). */
function fits(kind: string, v: JsonValue): boolean {
  switch (kind) {
    case 'string':
      return typeof v === 'string';
    case 'number':
      return typeof v === 'number';
    case 'boolean':
      return typeof v === 'boolean';
    case 'array':
      return Array.isArray(v);
    case 'object':
      return isObj(v);
    case 'ComponentId':
      return typeof v === 'string' && v !== '';
    case 'ChildList':
      return (
        (Array.isArray(v) && v.every((x) => typeof x === 'string' && x !== '')) ||
        (isObj(v) && typeof v['componentId'] === 'string' && typeof v['path'] === 'string')
      );
    case 'Action':
      return (
        isObj(v) &&
        ((isObj(v['event']) && typeof v['event']['name'] === 'string') || (isObj(v['functionCall']) && typeof v['functionCall']['call'] === 'string'))
      );
    case 'DataBinding':
      return isObj(v) && typeof v['path'] === 'string';
    case 'DynamicString':
      return typeof v === 'string' || dynamic(v);
    case 'DynamicNumber':
      return typeof v === 'number' || dynamic(v);
    case 'DynamicBoolean':
      return typeof v === 'boolean' || dynamic(v);
    case 'DynamicStringList':
      return (Array.isArray(v) && v.every((x) => typeof x === 'string')) || dynamic(v);
    default:
      return true;
  }
}

/** How an error names a kind. */
function kindText(kind: string): string {
  switch (kind) {
    case 'ComponentId':
      return 'the id of a component';
    case 'ChildList':
      return 'a list of component ids or {"componentId": …, "path": …}';
    case 'Action':
      return '{"event": {"name": …, "context": {…}}} or {"functionCall": {"call": …}}';
    case 'DataBinding':
      return '{"path": …}';
    case 'DynamicString':
      return 'a string, {"path": …} or {"call": …}';
    case 'DynamicNumber':
      return 'a number, {"path": …} or {"call": …}';
    case 'DynamicBoolean':
      return 'a boolean, {"path": …} or {"call": …}';
    case 'DynamicStringList':
      return 'a list of strings, {"path": …} or {"call": …}';
    case 'array':
    case 'object':
      return `an ${kind}`;
    default:
      return `a ${kind}`;
  }
}

// ---- the call ----------------------------------------------------------------------------------------------

interface Surface {
  readonly id: string;
  /** The indexes of the call's messages for this surface, by message type. */
  readonly at: Record<MessageKey, number[]>;
}

/** The surfaces a call addresses, in the order it first names them (its messages already checked one by one). */
function surfacesOf(messages: readonly Obj[]): Surface[] {
  const byId = new Map<string, Surface>();
  messages.forEach((m, i) => {
    const type = A2UI_V09_MESSAGE_KEYS.find((k) => Object.hasOwn(m, k)) as MessageKey;
    const id = (m[type] as Obj)['surfaceId'] as string;
    let s = byId.get(id);
    if (s === undefined) {
      s = { id, at: { createSurface: [], updateComponents: [], updateDataModel: [], deleteSurface: [] } };
      byId.set(id, s);
    }
    s.at[type].push(i);
  });
  return [...byId.values()];
}

/** What a call as a whole must be (each message well formed): whole surfaces, each created once, none both drawn and removed. */
function checkCall(messages: readonly Obj[]): string[] {
  const errors: string[] = [];
  for (const s of surfacesOf(messages)) {
    const { createSurface, updateComponents, updateDataModel, deleteSurface } = s.at;
    const drawn = createSurface.length + updateComponents.length + updateDataModel.length > 0;
    const [first, ...again] = createSurface;
    for (const i of again) errors.push(`messages[${i}].createSurface.surfaceId: surface '${s.id}' is already created by messages[${first}]`);
    if (drawn && deleteSurface.length > 0) errors.push(`messages[${deleteSurface[0]}].deleteSurface.surfaceId: surface '${s.id}' is drawn in this call too`);
    if (drawn && updateComponents.length === 0) {
      const i = createSurface[0] ?? (updateDataModel[0] as number);
      const type = createSurface.length > 0 ? 'createSurface' : 'updateDataModel';
      errors.push(`messages[${i}].${type}.surfaceId: surface '${s.id}' has no updateComponents in this call; each call draws whole surfaces`);
    } else if (drawn) {
      const ids = updateComponents.flatMap((i) => (((messages[i] as Obj)['updateComponents'] as Obj)['components'] as Obj[]).map((c) => c['id']));
      if (!ids.includes(ROOT))
        errors.push(`messages[${updateComponents[0]}].updateComponents.components: surface '${s.id}' has no component with id '${ROOT}'`);
    }
  }
  return errors.sort((a, b) => indexOf(a) - indexOf(b));
}

const indexOf = (error: string): number => Number(/^messages\[(\d+)\]/.exec(error)?.[1] ?? 0);

/**
 * A well-formed call's messages as the operations of its activity: per surface, in the order the
 * call first names them, its `createSurface` (the model's, or one naming `catalogId`, for a surface
 * the call draws), its `updateComponents`, its `updateDataModel`, then its `deleteSurface` — each
 * with `version: "v0.9"`, and a `createSurface` with the catalog the agent renders with.
 */
export function a2uiOperations(messages: readonly JsonValue[], catalogId: string): JsonValue[] {
  const ms = messages as readonly Obj[];
  const op = (i: number, type: MessageKey): JsonValue => {
    const body = ms[i]?.[type] as Obj;
    return { version: A2UI_V09, [type]: type === 'createSurface' ? { ...body, catalogId } : body };
  };
  return surfacesOf(ms).flatMap((s): JsonValue[] => {
    const { createSurface, updateComponents, updateDataModel, deleteSurface } = s.at;
    const drawn = updateComponents.length + updateDataModel.length > 0;
    const create =
      createSurface[0] !== undefined
        ? [op(createSurface[0], 'createSurface')]
        : drawn
          ? [{ version: A2UI_V09, createSurface: { surfaceId: s.id, catalogId } }]
          : [];
    return [
      ...create,
      ...updateComponents.map((i) => op(i, 'updateComponents')),
      ...updateDataModel.map((i) => op(i, 'updateDataModel')),
      ...deleteSurface.map((i) => op(i, 'deleteSurface')),
    ];
  });
}

// ---- the tool ----------------------------------------------------------------------------------------------

/** The settings of a v0.9 render: the catalog, and the id the client knows it by. */
export interface A2uiV09Settings {
  readonly catalog: A2uiCatalog;
}

/**
 * The `render_a2ui` tool for A2UI v0.9: the call's messages checked against the agent's catalog, then
 * one `a2ui-surface` activity `{a2ui_operations}` and the result `{a2ui_operations, rendered: true}`.
 */
export function a2uiV09RenderTool(settingsOf: (spec: Parameters<Tool['execute']>[1]['agentSpec']) => A2uiV09Settings, id: string): Tool {
  const check = (args: JsonValue, catalog: A2uiCatalog): JsonValue[] => {
    const messages = a2uiV09MessagesOf(args);
    if (messages.length === 0)
      throw new ToolFailure({
        code: 'invalid_arguments',
        message: `expected {surfaceId, components, data?}, messages, or one A2UI v0.9 message (${A2UI_V09_MESSAGE_KEYS.join(', ')})`,
      });
    const errors = validateA2uiV09Messages(messages, catalog);
    if (errors.length > 0) throw new ToolFailure({ code: 'invalid_arguments', message: `A2UI validation failed: ${errors.join('; ')}` });
    return messages;
  };
  return {
    activityTypes: [A2UI_SURFACE_ACTIVITY],
    descriptor: {
      id,
      name: id,
      description:
        'Draws A2UI v0.9 surfaces on the client with the components of its catalog: {"surfaceId", "components", "data"} for one surface, or {"messages": [...]} with createSurface, updateComponents, updateDataModel and deleteSurface messages.',
      parameters: {
        type: 'object',
        properties: {
          surfaceId: { type: 'string', minLength: 1, description: 'The surface to draw.' },
          components: {
            type: 'array',
            minItems: 1,
            description: 'The flat component list: each {"id", "component": "<a catalog component>", …its properties}; one has id "root".',
            items: { type: 'object', required: ['id', 'component'], properties: { id: { type: 'string', minLength: 1 }, component: { type: 'string' } } },
          },
          data: { type: 'object', description: 'The data model the components bind to ({"path": "/…"}), written at "/".' },
          messages: {
            type: 'array',
            minItems: 1,
            description: 'A2UI v0.9 messages, each {"version": "v0.9", "<type>": {…}}',
            items: { type: 'object' },
          },
        },
      },
    },
    execute: async (args, ctx) => {
      const { catalog } = settingsOf(ctx.agentSpec);
      const operations = a2uiOperations(check(args, catalog), catalog.catalogId);
      await ctx.reportActivity(A2UI_SURFACE_ACTIVITY, { [A2UI_OPERATIONS_KEY]: operations });
      return { tool_name: id, status: 'success', data: { [A2UI_OPERATIONS_KEY]: operations, rendered: true }, message: null };
    },
  };
}

// ---- the instructions --------------------------------------------------------------------------------------

/** One property as the instructions list it: `text (DynamicString, required): The text…`. */
function propertyLine(name: string, p: A2uiPropertySpec, required: boolean): string {
  const kind = p.enum !== undefined ? `one of ${p.enum.join('|')}` : p.type;
  const items = p.items !== undefined ? `; each item {${Object.keys(p.items.properties).join(', ')}}` : '';
  return `${name} (${kind}${required ? ', required' : ''}${items})${p.description !== undefined ? `: ${p.description}` : ''}`;
}

/** The catalog as the model reads it: a line per component, then a line per property. */
export function a2uiCatalogText(catalog: A2uiCatalog): string {
  return Object.entries(catalog.components)
    .map(([name, c]) => {
      const head = `- ${name}${c.description !== undefined ? ` — ${c.description}` : ''}`;
      const props = Object.entries(c.properties).map(([p, spec]) => `    - ${propertyLine(p, spec, c.required.includes(p))}`);
      return [head, ...props].join('\n');
    })
    .join('\n');
}

/** The example of the standard instructions, for the basic catalog (another catalog's components are its own). */
const BASIC_EXAMPLE = `Example — an order form:
{"surfaceId": "order", "components": [
  {"id": "root", "component": "Card", "child": "content"},
  {"id": "content", "component": "Column", "children": ["title", "name", "submit"]},
  {"id": "title", "component": "Text", "variant": "h2", "text": "Order"},
  {"id": "name", "component": "TextField", "label": "Name", "value": {"path": "/order/name"}},
  {"id": "submit_label", "component": "Text", "text": "Place the order"},
  {"id": "submit", "component": "Button", "child": "submit_label", "variant": "primary",
   "action": {"event": {"name": "order.submit", "context": {"name": {"path": "/order/name"}}}}}
], "data": {"order": {"name": ""}}}`;

/** The standard instructions for a catalog, with examples when given. */
export function a2uiV09Instructions(catalog: A2uiCatalog = A2UI_BASIC_CATALOG, examples?: string): string {
  const example = Object.keys(A2UI_BASIC_CATALOG.components).every((n) => Object.hasOwn(catalog.components, n)) ? `\n${BASIC_EXAMPLE}\n` : '';
  const base = `## A2UI Declarative UI (v0.9)

You have access to the \`render_a2ui\` tool. It draws A2UI v0.9 surfaces on the client, with the
components of the catalog ${catalog.catalogId} and no others. Each call draws whole surfaces:
pass {"surfaceId": "...", "components": [...], "data": {...}} for one surface, or {"messages": [...]}
with A2UI v0.9 messages ({"version": "v0.9", "createSurface" | "updateComponents" | "updateDataModel" |
"deleteSurface": {...}}). The agent names the catalog in createSurface; you may leave catalogId out.
${example}
Rules:
- Components are a flat list; each is {"id": "...", "component": "<name>", ...its properties}, and one has id "root" (a layout: Column, Row, Card).
- Children are referenced by id: "child": "id", or "children": ["id1", "id2"] (or {"componentId": "...", "path": "/list"} to repeat one per item).
- A property bound to the data model is {"path": "/json/pointer"}; "data" (or updateDataModel's "value") holds the values.
- A button's "action" is {"event": {"name": "...", "context": {"key": {"path": "/field"}}}}.
- When the user acts on a surface you receive a user message: User performed action "<name>" on surface "<id>" (component: <id>). Context: {...}. Answer it.
- To remove a surface, send {"messages": [{"version": "v0.9", "deleteSurface": {"surfaceId": "..."}}]}.

Components of the catalog (a property's kind, whether it is required, and what it is for):
${a2uiCatalogText(catalog)}`;
  return examples === undefined ? base : `${base}\n\n---BEGIN A2UI EXAMPLES---\n${examples}\n---END A2UI EXAMPLES---`;
}
