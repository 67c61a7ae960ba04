import { z } from 'zod';

/**
 * What may be done with a call whose process died after it was dispatched (seed 003): a trusted
 * property of the tool's implementation, never of the model's input or of an agent's config.
 *
 * - `non_recoverable` (the default): what the call did cannot be found out, and it must not run again.
 * - `replay_safe`: running it again is the same as running it once (a read, a pure computation).
 * - `idempotent`: running it again with the same call id is the same as running it once.
 * - `durable_request`: the call addresses a durable request by its id; running it again reconnects to it.
 */
export const ToolRecoveryCapabilitySchema = z.enum(['non_recoverable', 'replay_safe', 'idempotent', 'durable_request']);
export type ToolRecoveryCapability = z.infer<typeof ToolRecoveryCapabilitySchema>;

/**
 * The recovery an agent chooses for one tool. `never_replay` (the default) is always allowed; each
 * other mode needs the capability of the same name, so a config can narrow what a tool guarantees
 * but never widen it.
 */
export const ToolRecoveryModeSchema = z.enum(['never_replay', 'replay_safe', 'idempotent', 'durable_request']);
export type ToolRecoveryMode = z.infer<typeof ToolRecoveryModeSchema>;

/**
 * A tool's recovery policy, pinned into a batch when the batch is created: `mode`, and
 * `max_attempts`, the dispatches one call may have in all (a first one and the replays or retries
 * after it; 1 to 100, default 3).
 */
export const ToolRecoveryPolicySchema = z
  .object({
    mode: ToolRecoveryModeSchema.default('never_replay'),
    max_attempts: z.number().int().min(1).max(100).default(3),
  })
  .strict();
export type ToolRecoveryPolicy = z.output<typeof ToolRecoveryPolicySchema>;

export const DEFAULT_RECOVERY_POLICY: ToolRecoveryPolicy = Object.freeze({ mode: 'never_replay', max_attempts: 3 });

/** Whether `mode` asks no more than `capability` guarantees. */
export function modeSupportedBy(mode: ToolRecoveryMode, capability: ToolRecoveryCapability): boolean {
  return mode === 'never_replay' || mode === capability;
}

/** Whether a policy is the default one (a batch records only the others). */
export const isDefaultRecoveryPolicy = (p: ToolRecoveryPolicy): boolean => p.mode === 'never_replay' && p.max_attempts === 3;

/** Tool id → recovery policy; no prototype, so any tool id is a key like another. */
export type RecoveryPolicies = { readonly [toolId: string]: ToolRecoveryPolicy };

/** The policies of an agent that sets none (one object: a batch tells it apart without a lookup). */
export const NO_RECOVERY_POLICIES: RecoveryPolicies = Object.freeze(Object.create(null) as RecoveryPolicies);
