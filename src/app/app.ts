import { WrittenAgentSpecSchema, type AgentSpec } from '../contract/agent-spec.ts';
import { bracketPath, fieldIssues } from '../contract/issue-line.ts';
import { PluginRegistrar } from '../core/phase/plugin.ts';
import type { StopPolicy } from '../core/policies/stop-policy.ts';
import { aiSdkExecutor } from '../providers/ai-sdk.ts';
import type { LlmExecutor } from '../runtime/llm.ts';
import { ModelEntrySchema, type ModelEntry, type RuntimePlugin } from '../runtime/resolve.ts';
import type { Tool } from '../runtime/tool.ts';
import { aiSdkTool, isAiSdkTool } from './ai-sdk-tool.ts';
import { isDefinedApp, type AppDefinition, type LanguageModelLike } from './define.ts';

/** An app as every command uses it: checked, each part by its id. */
export interface App {
  readonly agents: readonly AgentSpec[];
  readonly tools: readonly Tool[];
  readonly plugins: readonly RuntimePlugin[];
  readonly models: Readonly<Record<string, ModelEntry>>;
  readonly providers: Readonly<Record<string, LlmExecutor>>;
  readonly stopPolicies: readonly StopPolicy[];
}

/** A field of an app that is wrong: where (`agents[0].model`, `tools.get_weather`) and why. */
export class AppFieldError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.name = 'AppFieldError';
    this.field = field;
  }
}

const FIELDS = ['agents', 'tools', 'plugins', 'models', 'providers', 'stopPolicies'] as const;

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null;
const isTool = (x: unknown): x is Tool =>
  isObject(x) && isObject(x['descriptor']) && typeof (x['descriptor'] as Record<string, unknown>)['id'] === 'string' && typeof x['execute'] === 'function';
const isPlugin = (x: unknown): x is RuntimePlugin => isObject(x) && typeof x['name'] === 'string' && x['name'] !== '' && typeof x['register'] === 'function';
const isExecutor = (x: unknown): x is LlmExecutor => isObject(x) && typeof x['stream'] === 'function';
const isLanguageModel = (x: unknown): x is LanguageModelLike =>
  isObject(x) && typeof x['specificationVersion'] === 'string' && typeof x['doStream'] === 'function';

/** The app a module exports: its default export, else its `app` export; undefined when it has neither. */
export function appExportOf(module: Readonly<Record<string, unknown>>): unknown {
  for (const candidate of [module['default'], module['app']]) if (isObject(candidate)) return candidate;
  return undefined;
}

/**
 * Checks an app a module exported and gives each part by id: an unknown field, an agent that is not
 * one, a tool or plugin named twice, a provider that is neither an executor nor an AI SDK model are
 * `AppFieldError`s naming the field.
 */
export function appOf(definition: unknown): App {
  if (!isObject(definition)) throw new AppFieldError('(export)', 'not an app: export default defineApp({ agents, tools, plugins, models, providers })');
  for (const key of Object.keys(definition)) {
    if (!(FIELDS as readonly string[]).includes(key)) throw new AppFieldError(key, `unknown field (an app has ${FIELDS.join(', ')})`);
  }
  const def = definition as AppDefinition;
  if (!isDefinedApp(definition) && FIELDS.every((f) => def[f] === undefined))
    throw new AppFieldError('(export)', 'not an app: export default defineApp({ agents, tools, plugins, models, providers })');
  return {
    agents: agentsOf(def.agents),
    tools: toolsOf(def.tools),
    plugins: pluginsOf(def.plugins),
    models: modelsOf(def.models),
    providers: providersOf(def.providers),
    stopPolicies: stopPoliciesOf(def.stopPolicies),
  };
}

function arrayOf(field: string, x: unknown): readonly unknown[] {
  if (x === undefined) return [];
  if (!Array.isArray(x)) throw new AppFieldError(field, 'not a list');
  return x;
}

function recordOf(field: string, x: unknown): Readonly<Record<string, unknown>> {
  if (x === undefined) return {};
  if (!isObject(x) || Array.isArray(x)) throw new AppFieldError(field, 'not a record of id → value');
  return x;
}

function agentsOf(x: unknown): AgentSpec[] {
  const seen = new Map<string, number>();
  return arrayOf('agents', x).map((a, i) => {
    const parsed = WrittenAgentSpecSchema.safeParse(a);
    if (!parsed.success) {
      const first = fieldIssues(parsed.error)[0];
      throw new AppFieldError(bracketPath(['agents', i, ...(first?.path ?? [])]), first?.message ?? 'invalid');
    }
    const agent = parsed.data as AgentSpec;
    const before = seen.get(agent.id);
    if (before !== undefined) throw new AppFieldError(`agents[${i}].id`, `'${agent.id}' is named twice (agents[${before}])`);
    seen.set(agent.id, i);
    return agent;
  });
}

