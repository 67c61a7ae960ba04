import { z } from 'zod';
import { definePluginConfigKey, readPluginConfig } from '../contract/agent-spec.ts';
import type { JsonValue } from '../contract/json.ts';
import { ToolDescriptorSchema, ToolResults, type ToolDescriptor, type ToolResult } from '../contract/tool.ts';
import {
  DeferredToolsConfigSchema,
  emptyUsage,
  formatFunctions,
  incrementTurn,
  observeTurn,
  parseToolQuery,
  planActivation,
  recordCall,
  searchTools,
  TOOL_SEARCH_ID,
  toolsToDefer,
  updatePriors,
  usedThisTurn,
  type AgentToolPriors,
  type DeferredToolsConfig,
  type DiscBetaEntry,
  type ToolLoadMode,
  type UsageStats,
} from '../core/deferral/index.ts';
import type { PhaseContext } from '../core/phase/plugin.ts';
import { defineAction, StateCommand } from '../core/state/state-command.ts';
import { defineStateKey } from '../core/state/state-key.ts';
import { AddContextMessage, ExcludeTool } from '../runtime/builtin-plugins.ts';
import type { ProfileStore } from '../runtime/profile-store.ts';
import type { RuntimePlugin } from '../runtime/resolve.ts';
import { defineTool } from '../runtime/tool.ts';
import { perAgentSpec } from './per-spec.ts';

export const DeferredToolsConfigKey = definePluginConfigKey('deferred_tools', DeferredToolsConfigSchema as z.ZodType<DeferredToolsConfig>, () =>
  DeferredToolsConfigSchema.parse({}),
);

/** Profile key of the learned priors. */
export const AGENT_PRIORS_KEY = 'deferred_tools.agent_priors';

const ModeSchema = z.enum(['eager', 'deferred']);

/** `deferred_tools.state`: each tool's load mode (book: DeferralState). */
export type DeferralStateUpdate =
  | { readonly op: 'set_batch'; readonly modes: Readonly<Record<string, ToolLoadMode>> }
  | { readonly op: 'defer'; readonly ids: readonly string[] }
  | { readonly op: 'promote'; readonly ids: readonly string[] };
export const DeferralState = defineStateKey<{ readonly modes: Readonly<Record<string, ToolLoadMode>> }, DeferralStateUpdate>({
  key: 'deferred_tools.state',
  init: () => ({ modes: {} }),
  apply: (s, u) => {
    if (u.op === 'set_batch') return { modes: Object.fromEntries([...Object.entries(s.modes), ...Object.entries(u.modes)]) };
    const mode: ToolLoadMode = u.op === 'defer' ? 'deferred' : 'eager';
    return { modes: Object.fromEntries([...Object.entries(s.modes), ...u.ids.map((id) => [id, mode] as const)]) };
  },
  codec: z.object({ modes: z.record(z.string(), ModeSchema) }),
});

/** `deferred_tools.registry`: the initially deferred tools, in agent order — what ToolSearch searches. */
export const DeferralRegistry = defineStateKey<{ readonly tools: readonly ToolDescriptor[] }, { readonly tools: readonly ToolDescriptor[] }>({
  key: 'deferred_tools.registry',
  init: () => ({ tools: [] }),
  apply: (_s, u) => u,
  codec: z.object({ tools: z.array(ToolDescriptorSchema) }) as z.ZodType<{ readonly tools: readonly ToolDescriptor[] }>,
});

const ToolUsageSchema = z.object({
  turn_presence_count: z.number(),
  total_call_count: z.number(),
  first_use_turn: z.number().optional(),
  last_use_turn: z.number().optional(),
});
/** `deferred_tools.usage_stats`. */
export const UsageStatsKey = defineStateKey<UsageStats, { readonly op: 'record'; readonly id: string } | { readonly op: 'increment_turn' }>({
  key: 'deferred_tools.usage_stats',
  init: emptyUsage,
  apply: (s, u) => (u.op === 'record' ? recordCall(s, u.id) : incrementTurn(s)),
  codec: z.object({ total_turns: z.number().int().nonnegative(), tools: z.record(z.string(), ToolUsageSchema) }) as z.ZodType<UsageStats>,
});

