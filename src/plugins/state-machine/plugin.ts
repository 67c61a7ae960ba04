import { z } from 'zod';
import { definePluginConfigKey, readPluginConfig } from '../../contract/agent-spec.ts';
import { ToolResults, type SuspendTicket } from '../../contract/tool.ts';
import type { ToolCall } from '../../contract/message.ts';
import type { Snapshot } from '../../core/state/snapshot.ts';
import { StateCommand } from '../../core/state/state-command.ts';
import { defineStateKey } from '../../core/state/state-key.ts';
import { AddContextMessage, ContinueRun, ToolInterceptAction } from '../../runtime/builtin-plugins.ts';
import type { RuntimePlugin } from '../../runtime/resolve.ts';
import { perAgentSpec } from '../per-spec.ts';
import { mergeConfigs, StateMachineConfigSchema, type StateMachineConfig, type StateMachineConfigInput } from './config.ts';
import {
  compileConfig,
  moves,
  strictest,
  summaryOf,
  unfinished,
  violations,
  type CompiledConfig,
  type CompiledMachine,
  type Instances,
  type Violation,
} from './engine.ts';

/**
 * The tool-order state machine (seed 004, 用状态机约束工具调用顺序), id `state_machine`. Three seams
 * driven by one compiled machine set: a **gate** (a call that matches a transition while its
 * instance is in none of the transition's `from` states is refused, asked about, or let through
 * with a warning), an **after-tool hook** (a finished call advances its instances and emits their
 * reminders), and a **run-end guard** (an answer that leaves instances unfinished sends the model
 * back, at most `max_continuations` times a run). It never grants: a call it allows still needs
 * every other gate (permission) to allow it. Its state is four keys, committed, persisted and
 * replayed like any other.
 */

export const STATE_MACHINE_PLUGIN_ID = 'state_machine';

const InstancesSchema = z.record(z.string(), z.record(z.string(), z.string())) as z.ZodType<Instances>;

export interface InstanceUpdate {
  readonly machine: string;
  readonly key: string;
  readonly state: string;
}
const setInstance = (v: Instances, u: InstanceUpdate): Instances => ({ ...v, [u.machine]: { ...(v[u.machine] ?? {}), [u.key]: u.state } });

/** `tool_fsm_thread_state`: machine → instance key → state, for `scope: thread` machines (kept with the thread). */
export const FsmThreadState = defineStateKey<Instances, InstanceUpdate>({
  key: 'tool_fsm_thread_state',
  init: () => ({}),
  apply: setInstance,
  codec: InstancesSchema,
});
/** `tool_fsm_run_state`: the same for `scope: run` machines (gone when the run ends). */
export const FsmRunState = defineStateKey<Instances, InstanceUpdate>({
  key: 'tool_fsm_run_state',
  init: () => ({}),
  apply: setInstance,
  codec: InstancesSchema,
});

export interface FsmMetrics {
  readonly transitions: number;
  readonly denials: number;
  readonly asks: number;
  readonly warnings: number;
  readonly continuations: number;
}
const METRIC_NAMES = ['transitions', 'denials', 'asks', 'warnings', 'continuations'] as const;
/** `tool_fsm_metrics`: this run's counts (a sum: updates commute). */
export const FsmMetricsKey = defineStateKey<FsmMetrics, { readonly metric: keyof FsmMetrics; readonly by: number }>({
  key: 'tool_fsm_metrics',
  merge: 'commutative',
  init: () => ({ transitions: 0, denials: 0, asks: 0, warnings: 0, continuations: 0 }),
  apply: (m, u) => ({ ...m, [u.metric]: m[u.metric] + u.by }),
  codec: z.object(Object.fromEntries(METRIC_NAMES.map((n) => [n, z.number().int().nonnegative()]))).strict() as unknown as z.ZodType<FsmMetrics>,
});

export interface ViolationRecord extends Violation {
  readonly call_id: string;
  readonly tool: string;
}
const ViolationRecordSchema = z
  .object({
    call_id: z.string(),
    tool: z.string(),
    machine: z.string(),
    key: z.string(),
    state: z.string(),
    action: z.enum(['deny', 'ask', 'warn']),
    reason: z.string(),
    transition: z.number().int().nonnegative().optional(),
  })
  .strict();
/** `tool_fsm_violation_log`: this run's violations, in the order they happened. */
export const FsmViolationLog = defineStateKey<readonly ViolationRecord[], ViolationRecord>({
  key: 'tool_fsm_violation_log',
  init: () => [],
  apply: (log, r) => [...log, r],
  codec: z.array(ViolationRecordSchema) as z.ZodType<readonly ViolationRecord[]>,
});

/** The ticket of an `ask` violation: the client approves (the call runs as it was) or cancels it. */
export function stateMachineTicket(call: ToolCall, v: Violation): SuspendTicket {
  return {
    suspension: { id: `fsm_${call.id}`, action: 'tool:StateMachineConfirm', message: v.reason, parameters: call.arguments },
    pending: { id: call.id, name: 'state_machine_confirm', arguments: call.arguments },
    resume_mode: 'replay_tool_call',
  };
}

const instancesIn =
  (snapshot: Snapshot) =>
  (m: CompiledMachine): Instances =>
    (m.scope === 'thread' ? snapshot.get(FsmThreadState) : snapshot.get(FsmRunState)) ?? {};

