import fc from 'fast-check';
import { z } from 'zod';
import { ToolResults } from '../../src/contract/tool.ts';
import type { ScriptStep } from '../../src/providers/scripted.ts';
import { defineTool, ToolFailure } from '../../src/runtime/tool.ts';

/** Tools whose outcome is chosen by the script; `ticks` yields to the scheduler that many times first. */
const ticks = async (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) await Promise.resolve();
};
const args = z.object({ ticks: z.number().int() });
export const scriptTools = [
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

export const script = fc.integer({ min: 1, max: 6 }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => step(i))));
