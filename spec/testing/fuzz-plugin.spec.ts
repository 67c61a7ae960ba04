import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Plugin } from '../../src/core/phase/plugin.ts';
import { defineAction, StateCommand } from '../../src/core/state/state-command.ts';
import { defineStateKey } from '../../src/core/state/state-key.ts';
import { StopDecisionKey, ToolInterceptAction } from '../../src/runtime/builtin-plugins.ts';
import { describePluginFuzz, fuzzPlugin } from '../../src/testing/fuzz-plugin.ts';
import { describeKeyLaws } from '../../src/testing/state-laws.ts';

/** docs/plugins.md's worked plugin: a budget of tool calls per run. */
const CallsSeen = defineStateKey<number, number>({ key: 'tool_budget.calls', init: () => 0, apply: (n, by) => n + by, codec: z.number().int().nonnegative() });
const toolBudget = (max: number): Plugin => ({
  name: 'tool_budget',
  register: (r) => {
    r.registerKey(CallsSeen);
    r.registerPhaseHook('before_tool_execute', (ctx) => {
      const seen = ctx.snapshot.getOrDefault(CallsSeen);
      const cmd = StateCommand.empty().update(CallsSeen, 1);
      if (seen < max) return cmd;
      return cmd.scheduleAction(ToolInterceptAction, {
        call_id: ctx.input.toolCall.id,
        intercept: { type: 'block', reason: `tool budget of ${max} calls used up` },
      });
    });
  },
});

const Notes = defineStateKey<readonly string[], string>({
  key: 'notes.list',
  init: () => [],
  apply: (v, u) => [...v, u],
  codec: z.array(z.string()) as z.ZodType<readonly string[]>,
});

describe('fuzzPlugin', () => {
  it("passes a well-made plugin (docs/plugins.md's tool budget), and checks the laws of the keys it is given updates for", async () => {
    const report = await fuzzPlugin(toolBudget(2), { updates: { 'tool_budget.calls': fc.nat(3) }, numRuns: 30 });
    expect(report.failures).toEqual([]);
    expect(report.phases).toEqual(['before_tool_execute']);
    expect(report.keys.map((k) => [k.key, k.passed])).toEqual([['tool_budget.calls', true]]);
    expect(report.passed).toBe(true);
    // Without updates for a key, its laws are named as not checked.
    expect((await fuzzPlugin(toolBudget(2), { numRuns: 5 })).unchecked).toEqual(['tool_budget.calls']);
  });

  it('a hook that counts its calls is not deterministic: the same input gives another command the second time', async () => {
    let calls = 0;
    const counting: Plugin = {
      name: 'counting',
      register: (r) => void r.registerKey(CallsSeen).registerPhaseHook('step_start', () => StateCommand.empty().update(CallsSeen, ++calls)),
    };
    const report = await fuzzPlugin(counting, { numRuns: 10, seed: 1 });
    const f = report.failures.find((x) => x.check === 'deterministic');
    expect(f?.phase).toBe('step_start');
    expect(f?.counterexample[0]).toBe('phase:  step_start');
    expect(f?.counterexample.at(-2)).toMatch(/^first call → \[\{"ops":\[\{"kind":"update","key":"tool_budget.calls","update":\d+\}\]/);
    expect(f?.counterexample.at(-1)).toMatch(/^same input again → /);
    expect(f?.path).toMatch(/^deterministic@step_start@/);
  });

  it('hooks whose result depends on which promise settles first are caught by the scheduler', async () => {
    let last = '';
    const racy: Plugin = {
      name: 'racy',
      register: (r) => {
        r.registerKey(Notes);
        for (const name of ['a', 'b']) {
          r.registerPhaseHook('run_end', async () => {
            last = name;
            await Promise.resolve();
            return StateCommand.empty().update(Notes, last);
          });
        }
      },
    };
    const report = await fuzzPlugin(racy, { numRuns: 30, seed: 3 });
    const f = report.failures.find((x) => x.check === 'deterministic');
    // Called together (as the engine does), both read the last writer; called one by one, each its own.
    expect(f?.counterexample.at(-2)).toBe(
      'called together, in registration order → [{"ops":[{"kind":"update","key":"notes.list","update":"b"}],"actions":[],"effects":[]},{"ops":[{"kind":"update","key":"notes.list","update":"b"}],"actions":[],"effects":[]}]',
    );
    expect(f?.counterexample.at(-1)).toMatch(/^call racy#\d, call racy#\d → \[\{"ops":\[\{"kind":"update","key":"notes.list","update":"a"\}\]/);
  });

  it('a hook that writes a key it did not register is named with the key', async () => {
    const meddling: Plugin = {
      name: 'meddling',
      register: (r) =>
        void r.registerKey(CallsSeen).registerPhaseHook('step_end', () => StateCommand.empty().update(StopDecisionKey, { code: 'x', detail: 'y' })),
    };
    const f = (await fuzzPlugin(meddling, { numRuns: 5 })).failures.find((x) => x.check === 'own-keys');
    expect(f?.counterexample.at(-1)).toBe('writes __runtime.stop_decision, which it did not register (it registered tool_budget.calls)');
  });

  it('actions that keep scheduling themselves never converge: the round bound is named', async () => {
    const Again = defineAction('looping.again', 'step_start', z.number());
    const looping: Plugin = {
      name: 'looping',
      register: (r) => {
        r.registerPhaseHook('step_start', () => StateCommand.empty().scheduleAction(Again, 0));
        r.registerScheduledAction(Again, (_ctx, n) => StateCommand.empty().scheduleAction(Again, n + 1));
      },
    };
    const f = (await fuzzPlugin(looping, { numRuns: 3, maxRounds: 4 })).failures.find((x) => x.check === 'converges');
    expect(f?.counterexample.at(-1)).toBe('its actions are still scheduling work after 4 rounds');
  });

  it("a broken key's law fails through the plugin, with a path that replays it alone", async () => {
    const noting: Plugin = {
      name: 'noting',
      register: (r) => void r.registerKey({ ...Notes, merge: 'commutative' }).registerPhaseHook('step_end', () => StateCommand.empty()),
    };
    const report = await fuzzPlugin(noting, { updates: { 'notes.list': fc.string({ maxLength: 2 }) }, numRuns: 50, seed: 5 });
    expect(report.passed).toBe(false);
    const law = report.keys[0]?.failures.find((x) => x.law === 'commutative');
    expect(law?.path).toMatch(/^key=notes\.list@commutative@/);
    const text = describePluginFuzz(report, describeKeyLaws);
    expect(text).toContain('plugin noting: FAILED — hooks in step_end');
    expect(text).toContain('✗ commutative: parallel batches give the same value in every order and grouping');
    const again = await fuzzPlugin(noting, {
      updates: { 'notes.list': fc.string({ maxLength: 2 }) },
      seed: 5,
      ...(law?.path !== undefined ? { path: law.path } : {}),
    });
    expect(again.keys[0]?.checked).toEqual(['commutative']);
    expect(again.keys[0]?.failures[0]?.counterexample).toEqual(law?.counterexample);
  });
});
