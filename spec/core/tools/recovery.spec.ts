import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ToolCall } from '../../../src/contract/message.ts';
import {
  DEFAULT_RECOVERY_POLICY,
  modeSupportedBy,
  ToolRecoveryCapabilitySchema,
  ToolRecoveryModeSchema,
  type ToolRecoveryCapability,
  type ToolRecoveryPolicy,
} from '../../../src/contract/tool-recovery.ts';
import { indeterminateResult, policyFor, recoverCall, retryUnavailable, type DurableCallPhase } from '../../../src/core/tools/recovery.ts';

const capabilityArb = fc.constantFrom(...ToolRecoveryCapabilitySchema.options);
const modeArb = fc.constantFrom(...ToolRecoveryModeSchema.options);
const maxAttemptsArb = fc.integer({ min: 1, max: 10 });
const attemptsArb = fc.integer({ min: 1, max: 12 });
const policyArb: fc.Arbitrary<ToolRecoveryPolicy> = fc.record({ mode: modeArb, max_attempts: maxAttemptsArb });
const executing = (attempts: number): DurableCallPhase => ({ phase: 'executing', attempts });

/** A policy and one at most as permissive: the same mode or never_replay, and no more attempts. */
const narrowedArb: fc.Arbitrary<[ToolRecoveryPolicy, ToolRecoveryPolicy]> = policyArb.chain((wide) =>
  fc
    .record({ mode: fc.constantFrom(wide.mode, 'never_replay' as const), max_attempts: fc.integer({ min: 1, max: wide.max_attempts }) })
    .map((narrow): [ToolRecoveryPolicy, ToolRecoveryPolicy] => [wide, narrow]),
);

const replayAllowed = (attempts: number, capability: ToolRecoveryCapability, policy: ToolRecoveryPolicy): boolean =>
  policy.mode !== 'never_replay' && modeSupportedBy(policy.mode, capability) && attempts < policy.max_attempts;

describe('recoverCall', () => {
  it('replays an executing call exactly when the mode is not never_replay, the capability supports it and attempts remain (guards a replay past any of the three, and a recovery that never replays)', () => {
    fc.assert(
      fc.property(attemptsArb, capabilityArb, policyArb, (attempts, capability, policy) => {
        const r = recoverCall(executing(attempts), capability, policy);
        expect(r.type === 'replay').toBe(replayAllowed(attempts, capability, policy));
        expect(['replay', 'indeterminate']).toContain(r.type);
      }),
    );
  });

  it('numbers a replay attempts + 1 and never beyond max_attempts (guards an off-by-one such as attempts <= max_attempts)', () => {
    fc.assert(
      fc.property(attemptsArb, capabilityArb, policyArb, (attempts, capability, policy) => {
        const r = recoverCall(executing(attempts), capability, policy);
        if (r.type !== 'replay') return;
        expect(r.attempt).toBe(attempts + 1);
        expect(r.attempt).toBeLessThanOrEqual(policy.max_attempts);
      }),
    );
  });

  it('never replays under never_replay, whatever the capability (guards reading the capability alone)', () => {
    fc.assert(
      fc.property(attemptsArb, capabilityArb, maxAttemptsArb, (attempts, capability, max_attempts) => {
        const r = recoverCall(executing(attempts), capability, { mode: 'never_replay', max_attempts });
        expect(r.type).toBe('indeterminate');
      }),
    );
    expect(recoverCall(executing(1), 'replay_safe', { mode: 'never_replay', max_attempts: 10 }).type).toBe('indeterminate');
  });

  it('never turns an indeterminate into a replay by narrowing the policy (guards a non-monotone rule)', () => {
    fc.assert(
      fc.property(attemptsArb, capabilityArb, narrowedArb, (attempts, capability, [wide, narrow]) => {
        if (recoverCall(executing(attempts), capability, wide).type === 'indeterminate') {
          expect(recoverCall(executing(attempts), capability, narrow).type).toBe('indeterminate');
        }
      }),
    );
  });

  it('keeps completed and indeterminate calls and dispatches requested ones, whatever the policy (guards replaying a stored outcome or ending a never-dispatched call)', () => {
    fc.assert(
      fc.property(capabilityArb, policyArb, (capability, policy) => {
        expect(recoverCall({ phase: 'completed' }, capability, policy)).toEqual({ type: 'keep' });
        expect(recoverCall({ phase: 'indeterminate' }, capability, policy)).toEqual({ type: 'keep' });
        expect(recoverCall({ phase: 'requested' }, capability, policy)).toEqual({ type: 'dispatch' });
      }),
    );
  });

  it('names the cause that stopped the replay, the mode first (guards a generic or wrongly attributed reason)', () => {
    expect(recoverCall(executing(1), 'replay_safe', { mode: 'never_replay', max_attempts: 3 })).toEqual({
      type: 'indeterminate',
      reason: 'the pinned recovery mode is never_replay',
    });
    // Attempts are exhausted too, but the mode alone already rules the replay out.
    expect(recoverCall(executing(5), 'non_recoverable', { mode: 'never_replay', max_attempts: 3 })).toEqual({
      type: 'indeterminate',
      reason: 'the pinned recovery mode is never_replay',
    });
    expect(recoverCall(executing(1), 'non_recoverable', { mode: 'replay_safe', max_attempts: 3 })).toEqual({
      type: 'indeterminate',
      reason: "the pinned recovery mode replay_safe exceeds the tool's capability non_recoverable",
    });
    expect(recoverCall(executing(1), 'replay_safe', { mode: 'idempotent', max_attempts: 3 })).toEqual({
      type: 'indeterminate',
      reason: "the pinned recovery mode idempotent exceeds the tool's capability replay_safe",
    });
    expect(recoverCall(executing(3), 'idempotent', { mode: 'idempotent', max_attempts: 3 })).toEqual({
      type: 'indeterminate',
      reason: 'it was dispatched 3 times and its policy allows at most 3 times',
    });
    expect(recoverCall(executing(1), 'durable_request', { mode: 'durable_request', max_attempts: 1 })).toEqual({
      type: 'indeterminate',
      reason: 'it was dispatched 1 time and its policy allows at most 1 time',
    });
    expect(recoverCall(executing(2), 'durable_request', { mode: 'durable_request', max_attempts: 3 })).toEqual({ type: 'replay', attempt: 3 });
  });

  it('names in every indeterminate reason the first cause that holds (guards a reason that does not match the decision)', () => {
    fc.assert(
      fc.property(attemptsArb, capabilityArb, policyArb, (attempts, capability, policy) => {
        const r = recoverCall(executing(attempts), capability, policy);
        if (r.type !== 'indeterminate') return;
        if (policy.mode === 'never_replay') expect(r.reason).toBe('the pinned recovery mode is never_replay');
        else if (!modeSupportedBy(policy.mode, capability)) expect(r.reason).toContain(`exceeds the tool's capability ${capability}`);
        else expect(r.reason).toMatch(new RegExp(`^it was dispatched ${attempts} times? and its policy allows at most ${policy.max_attempts} times?$`));
      }),
    );
  });
});

