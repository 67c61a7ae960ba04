import type { RunTap, TapRun } from './tap.ts';
import type { Snapshot } from '../core/state/snapshot.ts';
import type { StateCommand } from '../core/state/state-command.ts';
import { z } from 'zod';
import { definePluginConfigKey, readPluginConfig, type AgentSpec, type PluginConfigKey } from '../contract/agent-spec.ts';
import type { ResolveError, StateError } from '../contract/errors.ts';
import { err, ok, type Result } from '../contract/result.ts';
import {
  modeSupportedBy,
  NO_RECOVERY_POLICIES,
  ToolRecoveryPolicySchema,
  type RecoveryPolicies,
  type ToolRecoveryCapability,
  type ToolRecoveryPolicy,
} from '../contract/tool-recovery.ts';
export type { RecoveryPolicies } from '../contract/tool-recovery.ts';
import { maxRoundsPolicy, policyFromSpec, type StopPolicy } from '../core/policies/stop-policy.ts';
import { buildExecutionEnv, isPreRegistered, PluginRegistrar, preRegistered, type ExecutionEnv, type Plugin, type ToolLike } from '../core/phase/plugin.ts';
import { loopActionsPlugin, loopStatePlugin, stopConditionPlugin } from './builtin-plugins.ts';
import type { CircuitBreaker } from './circuit-breaker.ts';
import type { Env } from './env.ts';
import type { LlmExecutor } from './llm.ts';
import { RetryConfigKey, retryingExecutor, type InferenceObserver, type ModelTarget } from './retry.ts';
import type { Tool } from './tool.ts';
import { DelegationConfigKey, delegateTool, type DelegationHost } from './delegation.ts';
import { displayDescription } from '../contract/agent-spec.ts';
import { clientStatePlugin } from './client-state.ts';
import { byteHeuristicTokenizer, effectivePolicy, type Tokenizer } from '../core/context/index.ts';
import { toolIdMatch } from '../core/pattern/tool-id.ts';
import {
  CompactionConfigKey,
  compactionPlugin,
  CONTEXT_CONFIG_KEYS,
  ContextTransformConfigKey,
  contextTransformPlugin,
  defaultSummarizer,
  type ResolvedContext,
  type Summarizer,
} from './context.ts';
import { unreachable } from '../contract/never.ts';

/** A model entry as a config or an app writes one: its provider, provider-side name and limits (book: ModelSpec); unknown fields refused. */
export const ModelEntrySchema = z
  .object({
    provider: z.string().min(1),
    model_name: z.string().min(1),
    context_window: z.number().int().positive().optional(),
    max_output_tokens: z.number().int().positive().optional(),
  })
  .strict();

/** A model id's provider and provider-side name (book: ModelEntry). */
export interface ModelEntry {
  readonly provider: string;
  readonly model_name: string;
  /** The model's context window, in tokens (clamps `context_policy`). */
  readonly context_window?: number;
  /** The most the model can answer, in tokens (clamps `context_policy`). */
  readonly max_output_tokens?: number;
}

/** A plugin as the runtime registers it: its config sections are validated at resolve. */
export interface RuntimePlugin extends Plugin {
  readonly configKeys?: readonly PluginConfigKey<unknown>[];
  /** A watcher of each run of an agent whose active plugins include this one (`RunTap`); nothing to watch: `undefined`. */
  readonly tap?: (run: TapRun) => RunTap | undefined;
  /**
   * A run taken up from the store (recovered, revived, forked) has its persistent state alone, and
   * its RunStart hooks do not run again: what this plugin derives from that state into the run keys
   * the store does not keep, committed before the run goes on. Nothing to derive: `undefined`.
   */
  readonly takenUp?: (snapshot: Snapshot, agent: AgentSpec) => StateCommand | undefined;
}

