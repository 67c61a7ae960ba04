import type { ToolCall } from '../../contract/message.ts';
import { unreachable } from '../../contract/never.ts';
import { ToolResults, type ToolResult } from '../../contract/tool.ts';
import { DEFAULT_RECOVERY_POLICY, modeSupportedBy, type ToolRecoveryCapability, type ToolRecoveryPolicy } from '../../contract/tool-recovery.ts';

/**
 * Recovery of a tool call after a crash (seed 003): the durable phase of its record, the tool's
 * trusted capability and the policy pinned when its batch was created decide what happens, so that
 * a call past the dispatch boundary is never run twice unless both the tool and the policy say that
 * running it again is harmless.
 */

/**
 * Where a call stood in its stored record. Only `executing` is in doubt: the call may have done its
 * work (or part of it) without the outcome being stored.
 *
 * - `requested`: stored with its batch, never marked executing, so it never crossed the dispatch boundary.
 * - `executing`: marked executing `attempts` times (at least 1) with no outcome stored.
 * - `completed`: its outcome is stored.
 * - `indeterminate`: it already ended indeterminate; deciding again must not change that.
 */
export type DurableCallPhase =
  | { readonly phase: 'requested' }
  | { readonly phase: 'executing'; readonly attempts: number }
  | { readonly phase: 'completed' }
  | { readonly phase: 'indeterminate' };

/**
 * What recovery does with one call: `keep` its stored end, `dispatch` it for the first time, `replay`
 * it as dispatch number `attempt`, or end it `indeterminate` (with `reason`, one clause naming what
 * forbade the replay, for the model and the operator).
 */
export type CallRecovery =
  | { readonly type: 'keep' }
  | { readonly type: 'dispatch' }
  | { readonly type: 'replay'; readonly attempt: number }
  | { readonly type: 'indeterminate'; readonly reason: string };

const KEEP: CallRecovery = Object.freeze({ type: 'keep' });
const DISPATCH: CallRecovery = Object.freeze({ type: 'dispatch' });

/**
 * The recovery of a call at `at`. A call past dispatch is replayed only when the pinned mode asks
 * for a replay, the tool's capability guarantees that mode (a config may narrow a tool's guarantee,
 * never widen it) and the pinned `max_attempts` leaves a dispatch; otherwise it ends indeterminate,
 * because running it again could do its effect twice.
 */
export function recoverCall(at: DurableCallPhase, capability: ToolRecoveryCapability, policy: ToolRecoveryPolicy): CallRecovery {
  switch (at.phase) {
    case 'completed':
    case 'indeterminate':
      return KEEP;
    case 'requested':
      return DISPATCH;
    case 'executing': {
      const reason = replayForbiddenBy(at.attempts, capability, policy);
      return reason === undefined ? { type: 'replay', attempt: at.attempts + 1 } : { type: 'indeterminate', reason };
    }
    default:
      return unreachable(at, 'durable call phase');
  }
}

/** Why a call dispatched `attempts` times may not be replayed, or `undefined` when it may; the mode is named first, as the choice that rules out a replay whatever the rest. */
function replayForbiddenBy(attempts: number, capability: ToolRecoveryCapability, policy: ToolRecoveryPolicy): string | undefined {
  if (policy.mode === 'never_replay') return 'the pinned recovery mode is never_replay';
  if (!modeSupportedBy(policy.mode, capability)) return `the pinned recovery mode ${policy.mode} exceeds the tool's capability ${capability}`;
  if (!(attempts < policy.max_attempts)) return `it was dispatched ${times(attempts)} and its policy allows at most ${times(policy.max_attempts)}`;
  return undefined;
}

const times = (n: number): string => (n === 1 ? '1 time' : `${n} times`);

/**
 * Whether a call whose executor answered "unavailable before dispatch" after `attempts` dispatches
 * (at least 1) may be tried again. Any mode may: that answer proves nothing ran, so a retry cannot
 * run the call twice; only the pinned `max_attempts` bounds it.
 */
export function retryUnavailable(attempts: number, policy: ToolRecoveryPolicy): boolean {
  return attempts < policy.max_attempts;
}

/**
 * The result a call gets when it ends indeterminate: an error the model reads, saying the outcome is
 * unknown rather than pretending the call failed or succeeded, so that the model can check before
 * acting on it; `metadata.indeterminate` lets code tell it from an ordinary failure.
 */
export function indeterminateResult(call: ToolCall, reason: string): ToolResult {
  const text = `The outcome of tool call ${call.id} (${call.name}) is unknown: it was dispatched before the run was interrupted and was not run again, because ${reason}.`;
  return { ...ToolResults.error(call.name, text), metadata: { indeterminate: true } };
}

/**
 * The policy of `id` (a call id in a batch's pins, a tool id in an agent's policies), or the
 * default when none is set: only the policies that differ from it are written down. The lookup
 * reads own keys only, since call ids come from the model and a key such as `__proto__` must not
 * find the prototype.
 */
export function policyFor(policies: { readonly [id: string]: ToolRecoveryPolicy } | undefined, id: string): ToolRecoveryPolicy {
  if (policies === undefined || !Object.hasOwn(policies, id)) return DEFAULT_RECOVERY_POLICY;
  return policies[id] ?? DEFAULT_RECOVERY_POLICY;
}
