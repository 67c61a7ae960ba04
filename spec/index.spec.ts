import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineStateKey, PhaseRuntime, serialiseEvent, StateCommand } from 'awaken-ts';
import { arbitraries } from 'awaken-ts/testing';

describe('package exports', () => {
  it('runs the README example through the "." export', async () => {
    const Visits = defineStateKey({
      key: 'demo.visits',
      merge: 'commutative',
      init: () => 0,
      apply: (n: number, by: number) => n + by,
      codec: z.number(),
    });
    const created = PhaseRuntime.create([
      {
        name: 'demo',
        register: (r) => r.registerKey(Visits).registerPhaseHook('step_start', () => StateCommand.empty().update(Visits, 1)),
      },
    ]);
    if (!created.ok) throw new Error(created.error.code);
    const report = await created.value.runPhase('step_start');
    expect(report.ok && report.value.commits).toBe(1);
    expect(created.value.store.snapshot().get(Visits)).toBe(1);
  });

  it('exposes the arbitraries through "./testing"', () => {
    const [event] = fc.sample(arbitraries.agentEvent(), { numRuns: 1, seed: 7 });
    expect(typeof serialiseEvent(event!)).toBe('string');
  });
});