export interface Registries {
  readonly agents: ReadonlyMap<string, AgentSpec>;
  readonly tools: ReadonlyMap<string, Tool>;
  readonly providers: ReadonlyMap<string, LlmExecutor>;
  readonly models: ReadonlyMap<string, ModelEntry>;
  readonly plugins: ReadonlyMap<string, RuntimePlugin>;
  /** Custom stop policies, evaluated for every agent after the spec's own. */
  readonly stopPolicies?: readonly StopPolicy[];
  /** Token estimation for context management (default: the byte heuristic). */
  readonly tokenizer?: Tokenizer;
  /** Compaction summaries (default: the DefaultSummarizer on the agent's model). */
  readonly summarizer?: Summarizer;
  /** Backends for the `agent_run_<id>` tools of agents with `delegates` (the runtime lends its own). */
  readonly delegation?: DelegationHost;
}

/** Tool execution mode and decision replay policy (book: 工具执行模式), section `tool_execution`. */
export const ToolExecutionSchema = z
  .object({
    mode: z.enum(['sequential', 'parallel_batch_approval', 'parallel_streaming']).default('sequential'),
    decision_replay: z.enum(['immediate', 'batch_all_suspended']).optional(),
    /**
     * Tool id → the recovery policy its calls are pinned to when a batch is created (seed 003): a
     * mode up to the tool's own recovery capability, and the dispatches a call may have in all.
     */
    recovery: z.record(z.string(), ToolRecoveryPolicySchema).optional(),
  })
  .strict();
export type ToolExecutionMode = z.output<typeof ToolExecutionSchema>['mode'];
export type DecisionReplayPolicy = 'immediate' | 'batch_all_suspended';

/** The mode of an agent without a `tool_execution` section: one frozen value, not a parse per run. */
const DEFAULT_TOOL_EXECUTION = Object.freeze(ToolExecutionSchema.parse({}));

export const ToolExecutionConfigKey = definePluginConfigKey(
  'tool_execution',
  ToolExecutionSchema as z.ZodType<z.output<typeof ToolExecutionSchema>>,
  () => DEFAULT_TOOL_EXECUTION,
);

const McpToolSchema = z.object({ default_message: z.string().min(1).optional() }).strict();

/**
 * How the agent is offered as an MCP tool (`awaken serve`'s `/v1/mcp`, `awaken mcp`): with
 * `default_message`, a call without a message runs the agent on it (a tool that needs no input).
 */
export const McpToolConfigKey = definePluginConfigKey<z.output<typeof McpToolSchema>>(
  'mcp',
  McpToolSchema as z.ZodType<z.output<typeof McpToolSchema>>,
  () => ({}),
);

/** Sections the runtime itself claims. */
export const RUNTIME_CONFIG_KEYS: readonly PluginConfigKey<unknown>[] = [
  RetryConfigKey as PluginConfigKey<unknown>,
  ToolExecutionConfigKey as PluginConfigKey<unknown>,
  McpToolConfigKey as PluginConfigKey<unknown>,
  DelegationConfigKey as PluginConfigKey<unknown>,
  ...CONTEXT_CONFIG_KEYS,
];

/** Everything a run needs, resolved from the registries for one agent (book: 智能体解析). */
export interface ResolvedAgent {
  readonly spec: AgentSpec;
  readonly modelId: string;
  readonly modelName: string;
  /** The model registry's provider id of `modelId`. */
  readonly providerId: string;
  readonly llm: LlmExecutor;
  /** Tools by id, after conflicts and allow/exclude filters, sorted by id. */
  readonly tools: ReadonlyMap<string, Tool>;
  readonly plugins: readonly Plugin[];
  readonly stopPolicies: readonly StopPolicy[];
  readonly toolExecution: {
    readonly mode: ToolExecutionMode;
    readonly decisionReplay: DecisionReplayPolicy;
    /** Tool id → its recovery policy, for the tools the agent names in `tool_execution.recovery` (the others have the default). */
    readonly recovery: RecoveryPolicies;
  };
  /** Plugins whose hooks, tools and transforms are active (empty: all). */
  readonly activePlugins: readonly string[];
  /** Sections no plugin claimed (a likely typo). */
  readonly warnings: readonly string[];
  /** Context-window management, when the agent sets `context_policy`. */
  readonly context?: ResolvedContext;
  /** The plugins registered (once, here): hooks, handlers, tools and keys the run's phase engine uses. */
  readonly executionEnv: ExecutionEnv;
}