const DiscBetaEntrySchema = z.object({ alpha: z.number(), beta_param: z.number(), last_used_turn: z.number().optional(), c: z.number(), c_bar: z.number() });
/** `deferred_tools.disc_beta`: each tool's discounted Beta posterior. */
export const DiscBetaState = defineStateKey<
  { readonly tools: Readonly<Record<string, DiscBetaEntry>> },
  | { readonly op: 'init'; readonly tools: Readonly<Record<string, DiscBetaEntry>> }
  | { readonly op: 'observe'; readonly omega: number; readonly turn: number; readonly used: readonly string[] }
>({
  key: 'deferred_tools.disc_beta',
  init: () => ({ tools: {} }),
  apply: (s, u) => (u.op === 'init' ? { tools: u.tools } : { tools: observeTurn(s.tools, u.omega, u.turn, new Set(u.used)) }),
  codec: z.object({ tools: z.record(z.string(), DiscBetaEntrySchema) }) as z.ZodType<{ readonly tools: Readonly<Record<string, DiscBetaEntry>> }>,
});

/** DeferToolAction (book: Deferred Tools Actions): switch tools to Deferred (from the next request on). */
export const DeferToolAction = defineAction('deferred_tools.defer', 'before_inference', z.array(z.string()));
/** PromoteToolAction: switch tools to Eager (from the next request on). */
export const PromoteToolAction = defineAction('deferred_tools.promote', 'before_inference', z.array(z.string()));

const ToolSearchArgs = z
  .object({
    query: z.string().describe('Keywords, "+required other words", or "select:id1,id2"'),
    max_results: z.number().int().min(1).max(100).default(5).describe('At most this many tools (default 5)'),
  })
  .strict();

/** The ToolSearch tool: the best matches among the deferred tools, as a `<functions>` block of schemas. */
export const toolSearchTool = defineTool({
  id: TOOL_SEARCH_ID,
  description:
    'Search the deferred tools by keywords and get their full schemas. Tools found become available from the next step on. Query forms: "keywords", "+required keywords", "select:id1,id2".',
  args: ToolSearchArgs,
  execute: (args, ctx): ToolResult => {
    const registry = ctx.state(DeferralRegistry)?.tools ?? [];
    const found = searchTools(registry, parseToolQuery(args.query), args.max_results);
    return ToolResults.success(TOOL_SEARCH_ID, { __promote: found.map((t) => t.id), tools: formatFunctions(found) });
  },
});

export interface DeferredToolsOptions {
  /** Where learned priors live across sessions (book: 启用跨会话学习); without it nothing is learned. */
  readonly profiles?: ProfileStore;
}

/** The section, parsed once per agent spec (the hooks read it at every step). */
const configBySpec = perAgentSpec((spec): DeferredToolsConfig | undefined => {
  const r = readPluginConfig(spec, DeferredToolsConfigKey);
  return r.ok ? r.value : undefined;
});
const configOf = (ctx: PhaseContext): DeferredToolsConfig | undefined => configBySpec(ctx.input.agentSpec);
const isActive = (ctx: PhaseContext): boolean => Object.keys(ctx.snapshot.get(DeferralState)?.modes ?? {}).length > 0;

const PriorsSchema = z.object({ tools: z.record(z.string(), z.number().min(0).max(1)), session_count: z.number().int().nonnegative() });

/**
 * The deferred-tools plugin (book: 使用延迟加载工具). At run start it classifies the agent's tools
 * (learned priors first); before each inference it re-defers idle promoted tools by DiscBeta, hides
 * the deferred ones and lists them in a context message; ToolSearch promotes what it finds; each
 * step's tool use updates the posteriors; at run end the session is folded into the priors.
 */
