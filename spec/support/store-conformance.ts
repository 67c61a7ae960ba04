import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { Messages, type Message } from '../../src/contract/message.ts';
import type { RunCheckpoint } from '../../src/runtime/thread-run-store.ts';
import { StoreFailure, type Store, type StoreError } from '../../src/runtime/store.ts';

export interface StoreFactory {
  /** A fresh, empty store. */
  readonly open: () => Promise<Store>;
  /** The same data through a new store object (a restart); absent for stores that cannot outlive their object. */
  readonly reopen?: (old: Store) => Promise<Store>;
}

const checkpoint = (fields: Partial<RunCheckpoint> & Pick<RunCheckpoint, 'threadId' | 'runId' | 'messages'>): RunCheckpoint => ({
  agentId: 'agent',
  status: 'running',
  steps: 1,
  threadState: { revision: 1, extensions: { 'x.thread': { n: 1 } } },
  runState: { revision: 1, extensions: {} },
  updatedAt: 1000,
  ...fields,
});

async function refusal(p: Promise<unknown>): Promise<StoreError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof StoreFailure) return e.error;
    throw e;
  }
  throw new Error('expected a StoreFailure');
}

const conversation: Message[] = [
  Messages.user('héllo 😀', { id: 'm1' }),
  Messages.assistantWithToolCalls('', [{ id: 'c1', name: 'echo', arguments: { z: 1, a: [true, null, 'x'], nested: { b: 2, a: 1 } } }], { id: 'm2' }),
  Messages.tool('c1', '{"echoed":"x"}', { id: 'm3' }),
  Messages.internalSystem('<conversation-summary>\nsummary\n</conversation-summary>', { id: 'm4' }),
  Messages.assistant('done', { id: 'm5' }),
];