/** What resolving needs besides the registries; the observer's callbacks hear each inference's attempts. */
export interface ResolveDeps extends InferenceObserver {
  readonly env: Env;
  readonly breaker?: CircuitBreaker;
}

/** The three-stage resolve pipeline: lookup, plugins, tools. Never returns a partial result. */
export function resolveAgent(registries: Registries, agentId: string, deps: ResolveDeps): Result<ResolvedAgent, ResolveError> {
  // Stage 1: lookup.
  const spec = registries.agents.get(agentId);
  if (spec === undefined) return err({ code: 'agent_not_found', agentId });
  if (spec.endpoint !== undefined) return err({ code: 'remote_agent_not_directly_runnable', agentId });
  const target = (modelId: string): Result<ModelTarget, ResolveError> => {
    const entry = registries.models.get(modelId);
    if (entry === undefined) return err({ code: 'model_not_found', modelId });
    const executor = registries.providers.get(entry.provider);
    if (executor === undefined) return err({ code: 'provider_not_found', providerId: entry.provider });
    return ok({ modelName: entry.model_name, executor });
  };
  const primary = target(spec.model);
  if (!primary.ok) return primary;

  // Stage 2: plugins, then config sections.
  const plugins: RuntimePlugin[] = [];
  for (const id of spec.plugin_ids) {
    const plugin = registries.plugins.get(id);
    if (plugin === undefined) return err({ code: 'plugin_not_found', pluginId: id });
    plugins.push(plugin);
  }
  const stop = stopConditionOf(spec, registries.stopPolicies);
  const stopPolicies = stop.policies;
  const defaults: Plugin[] = [loopStatePlugin, loopActionsPlugin, stop.plugin];
  // The keys the runtime's agents share with their clients (a plugin registering one too is a conflict).
  const shared = clientStatePlugin(registries.agents);
  if (shared !== undefined) defaults.push(shared);
  // ContextTransformPlugin and CompactionPlugin join only when the agent sets a context policy.
  let context: ResolvedContext | undefined;
  const warnings: string[] = [];
  const sections = Object.keys(spec.sections);
  if (sections.length > 0) {
    const claimed = new Map<string, { plugin: string; key: PluginConfigKey<unknown> }>();
    for (const key of RUNTIME_CONFIG_KEYS) claimed.set(key.key, { plugin: 'runtime', key });
    for (const plugin of plugins) for (const key of plugin.configKeys ?? []) claimed.set(key.key, { plugin: plugin.name, key });
    for (const section of sections.sort()) {
      const owner = claimed.get(section);
      if (owner === undefined) {
        warnings.push(`config section '${section}' is not claimed by any plugin`);
        continue;
      }
      const read = readPluginConfig(spec, owner.key);
      if (!read.ok)
        return err({
          code: 'invalid_plugin_config',
          plugin: owner.plugin,
          key: section,
          message: read.error.code === 'key_decode' ? read.error.message : read.error.code,
        });
    }
  }
  const retry = readPluginConfig(spec, RetryConfigKey);
  const execution = readPluginConfig(spec, ToolExecutionConfigKey);
  if (!retry.ok || !execution.ok) return err({ code: 'invalid_plugin_config', plugin: 'runtime', key: 'retry', message: 'unreadable' });

  let llm = primary.value.executor;
  const explicitRetry = Object.hasOwn(spec.sections, RetryConfigKey.key);
  if (explicitRetry && (retry.value.max_retries > 0 || retry.value.fallback_models.length > 0)) {
    const targets: ModelTarget[] = [primary.value];
    for (const id of retry.value.fallback_models) {
      const t = target(id);
      if (!t.ok) return t;
      targets.push(t.value);
    }
    llm = retryingExecutor(targets, retry.value, deps.env, deps.breaker, deps);
  } else if (deps.breaker !== undefined) {
    llm = retryingExecutor([primary.value], { ...retry.value, max_retries: 0 }, deps.env, deps.breaker, deps);
  }

  if (spec.context_policy !== undefined) {
    const transform = readPluginConfig(spec, ContextTransformConfigKey);
    const compaction = readPluginConfig(spec, CompactionConfigKey);
    if (!transform.ok || !compaction.ok) return err({ code: 'invalid_plugin_config', plugin: 'runtime', key: 'context', message: 'unreadable' });
    const entry = registries.models.get(spec.model);
    context = {
      policy: effectivePolicy(spec.context_policy, {
        ...(entry?.context_window !== undefined ? { context_window: entry.context_window } : {}),
        ...(entry?.max_output_tokens !== undefined ? { max_output_tokens: entry.max_output_tokens } : {}),
      }),
      transform: transform.value,
      compaction: compaction.value,
      tokenizer: registries.tokenizer ?? byteHeuristicTokenizer,
      summarizer: registries.summarizer ?? defaultSummarizer(llm),
    };
    defaults.push(contextTransformPlugin(context), compactionPlugin);
  }

  // Stage 3: tools — global, then plugin tools; same id twice is a conflict; then allow/exclude, sorted by id.
  const all = [...plugins, ...defaults];
  const activePlugins = activePluginNames(spec, defaults);
  const env = executionEnvOf(spec, all, activePlugins);
  if (!env.ok) return err({ code: 'env_build', error: env.error });
  const pluginTools = env.value.tools;
  for (const [id, tool] of pluginTools) {
    // Two plugins cannot register one id (the env refuses it): a conflict is with a global tool.
    if (registries.tools.has(id)) {
      const owner = plugins.find((p) => toolsOf(p).includes(id))?.name ?? 'plugin';
      return err({ code: 'tool_id_conflict', toolId: id, sourceA: 'global', sourceB: `plugin:${owner}` });
    }
    if (!isTool(tool)) return err({ code: 'env_build', error: { code: 'tool_already_registered', toolId: id } });
  }
  // Delegation tools: `agent_run_<id>` for each delegate, a conflict with any other tool of that id.
  const delegated = new Map<string, Tool>();
  if (spec.delegates.length > 0) {
    const config = readPluginConfig(spec, DelegationConfigKey);
    if (!config.ok) return err({ code: 'invalid_plugin_config', plugin: 'runtime', key: 'delegation', message: 'unreadable' });
    for (const delegateId of spec.delegates) {
      const standIn = registries.delegation?.stand_ins?.get(delegateId);
      let tool: Tool;
      if (standIn !== undefined) tool = standIn;
      else {
        const target = registries.agents.get(delegateId);
        if (target === undefined) return err({ code: 'delegate_not_found', agentId, delegateId });
        if (target.endpoint !== undefined && registries.delegation !== undefined && registries.delegation.backendOf(target) === undefined) {
          return err({ code: 'unsupported_remote_backend', agentId: delegateId, backend: target.endpoint.backend });
        }
        const made = delegateTool(target, displayDescription(target), registries.delegation ?? NO_DELEGATION, config.value);
        tool = registries.delegation?.wrap?.(made) ?? made;
      }
      const id = tool.descriptor.id;
      if (registries.tools.has(id) || pluginTools.has(id) || delegated.has(id))
        return err({ code: 'tool_id_conflict', toolId: id, sourceA: registries.tools.has(id) ? 'global' : 'plugin', sourceB: `delegate:${delegateId}` });
      delegated.set(id, tool);
    }
  }
  // Tool-id patterns (anchored; `*` any run, `\x` a literal x): allowed first, then excluded.
  const allowed = spec.allowed_tools;
  const excluded = spec.excluded_tools ?? [];
  const offered = (id: string): boolean => (allowed === undefined || allowed.some((p) => toolIdMatch(p, id))) && !excluded.some((p) => toolIdMatch(p, id));
  const ids: string[] = [];
  for (const id of registries.tools.keys()) if (offered(id)) ids.push(id);
  for (const id of pluginTools.keys()) if (offered(id)) ids.push(id);
  for (const id of delegated.keys()) if (offered(id)) ids.push(id);
  ids.sort();
  const filtered = new Map<string, Tool>();
  for (const id of ids) {
    const tool = (registries.tools.get(id) ?? pluginTools.get(id) ?? delegated.get(id)) as Tool;
    filtered.set(id, tool.forAgent?.(spec) ?? tool);
  }

  const recovery = recoveryPoliciesOf(execution.value.recovery, filtered);
  if (!recovery.ok) return err({ code: 'invalid_plugin_config', plugin: 'runtime', key: ToolExecutionConfigKey.key, message: recovery.error });
  const mode = execution.value.mode;
  const decisionReplay: DecisionReplayPolicy = execution.value.decision_replay ?? (mode === 'parallel_batch_approval' ? 'batch_all_suspended' : 'immediate');
  return ok({
    spec,
    modelId: spec.model,
    modelName: primary.value.modelName,
    providerId: (registries.models.get(spec.model) as ModelEntry).provider,
    llm,
    tools: filtered,
    plugins: all,
    stopPolicies,
    toolExecution: { mode, decisionReplay, recovery: recovery.value },
    activePlugins,
    warnings,
    ...(context !== undefined ? { context } : {}),
    executionEnv: env.value,
  });
}

