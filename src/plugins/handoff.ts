import { z } from 'zod';
import { AgentOverlaySchema, definePluginConfigKey, readPluginConfig, type AgentOverlay, type AgentSpec } from '../contract/agent-spec.ts';
import type { Snapshot } from '../core/state/snapshot.ts';
import type { PhaseContext } from '../core/phase/plugin.ts';
import { StateCommand } from '../core/state/state-command.ts';
import { defineStateKey } from '../core/state/state-key.ts';
import { ToolResults } from '../contract/tool.ts';
import { AgentOverlayKey } from '../runtime/loop-keys.ts';
import { defineTool } from '../runtime/tool.ts';
import type { RuntimePlugin } from '../runtime/resolve.ts';
import { perAgentSpec } from './per-spec.ts';

/**
 * Agent handoff (book: 使用 Agent Handoff; core-spec §11.1): within one run and one thread, the
 * agent switches to another — an overlay of the run's agent (system prompt, model, tools), or a
 * registered agent's prompt, model and tools. A tool or a hook writes `requestHandoff(name)` to
 * `agent_handoff`; at that step's end the request is promoted to the active agent, and from the
 * next step on (before its `step_start`) the run acts as it. The active agent is kept with the
 * thread, so the next run starts as it. `clearHandoff()` goes back to the run's own agent.
 */

export interface HandoffStateValue {
  readonly active_agent?: string;
  readonly requested_agent?: string;
}
export type HandoffAction =
  | { readonly type: 'request'; readonly agent: string }
  | { readonly type: 'activate'; readonly agent: string }
  | { readonly type: 'clear' };

export const HandoffActionSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('request'), agent: z.string().min(1) }).strict(),
  z.object({ type: z.literal('activate'), agent: z.string().min(1) }).strict(),
  z.object({ type: z.literal('clear') }).strict(),
]);

/** `agent_handoff`: the active and the requested agent (thread-scoped, persistent). */
export const HandoffState = defineStateKey<HandoffStateValue, HandoffAction>({
  key: 'agent_handoff',
  init: () => ({}),
  apply: (s, a) => {
    if (a.type === 'request') return { ...s, requested_agent: a.agent };
    if (a.type === 'activate') return { active_agent: a.agent };
    return {};
  },
  codec: z.object({ active_agent: z.string().min(1).optional(), requested_agent: z.string().min(1).optional() }).strict() as z.ZodType<HandoffStateValue>,
});

export const requestHandoff = (agent: string): HandoffAction => ({ type: 'request', agent });
export const activateHandoff = (agent: string): HandoffAction => ({ type: 'activate', agent });
export const clearHandoff = (): HandoffAction => ({ type: 'clear' });

export const HANDOFF_PLUGIN_ID = 'agent_handoff';

/** The id of the tool a model hands off with (`handoffPlugin(…, { tool: true })`). */
export const TRANSFER_TOOL_ID = 'transfer_to_agent';

/**
 * `transfer_to_agent {agent?}`: the model asks for a handoff to an overlay or a registered agent,
 * from the next step on; without `agent`, back to the run's own agent. A name that does not resolve
 * ends the run `blocked` at that step boundary, as any handoff request does.
 */
const transferTool = defineTool({
  id: TRANSFER_TOOL_ID,
  description: 'Hand the conversation to another agent (by name) from the next step on; without an agent, back to the original agent',
  args: z.object({ agent: z.string().min(1).optional() }).strict(),
  execute: ({ agent }) => ({
    result: ToolResults.success(TRANSFER_TOOL_ID, agent === undefined ? { handoff: 'cleared' } : { handoff: 'requested', agent }),
    command: StateCommand.empty().update(HandoffState, agent === undefined ? clearHandoff() : requestHandoff(agent)),
  }),
});

/** The handoff plugin, and the overlays it was made with (book: `handoff.overlay("researcher")`). */
export interface HandoffPlugin extends RuntimePlugin {
  /** An overlay given when the plugin was made (an agent's `handoff` section adds its own per agent). */
  overlay(name: string): AgentOverlay | undefined;
}

