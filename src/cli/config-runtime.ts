import type { AgentSpec } from '../contract/agent-spec.ts';
import { PLUGIN_CATALOG } from '../plugins/catalog.ts';
import { McpToolRegistryManager, type McpServerConfig } from '../plugins/mcp-tools.ts';
import { configuredSkills, discoverSkills, skillRegistry, skillResourceLimitsOf } from '../plugins/skills/index.ts';
import { perConversation } from '../providers/per-conversation.ts';
import type { AgentRuntimeBuilder } from '../runtime/agent-runtime.ts';
import type { LlmExecutor } from '../runtime/llm.ts';
import type { ModelEntry, RuntimePlugin } from '../runtime/resolve.ts';
import { providerOf } from '../server/config-routes.ts';
import { CliFailure } from './args.ts';
import { EXIT } from './exit.ts';
import { modelFactoryOf } from './run-plan.ts';
import type { ServeConfig } from './serve-config.ts';

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
  const skills = configuredSkills(found.value, skillResourceLimitsOf(file?.skills ?? {}));
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
  for (const [id, m] of Object.entries(file?.models ?? {})) builder.withModel(id, m as ModelEntry);
  for (const a of (file?.agents ?? []) as AgentSpec[]) builder.withAgentSpec(options.agent?.(a) ?? a);
  return { names: [...found.value.keys()], dirs, warnings: discovered.flatMap((d) => d.warnings) };
}

/**
 * The MCP servers a config file names, connected (undefined when it names none); one that cannot be
 * reached stops the start, naming it. Their URLs are reached through `fetch` (the serve's guard).
 */
export async function connectConfiguredMcp(file: ServeConfig | undefined, config: string | undefined, version: string, fetch: typeof globalThis.fetch): Promise<McpToolRegistryManager | undefined> {
  if (file?.mcp_servers === undefined || Object.keys(file.mcp_servers).length === 0) return undefined;
  try {
    return await McpToolRegistryManager.connect(file.mcp_servers as Record<string, McpServerConfig>, { version, onError: () => undefined, fetch });
  } catch (e) {
    throw new CliFailure(`${config ?? ''}: mcp_servers: ${e instanceof Error ? e.message : String(e)}`, EXIT.unavailable);
  }
}
