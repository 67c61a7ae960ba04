import { describe, expect, it } from 'vitest';
import { recoverRuns, resumeLeftRunning, runsLeftRunning } from '../../src/server/recovery.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { stored } from '../support/registry-fakes.ts';

/** What a start-up does with the runs a previous process left unfinished (docs/server.md → Runs a process left running). */

async function storeLeftBehind(): Promise<MemoryStore> {
  const store = new MemoryStore();
  await stored(store, 'top', 't1', 'running');
  await stored(store, 'child', 't2', 'running', [], 'top');
  await stored(store, 'parked', 't3', 'waiting');
  await stored(store, 'fresh', 't4', 'created');
  return store;
}

describe('start-up recovery', () => {
  it('with interrupt (the default), every created or running run ends interrupted; a waiting one stays waiting', async () => {
    const store = await storeLeftBehind();
    expect((await recoverRuns(store, 5)).sort()).toEqual(['child', 'fresh', 'top']);
    expect((await store.getRun('top'))?.termination).toEqual({ type: 'error', value: 'interrupted: the server stopped while the run was running' });
    expect((await store.getRun('parked'))?.status).toBe('waiting');
  });

  it('with resume, a running run is left running for the registry; a delegate’s sub-run ends interrupted (its parent’s call decides)', async () => {
    const store = await storeLeftBehind();
    expect(await recoverRuns(store, 5, { resume: true })).toEqual(['fresh']);
    expect(await runsLeftRunning(store, 6)).toEqual(['top']);
    expect(await store.getRun('top')).toMatchObject({ status: 'running' });
    expect(await store.getRun('child')).toMatchObject({
      status: 'done',
      termination: { type: 'error', value: 'interrupted: the server stopped while the run was running' },
    });
  });

  it('takes each up, logs how many it did, and goes on past one whose store fails', async () => {
    const lines: string[] = [];
    const logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (m: string) => void lines.push(`warn ${m}`),
      error: (m: string) => void lines.push(`error ${m}`),
    };
    const taken: string[] = [];
    const registry = {
      recover: async (runId: string): Promise<boolean> => {
        taken.push(runId);
        if (runId === 'b') throw new Error('the store went away');
        return runId !== 'c';
      },
    };
    await resumeLeftRunning(registry, ['a', 'b', 'c'], logger);
    expect(taken).toEqual(['a', 'b', 'c']);
    expect(lines).toEqual(['error run left running not recovered', 'warn resumed 1 of 3 run(s) a previous process left running']);
    lines.length = 0;
    await resumeLeftRunning(registry, [], logger);
    expect(lines).toEqual([]);
  });
});
