import { z } from 'zod';
import type { AgentSpec } from '../contract/agent-spec.ts';
import type { App } from '../app/app.ts';
import { addApp, pluginsById } from '../app/compose.ts';
import type { LoadedApp } from '../app/load.ts';
import { PLUGIN_CATALOG } from '../plugins/catalog.ts';
import { McpToolRegistryManager, type McpServerConfig } from '../plugins/mcp-tools.ts';
import { configuredSkills, discoverSkills, skillRegistry, skillResourceLimitsOf, type SkillScripts } from '../plugins/skills/index.ts';
import { perConversation } from '../providers/per-conversation.ts';
import { AgentRuntimeBuilder, type AgentRuntime } from '../runtime/agent-runtime.ts';
import type { Env } from '../runtime/env.ts';
import type { SandboxLimits } from '../runtime/sandbox/run.ts';
import { openSandbox, type Sandbox, SandboxRefused } from '../runtime/sandbox/tool.ts';
import type { Tool } from '../runtime/tool.ts';
import type { ThreadRunStore } from '../runtime/thread-run-store.ts';
import type { LlmExecutor } from '../runtime/llm.ts';
import type { ModelEntry, RuntimePlugin } from '../runtime/resolve.ts';
import { providerOf } from '../server/config-routes.ts';
import { buildFailure, CliFailure } from './args.ts';
import { EXIT } from './exit.ts';
import { modelFactoryOf } from './run-plan.ts';
import { checkApp } from './app-option.ts';
import { loadServeConfig, type ServeConfig } from './serve-config.ts';

/** A config section's sandbox limits (`wall_ms`, `memory_bytes`, `output_bytes`, `cpu_seconds`). */
const limitsOf = (section: {
  readonly wall_ms?: number | undefined;
  readonly memory_bytes?: number | undefined;
  readonly output_bytes?: number | undefined;
  readonly cpu_seconds?: number | undefined;
}): Partial<SandboxLimits> => ({
  ...(section.wall_ms !== undefined ? { wallMs: section.wall_ms } : {}),
  ...(section.memory_bytes !== undefined ? { memoryBytes: section.memory_bytes } : {}),
  ...(section.output_bytes !== undefined ? { outputBytes: section.output_bytes } : {}),
  ...(section.cpu_seconds !== undefined ? { cpuSeconds: section.cpu_seconds } : {}),
});

/** The sandbox, opened for what `field` of the config asks of it: a machine that cannot contain it stops the start with the line saying why. */
function sandboxFor(field: string, config: string | undefined, limits: Partial<SandboxLimits> = {}): Sandbox {
  try {
    return openSandbox({ limits });
  } catch (e) {
    if (e instanceof SandboxRefused) throw new CliFailure(`${config ?? ''}: ${field}: ${e.message}`, EXIT.unavailable);
    throw e;
  }
}

/** `skills.scripts`: the skills' scripts run in the sandbox. */
function scriptsOf(section: NonNullable<ServeConfig['skills']>['scripts'], config: string | undefined): SkillScripts | undefined {
  return section === undefined ? undefined : { sandbox: sandboxFor('skills.scripts', config, limitsOf(section)) };
}

/** `tools`: each a command run in the sandbox, its arguments checked by its JSON Schema. */
function configuredTools(tools: ServeConfig['tools'], config: string | undefined): Tool[] {
  if (tools === undefined || tools.length === 0) return [];
  const sandbox = sandboxFor('tools', config);
  return tools.map((t, i) => {
    let args: z.ZodType;
    try {
      args = z.fromJSONSchema(t.parameters as Parameters<typeof z.fromJSONSchema>[0]);
    } catch (e) {
      throw new CliFailure(
        `${config ?? ''}: tools[${i}].parameters: not a JSON Schema this server reads (${e instanceof Error ? e.message : String(e)})`,
        EXIT.data,
      );
    }
    const [program, ...rest] = t.sandbox.command as [string, ...string[]];
    return sandbox.tool({ id: t.id, description: t.description, args, run: { command: [program, ...rest] }, limits: limitsOf(t.sandbox) });
  });
}

/** What a config's skill directories held: the skills found, where, and what was skipped and why. */
export interface ConfiguredSkills {
  readonly names: readonly string[];
  readonly dirs: readonly string[];
  readonly warnings: readonly string[];
}

/**
 * Adds what a config file declares to a builder, as `awaken serve` and `awaken mcp --config` both
 * run it: the catalog's plugins (the skills plugins holding the skills of `skills.dirs`, `plugins`
 * replacing one of the same id), the providers (a scripted one runs its file from the start in each
 * thread), the models and the agents. `llm` wraps each provider, `agent` each agent (a recorder, a
 * tracer). A skill directory that does not hold a valid set of skills is bad data.
 */