/**
 * The stop-condition plugin of an agent, made and registered once per agent spec and stop-policy list
 * (its hooks keep nothing between runs: the statistics live in the run's state). The spec is one
 * object per published registries, so a new publication makes a new one.
 */
const stopConditions = new WeakMap<
  AgentSpec,
  { readonly shared: readonly StopPolicy[] | undefined; readonly policies: StopPolicy[]; readonly plugin: Plugin }
>();

function stopConditionOf(spec: AgentSpec, shared: readonly StopPolicy[] | undefined): { readonly policies: StopPolicy[]; readonly plugin: Plugin } {
  const known = stopConditions.get(spec);
  if (known !== undefined && known.shared === shared) return known;
  const policies = [maxRoundsPolicy(spec.max_rounds), ...(spec.stop_conditions ?? []).map(policyFromSpec), ...(shared ?? [])];
  const made = { shared, policies, plugin: preRegistered(stopConditionPlugin(policies)) };
  stopConditions.set(spec, made);
  return made;
}

/**
 * The execution env of an agent's plugins. When every plugin is pre-registered (the runtime's own
 * always are; a user plugin when it is made with `preRegistered`), the env is the same for every run
 * and is built once per agent spec and plugin list (ADR 0025); otherwise the plugins are registered
 * afresh for the run (ADR 0022: a plugin may keep something per registration).
 */
