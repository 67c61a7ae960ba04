import type { AgentSpec } from '../contract/agent-spec.ts';
import { PLUGIN_CATALOG } from '../plugins/catalog.ts';
import type { AgentRuntimeBuilder } from '../runtime/agent-runtime.ts';
import type { LlmExecutor } from '../runtime/llm.ts';
import type { RuntimePlugin } from '../runtime/resolve.ts';
import type { Tool } from '../runtime/tool.ts';
import type { App } from './app.ts';
import type { LoadedApp } from './load.ts';

/** What a config file declares beside an app (its ids, to find the ones both define). */
export interface ConfigIds {
  readonly file: string;
  readonly agents: readonly string[];
  readonly models: Readonly<Record<string, { readonly provider: string }>>;
  readonly providers: readonly string[];
}

/**
 * Why an app and the config beside it cannot run together, if they cannot, as `file: field: reason`:
 * an id both define (naming both places), a plugin under a built-in plugin's name, an agent naming a
 * model or plugin that neither has, a model naming a provider that neither has.
 */
export function appProblem(loaded: LoadedApp, config?: ConfigIds, extraPlugins: readonly string[] = []): string | undefined {
  const { app, file } = loaded;
  const both = (kind: string, ids: readonly string[], mine: readonly string[], field: (i: number) => string): string | undefined => {
    for (const [i, id] of mine.entries()) {
      const j = ids.indexOf(id);
      if (j >= 0 && config !== undefined)
        return `${config.file}: ${kind}${kind === 'agents' ? `[${j}].id` : `.${id}`}: '${id}' is also defined in ${file} (${field(i)})`;
    }
    return undefined;
  };
  if (config !== undefined) {
    const clash =
      both(
        'agents',
        config.agents,
        app.agents.map((a) => a.id),
        (i) => `agents[${i}]`,
      ) ??
      both('models', Object.keys(config.models), Object.keys(app.models), (i) => `models.${Object.keys(app.models)[i] as string}`) ??
      both('providers', config.providers, Object.keys(app.providers), (i) => `providers.${Object.keys(app.providers)[i] as string}`);
    if (clash !== undefined) return clash;
  }
  for (const [i, p] of app.plugins.entries()) {
    if (PLUGIN_CATALOG.has(p.name) || extraPlugins.includes(p.name))
      return `${file}: plugins[${i}]: '${p.name}' is the name of a built-in plugin: choose another`;
  }
  const providers = [...Object.keys(app.providers), ...(config?.providers ?? [])];
  for (const [id, m] of Object.entries(app.models)) {
    if (!providers.includes(m.provider)) return `${file}: models.${id}.provider: no provider '${m.provider}' (providers: ${providers.join(', ') || 'none'})`;
  }
  const models = [...Object.keys(app.models), ...Object.keys(config?.models ?? {})];
  const plugins = [...PLUGIN_CATALOG.keys(), ...extraPlugins, ...app.plugins.map((p) => p.name)];
  for (const [i, a] of app.agents.entries()) {
    if (a.endpoint === undefined && !models.includes(a.model))
      return `${file}: agents[${i}].model: no model '${a.model}' (models: ${models.join(', ') || 'none'})`;
    for (const [j, id] of a.plugin_ids.entries()) {
      if (!plugins.includes(id))
        return `${file}: agents[${i}].plugin_ids[${j}]: no plugin '${id}' (the app's: ${app.plugins.map((p) => p.name).join(', ') || 'none'}; built in: ${[...PLUGIN_CATALOG.keys()].join(', ')})`;
    }
  }
  if (app.agents.length === 0 && (config === undefined || config.agents.length === 0)) return `${file}: agents: the app declares no agent`;
  return undefined;
}

/** The app's plugins by name (what a served recorder and a replay look plugins up in). */
export const pluginsById = (app: App): ReadonlyMap<string, RuntimePlugin> => new Map(app.plugins.map((p) => [p.name, p]));

/**
 * Adds an app to a builder: its tools (each through `tool`, a recorder), plugins, providers (each
 * through `llm`), models, agents (each through `agent`) and stop policies.
 */
export function addApp(
  builder: AgentRuntimeBuilder,
  app: App,
  wrap: { readonly tool?: (t: Tool) => Tool; readonly llm?: (l: LlmExecutor) => LlmExecutor; readonly agent?: (a: AgentSpec) => AgentSpec } = {},
): AgentRuntimeBuilder {
  for (const t of app.tools) builder.withTool(wrap.tool?.(t) ?? t);
  for (const p of app.plugins) builder.withPlugin(p.name, p);
  for (const [id, p] of Object.entries(app.providers)) builder.withProvider(id, wrap.llm?.(p) ?? p);
  for (const [id, m] of Object.entries(app.models)) builder.withModel(id, m);
  for (const a of app.agents) builder.withAgentSpec(wrap.agent?.(a) ?? a);
  for (const s of app.stopPolicies) builder.withStopPolicy(s);
  return builder;
}
