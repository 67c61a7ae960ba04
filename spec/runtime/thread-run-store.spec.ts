import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { MemoryThreadRunStore, type RunCheckpoint, type ThreadRunStore } from '../../src/runtime/thread-run-store.ts';
import { harness } from '../support/runtime.ts';

/** The loop's store port: a checkpoint is written now (nothing returned) or later (a promise the step's end waits for). */

const checkpoint = (runId: string, messages: RunCheckpoint['messages']): RunCheckpoint => ({
  threadId: 't',
  runId,
  agentId: 'a',
  messages,
  status: 'running',
  steps: 0,
  threadState: { revision: 0, extensions: {} },
  runState: { revision: 0, extensions: {} },
  updatedAt: 0,
});

describe('MemoryThreadRunStore', () => {
  it('writes a checkpoint at once: it returns nothing and holds the checkpoint when the call returns', async () => {
    const store = new MemoryThreadRunStore();
    expect(store.checkpoint(checkpoint('r1', [Messages.user('hi')]))).toBeUndefined();
    expect(store.checkpoints).toHaveLength(1);
    expect((await store.loadThread('t'))?.messages).toEqual([Messages.user('hi')]);
  });
});

describe('the loop on either kind of store', () => {
  /** A store that holds every checkpoint back until `release` is called, recording when each was written. */
  function slowStore(log: string[]): ThreadRunStore & { release(): void } {
    const inner = new MemoryThreadRunStore();
    let pending: (() => void)[] = [];
    return {
      loadThread: (id) => inner.loadThread(id),
      checkpoint: (c) =>
        new Promise<void>((resolve) => {
          pending.push(() => {
            inner.checkpoint(c);
            log.push(`checkpoint ${c.steps}`);
            resolve();
          });
        }),
      release() {
        const now = pending;
        pending = [];
        for (const p of now) p();
      },
    };
  }

  it('waits for a checkpoint that is written later before the step ends, and goes on at once after one written now', async () => {
    for (const kind of ['later', 'now'] as const) {
      const log: string[] = [];
      const h = harness([{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }]);
      const store = kind === 'later' ? slowStore(log) : new MemoryThreadRunStore();
      const sink = { emit: (e: AgentEvent): void => void log.push(e.event_type) };
      const { AgentRuntimeBuilder } = await import('../../src/runtime/agent-runtime.ts');
      const built = new AgentRuntimeBuilder()
        .withEnv(h.env)
        .withProvider('scripted', h.llm)
        .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
        .withThreadRunStore(store)
        .withAgentSpec({ id: 'agent', model: 'm' })
        .withTool((await import('../support/runtime.ts')).echoTool)
        .build();
      if (!built.ok) throw new Error('build');
      const running = built.value.run({ messages: [Messages.user('go')] }, sink);
      if ('release' in store) {
        const timer = setInterval(() => store.release(), 1);
        try {
          const r = await running;
          expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
        } finally {
          clearInterval(timer);
        }
        // Each step's checkpoint is written before its state snapshot and its step_end.
        const firstEnd = log.indexOf('step_end');
        // (The last with one step: the ones before it are the tool call's durable phases.)
        const firstStepCheckpoint = log.lastIndexOf('checkpoint 1');
        expect(firstStepCheckpoint).toBeGreaterThan(-1);
        expect(firstStepCheckpoint).toBeLessThan(firstEnd);
      } else {
        const r = await running;
        expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
        // Run start; the batch begun, its call running, its call settled; step ends; run end.
        expect(store.checkpoints.map((c) => c.steps)).toEqual([0, 1, 1, 1, 1, 2, 2]);
      }
    }
  });
});
