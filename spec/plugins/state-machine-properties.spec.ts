import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { stateMachinePlugin, StateMachineConfigSchema, type StateMachineConfigInput } from '../../src/plugins/state-machine/index.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { fuzzPlugin } from '../../src/testing/fuzz-plugin.ts';
import { harness } from '../support/runtime.ts';

/**
 * Properties of the tool-order state machine (issue: a machine never leaves its declared states;
 * deny never lets the call execute; the instance map after any call sequence equals a reference
 * fold of the transitions; thread-scope state survives a second run, run-scope state does not).
 * Each run drives the real runtime, one call per step; the reference fold below is written from
 * the DSL's description alone.
 */

const STATES = ['s0', 's1', 's2'] as const;
type Tool = 'Read' | 'Write';
interface T {
  on: Tool;
  from: string[];
  to: string;
  when: 'success' | 'error' | 'any';
  action: 'deny' | 'warn';
}
interface Machine {
  scope: 'thread' | 'run';
  initial: string;
  onUnmatched: string | null;
  transitions: T[];
}
interface Call {
  tool: Tool;
  path: 'a' | 'b';
  fail: boolean;
}

const state = fc.constantFrom(...STATES);
const machine: fc.Arbitrary<Machine> = fc
  .record({
    scope: fc.constantFrom('thread' as const, 'run' as const),
    initial: state,
    onUnmatched: fc.option(state, { nil: null }),
    transitions: fc.array(
      fc.record({
        on: fc.constantFrom<Tool>('Read', 'Write'),
        from: fc.uniqueArray(state, { minLength: 1, maxLength: 3 }),
        to: state,
        when: fc.constantFrom('success' as const, 'error' as const, 'any' as const),
        action: fc.constantFrom('deny' as const, 'warn' as const),
      }),
      { minLength: 1, maxLength: 4 },
    ),
  })
  .map((m) => ({
    ...m,
    onUnmatched: m.onUnmatched !== null && [m.initial, ...m.transitions.flatMap((t) => [...t.from, t.to])].includes(m.onUnmatched) ? m.onUnmatched : null,
  }));
const calls = fc.array(fc.record({ tool: fc.constantFrom<Tool>('Read', 'Write'), path: fc.constantFrom('a' as const, 'b' as const), fail: fc.boolean() }), {
  maxLength: 6,
});

const configOf = (m: Machine): StateMachineConfigInput => ({
  machines: [
    {
      name: 'm',
      scope: m.scope,
      key: '{file_path}',
      initial: m.initial,
      on_unmatched: m.onUnmatched,
      transitions: m.transitions.map((t) => ({ on: `${t.on}(file_path ~ "*")`, from: t.from, to: t.to, when: t.when, on_violation: { action: t.action } })),
    },
  ],
});

/** The reference: which calls run, and the instance map after them. */
function fold(m: Machine, start: Record<string, string>, cs: readonly Call[]): { ran: boolean[]; map: Record<string, string> } {
  const map = { ...start };
  const ran: boolean[] = [];
  for (const c of cs) {
    const now = map[c.path] ?? m.initial;
    const matching = m.transitions.filter((t) => t.on === c.tool);
    const enabled = matching.find((t) => t.from.includes(now));
    const refused = matching.length > 0 && enabled === undefined && (matching[0] as T).action === 'deny';
    ran.push(!refused);
    if (refused || enabled === undefined) continue;
    const status = c.fail ? 'error' : 'success';
    if (enabled.when === 'any' || enabled.when === status) map[c.path] = enabled.to;
    else if (m.onUnmatched !== null) map[c.path] = m.onUnmatched;
  }
  return { ran, map };
}

function tools(executed: string[]) {
  return (['Read', 'Write'] as const).map((id) =>
    defineTool({
      id,
      description: id,
      args: z.object({ file_path: z.string(), fail: z.boolean() }),
      execute: ({ file_path, fail }, ctx) => {
        executed.push(ctx.callId);
        return fail ? ToolResults.error(id, `${file_path} failed`) : ToolResults.success(id, { file_path });
      },
    }),
  );
}

