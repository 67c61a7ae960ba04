import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import type { RunOptions } from '../../src/runtime/run-handle.ts';
import { fenced } from '../../src/runtime/store.ts';
import { MemoryThreadRunStore, type RunCheckpoint } from '../../src/runtime/thread-run-store.ts';
import { z } from 'zod';
import { ToolResults } from '../../src/contract/tool.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { harness } from '../support/runtime.ts';

/**
 * A server stamps every checkpoint of a run it holds with the lease it holds the thread by and the
 * digest of the run's agent (`RunOptions.checkpoint`): the store fences off a process that lost its
 * lease, and keeps what the agent was when the run started.
 */
let executed = 0;
const countedEcho = defineTool({
  id: 'echo',
  description: 'Echo input back, counted',
  args: z.object({ text: z.string() }),
  execute: ({ text }) => (executed++, ToolResults.success('echo', { echoed: text })),
});

function runtimeOn(store: MemoryThreadRunStore) {
  const h = harness([{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }]);
  const built = new AgentRuntimeBuilder()
    .withEnv(h.env)
    .withProvider('scripted', h.llm)
    .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
    .withThreadRunStore(store)
    .withAgentSpec({ id: 'agent', model: 'm' })
    .withTool(countedEcho)
    .build();
  if (!built.ok) throw new Error('build');
  return built.value;
}

const events = (): { sink: { emit(e: AgentEvent): void }; seen: AgentEvent[] } => {
  const seen: AgentEvent[] = [];
  return { sink: { emit: (e) => void seen.push(e) }, seen };
};

describe('checkpoints stamped by the run options', () => {
  it('carry the fence and the agent digest on every checkpoint of the run, the durable call phases included', async () => {
    const store = new MemoryThreadRunStore();
    const options: RunOptions = { checkpoint: { fence: { owner: 'instance-a' }, agentDigest: 'sha256:0123456789ab' } };
    const r = await runtimeOn(store).run({ messages: [Messages.user('go')] }, events().sink, options);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    expect(store.checkpoints.map((c) => [c.steps, c.fence, c.agentDigest])).toEqual(
      [0, 1, 1, 1, 1, 2, 2].map((steps) => [steps, { owner: 'instance-a' }, 'sha256:0123456789ab']),
    );
  });

  it('carry neither without them', async () => {
    const store = new MemoryThreadRunStore();
    const r = await runtimeOn(store).run({ messages: [Messages.user('go')] }, events().sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    expect(store.checkpoints.filter((c) => c.fence !== undefined || c.agentDigest !== undefined)).toEqual([]);
  });

  it('a run whose checkpoint is fenced off (another instance took it over) stops there: no tool runs, nothing more is written or emitted', async () => {
    const attempts: RunCheckpoint[] = [];
    const store = new MemoryThreadRunStore();
    const inner = store.checkpoint.bind(store);
    // The lease is lost once the batch is stored: the call's Executing phase is refused.
    store.checkpoint = (c: RunCheckpoint) => {
      attempts.push(c);
      if (attempts.length > 2) return Promise.reject(fenced(c.runId, c.threadId, 'instance-a'));
      return inner(c);
    };
    const { sink, seen } = events();
    executed = 0;
    const started = await runtimeOn(store).start({ messages: [Messages.user('go')] }, sink, { checkpoint: { fence: { owner: 'instance-a' } } });
    if (!started.ok) throw new Error('start');
    const emittedAtFence: string[] = [];
    const result = await started.value.done;
    expect(result.termination).toEqual({ type: 'error', value: 'run run-1: instance-a does not hold the lease of thread thread-1' });
    expect(started.value.fenced?.()).toBe(true);
    // Written: the run's start and the batch; refused: the call's Executing phase and all after it.
    expect(store.checkpoints.map((c) => c.steps)).toEqual([0, 1]);
    expect(attempts.at(-1)?.status).toBe('done');
    expect(executed).toBe(0);
    // What followers saw ends where the batch was stored: no tool result, no run_finish.
    emittedAtFence.push(...seen.map((e) => e.event_type));
    expect(emittedAtFence.filter((t) => t === 'tool_call_done' || t === 'run_finish' || t === 'step_end')).toEqual([]);
    expect(emittedAtFence.at(-1)).toBe('inference_complete');
  });

  it('a run never fenced says so', async () => {
    const started = await runtimeOn(new MemoryThreadRunStore()).start({ messages: [Messages.user('go')] }, events().sink);
    if (!started.ok) throw new Error('start');
    await started.value.done;
    expect(started.value.fenced?.()).toBe(false);
  });
});