export interface HandoffPluginOptions {
  /** Register `transfer_to_agent`, so a model can hand off on its own (the catalog's plugin does; default: false). */
  readonly tool?: boolean;
}

/**
 * The plugin, with its overlays by name (checked here: an unknown field is an error), and those of
 * the agent's `handoff` section (`{overlays: {name: AgentOverlay}}`; a name in both keeps the agent
 * from being built). A name that is not an overlay is taken as a registered agent's id.
 */
export function handoffPlugin(overlays: Readonly<Record<string, z.input<typeof AgentOverlaySchema>>> = {}, options: HandoffPluginOptions = {}): HandoffPlugin {
  const checked: Record<string, AgentOverlay> = {};
  for (const [name, overlay] of Object.entries(overlays)) {
    const parsed = AgentOverlaySchema.safeParse(overlay);
    if (!parsed.success)
      throw new Error(`handoff overlay '${name}': ${parsed.error.issues.map((i) => `${i.path.join('.') || 'overlay'}: ${i.message}`).join('; ')}`);
    checked[name] = parsed.data;
  }
  const SectionSchema = z
    .object({ overlays: z.record(z.string().min(1), AgentOverlaySchema).default({}) })
    .strict()
    .superRefine((s, ctx) => {
      for (const name of Object.keys(s.overlays))
        if (Object.hasOwn(checked, name))
          ctx.addIssue({ code: 'custom', path: ['overlays', name], message: `overlay '${name}' is declared by the plugin and by the handoff section` });
    });
  const ConfigKey = definePluginConfigKey('handoff', SectionSchema as unknown as z.ZodType<{ overlays: Record<string, AgentOverlay> }>, () => ({
    overlays: {},
  }));
  const overlaysOf = perAgentSpec((spec): Readonly<Record<string, AgentOverlay>> => {
    const section = readPluginConfig(spec, ConfigKey);
    // An unreadable section never gets here: the agent does not build (invalid_plugin_config).
    return { ...checked, ...(section.ok ? section.value.overlays : {}) };
  });
  /** Promotes a request, and points the loop at the agent now active (or back at the run's own). */
  const sync = (ctx: PhaseContext): StateCommand => {
    const cmd = StateCommand.empty();
    const state = ctx.snapshot.get(HandoffState) ?? {};
    const requested = state.requested_agent;
    if (requested !== undefined) cmd.update(HandoffState, activateHandoff(requested));
    const effective = requested ?? state.active_agent;
    const current = ctx.snapshot.get(AgentOverlayKey);
    if (effective === undefined) {
      if (current !== undefined) cmd.clear(AgentOverlayKey);
    } else if (current?.name !== effective) {
      const overlay = overlaysOf(ctx.input.agentSpec)[effective];
      cmd.update(AgentOverlayKey, overlay === undefined ? { name: effective } : { name: effective, overlay });
    }
    return cmd;
  };
  /**
   * Taken up from the store, the run acts as the agent that was active when it was stored: a request
   * not yet promoted is promoted at the end of its step, as it would have been.
   */
  const takenUp = (snapshot: Snapshot, agent: AgentSpec): StateCommand | undefined => {
    const active = snapshot.get(HandoffState)?.active_agent;
    if (active === undefined) return undefined;
    const overlay = overlaysOf(agent)[active];
    return StateCommand.empty().update(AgentOverlayKey, overlay === undefined ? { name: active } : { name: active, overlay });
  };
  return {
    name: HANDOFF_PLUGIN_ID,
    overlay: (name) => (Object.hasOwn(checked, name) ? checked[name] : undefined),
    takenUp,
    configKeys: [ConfigKey as never],
    register: (r) => {
      r.registerKey(HandoffState, { scope: 'thread', persistent: true });
      r.registerKey(AgentOverlayKey, { scope: 'run', persistent: false });
      r.registerPhaseHook('run_start', sync);
      r.registerPhaseHook('step_end', sync);
      if (options.tool === true) r.registerTool(transferTool);
    },
  };
}