/**
 * The plugin: the machines given here (`base`), and the agent's `state_machine` section (same
 * shape); a machine name in both keeps the agent from being built. The catalog's instance has no
 * base machines.
 */
export function stateMachinePlugin(base: StateMachineConfigInput = {}): RuntimePlugin {
  const own: StateMachineConfig = StateMachineConfigSchema.parse(base);
  const names = new Set(own.machines.map((m) => m.name));
  const SectionSchema = StateMachineConfigSchema.superRefine((section, ctx) => {
    section.machines.forEach((m, i) => {
      if (names.has(m.name))
        ctx.addIssue({
          code: 'custom',
          path: ['machines', i, 'name'],
          message: `machine '${m.name}' is declared by the plugin and by the state_machine section`,
        });
    });
  });
  const ConfigKey = definePluginConfigKey(STATE_MACHINE_PLUGIN_ID, SectionSchema as unknown as z.ZodType<StateMachineConfig>, () =>
    StateMachineConfigSchema.parse({}),
  );
  const configOf = perAgentSpec((spec): CompiledConfig => {
    const section = readPluginConfig(spec, ConfigKey);
    // An unreadable section never gets here: the agent does not build (invalid_plugin_config).
    const merged = section.ok ? mergeConfigs(own, section.value) : { ok: true as const, value: own };
    return compileConfig(merged.ok ? merged.value : own);
  });

  return {
    name: STATE_MACHINE_PLUGIN_ID,
    configKeys: [ConfigKey as never],
    register: (r) => {
      r.registerKey(FsmThreadState, { scope: 'thread', persistent: true });
      r.registerKey(FsmRunState, { scope: 'run', persistent: true });
      r.registerKey(FsmMetricsKey, { scope: 'run', persistent: true });
      r.registerKey(FsmViolationLog, { scope: 'run', persistent: true });

      // The gate: refuse (an error the model reads; the run goes on), ask, or warn after the call.
      r.registerPhaseHook('before_tool_execute', (ctx) => {
        const config = configOf(ctx.input.agentSpec);
        const call = ctx.input.toolCall;
        const found = violations(config, instancesIn(ctx.snapshot), call.name, call.arguments);
        const cmd = StateCommand.empty();
        const v = strictest(found);
        if (v === undefined) return cmd;
        for (const x of found) {
          cmd.update(FsmViolationLog, { call_id: call.id, tool: call.name, ...x });
          cmd.update(FsmMetricsKey, { metric: x.action === 'deny' ? 'denials' : x.action === 'ask' ? 'asks' : 'warnings', by: 1 });
        }
        if (v.action === 'deny') {
          const result = {
            ...ToolResults.error(call.name, v.reason),
            metadata: { rejected: true, state_machine: { machine: v.machine, key: v.key, state: v.state } },
          };
          return cmd.scheduleAction(ToolInterceptAction, { call_id: call.id, intercept: { type: 'set_result', result } });
        }
        if (v.action === 'ask')
          return cmd.scheduleAction(ToolInterceptAction, { call_id: call.id, intercept: { type: 'suspend', ticket: stateMachineTicket(call, v) } });
        return cmd.scheduleAction(AddContextMessage, {
          key: `state_machine.warning.${v.machine}`,
          role: 'system',
          content: v.reason,
          target: 'suffix_system',
          priority: 0,
          cooldown_turns: 0,
          persistent: false,
        });
      });

      // After the call: advance the instances, emit the reminders.
      r.registerPhaseHook('after_tool_execute', (ctx) => {
        const { toolCall, toolResult } = ctx.input;
        const cmd = StateCommand.empty();
        if (toolResult === undefined) return cmd;
        for (const m of moves(configOf(ctx.input.agentSpec), instancesIn(ctx.snapshot), toolCall.name, toolCall.arguments, toolResult)) {
          cmd.update(m.scope === 'thread' ? FsmThreadState : FsmRunState, { machine: m.machine, key: m.key, state: m.to });
          cmd.update(FsmMetricsKey, { metric: 'transitions', by: 1 });
          if (m.emit !== undefined) {
            cmd.scheduleAction(AddContextMessage, {
              key: m.emit.key,
              role: m.emit.role,
              content: m.emit.content,
              target: m.emit.target,
              priority: 0,
              cooldown_turns: m.emit.cooldown,
              persistent: false,
            });
          }
        }
        return cmd;
      });

      // The run-end guard: an answer that leaves instances unfinished sends the model back.
      r.registerPhaseHook('after_inference', (ctx) => {
        const config = configOf(ctx.input.agentSpec);
        const cmd = StateCommand.empty();
        const inference = ctx.input.inference;
        if (config.continuation.max === 0 || !inference.ok || inference.toolNames.length > 0) return cmd;
        const used = ctx.snapshot.get(FsmMetricsKey)?.continuations ?? 0;
        const open = unfinished(config, instancesIn(ctx.snapshot));
        if (open.length === 0 || used >= config.continuation.max) return cmd;
        const summary = summaryOf(open);
        return cmd
          .update(FsmMetricsKey, { metric: 'continuations', by: 1 })
          .scheduleAction(ContinueRun, `state_machine: ${summary}`)
          .scheduleAction(AddContextMessage, {
            key: 'state_machine.continuation',
            role: 'system',
            content: config.continuation.message.replaceAll('{summary}', summary),
            target: 'suffix_system',
            priority: 0,
            cooldown_turns: 0,
            persistent: false,
          });
      });
    },
  };
}