const sharedEnvs = new WeakMap<AgentSpec, { readonly plugins: readonly Plugin[]; readonly activePlugins: readonly string[]; readonly env: ExecutionEnv }>();

function executionEnvOf(spec: AgentSpec, plugins: readonly Plugin[], activePlugins: readonly string[]): Result<ExecutionEnv, StateError> {
  if (!plugins.every(isPreRegistered)) return buildExecutionEnv(plugins, { activePlugins });
  const known = sharedEnvs.get(spec);
  if (known !== undefined && sameList(known.plugins, plugins) && sameList(known.activePlugins, activePlugins)) return ok(known.env);
  const built = buildExecutionEnv(plugins, { activePlugins });
  if (built.ok) sharedEnvs.set(spec, { plugins, activePlugins, env: built.value });
  return built;
}

function sameList<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * Plugins whose behaviour is active: every plugin when the agent's hook filter is empty, otherwise
 * the named ones plus the runtime's own (0.6 drops MaxRounds when the filter omits it ⟂).
 */
export function activePluginNames(spec: AgentSpec, defaults: readonly Plugin[]): string[] {
  return spec.active_hook_filter.length === 0 ? [] : [...spec.active_hook_filter, ...defaults.map((p) => p.name)];
}

/** Without a runtime to lend its backends (a resolve outside one), a delegation answers that it cannot run. */
const NO_DELEGATION: DelegationHost = { backendOf: () => undefined, enter: () => true, leave: () => undefined };

