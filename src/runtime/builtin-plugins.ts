import { z } from 'zod';
import { InferenceOverrideSchema } from '../contract/inference.ts';
import { evaluateStopPolicies, observeInference, type StopPolicy } from '../core/policies/stop-policy.ts';
import { preRegistered, type Plugin } from '../core/phase/plugin.ts';
import { defineAction, StateCommand } from '../core/state/state-command.ts';
import { defineStateKey } from '../core/state/state-key.ts';
import {
  ContextMessages,
  ContextMessageSchema,
  InferenceOverrideState,
  InterceptConflicts,
  LoopControl,
  RunLifecycle,
  StopStats,
  ToolCallStates,
  ToolFilter,
  ToolIntercepts,
  ToolInterceptSchema,
  withStartedAt,
} from './loop-keys.ts';
import { ClientToolsKey } from './client-tool.ts';
import { ToolBatchKey } from './tool-batch.ts';

/** Built-in scheduled actions (book: Scheduled Actions → 核心 Actions). */
export const AddContextMessage = defineAction('runtime.add_context_message', 'before_inference', ContextMessageSchema);
export const SetInferenceOverride = defineAction('runtime.set_inference_override', 'before_inference', InferenceOverrideSchema);
export const ExcludeTool = defineAction('runtime.exclude_tool', 'before_inference', z.string());
export const IncludeOnlyTools = defineAction('runtime.include_only_tools', 'before_inference', z.array(z.string()));
/**
 * Keeps the run going past this step if the step ends naturally (an answer without tool calls):
 * the run takes another step instead of finishing. The payload says why. Schedule it in any phase
 * of the step up to its end (a run-end guard: after an answer, from `after_inference`).
 */
export const ContinueRun = defineAction('runtime.continue_run', 'step_end', z.string());
export const ToolInterceptAction = defineAction(
  'runtime.tool_intercept',
  'before_tool_execute',
  z.object({ call_id: z.string(), intercept: ToolInterceptSchema }),
);

export const LOOP_STATE_PLUGIN = '__runtime.loop_state';
export const LOOP_ACTIONS_PLUGIN = '__runtime.loop_actions';

/** The stop that ended a run, with its detail kept (0.6 drops the detail ⟂). */
export const StopDecisionKey = defineStateKey<{ readonly code: string; readonly detail: string } | null, { readonly code: string; readonly detail: string }>({
  key: '__runtime.stop_decision',
  init: () => null,
  apply: (_s, u) => u,
  codec: z.object({ code: z.string(), detail: z.string() }).nullable() as z.ZodType<{ readonly code: string; readonly detail: string } | null>,
});

/** Keys every run has: lifecycle, tool-call states (thread-scoped), stop statistics (registered once: it is the same for every run). */
export const loopStatePlugin: Plugin = preRegistered({
  name: LOOP_STATE_PLUGIN,
  register: (r) => {
    r.registerKey(RunLifecycle);
    r.registerKey(ToolCallStates, { scope: 'thread' });
    r.registerKey(StopStats);
    r.registerKey(StopDecisionKey);
    r.registerKey(ToolBatchKey, { scope: 'thread' });
    r.registerKey(ClientToolsKey);
  },
});

/** The handlers of the built-in actions and the accumulators they write (registered once: they keep nothing between runs). */
export const loopActionsPlugin: Plugin = preRegistered({
  name: LOOP_ACTIONS_PLUGIN,
  register: (r) => {
    r.registerKey(ToolFilter);
    r.registerKey(InferenceOverrideState);
    r.registerKey(ContextMessages);
    r.registerKey(ToolIntercepts);
    r.registerKey(LoopControl, { persistent: false });
    r.registerScheduledAction(ContinueRun, (_ctx, reason) => StateCommand.empty().update(LoopControl, { type: 'continue', reason }));
    r.registerKey(InterceptConflicts);
    r.registerScheduledAction(AddContextMessage, (ctx, message) => {
      // Throttling (core-spec §3.7): inject when there is no cooldown, it is new, its content changed,
      // or `cooldown_turns` steps have passed since it was last injected.
      const step = (ctx.snapshot.get(RunLifecycle)?.step_count ?? 0) + 1;
      const last = ctx.snapshot.get(ContextMessages)?.injected[message.key];
      const inject = message.cooldown_turns === 0 || last === undefined || last.content !== message.content || step - last.step >= message.cooldown_turns;
      return inject ? StateCommand.empty().update(ContextMessages, { op: 'upsert', message, step }) : StateCommand.empty();
    });
    r.registerScheduledAction(SetInferenceOverride, (_ctx, override) => StateCommand.empty().update(InferenceOverrideState, { op: 'merge', override }));
    r.registerScheduledAction(ExcludeTool, (_ctx, id) => StateCommand.empty().update(ToolFilter, { op: 'exclude', id }));
    r.registerScheduledAction(IncludeOnlyTools, (_ctx, ids) => StateCommand.empty().update(ToolFilter, { op: 'include_only', ids }));
    r.registerScheduledAction(ToolInterceptAction, (_ctx, record) => StateCommand.empty().update(ToolIntercepts, { op: 'add', record }));
  },
});

export const STOP_CONDITION_PLUGIN = 'stop-condition';

/**
 * Evaluates the stop policies after every inference (core-spec §7): updates the statistics, and at
 * the first policy that says stop writes the decision and ends the lifecycle `stopped:<code>`.
 */
export function stopConditionPlugin(policies: readonly StopPolicy[]): Plugin {
  return {
    name: STOP_CONDITION_PLUGIN,
    register: (r) => {
      r.registerPhaseHook('run_start', (ctx) => {
        const now = ctx.input.now;
        const stats = ctx.snapshot.getOrDefault(StopStats);
        return stats.startedAt === 0 ? StateCommand.empty().update(StopStats, withStartedAt(stats, now)) : StateCommand.empty();
      });
      r.registerPhaseHook('after_inference', (ctx) => {
        const input = ctx.input;
        const previous = ctx.snapshot.getOrDefault(StopStats);
        const startedAt = previous.startedAt === 0 ? input.now : previous.startedAt;
        const stats = withStartedAt(observeInference(previous, input.inference, Math.max(0, input.now - startedAt)), startedAt);
        const cmd = StateCommand.empty().update(StopStats, stats);
        const decision = evaluateStopPolicies(policies, stats);
        if (decision.stop) {
          cmd.update(StopDecisionKey, { code: decision.code, detail: decision.detail });
          cmd.update(RunLifecycle, { op: 'done', reason: `stopped:${decision.code}`, at: input.now });
        }
        return cmd;
      });
    },
  };
}
