import type { z } from 'zod';
import type { AgentSpecInput } from '../contract/agent-spec.ts';
import type { JsonValue } from '../contract/json.ts';
import { issueLine } from '../contract/issue-line.ts';
import type { Plugin } from '../core/phase/plugin.ts';
import type { StopPolicy } from '../core/policies/stop-policy.ts';
import type { LlmExecutor } from '../runtime/llm.ts';
import type { ModelEntry, RuntimePlugin } from '../runtime/resolve.ts';
import type { Tool } from '../runtime/tool.ts';

/**
 * Where a plugin came from: the factory that made it and the JSON config it was given. A transcript
 * records both, so a replay makes the same plugin from the same config with the code it is given.
 */
export interface PluginOrigin {
  readonly factory: string;
  readonly config: JsonValue;
  /** Makes the plugin again from a config (a replay's, a reload's). */
  readonly make: (config: JsonValue) => RuntimePlugin;
}

// A side table, not a field: a plugin stays the object its author wrote (frozen ones too).
const origins = new WeakMap<object, PluginOrigin>();

/** The factory and config a plugin was made from, when a `pluginFactory` made it. */
export const originOf = (plugin: Plugin): PluginOrigin | undefined => origins.get(plugin);

/** A named plugin factory: call it with a JSON config to make the plugin. */
export interface PluginFactory<C extends JsonValue = JsonValue> {
  (config: C): RuntimePlugin;
  /** The name transcripts record, and a replay looks the factory up by. */
  readonly factoryName: string;
}

/** Why a factory refused its config: the config's field and what is wrong with it. */
export class PluginConfigError extends Error {
  readonly factory: string;
  constructor(factory: string, message: string) {
    super(message);
    this.name = 'PluginConfigError';
    this.factory = factory;
  }
}

/**
 * A plugin factory taking a JSON config (checked by `options.config` when given). What it makes is
 * recordable and replayable: a transcript names the factory and the config (credentials in it as
 * `"<redacted>"`), and `awaken replay --app` calls the factory of that name again.
 *
 * ```ts
 * export const counter = pluginFactory('counter', (config: { limit: number }) => ({ name: 'counter', register(r) { … } }));
 * export default defineApp({ plugins: [counter({ limit: 3 })], … });
 * ```
 */
export function pluginFactory<C extends JsonValue = JsonValue>(
  name: string,
  make: (config: C) => Plugin | RuntimePlugin,
  options: { readonly config?: z.ZodType<C> } = {},
): PluginFactory<C> {
  const build = (config: JsonValue): RuntimePlugin => {
    let checked = config as C;
    if (options.config !== undefined) {
      const parsed = options.config.safeParse(config);
      if (!parsed.success) throw new PluginConfigError(name, issueLine(parsed.error));
      checked = parsed.data;
    }
    const plugin = make(checked) as RuntimePlugin;
    origins.set(plugin, { factory: name, config, make: build });
    return plugin;
  };
  return Object.assign((config: C) => build(config), { factoryName: name });
}

/**
 * A tool as the AI SDK writes one (`tool()` from `ai`): what `awaken` runs unchanged. Only the
 * fields it reads are named here; the package's own type is wider.
 */
export interface AiSdkToolLike {
  readonly description?: string | ((...args: never[]) => unknown) | undefined;
  readonly inputSchema: unknown;
  readonly execute?: ((...args: never[]) => unknown) | undefined;
  readonly needsApproval?: boolean | ((...args: never[]) => unknown) | undefined;
  readonly toModelOutput?: ((...args: never[]) => unknown) | undefined;
}

/** An AI SDK language model (`openai('gpt-4o-mini')`): used as a provider through the AI SDK adapter. */
export interface LanguageModelLike {
  readonly specificationVersion: string;
  readonly provider: string;
  readonly modelId: string;
}

/**
 * An app: the agents, tools, plugins, models and providers a user writes, loaded by `awaken serve
 * --app FILE` (and every command that runs agents) without a build step (docs/your-own-agent.md).
 */
export interface AppDefinition {
  readonly agents?: readonly AgentSpecInput[];
  /** Tools: awaken tools (`defineTool`), or a record of id → an awaken tool or an AI SDK `tool()`. */
  readonly tools?: readonly Tool[] | Readonly<Record<string, Tool | AiSdkToolLike>>;
  /** Plugins, each under its own name (what an agent's `plugin_ids` names); made by a `pluginFactory` to be replayable. */
  readonly plugins?: readonly (Plugin | RuntimePlugin)[];
  readonly models?: Readonly<Record<string, ModelEntry>>;
  /** Providers by id: an `LlmExecutor` (`scriptedProvider`), or an AI SDK language model. */
  readonly providers?: Readonly<Record<string, LlmExecutor | LanguageModelLike>>;
  readonly stopPolicies?: readonly StopPolicy[];
}

const APP = Symbol.for('awaken.app');

/** Marks an app definition (the default export of an app module); returns it unchanged in type. */
export function defineApp<const A extends AppDefinition>(app: A): A {
  return Object.defineProperty({ ...app }, APP, { value: true, enumerable: false }) as A;
}

/** Whether `x` was made by `defineApp` (of any copy of the package: the mark is a global symbol). */
export const isDefinedApp = (x: unknown): x is AppDefinition => typeof x === 'object' && x !== null && (x as Record<symbol, unknown>)[APP] === true;