export function deferredToolsPlugin(options: DeferredToolsOptions = {}): RuntimePlugin {
  return {
    name: 'deferred-tools',
    configKeys: [DeferredToolsConfigKey as never],
    register: (r) => {
      r.registerKey(DeferralState);
      r.registerKey(DeferralRegistry);
      r.registerKey(UsageStatsKey);
      r.registerKey(DiscBetaState);
      r.registerTool(toolSearchTool);
      r.registerScheduledAction(DeferToolAction, (_ctx, ids) => StateCommand.empty().update(DeferralState, { op: 'defer', ids }));
      r.registerScheduledAction(PromoteToolAction, (_ctx, ids) => StateCommand.empty().update(DeferralState, { op: 'promote', ids }));

      r.registerPhaseHook('run_start', async (ctx) => {
        const config = configOf(ctx);
        if (config === undefined || config.enabled === false) return StateCommand.empty();
        const agentId = ctx.input.agentSpec.id;
        const learned = options.profiles === undefined ? undefined : PriorsSchema.safeParse(await options.profiles.read(agentId, AGENT_PRIORS_KEY));
        const tools = ctx.input.tools;
        const plan = planActivation(tools, config, learned?.success === true ? (learned.data as AgentToolPriors) : undefined);
        if (!plan.enabled) return StateCommand.empty();
        return StateCommand.empty()
          .update(DeferralState, { op: 'set_batch', modes: plan.modes })
          .update(DeferralRegistry, { tools: plan.registry })
          .update(DiscBetaState, { op: 'init', tools: plan.entries });
      });

      r.registerPhaseHook('before_inference', (ctx) => {
        const cmd = StateCommand.empty();
        if (!isActive(ctx)) return cmd.scheduleAction(ExcludeTool, TOOL_SEARCH_ID);
        const config = configOf(ctx) ?? DeferredToolsConfigSchema.parse({});
        const modes = { ...(ctx.snapshot.get(DeferralState)?.modes ?? {}) };
        const turn = ctx.snapshot.get(UsageStatsKey)?.total_turns ?? 0;
        const reDefer = toolsToDefer(ctx.snapshot.get(DiscBetaState)?.tools ?? {}, modes, config, turn);
        if (reDefer.length > 0) {
          cmd.update(DeferralState, { op: 'defer', ids: reDefer });
          for (const id of reDefer) modes[id] = 'deferred';
        }
        const deferred = Object.keys(modes)
          .filter((id) => modes[id] === 'deferred' && id !== TOOL_SEARCH_ID)
          .sort();
        for (const id of deferred) cmd.scheduleAction(ExcludeTool, id);
        if (deferred.length > 0) {
          cmd.scheduleAction(AddContextMessage, {
            key: 'deferred_tools.list',
            content: `The following deferred tools are available via ToolSearch:\n${deferred.join(', ')}`,
            persistent: true,
          });
        }
        return cmd;
      });

      r.registerPhaseHook('after_tool_execute', (ctx) => {
        if (!isActive(ctx)) return StateCommand.empty();
        const call = ctx.input.toolCall;
        const result = ctx.input.toolResult;
        const cmd = StateCommand.empty().update(UsageStatsKey, { op: 'record', id: call.name });
        if (call.name === TOOL_SEARCH_ID && result?.status === 'success') {
          const promote = promotedBy(result.data);
          if (promote.length > 0) cmd.update(DeferralState, { op: 'promote', ids: promote });
        }
        return cmd;
      });

      // A turn is observed at its end, after its tools ran (0.6 observes before them ⟂, a one-turn lag).
      r.registerPhaseHook('step_end', (ctx) => {
        if (!isActive(ctx)) return StateCommand.empty();
        const config = configOf(ctx) ?? DeferredToolsConfigSchema.parse({});
        const stats = ctx.snapshot.get(UsageStatsKey) ?? emptyUsage();
        return StateCommand.empty()
          .update(DiscBetaState, { op: 'observe', omega: config.disc_beta.omega, turn: stats.total_turns, used: usedThisTurn(stats) })
          .update(UsageStatsKey, { op: 'increment_turn' });
      });

      r.registerPhaseHook('run_end', async (ctx) => {
        const stats = ctx.snapshot.get(UsageStatsKey);
        if (options.profiles === undefined || !isActive(ctx) || stats === undefined || stats.total_turns === 0) return StateCommand.empty();
        const agentId = ctx.input.agentSpec.id;
        const read = PriorsSchema.safeParse(await options.profiles.read(agentId, AGENT_PRIORS_KEY));
        const priors: AgentToolPriors = read.success ? read.data : { tools: {}, session_count: 0 };
        await options.profiles.write(agentId, AGENT_PRIORS_KEY, updatePriors(priors, stats) as unknown as JsonValue);
        return StateCommand.empty();
      });
    },
  };
}

function promotedBy(data: JsonValue): string[] {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return [];
  const ids = data['__promote'];
  return Array.isArray(ids) ? ids.filter((x): x is string => typeof x === 'string') : [];
}
