import type { JsonValue } from '../contract/json.ts';

/**
 * An A2UI v0.9 component catalog as the model and the validator read it: each component's name,
 * description, properties (their kind, description and allowed values) and required properties.
 * A catalog's JSON Schema (`catalog.json`) holds more — `$ref`s into the common types, conditions
 * meant for a JSON Schema validator — which `catalogOfSchema` drops, keeping of each `$ref` the name
 * of the type it points at (`DynamicString`, `ComponentId`, `ChildList`, `Action`), which is what the
 * model needs to write a value and what `validateA2uiV09` checks a literal value against.
 */
export interface A2uiCatalog {
  /** What a `createSurface` names: the catalog the client renders the surface with. */
  readonly catalogId: string;
  readonly components: Readonly<Record<string, A2uiComponentSpec>>;
}

export interface A2uiComponentSpec {
  readonly description?: string;
  /** The component's own properties (`id`, `component`, `accessibility` and `weight` are every component's). */
  readonly properties: Readonly<Record<string, A2uiPropertySpec>>;
  readonly required: readonly string[];
}

export interface A2uiPropertySpec {
  /**
   * A JSON type (`string`, `number`, `boolean`, `array`, `object`), a common type of A2UI v0.9
   * (`DynamicString`, `DynamicNumber`, `DynamicBoolean`, `DynamicStringList`, `DynamicValue`,
   * `ComponentId`, `ChildList`, `Action`, `DataBinding`), or several joined by ` | `.
   */
  readonly type: string;
  readonly description?: string;
  /** The strings a literal value may be. */
  readonly enum?: readonly string[];
  /** For an array of objects: each item's properties. */
  readonly items?: { readonly properties: Readonly<Record<string, A2uiPropertySpec>>; readonly required: readonly string[] };
}

type Obj = { readonly [k: string]: JsonValue };
const isObj = (v: JsonValue | undefined): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The name a `$ref` points at: `…/common_types.json#/$defs/DynamicString` → `DynamicString`. */
const refName = (ref: string): string => ref.slice(ref.lastIndexOf('/') + 1);

/** A property's kind: its `type`, the type its `$ref` names, the first named type of an `allOf`, or the kinds of a `oneOf`. */
function kindOf(s: Obj): string {
  if (typeof s['type'] === 'string') return s['type'];
  if (typeof s['$ref'] === 'string') return refName(s['$ref']);
  const all = s['allOf'];
  if (Array.isArray(all)) {
    const named = all
      .filter(isObj)
      .map(kindOf)
      .find((k) => k !== 'object' && k !== '');
    if (named !== undefined) return named;
  }
  const one = s['oneOf'] ?? s['anyOf'];
  if (Array.isArray(one)) return one.filter(isObj).map(kindOf).join(' | ');
  return '';
}

/** A property's allowed strings: its `enum`, or that of a string branch of its `oneOf`. */
function enumOf(s: Obj): string[] | undefined {
  const own = s['enum'];
  if (Array.isArray(own)) return own.filter((v): v is string => typeof v === 'string');
  const one = s['oneOf'];
  if (!Array.isArray(one)) return undefined;
  for (const b of one) if (isObj(b) && Array.isArray(b['enum'])) return b['enum'].filter((v): v is string => typeof v === 'string');
  return undefined;
}

function propertyOf(s: Obj): A2uiPropertySpec {
  const items = s['items'];
  const e = enumOf(s);
  return {
    type: kindOf(s),
    ...(typeof s['description'] === 'string' ? { description: s['description'] } : {}),
    ...(e !== undefined ? { enum: e } : {}),
    ...(isObj(items) && isObj(items['properties']) ? { items: objectOf(items) } : {}),
  };
}

function objectOf(s: Obj): { properties: Record<string, A2uiPropertySpec>; required: string[] } {
  const props = isObj(s['properties']) ? s['properties'] : {};
  const properties: Record<string, A2uiPropertySpec> = {};
  for (const [name, p] of Object.entries(props)) if (name !== 'component' && isObj(p)) properties[name] = propertyOf(p);
  const required = Array.isArray(s['required']) ? s['required'].filter((r): r is string => typeof r === 'string' && r !== 'component') : [];
  return { properties, required };
}

/** The common `$ref`s a component's `allOf` may name that add a property of its own (`checks`, for a component that checks its input). */
const SHARED_PROPERTIES: Readonly<Record<string, Readonly<Record<string, A2uiPropertySpec>>>> = {
  Checkable: {
    checks: {
      type: 'array',
      description: 'A list of checks to perform. These are function calls that must return a boolean indicating validity.',
    },
  },
};

/**
 * The catalog a catalog's JSON Schema describes (A2UI v0.9 `catalog.json`): per component, the
 * properties of its `allOf` branch that declares them, plus those of the shared parts it names
 * (`Checkable`: `checks`); `id`, `accessibility` and `weight`, common to every component, are left
 * to the validator.
 */
export function catalogOfSchema(schema: JsonValue): A2uiCatalog {
  if (!isObj(schema)) throw new TypeError('an A2UI catalog schema is a JSON object');
  const id = schema['catalogId'] ?? schema['$id'];
  if (typeof id !== 'string' || id === '') throw new TypeError('an A2UI catalog schema names its catalogId');
  const components: Record<string, A2uiComponentSpec> = {};
  for (const [name, c] of Object.entries(isObj(schema['components']) ? schema['components'] : {})) {
    if (!isObj(c)) continue;
    const parts = Array.isArray(c['allOf']) ? c['allOf'].filter(isObj) : [c];
    const own = parts.find((p) => isObj(p['properties'])) ?? c;
    const shared = parts.flatMap((p) => (typeof p['$ref'] === 'string' ? Object.entries(SHARED_PROPERTIES[refName(p['$ref'])] ?? {}) : []));
    const { properties, required } = objectOf(own);
    const description = typeof c['description'] === 'string' ? c['description'] : typeof own['description'] === 'string' ? own['description'] : undefined;
    components[name] = { ...(description !== undefined ? { description } : {}), properties: { ...properties, ...Object.fromEntries(shared) }, required };
  }
  return { catalogId: id, components };
}