/** The one store conformance suite: every store implementation runs it. */
export function storeConformance(name: string, factory: StoreFactory): void {
  describe(`store conformance: ${name}`, () => {
    let store: Store;
    const opened: Store[] = [];
    beforeEach(async () => {
      store = await factory.open();
      opened.push(store);
    });
    afterAll(async () => {
      for (const s of opened) await s.close().catch(() => undefined);
    });

    it('creates, reads and lists threads, newest first, with pagination', async () => {
      await store.createThread({ id: 't1', title: 'first', now: 10 });
      await store.createThread({ id: 't2', now: 20 });
      await store.createThread({ id: 't3', now: 20 });
      expect(await store.getThread('t1')).toEqual({ id: 't1', title: 'first', created_at: 10, updated_at: 10 });
      expect(await store.getThread('nope')).toBeUndefined();
      const page = await store.listThreads({ offset: 0, limit: 2 });
      expect(page.total).toBe(3);
      expect(page.items.map((t) => t.id)).toEqual(['t2', 't3']);
      expect((await store.listThreads({ offset: 2, limit: 2 })).items.map((t) => t.id)).toEqual(['t1']);
    });

    it('refuses a duplicate thread and ids that could escape a path or key', async () => {
      await store.createThread({ id: 'dup', now: 1 });
      expect((await refusal(store.createThread({ id: 'dup', now: 2 }))).code).toBe('already_exists');
      for (const bad of ['', '../x', 'a/b', 'a\\b', '.hidden', 'x'.repeat(201), 'nul\u0000', 'sp ace']) {
        expect((await refusal(store.createThread({ id: bad, now: 1 }))).code).toBe('validation');
        expect((await refusal(store.checkpoint(checkpoint({ threadId: bad, runId: 'r', messages: [] })))).code).toBe('validation');
      }
      expect(await store.getThread('../x')).toBeUndefined();
    });

    it('a checkpoint writes messages, thread state and the run record together, exactly', async () => {
      await store.checkpoint(checkpoint({ threadId: 'th', runId: 'r1', messages: conversation, status: 'done', termination: { type: 'natural_end' }, steps: 2, updatedAt: 50 }));
      const loaded = await store.loadThread('th');
      expect(loaded?.messages).toEqual(conversation);
      expect(loaded?.messages.map((m) => JSON.stringify(m))).toEqual(conversation.map((m) => JSON.stringify(m)));
      expect(loaded?.threadState).toEqual({ revision: 1, extensions: { 'x.thread': { n: 1 } } });
      expect(await store.getRun('r1')).toEqual({ run_id: 'r1', thread_id: 'th', agent_id: 'agent', status: 'done', termination: { type: 'natural_end' }, steps: 2, created_at: 50, updated_at: 50 });
      expect((await store.getThread('th'))?.latest_run_id).toBe('r1');
      expect(await store.loadThread('other')).toBeUndefined();
    });

    it('keeps a run’s creation time and updates the rest', async () => {
      await store.checkpoint(checkpoint({ threadId: 'th', runId: 'r1', messages: conversation.slice(0, 1), updatedAt: 10 }));
      await store.checkpoint(checkpoint({ threadId: 'th', runId: 'r1', messages: conversation, status: 'waiting', termination: { type: 'suspended' }, updatedAt: 30, expectedMessageCount: 1 }));
      expect(await store.getRun('r1')).toMatchObject({ created_at: 10, updated_at: 30, status: 'waiting', termination: { type: 'suspended' } });
    });

    it('refuses a checkpoint whose expected message count is stale, and changes nothing', async () => {
      await store.checkpoint(checkpoint({ threadId: 'th', runId: 'r1', messages: conversation.slice(0, 2), expectedMessageCount: 0 }));
      const conflict = await refusal(store.checkpoint(checkpoint({ threadId: 'th', runId: 'r2', messages: conversation, expectedMessageCount: 0 })));
      expect(conflict).toMatchObject({ code: 'version_conflict', expected: 0, actual: 2 });
      expect((await store.loadThread('th'))?.messages).toEqual(conversation.slice(0, 2));
      expect(await store.getRun('r2')).toBeUndefined();
      await store.checkpoint(checkpoint({ threadId: 'th', runId: 'r2', messages: conversation, expectedMessageCount: 2 }));
      expect((await store.loadThread('th'))?.messages).toHaveLength(conversation.length);
    });

    it('of two writers racing from the same count, exactly one wins', async () => {
      await store.checkpoint(checkpoint({ threadId: 'race', runId: 'r0', messages: conversation.slice(0, 1) }));
      const results = await Promise.allSettled(
        ['a', 'b', 'c', 'd'].map((w) => store.checkpoint(checkpoint({ threadId: 'race', runId: `r-${w}`, messages: [...conversation.slice(0, 1), Messages.user(w)], expectedMessageCount: 1 }))),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of results) if (r.status === 'rejected') expect((r.reason as StoreFailure).error.code).toBe('version_conflict');
    });

    it('pages messages, leaving internal ones out unless asked', async () => {
      await store.checkpoint(checkpoint({ threadId: 'th', runId: 'r1', messages: conversation }));
      const external = await store.listMessages('th', { offset: 0, limit: 10 });
      expect(external.total).toBe(4);
      expect(external.items.map((m) => m.id)).toEqual(['m1', 'm2', 'm3', 'm5']);
      expect((await store.listMessages('th', { offset: 1, limit: 2, visibility: 'all' })).items.map((m) => m.id)).toEqual(['m2', 'm3']);
      expect((await refusal(store.listMessages('ghost', { offset: 0, limit: 10 }))).code).toBe('not_found');
    });

    it('lists runs by status and thread, newest first', async () => {
      await store.checkpoint(checkpoint({ threadId: 'a', runId: 'ra1', messages: [], status: 'done', updatedAt: 1 }));
      await store.checkpoint(checkpoint({ threadId: 'a', runId: 'ra2', messages: [], status: 'running', updatedAt: 2 }));
      await store.checkpoint(checkpoint({ threadId: 'b', runId: 'rb1', messages: [], status: 'done', updatedAt: 3 }));
      expect((await store.listRuns({ offset: 0, limit: 10 })).items.map((r) => r.run_id)).toEqual(['rb1', 'ra2', 'ra1']);
      expect((await store.listRuns({ offset: 0, limit: 10, status: 'done' })).items.map((r) => r.run_id)).toEqual(['rb1', 'ra1']);
      const byThread = await store.listRuns({ offset: 0, limit: 1, threadId: 'a' });
      expect(byThread).toMatchObject({ total: 2, items: [{ run_id: 'ra2' }] });
    });

    it('finishes a run record outside a checkpoint', async () => {
      await store.checkpoint(checkpoint({ threadId: 'th', runId: 'r1', messages: conversation, status: 'running', updatedAt: 5 }));
      expect(await store.finishRun('r1', { type: 'error', value: 'interrupted' }, 9)).toBe(true);
      expect(await store.getRun('r1')).toMatchObject({ status: 'done', termination: { type: 'error', value: 'interrupted' }, created_at: 5, updated_at: 9 });
      expect(await store.finishRun('ghost', { type: 'cancelled' }, 9)).toBe(false);
      expect((await store.loadThread('th'))?.messages).toEqual(conversation);
    });

    it('deletes a thread with its messages and runs', async () => {
      await store.checkpoint(checkpoint({ threadId: 'gone', runId: 'rg', messages: conversation }));
      await store.checkpoint(checkpoint({ threadId: 'kept', runId: 'rk', messages: conversation }));
      expect(await store.deleteThread('gone')).toBe(true);
      expect(await store.deleteThread('gone')).toBe(false);
      expect(await store.getThread('gone')).toBeUndefined();
      expect(await store.loadThread('gone')).toBeUndefined();
      expect(await store.getRun('rg')).toBeUndefined();
      expect(await store.getRun('rk')).toBeDefined();
    });

    it('reads and writes profile documents', async () => {
      expect(await store.read('agent', 'deferred_tools.agent_priors')).toBeUndefined();
      await store.write('agent', 'deferred_tools.agent_priors', { tools: { a: 0.5 }, session_count: 1 });
      await store.write('agent', 'deferred_tools.agent_priors', { tools: { a: 0.25 }, session_count: 2 });
      expect(await store.read('agent', 'deferred_tools.agent_priors')).toEqual({ tools: { a: 0.25 }, session_count: 2 });
      expect(await store.read('other', 'deferred_tools.agent_priors')).toBeUndefined();
    });

    if (factory.reopen !== undefined) {
      const reopen = factory.reopen;
      it('keeps everything across a restart', async () => {
        await store.createThread({ id: 'keep', title: 't', now: 5 });
        await store.checkpoint(checkpoint({ threadId: 'keep', runId: 'rk', messages: conversation, status: 'done' }));
        await store.write('agent', 'k', [1, 2]);
        const again = await reopen(store);
        opened.push(again);
        expect((await again.loadThread('keep'))?.messages).toEqual(conversation);
        expect((await again.getThread('keep'))?.title).toBe('t');
        expect((await again.getRun('rk'))?.status).toBe('done');
        expect(await again.read('agent', 'k')).toEqual([1, 2]);
      });
    }
  });
}
