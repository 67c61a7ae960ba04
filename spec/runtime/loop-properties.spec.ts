import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { serialiseEvent, type AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import type { ScriptStep } from '../../src/providers/scripted.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { harness } from '../support/runtime.ts';
import { script, scriptTools } from '../support/scripts.ts';

type Mode = 'sequential' | 'parallel_streaming' | 'parallel_batch_approval';

async function runScript(steps: readonly ScriptStep[], mode: Mode, cancelAt: number | undefined): Promise<AgentEvent[]> {
  const h = harness(steps, { tools: scriptTools, spec: { max_rounds: 8, sections: { tool_execution: { mode } } } });
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
      fc.asyncProperty(
        script,
        fc.constantFrom<Mode>('sequential', 'parallel_streaming', 'parallel_batch_approval'),
        fc.option(fc.integer({ min: 1, max: 40 }), { nil: undefined }),
        async (steps, mode, cancelAt) => {
          const events = await runScript(steps, mode, cancelAt);
          expect(checkRunInvariants(events)).toEqual([]);
          const finishes = events.filter((e) => e.event_type === 'run_finish');
          expect(finishes).toHaveLength(1);
        },
      ),
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
