import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { defineStateKey } from '../../src/core/state/state-key.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import type { RuntimePlugin, ToolExecutionMode } from '../../src/runtime/resolve.ts';
import { MemoryThreadRunStore } from '../../src/runtime/thread-run-store.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { approvalTool } from '../support/runtime.ts';

/**
 * The calls of a parallel batch on a run with a store: each outcome that settles while another call
 * still runs is stored at once (the batch record's `outcomes`, in the store only); the last to
 * settle is stored by the batch's settle step. What the run emits is the same with a store or without.
 */

const Counter = defineStateKey({ key: 'test.outcomes_counter', merge: 'exclusive', init: () => 0, apply: (_v: number, u: number) => u, codec: z.number() });
const counter: RuntimePlugin = { name: 'counter', register: (r) => r.registerKey(Counter) };

/** Answers at once. */
const now = defineTool({ id: 'now', description: 'now', args: z.object({}), execute: () => ToolResults.success('now', 'at once') });
/** Answers at once, and writes state. */
const writes = defineTool({
  id: 'writes',
  description: 'writes',
  args: z.object({}),
  execute: () => ({ result: ToolResults.success('writes', 'wrote'), command: StateCommand.empty().update(Counter, 1) }),
});
/** Answers two turns later. */
const later = defineTool({
  id: 'later',
  description: 'later',
  args: z.object({}),
  execute: async () => {
    for (let i = 0; i < 2; i++) await new Promise<void>((r) => setImmediate(r));
    return ToolResults.success('later', 'later');
  },
});

function runtime(mode: ToolExecutionMode, calls: readonly string[], store: MemoryThreadRunStore | undefined) {
  const llm = new ScriptedLlm([
    { tool_calls: calls.map((name, i) => ({ id: `c${i}-${name}`, name, arguments: name === 'approve' ? { what: 'x' } : {} })) },
    { text: 'done' },
  ]);
  const builder = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('scripted', llm)
    .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
    .withAgentSpec({ id: 'agent', model: 'm', plugin_ids: ['counter'], sections: { tool_execution: { mode } } as never })
    .withPlugin('counter', counter);
  for (const tool of [now, writes, later, approvalTool]) builder.withTool(tool);
  if (store !== undefined) builder.withThreadRunStore(store);
  const built = builder.build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return built.value;
}

/** The call ids of each stored write that carries outcomes, in the order written. */
async function storedOutcomes(mode: ToolExecutionMode, calls: readonly string[]): Promise<string[][]> {
  const store = new MemoryThreadRunStore();
  // A suspended call ends the run (suspended) instead of waiting for its decision.
  await runtime(mode, calls, store).run({ threadId: 't', runId: 'r', messages: [Messages.user('go')] }, new VecEventSink(), { waitForDecisions: false });
  return store.checkpoints.flatMap((c) => {
    const batch = c.threadState.extensions['__runtime.tool_batch'] as { outcomes?: Record<string, unknown> } | null | undefined;
    return batch?.outcomes === undefined ? [] : [Object.keys(batch.outcomes)];
  });
}

describe('a parallel call outcome, stored as it settles', () => {
  it('the calls that answered at once are stored together while a later one still runs; the last is left to the settle step', async () => {
    expect(await storedOutcomes('parallel_streaming', ['now', 'writes', 'later'])).toEqual([['c0-now', 'c1-writes']]);
    expect(await storedOutcomes('parallel_streaming', ['later', 'now'])).toEqual([['c1-now']]);
  });

  it('under ParallelBatchApproval an outcome that writes state waits for the settle step (a conflict could still fail it)', async () => {
    expect(await storedOutcomes('parallel_batch_approval', ['now', 'writes', 'later'])).toEqual([['c0-now']]);
  });

  it('a suspended outcome waits for the settle step', async () => {
    expect(await storedOutcomes('parallel_streaming', ['approve', 'now', 'later'])).toEqual([['c1-now']]);
  });

  it('a batch whose calls all answer at once writes nothing more', async () => {
    expect(await storedOutcomes('parallel_streaming', ['now', 'writes'])).toEqual([]);
  });

  it('what the run emits is the same with a store and without (the outcomes are in the store only)', async () => {
    for (const mode of ['parallel_streaming', 'parallel_batch_approval'] as const) {
      const emitted = async (store: MemoryThreadRunStore | undefined) => {
        const sink = new VecEventSink();
        await runtime(mode, ['now', 'writes', 'later'], store).run({ threadId: 't', runId: 'r', messages: [Messages.user('go')] }, sink);
        return sink.events;
      };
      const withStore = await emitted(new MemoryThreadRunStore());
      expect(withStore.filter((e) => e.event_type === 'tool_call_done')).toHaveLength(3);
      expect(withStore).toEqual(await emitted(undefined));
    }
  });
});
