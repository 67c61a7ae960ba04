import { describe, expect, expectTypeOf, it } from 'vitest';
import type { AgentSpec } from '../../src/contract/agent-spec.ts';
import type { Message, ToolCall } from '../../src/contract/message.ts';
import { PHASES, type Phase } from '../../src/contract/phase.ts';
import type { ToolResult } from '../../src/contract/tool.ts';
import type { PhaseContext, PhaseInputs } from '../../src/core/phase/plugin.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';
import { Messages } from '../../src/contract/message.ts';
import { harness } from '../support/runtime.ts';

describe('typed phase inputs (the plugin API)', () => {
  it('a hook registered for a phase gets that phase’s input, typed', () => {
    const plugin: RuntimePlugin = {
      name: 'typed',
      register: (r) => {
        r.registerPhaseHook('before_tool_execute', (ctx) => {
          expectTypeOf(ctx.input.toolCall).toEqualTypeOf<ToolCall>();
          expectTypeOf(ctx.input.messages).toEqualTypeOf<readonly Message[]>();
          expectTypeOf(ctx.input.agentSpec).toEqualTypeOf<AgentSpec>();
          // @ts-expect-error a BeforeToolExecute input has no tool result yet
          void ctx.input.toolResult;
          return StateCommand.empty();
        });
        r.registerPhaseHook('after_tool_execute', (ctx) => {
          expectTypeOf(ctx.input.toolResult).toEqualTypeOf<ToolResult | undefined>();
          return StateCommand.empty();
        });
        r.registerPhaseHook('step_start', (ctx) => {
          // @ts-expect-error a StepStart input has no tool call
          void ctx.input.toolCall;
          return StateCommand.empty();
        });
      },
    };
    expect(plugin.name).toBe('typed');
    expectTypeOf<PhaseContext<'run_start'>['input']['now']>().toEqualTypeOf<number>();
  });

  it('every phase’s hooks see exactly the documented fields, in a new object for each phase run', async () => {
    const seen: { phase: Phase; keys: string[]; input: object }[] = [];
    const spy: RuntimePlugin = {
      name: 'spy',
      register: (r) => {
        for (const phase of PHASES) {
          r.registerPhaseHook(phase, (ctx: PhaseContext) => {
            seen.push({ phase: ctx.phase, keys: Object.keys(ctx.input).sort(), input: ctx.input });
            return StateCommand.empty();
          });
        }
      },
    };
    const h = harness([{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }], { plugins: [spy] });
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    const run = ['agentSpec', 'runId', 'threadId'];
    const expected: { [P in Phase]: (keyof PhaseInputs[P])[] } = {
      run_start: ['agentSpec', 'threadId', 'runId', 'now', 'tools'],
      step_start: ['agentSpec', 'threadId', 'runId', 'messages'],
      before_inference: ['agentSpec', 'threadId', 'runId', 'messages', 'tools'],
      after_inference: ['agentSpec', 'threadId', 'runId', 'inference', 'now', 'llmResponse', 'messages'],
      before_tool_execute: ['agentSpec', 'threadId', 'runId', 'toolCall', 'messages'],
      after_tool_execute: ['agentSpec', 'threadId', 'runId', 'toolCall', 'toolResult', 'messages'],
      step_end: ['agentSpec', 'threadId', 'runId', 'messages'],
      run_end: ['agentSpec', 'threadId', 'runId', 'messages'],
    };
    expect(new Set(seen.map((s) => s.phase))).toEqual(new Set(PHASES));
    for (const s of seen) {
      expect(s.keys, s.phase).toEqual([...expected[s.phase]].map(String).sort());
      for (const k of run) expect(s.keys).toContain(k);
    }
    // No input object is shared between two phase runs (none is the loop's to change later).
    expect(new Set(seen.map((s) => s.input)).size).toBe(seen.length);
    const afterTool = seen.find((s) => s.phase === 'after_tool_execute')?.input as PhaseInputs['after_tool_execute'];
    expect(afterTool.toolCall).toMatchObject({ id: 'c1', name: 'echo' });
    expect(afterTool.toolResult).toMatchObject({ status: 'success' });
  });
});
