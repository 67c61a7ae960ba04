import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MutationBatch } from '../../../src/core/state/mutation-batch.ts';
import { defineStateKey, type StateKey } from '../../../src/core/state/state-key.ts';
import type { StateCommand } from '../../../src/core/state/state-command.ts';
import { PhaseRuntime } from '../../../src/runtime/phase-runtime.ts';

const Counter = defineStateKey<number, number>({ key: 'test.counter', init: () => 0, apply: (s, u) => s + u, codec: z.number() });

/**
 * A command as another copy of this library makes it (a plugin that bundles its own): the public
 * surface of a command — its writes as a `patch`, its actions and effects — and nothing private.
 */
class ForeignCommand {
  readonly patch = new MutationBatch();
  readonly scheduledActions = [];
  readonly effects = [];
  update<V, U>(key: StateKey<V, U>, update: U): this {
    this.patch.update(key, update);
    return this;
  }
  get baseRevision(): number | undefined {
    return this.patch.baseRevision;
  }
  withBaseRevision(revision: number): this {
    this.patch.baseRevision = revision;
    return this;
  }
  get touchedKeys(): readonly string[] {
    return this.patch.touchedKeys;
  }
  isEmpty(): boolean {
    return this.patch.isEmpty();
  }
}

describe('a command made by another copy of the library', () => {
  it.each([1, 2])('is committed like one of ours, from %i hook(s) of the phase', async (hooks) => {
    const rt = PhaseRuntime.create([
      {
        name: 'bundles-its-own',
        register: (r) => {
          r.registerKey(Counter);
          for (let i = 0; i < hooks; i++) r.registerPhaseHook('step_start', () => new ForeignCommand().update(Counter, 5) as unknown as StateCommand);
        },
      },
    ]);
    if (!rt.ok) throw new Error(JSON.stringify(rt.error));
    const report = await rt.value.runPhase('step_start', { input: { agentSpec: undefined as never, threadId: 't', runId: 'r', messages: [] } });
    expect(report.ok).toBe(true);
    expect(rt.value.store.snapshot().get(Counter)).toBe(5 * hooks);
  });
});