export function addConfigured(
  builder: AgentRuntimeBuilder,
  file: ServeConfig | undefined,
  options: {
    readonly config: string | undefined;
    readonly env: NodeJS.ProcessEnv;
    readonly plugins?: readonly RuntimePlugin[];
    readonly llm?: (llm: LlmExecutor) => LlmExecutor;
    readonly agent?: (agent: AgentSpec) => AgentSpec;
  },
): ConfiguredSkills {
  const llm = options.llm ?? ((l: LlmExecutor) => l);
  const dirs = file?.skills?.dirs ?? [];
  const discovered = dirs.map((dir) => discoverSkills(dir));
  const found = skillRegistry(discovered.flatMap((d) => d.skills));
  if (!found.ok) throw new CliFailure(`${options.config ?? ''}: skills.dirs: ${found.error}`, EXIT.data);
  const skills = configuredSkills(found.value, skillResourceLimitsOf(file?.skills ?? {}), scriptsOf(file?.skills?.scripts, options.config));
  const plugins = new Map(PLUGIN_CATALOG);
  plugins.set(skills.discovery.name, skills.discovery).set(skills.activeInstructions.name, skills.activeInstructions);
  for (const p of options.plugins ?? []) plugins.set(p.name, p);
  for (const [id, plugin] of plugins) builder.withPlugin(id, plugin);
  for (const [id, p] of Object.entries(file?.providers ?? {})) {
    if (p.kind !== 'scripted') {
      builder.withProvider(id, llm(providerOf(p, options.env)));
      continue;
    }
    try {
      builder.withProvider(id, llm(perConversation(modelFactoryOf(`scripted:${p.file}`))));
    } catch (e) {
      throw e instanceof CliFailure ? new CliFailure(`${options.config ?? ''}: providers.${id}.file: ${e.message}`, e.exit) : e;
    }
  }
  for (const tool of configuredTools(file?.tools, options.config)) builder.withTool(tool);
  for (const [id, m] of Object.entries(file?.models ?? {})) builder.withModel(id, m as ModelEntry);
  for (const a of (file?.agents ?? []) as AgentSpec[]) builder.withAgentSpec(options.agent?.(a) ?? a);
  return { names: [...found.value.keys()], dirs, warnings: discovered.flatMap((d) => d.warnings) };
}

/**
 * The MCP servers a config file names, connected (undefined when it names none); one that cannot be
 * reached stops the start, naming it. Their URLs are reached through `fetch` (the serve's guard).
 */
export async function connectConfiguredMcp(
  file: ServeConfig | undefined,
  config: string | undefined,
  version: string,
  fetch: typeof globalThis.fetch,
): Promise<McpToolRegistryManager | undefined> {
  if (file?.mcp_servers === undefined || Object.keys(file.mcp_servers).length === 0) return undefined;
  try {
    return await McpToolRegistryManager.connect(file.mcp_servers as Record<string, McpServerConfig>, { version, onError: () => undefined, fetch });
  } catch (e) {
    throw new CliFailure(`${config ?? ''}: mcp_servers: ${e instanceof Error ? e.message : String(e)}`, EXIT.unavailable);
  }
}

/**
 * The agent `--agent` names among `agents` (an app's, and a config's beside it), or the first when
 * it names none. An id that is none of them is a command-line mistake naming the ones there are.
 */
export function agentNamed<A extends { readonly id: string }>(agents: readonly A[], id: string | undefined, where: string): A {
  const agent = id === undefined ? agents[0] : agents.find((a) => a.id === id);
  if (agent === undefined) throw new CliFailure(`no agent '${id ?? ''}' in ${where} (its agents: ${agents.map((a) => a.id).join(', ') || 'none'})`, EXIT.usage);
  return agent;
}

/**
 * A builder holding an app as `awaken run --app` (and record, mcp, acp) runs it: the catalog's
 * plugins (an app's agent may name them), then the app's tools, plugins, providers, models, agents
 * and stop policies, on `env` and `store`.
 */
export function appBuilder(app: App, env: Env, store?: ThreadRunStore): AgentRuntimeBuilder {
  const builder = new AgentRuntimeBuilder().withEnv(env);
  if (store !== undefined) builder.withThreadRunStore(store);
  for (const [id, plugin] of PLUGIN_CATALOG) builder.withPlugin(id, plugin);
  return addApp(builder, app);
}

/** An app's runtime (`appBuilder`, built): what does not build is one line naming the app's file, exit 65. */
export function appRuntime(loaded: LoadedApp, env: Env, store?: ThreadRunStore): AgentRuntime {
  const built = appBuilder(loaded.app, env, store).build();
  if (!built.ok) throw buildFailure(loaded.file, built.error);
  return built.value;
}

/**
 * The config file beside an app, read with the app's ids (its agents may name the app's models and
 * plugins, and the demo agent is not there), then the app checked against it — or alone, without a
 * file. `extra`: plugins loaded beside both (`awaken bench --plugin`), active for every agent.
 */
export function configBesideApp(loaded: LoadedApp, path: string | undefined, extra: readonly RuntimePlugin[] = []): ServeConfig | undefined {
  const { app } = loaded;
  const plugins = new Map<string, RuntimePlugin>([...PLUGIN_CATALOG, ...pluginsById(app), ...extra.map((p) => [p.name, p] as const)]);
  const names = extra.map((p) => p.name);
  const file =
    path === undefined
      ? undefined
      : loadServeConfig(path, plugins, names, { agents: app.agents.map((a) => a.id), models: Object.keys(app.models), providers: Object.keys(app.providers) });
  checkApp(
    loaded,
    path === undefined || file === undefined
      ? undefined
      : { file: path, agents: file.agents.map((a) => a.id as string), models: file.models, providers: Object.keys(file.providers) },
    names,
  );
  return file;
}
