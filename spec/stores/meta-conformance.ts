import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import type { Store } from '../../src/runtime/store.ts';
import type { RunCheckpoint } from '../../src/runtime/thread-run-store.ts';

/**
 * What every store keeps beyond the first conformance suite (spec/support/store-conformance.ts): a
 * run's totals and parent, and a thread's metadata. Each store spec runs it with its own factory.
 */
export interface MetaStoreFactory {
  readonly open: () => Promise<Store>;
  /** The same data through a new store object (a restart); absent for a store that cannot outlive its object. */
  readonly reopen?: (old: Store) => Promise<Store>;
}

const checkpoint = (fields: Partial<RunCheckpoint> & Pick<RunCheckpoint, 'threadId' | 'runId'>): RunCheckpoint => ({
  agentId: 'agent',
  messages: [],
  status: 'running',
  steps: 1,
  threadState: { revision: 1, extensions: {} },
  runState: { revision: 1, extensions: {} },
  updatedAt: 1000,
  ...fields,
});

export function metaConformance(name: string, factory: MetaStoreFactory): void {
  describe(`run totals and thread metadata: ${name}`, () => {
    let store: Store;
    const opened: Store[] = [];
    beforeEach(async () => {
      store = await factory.open();
      opened.push(store);
    });
    afterAll(async () => {
      for (const s of opened) await s.close().catch(() => undefined);
    });

    it("adds each checkpoint's tokens to the run's totals, over a suspension and a take-up by another writer; keeps the first parent named", async () => {
      const user = Messages.user('hi', { id: 'u1' });
      await store.checkpoint(checkpoint({ threadId: 'th', runId: 'child', parentRunId: 'parent-1', messages: [user], updatedAt: 10 }));
      expect(await store.getRun('child')).toEqual({
        run_id: 'child',
        thread_id: 'th',
        agent_id: 'agent',
        status: 'running',
        steps: 1,
        created_at: 10,
        updated_at: 10,
        parent_run_id: 'parent-1',
      });
      await store.checkpoint(
        checkpoint({
          threadId: 'th',
          runId: 'child',
          parentRunId: 'parent-1',
          messages: [user],
          tokens: { input: 120, output: 30 },
          updatedAt: 11,
          expectedMessageCount: 1,
        }),
      );
      await store.checkpoint(
        checkpoint({
          threadId: 'th',
          runId: 'child',
          messages: [user],
          status: 'waiting',
          termination: { type: 'suspended' },
          tokens: { input: 80, output: 5 },
          updatedAt: 12,
          expectedMessageCount: 1,
        }),
      );
      expect(await store.getRun('child')).toMatchObject({ status: 'waiting', input_tokens: 200, output_tokens: 35, parent_run_id: 'parent-1' });
      // Taken up after a restart: the new writer reports only its own inferences.
      const later = factory.reopen === undefined ? store : await factory.reopen(store);
      if (later !== store) opened.push(later);
      await later.checkpoint(
        checkpoint({
          threadId: 'th',
          runId: 'child',
          parentRunId: 'someone-else',
          messages: [user],
          status: 'running',
          tokens: { input: 0, output: 0 },
          updatedAt: 13,
          expectedMessageCount: 1,
        }),
      );
      await later.checkpoint(
        checkpoint({
          threadId: 'th',
          runId: 'child',
          messages: [user],
          status: 'done',
          termination: { type: 'stopped', value: { code: 'max_rounds' } },
          steps: 3,
          tokens: { input: 50, output: 15 },
          updatedAt: 14,
          expectedMessageCount: 1,
        }),
      );
      expect(await later.getRun('child')).toEqual({
        run_id: 'child',
        thread_id: 'th',
        agent_id: 'agent',
        status: 'done',
        termination: { type: 'stopped', value: { code: 'max_rounds' } },
        steps: 3,
        created_at: 10,
        updated_at: 14,
        parent_run_id: 'parent-1',
        input_tokens: 250,
        output_tokens: 50,
      });
      expect((await later.listRuns({ offset: 0, limit: 5, threadId: 'th' })).items[0]).toMatchObject({
        input_tokens: 250,
        output_tokens: 50,
        parent_run_id: 'parent-1',
      });
    });

    it('a run without tokens reported has no totals; a finish outside a checkpoint keeps the totals and the parent', async () => {
      await store.checkpoint(checkpoint({ threadId: 'th', runId: 'quiet', updatedAt: 5 }));
      const quiet = await store.getRun('quiet');
      expect(quiet).not.toHaveProperty('input_tokens');
      expect(quiet).not.toHaveProperty('parent_run_id');
      await store.checkpoint(checkpoint({ threadId: 'th2', runId: 'r', parentRunId: 'p', tokens: { input: 7, output: 3 }, updatedAt: 6 }));
      expect(await store.finishRun('r', { type: 'error', value: 'interrupted' }, 9)).toBe(true);
      expect(await store.getRun('r')).toMatchObject({ status: 'done', parent_run_id: 'p', input_tokens: 7, output_tokens: 3, updated_at: 9 });
    });

    it('creates a thread with its metadata and reads it back; a thread without any has none', async () => {
      const custom = { tags: ['a', 'ü'], nested: { n: 1.5, ok: true, none: null } };
      const created = await store.createThread({ id: 'child', title: 'T', resource_id: 'user-7', parent_thread_id: 'root', custom, now: 10 });
      const expected = { id: 'child', title: 'T', resource_id: 'user-7', parent_thread_id: 'root', custom, created_at: 10, updated_at: 10 };
      expect(created).toEqual(expected);
      expect(await store.getThread('child')).toEqual(expected);
      expect((await store.listThreads({ offset: 0, limit: 5 })).items).toEqual([expected]);
      await store.createThread({ id: 'plain', now: 11 });
      expect(await store.getThread('plain')).toEqual({ id: 'plain', created_at: 11, updated_at: 11 });
    });

    it('patches a thread: a field given replaces, null clears, a field left out stays; updated_at moves; a checkpoint keeps the metadata', async () => {
      await store.createThread({ id: 't', title: 'old', resource_id: 'r1', parent_thread_id: 'p1', custom: { a: 1 }, now: 10 });
      expect(await store.updateThread('t', { custom: { b: [2] } }, 20)).toEqual({
        id: 't',
        title: 'old',
        resource_id: 'r1',
        parent_thread_id: 'p1',
        custom: { b: [2] },
        created_at: 10,
        updated_at: 20,
      });
      expect(await store.updateThread('t', { title: 'new', resource_id: null, parent_thread_id: 'p2' }, 30)).toEqual({
        id: 't',
        title: 'new',
        parent_thread_id: 'p2',
        custom: { b: [2] },
        created_at: 10,
        updated_at: 30,
      });
      expect(await store.updateThread('t', { parent_thread_id: null }, 40)).toEqual({
        id: 't',
        title: 'new',
        custom: { b: [2] },
        created_at: 10,
        updated_at: 40,
      });
      await store.checkpoint(checkpoint({ threadId: 't', runId: 'r', updatedAt: 50 }));
      expect(await store.getThread('t')).toEqual({ id: 't', title: 'new', custom: { b: [2] }, created_at: 10, updated_at: 50, latest_run_id: 'r' });
      expect(await store.updateThread('missing', { title: 'x' }, 60)).toBeUndefined();
      expect(await store.getThread('missing')).toBeUndefined();
      if (factory.reopen !== undefined) {
        const again = await factory.reopen(store);
        opened.push(again);
        expect(await again.getThread('t')).toEqual({ id: 't', title: 'new', custom: { b: [2] }, created_at: 10, updated_at: 50, latest_run_id: 'r' });
      }
    });
  });
}
