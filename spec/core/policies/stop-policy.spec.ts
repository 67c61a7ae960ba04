import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  consecutiveErrorsPolicy,
  contentMatchPolicy,
  evaluateStopPolicies,
  initialStopStats,
  loopDetectionPolicy,
  MAX_RESPONSE_HISTORY,
  maxRoundsPolicy,
  observeInference,
  policyFromSpec,
  stopOnToolPolicy,
  timeoutPolicy,
  tokenBudgetPolicy,
  type StopPolicyStats,
} from '../../../src/core/policies/stop-policy.ts';

const stats = (over: Partial<StopPolicyStats>): StopPolicyStats => ({ ...initialStopStats(), ...over });

describe('stop policies (core-spec §7)', () => {
  it.each([
    ['max_rounds', maxRoundsPolicy(3), stats({ stepCount: 2 }), stats({ stepCount: 3 }), 'reached 3 rounds'],
    [
      'token_budget',
      tokenBudgetPolicy(10),
      stats({ totalInputTokens: 5, totalOutputTokens: 5 }),
      stats({ totalInputTokens: 6, totalOutputTokens: 5 }),
      'token usage 11 exceeds budget 10',
    ],
    ['timeout', timeoutPolicy(100), stats({ elapsedMs: 100 }), stats({ elapsedMs: 101 }), 'elapsed 101ms exceeds limit 100ms'],
    [
      'consecutive_errors',
      consecutiveErrorsPolicy(2),
      stats({ consecutiveErrors: 1 }),
      stats({ consecutiveErrors: 2 }),
      '2 consecutive inference errors (limit 2)',
    ],
    [
      'stop_on_tool',
      stopOnToolPolicy('rm'),
      stats({ lastToolNames: ['ls'] }),
      stats({ lastToolNames: ['ls', 'rm'] }),
      'tool rm was requested before execution',
    ],
    [
      'content_match',
      contentMatchPolicy('DONE\\b'),
      stats({ lastResponseText: 'not yet' }),
      stats({ lastResponseText: 'all DONE now' }),
      'response matched stop regex DONE\\b',
    ],
    [
      'loop_detection',
      loopDetectionPolicy(3),
      stats({ recentResponseTexts: ['a', 'a', 'b'] }),
      stats({ recentResponseTexts: ['b', 'a', 'a', 'a'] }),
      'same response repeated for 3 steps',
    ],
  ])('%s: continues just below its limit, stops at it with code and detail', (code, policy, below, at, detail) => {
    expect(policy.evaluate(below)).toEqual({ stop: false });
    expect(policy.evaluate(at)).toEqual({ stop: true, code, detail });
  });

  it.each([
    ['max_rounds', maxRoundsPolicy(0)],
    ['token_budget', tokenBudgetPolicy(0)],
    ['timeout', timeoutPolicy(0)],
    ['consecutive_errors', consecutiveErrorsPolicy(0)],
    ['stop_on_tool', stopOnToolPolicy('')],
    ['content_match', contentMatchPolicy('')],
    ['loop_detection', loopDetectionPolicy(1)],
  ])('%s: 0 (or empty) disables it', (_code, policy) => {
    const extreme = stats({
      stepCount: 1e6,
      totalInputTokens: 1e9,
      elapsedMs: 1e9,
      consecutiveErrors: 99,
      lastToolNames: [''],
      lastResponseText: 'x',
      recentResponseTexts: ['x', 'x', 'x'],
    });
    expect(policy.evaluate(extreme)).toEqual({ stop: false });
  });

  it('content_match reads a leading (?i) as a flag and stops at once on an invalid pattern', () => {
    expect(contentMatchPolicy('(?i)done').evaluate(stats({ lastResponseText: 'DONE' })).stop).toBe(true);
    const bad = contentMatchPolicy('(');
    expect(bad.evaluate(stats({}))).toMatchObject({ stop: true, code: 'content_match_invalid_regex' });
  });

  it('loop detection ignores empty texts', () => {
    expect(loopDetectionPolicy(2).evaluate(stats({ recentResponseTexts: ['', ''] }))).toEqual({ stop: false });
  });

  it('declarative specs map to the same policies, in order; the first stop wins', () => {
    const policies = [
      { type: 'max_rounds', rounds: 5 },
      { type: 'timeout', seconds: 1 },
      { type: 'token_budget', max_total: 10 },
      { type: 'consecutive_errors', max: 2 },
      { type: 'stop_on_tool', tool_name: 't' },
      { type: 'content_match', pattern: 'x' },
      { type: 'loop_detection', window: 2 },
    ].map((s) => policyFromSpec(s as never));
    expect(policies.map((p) => p.id)).toEqual([
      'max_rounds',
      'timeout',
      'token_budget',
      'consecutive_errors',
      'stop_on_tool',
      'content_match',
      'loop_detection',
    ]);
    expect(evaluateStopPolicies(policies, stats({ elapsedMs: 2000, consecutiveErrors: 5 }))).toMatchObject({ code: 'timeout' });
    expect(evaluateStopPolicies(policies, stats({}))).toEqual({ stop: false });
  });

  it('observeInference counts steps, clamps negative tokens, resets errors on success, caps history', () => {
    let s = initialStopStats();
    s = observeInference(s, { ok: false }, 5);
    s = observeInference(s, { ok: false }, 6);
    expect(s).toMatchObject({ stepCount: 2, consecutiveErrors: 2, elapsedMs: 6 });
    s = observeInference(s, { ok: true, inputTokens: -7, outputTokens: 3, text: 'hi', toolNames: ['a'] }, 9);
    expect(s).toMatchObject({
      stepCount: 3,
      consecutiveErrors: 0,
      totalInputTokens: 0,
      totalOutputTokens: 3,
      lastToolNames: ['a'],
      recentResponseTexts: ['hi'],
    });
    s = observeInference(s, { ok: true, inputTokens: 0, outputTokens: 0, text: '', toolNames: [] }, 9);
    expect(s.recentResponseTexts).toEqual(['hi']);
    for (let i = 0; i < 100; i++) s = observeInference(s, { ok: true, inputTokens: 0, outputTokens: 0, text: `t${i}`, toolNames: [] }, 9);
    expect(s.recentResponseTexts).toHaveLength(MAX_RESPONSE_HISTORY);
    expect(s.recentResponseTexts.at(-1)).toBe('t99');
  });

  it('property: max_rounds(n) stops exactly from the n-th inference on', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 0, max: 60 }), (n, steps) => {
        let s = initialStopStats();
        for (let i = 0; i < steps; i++) s = observeInference(s, { ok: true, inputTokens: 1, outputTokens: 1, text: '', toolNames: [] }, 0);
        expect(maxRoundsPolicy(n).evaluate(s).stop).toBe(steps >= n);
      }),
      { numRuns: 200 },
    );
  });
});
