import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import type { RunCheckpoint } from '../../src/runtime/thread-run-store.ts';
import { SqliteStore } from '../../src/stores/sqlite.ts';

/**
 * A checkpoint is written many times a run (each tool call's phases, each step's end): once a store
 * has compiled the SQL of a checkpoint, later ones reuse it, as better-sqlite3 compiles at every
 * `prepare` and that cost more than the write itself.
 */
const open = (): SqliteStore => new SqliteStore(join(mkdtempSync(join(tmpdir(), 'awaken-sqlite-statements-')), 'awaken.db'));

const state = { revision: 1, extensions: { 'x.thread': { n: 1 } } };
const base = { agentId: 'a', steps: 1, threadState: state, runState: { revision: 1, extensions: {} }, updatedAt: 1 };

/** The lease `run` checkpoints under (taken outside it: taking a lease is a transaction of its own). */
const lease = (store: SqliteStore, threadId: string, runId: string) => store.takeLease({ threadId, runId, owner: 'A', now: 0, ttlMs: 1000 });

/** A run's checkpoints through every path a checkpoint takes: first write, appended, unchanged and fenced, rewritten by ids, ended. */
async function run(store: SqliteStore, threadId: string, runId: string): Promise<void> {
  const user = { ...Messages.user('go'), id: `${runId}-u` };
  const answer = { ...Messages.assistant('hi'), id: `${runId}-a` };
  const summary = { ...Messages.assistant('summary'), id: `${runId}-s` };
  const checkpoint = (c: Partial<RunCheckpoint> & Pick<RunCheckpoint, 'messages'>): Promise<void> =>
    store.checkpoint({ ...base, threadId, runId, status: 'running', ...c });
  await checkpoint({ messages: [user], appendFrom: 0, expectedMessageCount: 0 });
  await checkpoint({ messages: [user, answer], appendFrom: 1, expectedMessageCount: 1 });
  await checkpoint({ messages: [user, answer], appendFrom: 2, expectedMessageCount: 2, steps: 2, fence: { owner: 'A' } });
  await checkpoint({ messages: [user, answer], expectedMessageCount: 2 });
  await checkpoint({ messages: [summary, answer], expectedMessageCount: 2 });
  await checkpoint({ messages: [summary], appendFrom: 0, expectedMessageCount: 2 });
  await checkpoint({ messages: [summary], appendFrom: 1, expectedMessageCount: 1, status: 'done', termination: { type: 'natural_end' } });
}

describe('sqlite store statements', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('a checkpoint compiles no SQL and wraps no transaction once the store has written one of each kind', async () => {
    const store = open();
    await lease(store, 't1', 'r1');
    await lease(store, 't2', 'r2');
    await run(store, 't1', 'r1');
    const prepare = vi.spyOn(Database.prototype, 'prepare');
    const transaction = vi.spyOn(Database.prototype, 'transaction');
    await run(store, 't2', 'r2');
    expect(prepare).not.toHaveBeenCalled();
    expect(transaction).not.toHaveBeenCalled();
    // The statements reused wrote what fresh ones would have.
    expect((await store.loadThread('t2'))?.messages.map((m) => m.id)).toEqual(['r2-s']);
    expect(await store.getRun('r2')).toMatchObject({ status: 'done', termination: { type: 'natural_end' }, steps: 1 });
    await store.close();
  });

  it('a checkpoint without a fence reads no lease: it runs the statements it ran before fences', async () => {
    const store = open();
    const prepare = vi.spyOn(Database.prototype, 'prepare');
    const checkpoint = (c: Partial<RunCheckpoint> & Pick<RunCheckpoint, 'messages'>): Promise<void> =>
      store.checkpoint({ ...base, threadId: 't1', runId: 'r1', status: 'running', ...c });
    await checkpoint({ messages: [{ ...Messages.user('go'), id: 'u' }], appendFrom: 0, expectedMessageCount: 0 });
    const texts = prepare.mock.calls.map(([sql]) => sql);
    expect(texts.filter((sql) => sql.includes('awaken_thread_leases'))).toEqual([]);
    expect(texts).toHaveLength(4);
    await store.close();
  });

  it('a refused checkpoint leaves the reused statements working: the next one is written', async () => {
    const store = open();
    await lease(store, 't1', 'r1');
    await run(store, 't1', 'r1');
    const late = store.checkpoint({ ...base, threadId: 't1', runId: 'r1', status: 'running', messages: [] });
    await expect(late).rejects.toMatchObject({ error: { code: 'run_ended' } });
    const stale = store.checkpoint({ ...base, threadId: 't1', runId: 'r3', status: 'running', messages: [], expectedMessageCount: 5 });
    await expect(stale).rejects.toMatchObject({ error: { code: 'version_conflict', expected: 5, actual: 1 } });
    await store.checkpoint({ ...base, threadId: 't1', runId: 'r3', status: 'running', messages: [], expectedMessageCount: 1, appendFrom: 0 });
    expect(await store.loadThread('t1')).toEqual({ messages: [], threadState: state });
    expect(await store.getRun('r3')).toMatchObject({ status: 'running', thread_id: 't1' });
    await store.close();
  });
});
