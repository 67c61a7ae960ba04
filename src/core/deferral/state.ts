import type { ToolDescriptor } from '../../contract/tool.ts';
import { DEFAULT_PRIOR, resolveMode, shouldEnable, type DeferredToolsConfig, type ToolLoadMode } from './config.ts';
import { newDiscBetaEntry, type DiscBetaEntry } from './disc-beta.ts';
import { utf8Length } from '../context/tokens.ts';

/** The tool the plugin adds; never deferred itself. */
export const TOOL_SEARCH_ID = 'ToolSearch';

/** Per-tool usage of the run (book: usage_stats). */
export interface ToolUsage {
  readonly turn_presence_count: number;
  readonly total_call_count: number;
  readonly first_use_turn?: number;
  readonly last_use_turn?: number;
}
export interface UsageStats {
  readonly total_turns: number;
  readonly tools: Readonly<Record<string, ToolUsage>>;
}

export const emptyUsage = (): UsageStats => ({ total_turns: 0, tools: {} });

/** One call of `id` in the current turn (`total_turns`): presence counts once per turn. */
export function recordCall(stats: UsageStats, id: string): UsageStats {
  const turn = stats.total_turns;
  const prev: ToolUsage = stats.tools[id] ?? { turn_presence_count: 0, total_call_count: 0 };
  const next: ToolUsage = {
    turn_presence_count: prev.turn_presence_count + (prev.last_use_turn === turn ? 0 : 1),
    total_call_count: prev.total_call_count + 1,
    first_use_turn: prev.first_use_turn ?? turn,
    last_use_turn: turn,
  };
  return { ...stats, tools: Object.fromEntries([...Object.entries(stats.tools).filter(([k]) => k !== id), [id, next]]) };
}

export const incrementTurn = (stats: UsageStats): UsageStats => ({ ...stats, total_turns: stats.total_turns + 1 });

/** Tools used in the current turn, sorted. */
export const usedThisTurn = (stats: UsageStats): string[] =>
  Object.entries(stats.tools)
    .filter(([, u]) => u.last_use_turn === stats.total_turns)
    .map(([id]) => id)
    .sort();

/** Turns with at least one call over all turns (0 when there were none). */
export const presenceFrequency = (u: ToolUsage, totalTurns: number): number => (totalTurns === 0 ? 0 : u.turn_presence_count / totalTurns);

/** Learned priors of one agent (profile key `deferred_tools.agent_priors`). */
export interface AgentToolPriors {
  readonly tools: Readonly<Record<string, number>>;
  readonly session_count: number;
}
export const emptyPriors = (): AgentToolPriors => ({ tools: {}, session_count: 0 });

/** EWMA weight of a new session: `max(0.1, 1 / (n + 1))`. */
export const ewmaLambda = (sessionCount: number): number => Math.max(0.1, 1 / (sessionCount + 1));

/**
 * Folds one session into the priors: for every tool used, `p ← (1 − λ)·p₀ + λ·p_s` (p₀ = p_s when new),
 * then the session count goes up. A session with no turn changes nothing.
 */
export function updatePriors(priors: AgentToolPriors, stats: UsageStats): AgentToolPriors {
  if (stats.total_turns === 0) return priors;
  const lambda = ewmaLambda(priors.session_count);
  const tools: Record<string, number> = Object.fromEntries(Object.entries(priors.tools));
  const updates = Object.entries(stats.tools).map(([id, u]) => {
    const ps = presenceFrequency(u, stats.total_turns);
    const p0 = Object.hasOwn(tools, id) ? (tools[id] as number) : ps;
    return [id, (1 - lambda) * p0 + lambda * ps] as const;
  });
  return {
    tools: Object.fromEntries([...Object.entries(tools).filter(([k]) => !updates.some(([u]) => u === k)), ...updates]),
    session_count: priors.session_count + 1,
  };
}

/** A tool's schema cost: `max(bytes(compact JSON of parameters) / 4, 10)`; name-only cost `max(bytes(name) / 4, 1)`. */
export function schemaCosts(tool: ToolDescriptor): { readonly c: number; readonly c_bar: number } {
  return {
    c: Math.max(utf8Length(JSON.stringify(tool.parameters) ?? '') / 4, 10),
    c_bar: Math.max(utf8Length(tool.name) / 4, 1),
  };
}

export interface Activation {
  readonly enabled: boolean;
  readonly totalSavings: number;
  readonly modes: Record<string, ToolLoadMode>;
  /** The initially deferred tools, in the given order: what ToolSearch searches. */
  readonly registry: ToolDescriptor[];
  readonly entries: Record<string, DiscBetaEntry>;
}

/**
 * Classifies the agent's tools at run start (core-spec §6.2): each tool's mode from the rules, its
 * schema saving when deferred, and its DiscBeta prior — learned (`learned`) before configured
 * (`agent_priors`) before 0.01. Disabled (auto) when the savings do not exceed `beta_overhead`.
 */
export function planActivation(tools: readonly ToolDescriptor[], config: DeferredToolsConfig, learned: AgentToolPriors | undefined): Activation {
  let totalSavings = 0;
  const modes: [string, ToolLoadMode][] = [];
  const entries: [string, DiscBetaEntry][] = [];
  const registry: ToolDescriptor[] = [];
  for (const tool of tools) {
    if (tool.id === TOOL_SEARCH_ID) continue;
    const mode = resolveMode(config, tool.id);
    const { c, c_bar } = schemaCosts(tool);
    if (mode === 'deferred') {
      totalSavings += Math.max(c - c_bar, 0);
      registry.push(tool);
    }
    modes.push([tool.id, mode]);
    entries.push([tool.id, newDiscBetaEntry(priorOf(tool.id, config, learned), config.disc_beta.n0, c, c_bar)]);
  }
  return {
    enabled: shouldEnable(config, totalSavings),
    totalSavings,
    modes: Object.fromEntries(modes),
    registry,
    entries: Object.fromEntries(entries),
  };
}

export function priorOf(id: string, config: Pick<DeferredToolsConfig, 'agent_priors'>, learned: AgentToolPriors | undefined): number {
  if (learned !== undefined && learned.session_count > 0 && Object.hasOwn(learned.tools, id)) return learned.tools[id] as number;
  return Object.hasOwn(config.agent_priors, id) ? (config.agent_priors[id] as number) : DEFAULT_PRIOR;
}