function toolsOf(x: unknown): Tool[] {
  const seen = new Map<string, string>();
  const named = (field: string, tool: Tool): Tool => {
    const before = seen.get(tool.descriptor.id);
    if (before !== undefined) throw new AppFieldError(field, `tool '${tool.descriptor.id}' is named twice (${before})`);
    seen.set(tool.descriptor.id, field);
    return tool;
  };
  if (Array.isArray(x)) {
    return x.map((t, i) => {
      if (!isTool(t))
        throw new AppFieldError(
          `tools[${i}]`,
          'not a tool (defineTool({ id, description, args, execute }); an AI SDK tool() goes in a record: tools: { id: tool({...}) })',
        );
      return named(`tools[${i}]`, t);
    });
  }
  return Object.entries(recordOf('tools', x)).map(([id, t]) => {
    const field = `tools.${id}`;
    if (isTool(t)) {
      if (t.descriptor.id !== id) throw new AppFieldError(field, `the tool's id is '${t.descriptor.id}', not '${id}'`);
      return named(field, t);
    }
    if (!isAiSdkTool(t)) throw new AppFieldError(field, 'not a tool (an AI SDK tool() or defineTool(...))');
    try {
      return named(field, aiSdkTool(id, t));
    } catch (e) {
      if (e instanceof AppFieldError) throw e;
      throw new AppFieldError(field, e instanceof Error ? e.message : String(e));
    }
  });
}

function pluginsOf(x: unknown): RuntimePlugin[] {
  const seen = new Map<string, number>();
  return arrayOf('plugins', x).map((p, i) => {
    if (!isPlugin(p)) throw new AppFieldError(`plugins[${i}]`, 'not a plugin ({ name, register(registrar) }, or what a pluginFactory makes)');
    const before = seen.get(p.name);
    if (before !== undefined) throw new AppFieldError(`plugins[${i}]`, `plugin '${p.name}' is named twice (plugins[${before}])`);
    seen.set(p.name, i);
    // Registered once now: a register that throws is named here, at load, not when a run starts.
    try {
      p.register(new PluginRegistrar(p.name));
    } catch (e) {
      throw new AppFieldError(`plugins[${i}]`, `plugin '${p.name}': register threw: ${e instanceof Error ? e.message : String(e)}`);
    }
    return p;
  });
}

function modelsOf(x: unknown): Record<string, ModelEntry> {
  return Object.fromEntries(
    Object.entries(recordOf('models', x)).map(([id, m]) => {
      const parsed = ModelEntrySchema.safeParse(m);
      if (!parsed.success) {
        const first = fieldIssues(parsed.error)[0];
        throw new AppFieldError(bracketPath(['models', id, ...(first?.path ?? [])]), first?.message ?? 'invalid');
      }
      return [id, parsed.data as ModelEntry];
    }),
  );
}

function providersOf(x: unknown): Record<string, LlmExecutor> {
  return Object.fromEntries(
    Object.entries(recordOf('providers', x)).map(([id, p]) => {
      if (isExecutor(p)) return [id, p];
      if (isLanguageModel(p)) {
        if (p.specificationVersion !== 'v3')
          throw new AppFieldError(`providers.${id}`, `an AI SDK model of specification ${p.specificationVersion} (this awaken speaks v3: ai@6 providers)`);
        return [id, aiSdkExecutor(p as never)];
      }
      throw new AppFieldError(
        `providers.${id}`,
        'not a provider (an LlmExecutor such as scriptedProvider(...), or an AI SDK model such as openai("gpt-4o-mini"))',
      );
    }),
  );
}

function stopPoliciesOf(x: unknown): StopPolicy[] {
  const seen = new Set<string>();
  return arrayOf('stopPolicies', x).map((p, i) => {
    if (!isObject(p) || typeof p['id'] !== 'string' || typeof p['evaluate'] !== 'function')
      throw new AppFieldError(`stopPolicies[${i}]`, 'not a stop policy ({ id, evaluate(stats) })');
    if (seen.has(p['id'])) throw new AppFieldError(`stopPolicies[${i}]`, `stop policy '${p['id']}' is named twice`);
    seen.add(p['id']);
    return p as unknown as StopPolicy;
  });
}
