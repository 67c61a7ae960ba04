import { unreachable } from '../../contract/never.ts';
import type { ToolRecoveryPolicy } from '../../contract/tool-recovery.ts';
import type { ToolResult } from '../../contract/tool.ts';
import type { StateCommand } from '../../core/state/state-command.ts';
import type { BatchCall, RecoveredCall } from '../../core/tools/batch.ts';
import { indeterminateResult, policyFor, recoverCall } from '../../core/tools/recovery.ts';
import type { ToolCallStateMap } from '../loop-keys.ts';
import type { Tool } from '../tool.ts';

const DISPATCH: RecoveredCall = Object.freeze({ type: 'dispatch' });
const REPLAY: RecoveredCall = Object.freeze({ type: 'replay' });

/**
 * What becomes of each call of a batch its run's process left behind (seed 003), from the phase the
 * store saw it in: a call still `new` never left and is dispatched; a call `running` left, and is
 * replayed only where its tool's recovery capability and the policy pinned into the batch allow it
 * (its dispatches counted across deaths in the call state's `attempt`), else it ends indeterminate
 * with a result that says why — unless its outcome was stored as it settled (`outcomes`: a parallel
 * call that settled while others ran), which it is settled with; a settled or suspended call is kept.
 * `attempts`: the dispatch each replayed call is at. A reason instead when the batch cannot go on.
 */
export function recoveryPlan(
  calls: readonly BatchCall[],
  states: ToolCallStateMap,
  tools: ReadonlyMap<string, Tool>,
  pins: { readonly [callId: string]: ToolRecoveryPolicy } | undefined,
  outcomes?: ReadonlyMap<string, { readonly result: ToolResult; readonly command?: StateCommand }>,
): { readonly plan: ReadonlyMap<string, RecoveredCall>; readonly attempts: ReadonlyMap<string, number> } | string {
  const plan = new Map<string, RecoveredCall>();
  const attempts = new Map<string, number>();
  for (const { call, status } of calls) {
    switch (status) {
      case 'new':
        plan.set(call.id, DISPATCH);
        break;
      case 'running': {
        const outcome = outcomes?.get(call.id);
        if (outcome !== undefined) {
          plan.set(call.id, outcome.command === undefined ? { type: 'settled', result: outcome.result } : { type: 'settled', ...outcome });
          break;
        }
        const state = Object.hasOwn(states, call.id) ? states[call.id] : undefined;
        // A call running on a decision (it had suspended) is never replayed: a replay runs a first call, without the decision.
        if (state?.suspension_id !== undefined || state?.resume_input !== undefined) {
          plan.set(call.id, {
            type: 'indeterminate',
            result: indeterminateResult(call, 'it was running on a decision, which running it again would not carry'),
          });
          break;
        }
        const capability = tools.get(call.name)?.recovery ?? 'non_recoverable';
        const decided = recoverCall({ phase: 'executing', attempts: state?.attempt ?? 1 }, capability, policyFor(pins, call.id));
        if (decided.type === 'replay') {
          plan.set(call.id, REPLAY);
          attempts.set(call.id, decided.attempt);
        } else if (decided.type === 'indeterminate') plan.set(call.id, { type: 'indeterminate', result: indeterminateResult(call, decided.reason) });
        break;
      }
      case 'resuming':
        // A decision was being applied: which of the call's phases the store saw is not known well enough to go on.
        return `call ${call.id} was taking a decision when the run stopped`;
      case 'suspended':
      case 'succeeded':
      case 'failed':
      case 'cancelled':
      case 'indeterminate':
        break;
      default:
        return unreachable(status, 'tool call status');
    }
  }
  return { plan, attempts };
}