const script = (prefix: string, cs: readonly Call[]) => [
  ...cs.map((c, i) => ({ tool_calls: [{ id: `${prefix}${i}`, name: c.tool, arguments: { file_path: c.path, fail: c.fail } }] })),
  { text: 'done' },
];

async function twoRuns(m: Machine, first: readonly Call[], second: readonly Call[]) {
  const executed: string[] = [];
  const h = harness([...script('x', first), ...script('y', second)], { tools: tools(executed), plugins: [stateMachinePlugin(configOf(m))] });
  await h.runtime.run({ threadId: 't', messages: [Messages.user('one')] }, h.sink);
  const afterFirst = structuredClone(h.store.checkpoints.at(-1));
  await h.runtime.run({ threadId: 't', messages: [Messages.user('two')] }, new VecEventSink());
  const key = m.scope === 'thread' ? 'tool_fsm_thread_state' : 'tool_fsm_run_state';
  const mapIn = (cp: typeof afterFirst) =>
    ((m.scope === 'thread' ? cp?.threadState.extensions : cp?.runState?.extensions)?.[key] as Record<string, Record<string, string>> | undefined)?.['m'] ?? {};
  return { executed, first: mapIn(afterFirst), second: mapIn(h.store.checkpoints.at(-1)) };
}

describe('state machine properties (through the runtime)', () => {
  it('deny never lets a call run; the instance map equals the reference fold; thread scope carries into the next run, run scope does not; no state outside the declared ones', async () => {
    await fc.assert(
      fc.asyncProperty(machine, calls, calls, async (m, first, second) => {
        const got = await twoRuns(m, first, second);
        const a = fold(m, {}, first);
        const b = fold(m, m.scope === 'thread' ? a.map : {}, second);
        const expectedRan = [...first.map((_, i) => (a.ran[i] ? `x${i}` : '')), ...second.map((_, i) => (b.ran[i] ? `y${i}` : ''))].filter((x) => x !== '');
        expect(got.executed).toEqual(expectedRan);
        expect(got.first).toEqual(a.map);
        expect(got.second).toEqual(b.map);
        const declared = new Set([m.initial, ...m.transitions.flatMap((t) => [...t.from, t.to])]);
        for (const s of [...Object.values(got.first), ...Object.values(got.second)]) expect(declared.has(s)).toBe(true);
      }),
      { numRuns: 60 },
    );
  });
});

describe('fuzzPlugin', () => {
  it('passes: deterministic, writes only its keys, converges; the laws of its keys hold', async () => {
    const cfg = StateMachineConfigSchema.parse({
      machines: [
        {
          name: 'rbw',
          key: '{file_path}',
          initial: 'unread',
          terminal: ['written'],
          transitions: [
            { on: 'Read(file_path ~ "*")', from: 'unread', to: 'read' },
            { on: 'Write', from: 'read', to: 'written', emit: { target: 'system', content: 'wrote {file_path}' }, on_violation: { action: 'ask' } },
          ],
        },
      ],
      continuation: { max_continuations: 3 },
    });
    const instance = fc.record({ machine: fc.constantFrom('rbw', 'other'), key: fc.string({ maxLength: 3 }), state: fc.constantFrom('unread', 'read') });
    const report = await fuzzPlugin(stateMachinePlugin(cfg), {
      numRuns: 40,
      seed: 11,
      updates: {
        tool_fsm_thread_state: instance,
        tool_fsm_run_state: instance,
        tool_fsm_metrics: fc.record({ metric: fc.constantFrom('transitions', 'denials', 'asks', 'warnings', 'continuations'), by: fc.nat(3) }),
        tool_fsm_violation_log: fc.record(
          {
            call_id: fc.string({ maxLength: 3 }),
            tool: fc.constant('Write'),
            machine: fc.constant('rbw'),
            key: fc.string({ maxLength: 3 }),
            state: fc.constant('unread'),
            action: fc.constantFrom('deny', 'ask', 'warn'),
            reason: fc.string({ maxLength: 5 }),
          },
          { noNullPrototype: true },
        ),
      },
    });
    expect(report.failures).toEqual([]);
    expect(report.phases).toEqual(['after_inference', 'before_tool_execute', 'after_tool_execute']);
    expect(report.keys.filter((k) => !k.passed)).toEqual([]);
  });
});
