import { describe, expect, it } from 'vitest';
import type { RunCheckpoint } from '../../src/runtime/thread-run-store.ts';
import { asPrincipal } from '../../src/server/principal.ts';
import { reachableRun, storedRun } from '../../src/server/stored-runs.ts';
import { MemoryStore } from '../../src/stores/memory.ts';

async function storeWith(runs: readonly [string, string, RunCheckpoint['status'], number][]): Promise<MemoryStore> {
  const store = new MemoryStore();
  for (const [runId, threadId, status, at] of runs) {
    await store.checkpoint({
      threadId,
      runId,
      agentId: 'agent',
      messages: [],
      status,
      steps: 1,
      threadState: { revision: 1, extensions: {} },
      runState: { revision: 1, extensions: {} },
      updatedAt: at,
    });
  }
  return store;
}

describe('storedRun', () => {
  it('finds a run by its id, in the status asked (any unfinished one without)', async () => {
    const store = await storeWith([
      ['r1', 't', 'waiting', 1],
      ['r0', 't', 'done', 0],
    ]);
    expect((await storedRun(store, 'r1'))?.run_id).toBe('r1');
    expect((await storedRun(store, 'r1', 'waiting'))?.run_id).toBe('r1');
    expect(await storedRun(store, 'r1', 'running')).toBeUndefined();
    expect(await storedRun(store, 'r0')).toBeUndefined();
    expect((await storedRun(store, 'r0', 'done'))?.run_id).toBe('r0');
  });

  it('else finds the latest matching run of a thread; told it holds a thread id, it does not look the id up as a run', async () => {
    const store = await storeWith([
      ['t', 'other', 'waiting', 1],
      ['r2', 't', 'waiting', 2],
    ]);
    // 't' is also a run id (of another thread): by run or thread, the run wins.
    expect((await storedRun(store, 't'))?.run_id).toBe('t');
    expect((await storedRun(store, 't', 'waiting', 'thread'))?.run_id).toBe('r2');
    expect(await storedRun(store, 'nothing')).toBeUndefined();
  });
});

describe('reachableRun', () => {
  it('is the run id when the current principal may read its thread, else undefined', async () => {
    const store = await storeWith([['r1', 't', 'waiting', 1]]);
    expect(await reachableRun(store, 'r1')).toBe('r1');
    expect(await store.claimThread('t', 'alice')).toBe('alice');
    expect(await asPrincipal('alice', () => reachableRun(store, 'r1'))).toBe('r1');
    expect(await asPrincipal('bob', () => reachableRun(store, 'r1'))).toBeUndefined();
  });
});
