import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serialiseEvent, type AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import type { ScriptStep } from '../../src/providers/scripted.ts';
import { defineTool, ToolFailure } from '../../src/runtime/tool.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { harness } from '../support/runtime.ts';

/** Tools whose outcome is chosen by the script; `ticks` yields to the scheduler that many times first. */
const ticks = async (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) await Promise.resolve();
};
const args = z.object({ ticks: z.number().int() });
const tools = [
  defineTool({ id: 'ok', description: 'succeeds', args, execute: async ({ ticks: n }) => (await ticks(n), ToolResults.success('ok', { n })) }),
  defineTool({ id: 'err', description: 'returns an error', args, execute: async ({ ticks: n }) => (await ticks(n), ToolResults.error('err', 'bad')) }),
  defineTool({
    id: 'throw',
    description: 'throws',
    args,
    execute: async ({ ticks: n }) => {
      await ticks(n);
      throw new ToolFailure({ code: 'execution_failed', message: 'thrown' });
    },
  }),
  defineTool({
    id: 'susp',
    description: 'suspends',
    args,
    execute: async ({ ticks: n }, ctx) => {
      await ticks(n);
      return ToolResults.suspended('susp', 'wait', {
        suspension: { id: `s-${ctx.callId}`, action: 'confirm' },
        pending: { id: ctx.callId, name: 'susp', arguments: { ticks: n } },
        resume_mode: 'replay_tool_call',
      });
    },
  }),
];

const step = (index: number): fc.Arbitrary<ScriptStep> =>
  fc
    .record({
      text: fc.option(fc.constantFrom('a', 'hello', 'done.'), { nil: undefined }),
      calls: fc.array(fc.record({ name: fc.constantFrom('ok', 'err', 'throw', 'susp'), ticks: fc.nat({ max: 4 }) }), { maxLength: 3 }),
      usage: fc.option(fc.record({ prompt_tokens: fc.nat({ max: 50 }), completion_tokens: fc.nat({ max: 50 }) }), { nil: undefined }),
    })
    .map(({ text, calls, usage }) => ({
      ...(text !== undefined ? { text } : {}),
      ...(calls.length > 0 ? { tool_calls: calls.map((c, j) => ({ id: `c${index}_${j}`, name: c.name, arguments: { ticks: c.ticks } })) } : {}),
      ...(usage !== undefined ? { usage } : {}),
    }));

const script = fc.integer({ min: 1, max: 6 }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => step(i))));

type Mode = 'sequential' | 'parallel_streaming' | 'parallel_batch_approval';

async function runScript(steps: readonly ScriptStep[], mode: Mode, cancelAt: number | undefined): Promise<AgentEvent[]> {
  const h = harness(steps, { tools, spec: { max_rounds: 8, sections: { tool_execution: { mode } } } });
  const controller = new AbortController();
  let seen = 0;
  const events: AgentEvent[] = [];
  const r = await h.runtime.run(
    { messages: [Messages.user('go')] },
    {
      emit: (e) => {
        events.push(e);
        if (cancelAt !== undefined && ++seen === cancelAt) controller.abort();
      },
    },
    { signal: controller.signal, waitForDecisions: false },
  );
  if (!r.ok) throw new Error(JSON.stringify(r.error));
  return events;
}

const bytes = (events: readonly AgentEvent[]): string[] => events.map(serialiseEvent);

describe('loop properties over random scripts', () => {
  it('the stream invariants hold in every mode, with or without a cancel point', async () => {
    await fc.assert(
      fc.asyncProperty(script, fc.constantFrom<Mode>('sequential', 'parallel_streaming', 'parallel_batch_approval'), fc.option(fc.integer({ min: 1, max: 40 }), { nil: undefined }), async (steps, mode, cancelAt) => {
        const events = await runScript(steps, mode, cancelAt);
        expect(checkRunInvariants(events)).toEqual([]);
        const finishes = events.filter((e) => e.event_type === 'run_finish');
        expect(finishes).toHaveLength(1);
      }),
      { numRuns: 200 },
    );
  });

  it('the same script and Env give byte-identical streams; both parallel modes agree; sequential agrees when no call suspends itself', async () => {
    await fc.assert(
      fc.asyncProperty(script, async (steps) => {
        const seq = bytes(await runScript(steps, 'sequential', undefined));
        expect(bytes(await runScript(steps, 'sequential', undefined))).toEqual(seq);
        const streaming = bytes(await runScript(steps, 'parallel_streaming', undefined));
        expect(bytes(await runScript(steps, 'parallel_batch_approval', undefined))).toEqual(streaming);
        const suspends = steps.some((s) => (s.tool_calls ?? []).some((c) => c.name === 'susp'));
        if (!suspends) expect(streaming).toEqual(seq);
      }),
      { numRuns: 150 },
    );
  });
});