describe('retryUnavailable', () => {
  it('retries exactly while attempts < max_attempts, in every mode (guards an off-by-one and a retry refused under never_replay)', () => {
    fc.assert(
      fc.property(attemptsArb, policyArb, (attempts, policy) => {
        expect(retryUnavailable(attempts, policy)).toBe(attempts < policy.max_attempts);
      }),
    );
    expect(retryUnavailable(2, { mode: 'never_replay', max_attempts: 3 })).toBe(true);
    expect(retryUnavailable(3, { mode: 'replay_safe', max_attempts: 3 })).toBe(false);
  });
});

describe('indeterminateResult', () => {
  it('is an error the model reads, with the call, the reason and an indeterminate mark', () => {
    const call: ToolCall = { id: 'call-7', name: 'send_email', arguments: { to: 'a@b.c' } };
    expect(indeterminateResult(call, 'the pinned recovery mode is never_replay')).toEqual({
      tool_name: 'send_email',
      status: 'error',
      data: null,
      message:
        'The outcome of tool call call-7 (send_email) is unknown: it was dispatched before the run was interrupted and was not run again, because the pinned recovery mode is never_replay.',
      metadata: { indeterminate: true },
    });
  });
});

describe('policyFor', () => {
  const pinned: ToolRecoveryPolicy = { mode: 'idempotent', max_attempts: 5 };

  it('returns the pinned policy of a call', () => {
    expect(policyFor({ a: pinned }, 'a')).toBe(pinned);
  });

  it('returns the default when no policy is pinned for the call or none at all', () => {
    expect(policyFor({ a: pinned }, 'b')).toBe(DEFAULT_RECOVERY_POLICY);
    expect(policyFor({}, 'a')).toBe(DEFAULT_RECOVERY_POLICY);
    expect(policyFor(undefined, 'a')).toBe(DEFAULT_RECOVERY_POLICY);
  });

  it('reads own keys only, so "__proto__" and other inherited names find no pin (guards a plain index lookup)', () => {
    expect(policyFor({ a: pinned }, '__proto__')).toBe(DEFAULT_RECOVERY_POLICY);
    expect(policyFor({}, 'toString')).toBe(DEFAULT_RECOVERY_POLICY);
    expect(policyFor({}, 'constructor')).toBe(DEFAULT_RECOVERY_POLICY);
  });

  it('finds a pin stored under the own key "__proto__" (as JSON.parse makes it)', () => {
    const pins = JSON.parse('{"__proto__": {"mode": "replay_safe", "max_attempts": 2}}') as { [callId: string]: ToolRecoveryPolicy };
    expect(policyFor(pins, '__proto__')).toEqual({ mode: 'replay_safe', max_attempts: 2 });
  });
});
