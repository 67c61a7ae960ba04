import { z } from 'zod';
import { definePluginConfigKey, readPluginConfig } from '../contract/agent-spec.ts';
import { StateCommand } from '../core/state/state-command.ts';
import { RunLifecycle } from '../runtime/loop-keys.ts';
import { ToolInterceptAction } from '../runtime/builtin-plugins.ts';
import type { RuntimePlugin } from '../runtime/resolve.ts';

/**
 * The `tool_gate` section: tool ids to deny (the call is blocked and the run ends `blocked`) and to
 * ask about (the call is suspended with a ticket until a decision arrives).
 */
export const ToolGateConfigSchema = z
  .object({
    deny: z.array(z.string()).default([]),
    ask: z.array(z.string()).default([]),
    ask_resume_mode: z.enum(['replay_tool_call', 'use_decision_as_tool_result', 'pass_decision_to_tool']).default('replay_tool_call'),
  })
  .strict();
export type ToolGateConfig = z.output<typeof ToolGateConfigSchema>;

export const ToolGateConfigKey = definePluginConfigKey('tool_gate', ToolGateConfigSchema as z.ZodType<ToolGateConfig>, () => ToolGateConfigSchema.parse({}));

/** A configuration-driven tool gate: deny or ask by tool id, through `ToolInterceptAction`. */
export const toolGatePlugin: RuntimePlugin = {
  name: 'tool-gate',
  configKeys: [ToolGateConfigKey as never],
  register: (r) =>
    r.registerPhaseHook('before_tool_execute', (ctx) => {
      const call = ctx.input.toolCall;
      const config = readPluginConfig(ctx.input.agentSpec, ToolGateConfigKey);
      if (!config.ok) return StateCommand.empty();
      if (config.value.deny.includes(call.name)) {
        return StateCommand.empty().scheduleAction(ToolInterceptAction, {
          call_id: call.id,
          intercept: { type: 'block', reason: `Tool '${call.name}' denied by the tool gate` },
        });
      }
      if (config.value.ask.includes(call.name)) {
        return StateCommand.empty().scheduleAction(ToolInterceptAction, {
          call_id: call.id,
          intercept: {
            type: 'suspend',
            ticket: {
              suspension: { id: `ask-${call.id}`, action: `tool:${call.name}`, message: `Allow ${call.name}?` },
              pending: { id: call.id, name: call.name, arguments: call.arguments },
              resume_mode: config.value.ask_resume_mode,
            },
          },
        });
      }
      return StateCommand.empty();
    }),
};

/**
 * Ends the run `behavior_requested` when the model answers with a configured phrase (section
 * `finish_on`: `{phrase}`) — the plugin-requested termination of the book.
 */
export const FinishOnConfigKey = definePluginConfigKey('finish_on', z.object({ phrase: z.string() }).strict(), () => ({ phrase: '' }));

export const finishOnPlugin: RuntimePlugin = {
  name: 'finish-on',
  configKeys: [FinishOnConfigKey as never],
  register: (r) =>
    r.registerPhaseHook('after_inference', (ctx) => {
      const config = readPluginConfig(ctx.input.agentSpec, FinishOnConfigKey);
      const observation = ctx.input.inference;
      if (!config.ok || config.value.phrase === '' || !observation.ok || !(observation.text ?? '').includes(config.value.phrase)) return StateCommand.empty();
      return StateCommand.empty().update(RunLifecycle, { op: 'done', reason: 'behavior_requested', at: ctx.input.now });
    }),
};
