// Over 500 lines: the one conformance suite every store runs, whole in one place so no store skips a part.
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { Messages, type Message } from '../../src/contract/message.ts';
import type { RunCheckpoint } from '../../src/runtime/thread-run-store.ts';
import { StoreFailure, type PageQuery, type Store, type StoreError, type ThreadQuery } from '../../src/runtime/store.ts';

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

    it('lists the threads after a keyset (updated_at, then id by character codes), counting only those', async () => {
      for (const [id, now] of [
        ['t1', 10],
        ['t2', 20],
        ['t3', 20],
        ['B-4', 20],
        ['a-5', 20],
        ['t6', 30],
      ] as const)
        await store.createThread({ id, now });
      const listedAfter = async (updated_at: number, id: string, offset = 0, limit = 10) => {
        const page = await store.listThreads({ offset, limit, after: { updated_at, id } });
        return { ids: page.items.map((t) => t.id), total: page.total };
      };
      expect((await store.listThreads({ offset: 0, limit: 10 })).items.map((t) => t.id)).toEqual(['t6', 'B-4', 'a-5', 't2', 't3', 't1']);
      expect(await listedAfter(30, 't6')).toEqual({ ids: ['B-4', 'a-5', 't2', 't3', 't1'], total: 5 });
      expect(await listedAfter(20, 'B-4')).toEqual({ ids: ['a-5', 't2', 't3', 't1'], total: 4 });
      expect(await listedAfter(20, 't2', 0, 1)).toEqual({ ids: ['t3'], total: 2 });
      expect(await listedAfter(20, 't2', 1, 1)).toEqual({ ids: ['t1'], total: 2 });
      // A key no thread has (one deleted since) names the same place.
      expect(await listedAfter(20, 't25')).toEqual({ ids: ['t3', 't1'], total: 2 });
      expect(await listedAfter(25, 'zz')).toEqual({ ids: ['B-4', 'a-5', 't2', 't3', 't1'], total: 5 });
      expect(await listedAfter(10, 't1')).toEqual({ ids: [], total: 0 });
      await store.claimThread('t3', 'alice');
      await store.claimThread('t6', 'alice');
      expect((await store.listThreads({ offset: 0, limit: 10, owner: 'alice', after: { updated_at: 30, id: 't6' } })).items.map((t) => t.id)).toEqual(['t3']);
    });

    it('searches threads: a substring of the id, the title or a run id in any case; a run of an agent, a status, an error; an owner; paged after the search', async () => {
      await store.createThread({ id: 'Alpha-1', title: 'Quarterly Ünïcode Report', now: 10 });
      await store.createThread({ id: 'beta-2', title: '100% done_ok', now: 20 });
      await store.createThread({ id: 'gamma-3', now: 30 });
      await store.checkpoint(
        checkpoint({
          threadId: 'gamma-3',
          runId: 'Run-XYZ',
          agentId: 'writer',
          messages: [],
          status: 'done',
          termination: { type: 'error', value: 'boom' },
          updatedAt: 40,
        }),
      );
      await store.checkpoint(
        checkpoint({
          threadId: 'beta-2',
          runId: 'run-b1',
          agentId: 'writer',
          messages: [],
          status: 'done',
          termination: { type: 'natural_end' },
          updatedAt: 25,
        }),
      );
      await store.checkpoint(checkpoint({ threadId: 'beta-2', runId: 'run-b2', agentId: 'critic', messages: [], status: 'waiting', updatedAt: 26 }));
      await store.claimThread('Alpha-1', 'alice');
      await store.claimThread('beta-2', 'alice');
      await store.claimThread('gamma-3', 'bob');
      const ids = async (q: Omit<ThreadQuery, 'offset' | 'limit'>, page: PageQuery = { offset: 0, limit: 10 }) => {
        const found = await store.listThreads({ ...q, ...page });
        return { ids: found.items.map((t) => t.id), total: found.total };
      };
      const all = await ids({});
      expect(all.ids).toEqual(['gamma-3', 'beta-2', 'Alpha-1']);
      // The id, the title (folded beyond ASCII too) or a run's id; `%` and `_` are only themselves.
      expect(await ids({ text: 'ALPHA' })).toEqual({ ids: ['Alpha-1'], total: 1 });
      expect(await ids({ text: 'ünïcode rep' })).toEqual({ ids: ['Alpha-1'], total: 1 });
      expect(await ids({ text: 'xyz' })).toEqual({ ids: ['gamma-3'], total: 1 });
      expect(await ids({ text: 'RUN-B2' })).toEqual({ ids: ['beta-2'], total: 1 });
      expect(await ids({ text: '100%' })).toEqual({ ids: ['beta-2'], total: 1 });
      expect(await ids({ text: '0%' })).toEqual({ ids: ['beta-2'], total: 1 });
      expect(await ids({ text: '%' })).toEqual({ ids: ['beta-2'], total: 1 });
      expect(await ids({ text: 'e_o' })).toEqual({ ids: ['beta-2'], total: 1 });
      expect(await ids({ text: 'a_1' })).toEqual({ ids: [], total: 0 });
      expect(await ids({ text: 'nothing' })).toEqual({ ids: [], total: 0 });
      // A run that is all of the filters at once.
      expect(await ids({ run: { agentId: 'writer' } })).toEqual({ ids: ['gamma-3', 'beta-2'], total: 2 });
      expect(await ids({ run: { status: 'waiting' } })).toEqual({ ids: ['beta-2'], total: 1 });
      expect(await ids({ run: { failed: true } })).toEqual({ ids: ['gamma-3'], total: 1 });
      expect(await ids({ run: { agentId: 'critic', status: 'done' } })).toEqual({ ids: [], total: 0 });
      expect(await ids({ run: { agentId: 'writer', failed: true } })).toEqual({ ids: ['gamma-3'], total: 1 });
      expect(await ids({ run: { failed: false } })).toEqual(all);
      // An owner's threads only; paged after the search.
      expect(await ids({ owner: 'alice' })).toEqual({ ids: ['beta-2', 'Alpha-1'], total: 2 });
      expect(await ids({ owner: 'alice', text: 'run' })).toEqual({ ids: ['beta-2'], total: 1 });
      expect(await ids({ owner: 'bob', run: { agentId: 'critic' } })).toEqual({ ids: [], total: 0 });
      expect(await ids({ owner: 'carol' })).toEqual({ ids: [], total: 0 });
      expect(await ids({ text: 'a' }, { offset: 1, limit: 1 })).toEqual({ ids: ['beta-2'], total: 3 });
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
      await store.checkpoint(
        checkpoint({ threadId: 'th', runId: 'r1', messages: conversation, status: 'done', termination: { type: 'natural_end' }, steps: 2, updatedAt: 50 }),
      );
      const loaded = await store.loadThread('th');
      expect(loaded?.messages).toEqual(conversation);
      expect(loaded?.messages.map((m) => JSON.stringify(m))).toEqual(conversation.map((m) => JSON.stringify(m)));
      expect(loaded?.threadState).toEqual({ revision: 1, extensions: { 'x.thread': { n: 1 } } });
      expect(await store.getRun('r1')).toEqual({
        run_id: 'r1',
        thread_id: 'th',
        agent_id: 'agent',
        status: 'done',
        termination: { type: 'natural_end' },
        steps: 2,
        created_at: 50,
        updated_at: 50,
      });
      expect((await store.getThread('th'))?.latest_run_id).toBe('r1');
      expect(await store.loadThread('other')).toBeUndefined();
    });

    it('keeps a run’s creation time and updates the rest', async () => {
      await store.checkpoint(checkpoint({ threadId: 'th', runId: 'r1', messages: conversation.slice(0, 1), updatedAt: 10 }));
      await store.checkpoint(
        checkpoint({
          threadId: 'th',
          runId: 'r1',
          messages: conversation,
          status: 'waiting',
          termination: { type: 'suspended' },
          updatedAt: 30,
          expectedMessageCount: 1,
        }),
      );
      expect(await store.getRun('r1')).toMatchObject({ created_at: 10, updated_at: 30, status: 'waiting', termination: { type: 'suspended' } });
    });

    it('a checkpoint that inserts a message in the middle (a summary) stores the new order exactly', async () => {
      await store.checkpoint(checkpoint({ threadId: 'ins', runId: 'r1', messages: conversation.slice(0, 3) }));
      await store.checkpoint(checkpoint({ threadId: 'ins', runId: 'r1', messages: conversation, expectedMessageCount: 3 }));
      const summary = Messages.internalSystem('<conversation-summary>\nS\n</conversation-summary>', { id: 'sum' });
      const inserted = [...conversation.slice(0, 2), summary, ...conversation.slice(2)];
      await store.checkpoint(checkpoint({ threadId: 'ins', runId: 'r1', messages: inserted, expectedMessageCount: conversation.length }));
      expect((await store.loadThread('ins'))?.messages).toEqual(inserted);
      const noIds = [Messages.user('a'), Messages.user('b')];
      await store.checkpoint(checkpoint({ threadId: 'anon', runId: 'r2', messages: noIds.slice(0, 1) }));
      await store.checkpoint(checkpoint({ threadId: 'anon', runId: 'r2', messages: noIds, expectedMessageCount: 1 }));
      expect((await store.loadThread('anon'))?.messages).toEqual(noIds);
      expect((await store.listMessages('ins', { offset: 0, limit: 50, visibility: 'all' })).total).toBe(inserted.length);
    });

    it('a checkpoint after a rewind (a regenerated answer) replaces the later messages exactly', async () => {
      await store.checkpoint(checkpoint({ threadId: 'rew', runId: 'r1', messages: conversation }));
      const regenerated = [conversation[0] as Message, Messages.assistant('again', { id: 'm9' })];
      await store.checkpoint(checkpoint({ threadId: 'rew', runId: 'r2', messages: regenerated, expectedMessageCount: conversation.length }));
      expect((await store.loadThread('rew'))?.messages).toEqual(regenerated);
      expect((await store.listMessages('rew', { offset: 0, limit: 50, visibility: 'all' })).total).toBe(2);
    });
    it('a checkpoint with appendFrom writes only the messages after it: the ones before stay as stored, the ones after are replaced', async () => {
      await store.checkpoint(checkpoint({ threadId: 'app', runId: 'r1', messages: conversation.slice(0, 3) }));
      // The writer vouches for its first 3 messages: the store writes the tail only (what it is sent
      // for the first 3 is not read).
      const vouched = [
        Messages.user('not read', { id: 'x1' }),
        Messages.user('not read', { id: 'x2' }),
        Messages.user('not read', { id: 'x3' }),
        ...conversation.slice(3),
      ];
      await store.checkpoint(checkpoint({ threadId: 'app', runId: 'r1', messages: vouched, appendFrom: 3, expectedMessageCount: 3 }));
      expect((await store.loadThread('app'))?.messages).toEqual(conversation);
      // A rewound writer keeps the first message and replaces everything after it.
      const regenerated = [conversation[0] as Message, Messages.assistant('again', { id: 'm9' })];
      await store.checkpoint(checkpoint({ threadId: 'app', runId: 'r2', messages: regenerated, appendFrom: 1, expectedMessageCount: conversation.length }));
      expect((await store.loadThread('app'))?.messages).toEqual(regenerated);
      expect((await store.listMessages('app', { offset: 0, limit: 50, visibility: 'all' })).total).toBe(2);
      // An appendFrom past what the store holds is not trusted: the messages are compared as before.
      await store.checkpoint(checkpoint({ threadId: 'app', runId: 'r2', messages: conversation, appendFrom: 9, expectedMessageCount: 2 }));
      expect((await store.loadThread('app'))?.messages).toEqual(conversation);
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

    it('refuses a checkpoint of a run already ended (by another instance: its lease swept), and changes nothing', async () => {
      await store.checkpoint(checkpoint({ threadId: 'fence', runId: 'cut', messages: conversation.slice(0, 1) }));
      expect(await store.finishRun('cut', { type: 'error', value: 'interrupted' }, 5)).toBe(true);
      const refused = await refusal(store.checkpoint(checkpoint({ threadId: 'fence', runId: 'cut', messages: conversation, expectedMessageCount: 1 })));
      expect(refused).toMatchObject({ code: 'run_ended' });
      expect((await store.loadThread('fence'))?.messages).toEqual(conversation.slice(0, 1));
      expect(await store.getRun('cut')).toMatchObject({ status: 'done', termination: { type: 'error', value: 'interrupted' } });
      // The thread goes on under another run.
      await store.checkpoint(checkpoint({ threadId: 'fence', runId: 'next', messages: conversation, expectedMessageCount: 1 }));
      expect((await store.loadThread('fence'))?.messages).toEqual(conversation);
    });

    it('of two writers racing from the same count, exactly one wins', async () => {
      await store.checkpoint(checkpoint({ threadId: 'race', runId: 'r0', messages: conversation.slice(0, 1) }));
      const results = await Promise.allSettled(
        ['a', 'b', 'c', 'd'].map((w) =>
          store.checkpoint(
            checkpoint({ threadId: 'race', runId: `r-${w}`, messages: [...conversation.slice(0, 1), Messages.user(w)], expectedMessageCount: 1 }),
          ),
        ),
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

    it('keeps the run-scoped state of an unfinished run (a waiting run revived elsewhere reads it), not of a finished one', async () => {
      const runState = { revision: 7, extensions: { '__runtime.run_lifecycle': { status: 'waiting', step_count: 2 }, 'x.émoji': '😀' } };
      await store.checkpoint(checkpoint({ threadId: 'tw', runId: 'rw', messages: conversation, status: 'waiting', runState }));
      expect(await store.loadRunState('rw')).toEqual(runState);
      expect(await store.getRun('rw')).not.toHaveProperty('state');
      expect((await store.listRuns({ offset: 0, limit: 5, threadId: 'tw' })).items[0]).not.toHaveProperty('state');
      let s = store;
      if (factory.reopen !== undefined) {
        // After a restart (the old store object is closed): the state is read back from disk.
        s = await factory.reopen(store);
        opened.push(s);
        expect(await s.loadRunState('rw')).toEqual(runState);
      }
      expect(await s.loadRunState('ghost')).toBeUndefined();
      expect(await s.loadRunState('../x')).toBeUndefined();
      await s.checkpoint(checkpoint({ threadId: 'tw', runId: 'rw', messages: conversation, status: 'done', runState, termination: { type: 'natural_end' } }));
      expect(await s.loadRunState('rw')).toBeUndefined();
      await s.checkpoint(checkpoint({ threadId: 'tw', runId: 'rx', messages: conversation, status: 'waiting', runState }));
      await s.finishRun('rx', { type: 'cancelled' }, 9);
      expect(await s.loadRunState('rx')).toBeUndefined();
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

    describe('mailbox', () => {
      const cfg = { default_retry_delay_ms: 250, max_retry_delay_ms: 30_000 };
      const job = (id: string, fields: Record<string, unknown> = {}) => ({
        job_id: id,
        mailbox_id: 'mb',
        agent_id: 'agent',
        messages: [Messages.user(id)],
        origin: 'user' as const,
        ...fields,
      });

      it('enqueues durably with defaults, refusing a duplicate id and a live duplicate dedupe key', async () => {
        const j = await store.enqueue(job('j1', { dedupe_key: 'k' }), 100);
        expect(j).toMatchObject({ status: 'queued', priority: 128, generation: 0, attempt_count: 0, max_attempts: 5, available_at: 100, created_at: 100 });
        expect(await store.loadJob('j1')).toEqual(j);
        expect((await refusal(store.enqueue(job('j1'), 101))).code).toBe('already_exists');
        expect((await refusal(store.enqueue(job('j2', { dedupe_key: 'k' }), 101))).code).toBe('already_exists');
        await store.enqueue(job('j3', { dedupe_key: 'k', mailbox_id: 'other' }), 101);
        const c = await store.claim('w', 'tok', 1000, 200, 10);
        for (const x of c) await store.ack(x.job_id, 'tok', 201);
        await store.enqueue(job('j4', { dedupe_key: 'k' }), 300);
        expect((await refusal(store.enqueue(job('bad', { priority: 300 }), 1))).code).toBe('validation');
        expect((await refusal(store.enqueue(job('../x'), 1))).code).toBe('validation');
      });

      it('claims in priority then age order, one claimed job per mailbox, only when available', async () => {
        await store.enqueue(job('late', { available_at: 500 }), 1);
        await store.enqueue(job('low', { priority: 200 }), 2);
        await store.enqueue(job('high', { priority: 0 }), 3);
        await store.enqueue(job('x1', { mailbox_id: 'mb2' }), 4);
        const first = await store.claim('w', 'T1', 1000, 10, 10);
        expect(first.map((j) => j.job_id).sort()).toEqual(['high', 'x1']);
        expect(first[0]).toMatchObject({ status: 'claimed', claim_token: 'T1', claimed_by: 'w', lease_until: 1010 });
        expect(await store.claim('w', 'T2', 1000, 20, 10)).toEqual([]);
        await store.ack('high', 'T1', 30);
        expect((await store.claim('w', 'T3', 1000, 40, 10)).map((j) => j.job_id)).toEqual(['low']);
        await store.ack('low', 'T3', 41);
        expect(await store.claim('w', 'T4', 1000, 499, 10)).toEqual([]);
        expect((await store.claim('w', 'T5', 1000, 500, 10)).map((j) => j.job_id)).toEqual(['late']);
      });

      it('of concurrent claimers exactly one gets a job', async () => {
        await store.enqueue(job('only'), 1);
        const results = await Promise.all(['a', 'b', 'c', 'd'].map((w) => store.claim(w, `tok-${w}`, 1000, 10, 1)));
        expect(results.flat()).toHaveLength(1);
      });

      it('ack, nack and lease extension need the claim token; nack backs off, then dead-letters', async () => {
        await store.enqueue(job('n', { max_attempts: 3 }), 0);
        let [c] = await store.claim('w', 'A', 1000, 0, 1);
        expect((await refusal(store.ack('n', 'stale', 1))).code).toBe('version_conflict');
        expect(await store.extendLease('n', 'stale', 5000, 1)).toBe(false);
        expect(await store.extendLease('n', 'A', 5000, 1)).toBe(true);
        expect((await store.loadJob('n'))?.lease_until).toBe(5001);
        expect(await store.nack('n', 'A', 'first', false, 10, cfg)).toMatchObject({
          status: 'queued',
          attempt_count: 1,
          available_at: 260,
          last_error: 'first',
        });
        expect(await store.claim('w', 'B', 1000, 259, 1)).toEqual([]);
        [c] = await store.claim('w', 'B', 1000, 260, 1);
        expect(c?.job_id).toBe('n');
        expect(await store.nack('n', 'B', 'second', false, 270, cfg)).toMatchObject({ status: 'queued', attempt_count: 2, available_at: 770 });
        await store.claim('w', 'C', 1000, 800, 1);
        expect(await store.nack('n', 'C', 'third', false, 810, cfg)).toMatchObject({ status: 'dead_letter', attempt_count: 3, last_error: 'third' });
        expect((await refusal(store.ack('ghost', 'A', 1))).code).toBe('not_found');
      });

      it('cancels queued jobs only; interrupt bumps the generation, supersedes the queue and reports the claimed job', async () => {
        await store.enqueue(job('a'), 0);
        await store.enqueue(job('b'), 1);
        await store.enqueue(job('c'), 2);
        expect(await store.cancelJob('c', 3)).toMatchObject({ status: 'cancelled' });
        const [claimed] = await store.claim('w', 'T', 1000, 5, 1);
        expect(await store.cancelJob(claimed?.job_id ?? '', 6)).toBeUndefined();
        const r = await store.interrupt('mb', 7);
        expect(r).toMatchObject({ new_generation: 1, superseded_count: 1, active_job: { job_id: 'a', status: 'claimed' } });
        expect((await store.loadJob('b'))?.status).toBe('superseded');
        expect((await store.enqueue(job('d'), 8)).generation).toBe(1);
        expect((await store.listJobs('mb', { offset: 0, limit: 10 })).items.map((j) => [j.job_id, j.status])).toEqual([
          ['a', 'claimed'],
          ['b', 'superseded'],
          ['c', 'cancelled'],
          ['d', 'queued'],
        ]);
        expect((await store.listJobs('mb', { offset: 0, limit: 10, status: 'queued' })).total).toBe(1);
      });

      it('reclaims expired leases and purges old terminal jobs', async () => {
        await store.enqueue(job('e'), 0);
        await store.claim('w', 'T', 100, 0, 1);
        expect(await store.reclaimExpired(100, 10)).toEqual([]);
        const [back] = await store.reclaimExpired(101, 10);
        expect(back).toMatchObject({ job_id: 'e', status: 'queued', attempt_count: 1, available_at: 101 });
        expect(back?.claim_token).toBeUndefined();
        await store.claim('w2', 'U', 100, 200, 1);
        await store.ack('e', 'U', 300);
        expect(await store.purgeTerminal(300)).toBe(0);
        expect(await store.purgeTerminal(301)).toBe(1);
        expect(await store.loadJob('e')).toBeUndefined();
      });
    });

    it('thread owners: the first claim wins, later claims return it; listed per principal; dropped with the thread', async () => {
      expect(await store.threadOwner('o1')).toBeUndefined();
      expect(await store.claimThread('o1', 'alice')).toBe('alice');
      expect(await store.claimThread('o1', 'bob')).toBe('alice');
      const both = await Promise.all([store.claimThread('o2', 'bob'), store.claimThread('o2', 'carol')]);
      expect(both[0]).toBe(both[1]);
      await store.claimThread('o3', 'alice');
      expect(await store.ownedThreads('alice')).toEqual(['o1', 'o3']);
      await store.createThread({ id: 'o3', now: 1 });
      await store.deleteThread('o3');
      expect(await store.threadOwner('o3')).toBeUndefined();
      expect(await refusal(store.claimThread('../x', 'alice'))).toMatchObject({ code: 'validation' });
    });

    describe('thread leases', () => {
      const take = (threadId: string, runId: string, owner: string, now: number, steal = false) =>
        store.takeLease({ threadId, runId, owner, now, ttlMs: 100, steal });

      it('one run holds a thread until it releases it or its lease expires; the same run may take it again', async () => {
        expect(await take('t', 'r1', 'A', 1000)).toEqual({ ok: true });
        expect(await take('t', 'r1', 'A', 1010)).toEqual({ ok: true });
        const refused = await take('t', 'r2', 'B', 1050);
        expect(refused).toEqual({ ok: false, holder: { thread_id: 't', run_id: 'r1', owner: 'A', until: 1110, cancel_requested: false } });
        expect(await take('other', 'r3', 'B', 1050)).toEqual({ ok: true });
        await store.releaseLease('t', 'r2');
        expect((await store.getLease('t'))?.run_id).toBe('r1');
        await store.releaseLease('t', 'r1');
        expect(await store.getLease('t')).toBeUndefined();
        expect(await take('t', 'r2', 'B', 1060)).toEqual({ ok: true });
        // Expired, it is still held: its run must be ended (taken over) before the thread is taken.
        expect(await take('t', 'r4', 'A', 1200)).toMatchObject({ ok: false, holder: { run_id: 'r2', until: 1160 } });
        expect(await store.takeOverLease('t', 'r2', 'A', 1200, 100)).toBe(true);
        await store.releaseLease('t', 'r2');
        expect(await take('t', 'r4', 'A', 1200)).toEqual({ ok: true });
        expect((await store.getLease('t'))?.owner).toBe('A');
      });

      it("steal takes a live lease (supersede); renewal extends the owner's leases and leaves out the ones taken from it", async () => {
        await take('s1', 'r1', 'A', 0);
        await take('s2', 'r2', 'A', 0);
        await take('s3', 'r3', 'B', 0);
        expect(await take('s2', 'r9', 'B', 50, true)).toEqual({ ok: true });
        const renewed = await store.renewLeases('A', 60, 100);
        expect(renewed.map((l) => [l.thread_id, l.run_id, l.until])).toEqual([['s1', 'r1', 160]]);
        expect((await store.getLease('s3'))?.until).toBe(100);
      });

      it('an expired lease is listed and taken over by exactly one caller; cancel requests stick to the lease', async () => {
        await take('e1', 'r1', 'A', 0);
        await take('e2', 'r2', 'A', 500);
        expect((await store.expiredLeases(200, 10)).map((l) => l.run_id)).toEqual(['r1']);
        const wins = await Promise.all([store.takeOverLease('e1', 'r1', 'B', 200, 100), store.takeOverLease('e1', 'r1', 'C', 200, 100)]);
        expect(wins.filter((w) => w)).toHaveLength(1);
        expect(await store.takeOverLease('e2', 'r2', 'B', 200, 100)).toBe(false);
        expect(await store.requestCancel('r2')).toBe(true);
        expect(await store.requestCancel('nope')).toBe(false);
        expect((await store.renewLeases('A', 300, 100)).find((l) => l.run_id === 'r2')?.cancel_requested).toBe(true);
        expect(await store.clearLeases()).toBe(2);
        expect(await store.getLease('e2')).toBeUndefined();
      });
    });

    describe('fenced checkpoints', () => {
      const take = (threadId: string, runId: string, owner: string, now: number) => store.takeLease({ threadId, runId, owner, now, ttlMs: 100 });
      /** Everything a checkpoint could change of a thread and a run, as read back. */
      const snapshot = async (threadId: string, runId: string) => ({
        thread: await store.getThread(threadId),
        loaded: await store.loadThread(threadId),
        run: await store.getRun(runId),
        runState: await store.loadRunState(runId),
        runs: await store.listRuns({ offset: 0, limit: 10, threadId }),
      });
      /** A checkpoint that would change all of it: other messages, states, status, steps, time, digest, tokens. */
      const intruding = (threadId: string, runId: string, owner: string, fields: Partial<RunCheckpoint> = {}): RunCheckpoint =>
        checkpoint({
          threadId,
          runId,
          messages: conversation,
          status: 'waiting',
          steps: 7,
          threadState: { revision: 9, extensions: { 'x.thread': { n: 9 } } },
          runState: { revision: 9, extensions: { 'x.run': true } },
          updatedAt: 9000,
          agentDigest: 'intruder',
          tokens: { input: 5, output: 5 },
          fence: { owner },
          ...fields,
        });
      const setUp = async (threadId: string, runId: string): Promise<void> => {
        await store.checkpoint(
          checkpoint({ threadId, runId, messages: conversation.slice(0, 1), runState: { revision: 2, extensions: { 'x.run': 'before' } }, updatedAt: 10 }),
        );
      };

      it('is refused with fenced, changing nothing, when another owner holds the lease for the run (it took the run over)', async () => {
        const cases: [string, () => Promise<unknown>][] = [
          ['f-other-owner', () => take('f-other-owner', 'run', 'B', 1000)],
          ['f-taken-over', async () => (await take('f-taken-over', 'run', 'A', 1000), await store.takeOverLease('f-taken-over', 'run', 'B', 5000, 100))],
        ];
        for (const [threadId, lease] of cases) {
          await setUp(threadId, 'run');
          await lease();
          const before = await snapshot(threadId, 'run');
          const refused = await refusal(store.checkpoint(intruding(threadId, 'run', 'A', { expectedMessageCount: 1 })));
          expect([threadId, refused]).toEqual([threadId, { code: 'fenced', message: `run run: A does not hold the lease of thread ${threadId}` }]);
          expect([threadId, await snapshot(threadId, 'run')]).toEqual([threadId, before]);
        }
      });

      it('is written when no other owner holds the lease for the run: none, released, or taken for another run (a superseding start)', async () => {
        const cases: [string, (runId: string) => Promise<unknown>][] = [
          ['f-none', async () => undefined],
          ['f-other-run', () => take('f-other-run', 'elsewhere', 'B', 1000)],
          ['f-released', async (runId) => (await take('f-released', runId, 'A', 1000), await store.releaseLease('f-released', runId))],
          [
            'f-stolen',
            async (runId) => (
              await take('f-stolen', runId, 'A', 1000),
              await store.takeLease({ threadId: 'f-stolen', runId: 'r9', owner: 'B', now: 1010, ttlMs: 100, steal: true })
            ),
          ],
        ];
        for (const [threadId, lease] of cases) {
          const runId = `${threadId}-run`;
          await setUp(threadId, runId);
          await lease(runId);
          await store.checkpoint(intruding(threadId, runId, 'A', { expectedMessageCount: 1, status: 'done', termination: { type: 'cancelled' } }));
          expect([threadId, (await store.loadThread(threadId))?.messages, (await store.getRun(runId))?.termination]).toEqual([
            threadId,
            conversation,
            { type: 'cancelled' },
          ]);
        }
      });

      it("is written while its owner holds the thread's lease for the run, expired or not, until another owner takes the lease over", async () => {
        await take('f-held', 'run', 'A', 1000);
        await store.checkpoint(checkpoint({ threadId: 'f-held', runId: 'run', messages: conversation.slice(0, 1), fence: { owner: 'A' } }));
        expect((await store.loadThread('f-held'))?.messages).toEqual(conversation.slice(0, 1));
        // Expired (until 1100) but not taken over: expiry alone fences nothing.
        expect((await store.expiredLeases(5000, 10)).map((l) => l.run_id)).toEqual(['run']);
        await store.checkpoint(
          checkpoint({ threadId: 'f-held', runId: 'run', messages: conversation.slice(0, 2), expectedMessageCount: 1, fence: { owner: 'A' } }),
        );
        expect((await store.loadThread('f-held'))?.messages).toEqual(conversation.slice(0, 2));
        expect(await store.takeOverLease('f-held', 'run', 'B', 5000, 100)).toBe(true);
        const before = await snapshot('f-held', 'run');
        expect(await refusal(store.checkpoint(intruding('f-held', 'run', 'A', { expectedMessageCount: 2 })))).toEqual({
          code: 'fenced',
          message: 'run run: A does not hold the lease of thread f-held',
        });
        expect(await snapshot('f-held', 'run')).toEqual(before);
        // The new holder writes.
        await store.checkpoint(checkpoint({ threadId: 'f-held', runId: 'run', messages: conversation, expectedMessageCount: 2, fence: { owner: 'B' } }));
        expect((await store.loadThread('f-held'))?.messages).toEqual(conversation);
      });

      it('a writer without the lease learns it was fenced, not that the thread moved on; a run already ended says so first', async () => {
        await setUp('f-order', 'run');
        await take('f-order', 'run', 'B', 1000);
        // A stale count and no lease: fenced.
        expect(await refusal(store.checkpoint(intruding('f-order', 'run', 'A', { expectedMessageCount: 0 })))).toMatchObject({ code: 'fenced' });
        // The holder with a stale count: a version conflict.
        expect(await refusal(store.checkpoint(intruding('f-order', 'run', 'B', { expectedMessageCount: 0 })))).toMatchObject({
          code: 'version_conflict',
          expected: 0,
          actual: 1,
        });
        await store.finishRun('run', { type: 'error', value: 'interrupted' }, 20);
        expect(await refusal(store.checkpoint(intruding('f-order', 'run', 'A', { expectedMessageCount: 0 })))).toMatchObject({ code: 'run_ended' });
      });

      it('of two owners racing after a takeover, only the holder’s write lands', async () => {
        await take('f-race', 'run', 'A', 1000);
        await store.checkpoint(checkpoint({ threadId: 'f-race', runId: 'run', messages: conversation.slice(0, 1), fence: { owner: 'A' } }));
        expect(await store.takeOverLease('f-race', 'run', 'B', 2000, 100)).toBe(true);
        const writes = ['A', 'B', 'A', 'B'].map((owner, i) =>
          store.checkpoint(
            checkpoint({
              threadId: 'f-race',
              runId: 'run',
              messages: [...conversation.slice(0, 1), Messages.user(`${owner}${i}`, { id: `w${i}` })],
              steps: 10 + i,
              updatedAt: 3000 + i,
              fence: { owner },
            }),
          ),
        );
        const results = await Promise.allSettled(writes);
        expect(results.map((r) => (r.status === 'fulfilled' ? 'written' : (r.reason as StoreFailure).error.code))).toEqual([
          'fenced',
          'written',
          'fenced',
          'written',
        ]);
        const messages = (await store.loadThread('f-race'))?.messages ?? [];
        expect(messages.map((m) => m.id)).toHaveLength(2);
        expect(['w1', 'w3']).toContain(messages[1]?.id);
        const run = await store.getRun('run');
        expect([run?.steps, run?.updated_at]).toEqual(messages[1]?.id === 'w1' ? [11, 3001] : [13, 3003]);
      });
    });

    it('keeps the first agent digest named for a run, absent for a run that never named one, through getRun and listRuns', async () => {
      await store.checkpoint(checkpoint({ threadId: 'dg', runId: 'named', messages: [], agentDigest: 'sha256:first', updatedAt: 10 }));
      await store.checkpoint(checkpoint({ threadId: 'dg', runId: 'named', messages: [], agentDigest: 'sha256:second', updatedAt: 11 }));
      await store.checkpoint(checkpoint({ threadId: 'dg', runId: 'named', messages: [], status: 'done', termination: { type: 'natural_end' }, updatedAt: 12 }));
      await store.checkpoint(checkpoint({ threadId: 'dg', runId: 'late', messages: [], updatedAt: 20 }));
      await store.checkpoint(checkpoint({ threadId: 'dg', runId: 'late', messages: [], agentDigest: 'sha256:late', updatedAt: 21 }));
      await store.checkpoint(checkpoint({ threadId: 'dg', runId: 'never', messages: [], updatedAt: 30 }));
      const named = {
        run_id: 'named',
        thread_id: 'dg',
        agent_id: 'agent',
        status: 'done',
        termination: { type: 'natural_end' },
        steps: 1,
        created_at: 10,
        updated_at: 12,
        agent_digest: 'sha256:first',
      };
      const late = {
        run_id: 'late',
        thread_id: 'dg',
        agent_id: 'agent',
        status: 'running',
        steps: 1,
        created_at: 20,
        updated_at: 21,
        agent_digest: 'sha256:late',
      };
      const never = { run_id: 'never', thread_id: 'dg', agent_id: 'agent', status: 'running', steps: 1, created_at: 30, updated_at: 30 };
      expect(await store.getRun('named')).toEqual(named);
      expect(await store.getRun('late')).toEqual(late);
      expect(await store.getRun('never')).toEqual(never);
      expect(await store.getRun('never')).not.toHaveProperty('agent_digest');
      const listed = await store.listRuns({ offset: 0, limit: 10, threadId: 'dg' });
      expect(listed).toEqual({ items: [never, late, named], total: 3 });
      expect(listed.items[0]).not.toHaveProperty('agent_digest');
    });

    it("keeps each thread log's sequence mark: 0 for a new thread, set up and down, independent per thread, kept when the thread is deleted", async () => {
      expect(await store.loadThreadSeq('fresh')).toBe(0);
      await store.saveThreadSeq('s1', 1024);
      await store.saveThreadSeq('s2', 7);
      expect(await store.loadThreadSeq('s1')).toBe(1024);
      await store.saveThreadSeq('s1', 37);
      expect(await store.loadThreadSeq('s1')).toBe(37);
      expect(await store.loadThreadSeq('s2')).toBe(7);
      await store.createThread({ id: 's3', now: 1 });
      await store.saveThreadSeq('s3', 12);
      await store.deleteThread('s3');
      // A client may still hold a Last-Event-ID of the deleted thread: its sequence never goes back.
      expect(await store.loadThreadSeq('s3')).toBe(12);
      expect(await refusal(store.saveThreadSeq('s1', -1))).toMatchObject({ code: 'validation' });
      expect(await refusal(store.saveThreadSeq('../x', 1))).toMatchObject({ code: 'validation' });
    });

    if (factory.reopen !== undefined) {
      const reopen = factory.reopen;
      it('keeps everything across a restart', async () => {
        await store.createThread({ id: 'keep', title: 't', now: 5 });
        await store.checkpoint(checkpoint({ threadId: 'keep', runId: 'rk', messages: conversation, status: 'done' }));
        await store.write('agent', 'k', [1, 2]);
        await store.saveThreadSeq('keep', 2048);
        await store.enqueue({ job_id: 'kept-job', mailbox_id: 'keep', agent_id: 'agent', messages: [], origin: 'user', principal: 'alice' }, 1);
        const again = await reopen(store);
        // The principal that queued the job is what its run acts for (docs/server.md → Mailbox).
        expect(await again.loadJob('kept-job')).toMatchObject({ status: 'queued', principal: 'alice' });
        opened.push(again);
        expect((await again.loadThread('keep'))?.messages).toEqual(conversation);
        expect((await again.getThread('keep'))?.title).toBe('t');
        expect((await again.getRun('rk'))?.status).toBe('done');
        expect(await again.read('agent', 'k')).toEqual([1, 2]);
        expect(await again.loadThreadSeq('keep')).toBe(2048);
      });
    }
  });
}