const isTool = (t: ToolLike): t is Tool => typeof (t as Partial<Tool>).execute === 'function';

/** Ids of the tools a plugin registers (for conflict messages). */
function toolsOf(plugin: Plugin): string[] {
  const r = new PluginRegistrar(plugin.name);
  try {
    plugin.register(r);
  } catch {
    // A register that throws is the build's error to report (plugin_register_failed), not this list's.
    return [];
  }
  return r.tools.map((t) => t.descriptor.id);
}

/**
 * The agent's recovery policies, each checked against its tool: a policy for a tool the agent is not
 * offered is refused (a misspelt id would otherwise leave the real tool on the default), and so is
 * a mode beyond what the tool says of itself — a config narrows a tool's guarantee, never widens it.
 */
function recoveryPoliciesOf(
  written: { readonly [toolId: string]: ToolRecoveryPolicy } | undefined,
  tools: ReadonlyMap<string, Tool>,
): Result<RecoveryPolicies, string> {
  if (written === undefined) return ok(NO_RECOVERY_POLICIES);
  const policies: { [toolId: string]: ToolRecoveryPolicy } = Object.create(null);
  for (const id of Object.keys(written).sort()) {
    const tool = tools.get(id);
    if (tool === undefined) return err(`recovery.${id}: the agent has no tool '${id}'`);
    const policy = written[id] as ToolRecoveryPolicy;
    const capability = tool.recovery ?? 'non_recoverable';
    if (!modeSupportedBy(policy.mode, capability))
      return err(`recovery.${id}.mode: '${policy.mode}' asks more than the tool's recovery capability '${capability}' (allowed: ${allowedModes(capability)})`);
    policies[id] = policy;
  }
  return ok(Object.freeze(policies));
}

const allowedModes = (capability: ToolRecoveryCapability): string => (capability === 'non_recoverable' ? "'never_replay'" : `'never_replay', '${capability}'`);

export function describeResolveError(e: ResolveError): string {
  switch (e.code) {
    case 'agent_not_found':
      return `agent '${e.agentId}' not found`;
    case 'model_not_found':
      return `model '${e.modelId}' not found`;
    case 'provider_not_found':
      return `provider '${e.providerId}' not found`;
    case 'plugin_not_found':
      return `plugin '${e.pluginId}' not found`;
    case 'invalid_plugin_config':
      return `invalid config section '${e.key}' of plugin '${e.plugin}': ${e.message}`;
    case 'remote_agent_not_directly_runnable':
      return `agent '${e.agentId}' is remote and cannot run directly`;
    case 'delegate_not_found':
      return `agent '${e.agentId}' delegates to '${e.delegateId}', which is not registered`;
    case 'unsupported_remote_backend':
      return `agent '${e.agentId}' has an endpoint of backend '${e.backend}', which this runtime cannot reach (backends: a2a)`;
    case 'tool_id_conflict':
      return `tool id '${e.toolId}' registered by both ${e.sourceA} and ${e.sourceB}`;
    case 'env_build':
      return `execution environment: ${e.error.code}`;
    default:
      return unreachable(e);
  }
}
