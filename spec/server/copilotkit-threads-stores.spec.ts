import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import type { Store } from '../../src/runtime/store.ts';
import type { RunCheckpoint } from '../../src/runtime/thread-run-store.ts';
import { FileStore } from '../../src/stores/file.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { PostgresStore } from '../../src/stores/postgres.ts';
import { SqliteStore } from '../../src/stores/sqlite.ts';
import { PG_URL } from '../support/postgres.ts';

/**
 * A thread's `archived` mark (what CopilotKit's archive and unarchive set) in each store: kept by
 * `updateThread`, read back by `getThread` and `listThreads`, left alone by a rename and by a run's
 * checkpoint, cleared by `archived: false`, and still there after a restart.
 */

const checkpoint = (threadId: string, runId: string, updatedAt: number, expected: number): RunCheckpoint => ({
  threadId,
  runId,
  agentId: 'agent',
  messages: [Messages.user('hi', { id: `${runId}-u` })],
  status: 'done',
  steps: 1,
  threadState: { revision: 1, extensions: {} },
  runState: { revision: 1, extensions: {} },
  updatedAt,
  expectedMessageCount: expected,
});

interface Opened {
  readonly store: Store;
  readonly reopen?: () => Promise<Store>;
}

const pgPrefixes: string[] = [];
afterAll(async () => {
  for (const prefix of pgPrefixes) {
    const s = PostgresStore.withPrefix(PG_URL, prefix);
    await s.dropSchema();
    await s.close();
  }
});

const stores: Record<string, () => Promise<Opened>> = {
  memory: async () => ({ store: new MemoryStore() }),
  file: async () => {
    const root = mkdtempSync(join(tmpdir(), 'awaken-ck-file-'));
    const store = new FileStore(root);
    return { store, reopen: async () => (await store.close(), new FileStore(root)) };
  },
  sqlite: async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'awaken-ck-sqlite-')), 'awaken.db');
    const store = new SqliteStore(path);
    return { store, reopen: async () => (await store.close(), new SqliteStore(path)) };
  },
  postgres: async () => {
    const prefix = `ck${process.pid}_${pgPrefixes.length + 1}`;
    pgPrefixes.push(prefix);
    const store = PostgresStore.withPrefix(PG_URL, prefix);
    await store.dropSchema();
    await store.ensureSchema();
    return { store, reopen: async () => (await store.close(), PostgresStore.withPrefix(PG_URL, prefix)) };
  },
};

describe.each(Object.keys(stores))('a thread archived: %s', (name) => {
  it('is kept, shown, left alone by a rename and a run, cleared by archived: false, and outlives a restart', async () => {
    const opened = await (stores[name] as () => Promise<Opened>)();
    let store = opened.store;
    try {
      await store.checkpoint(checkpoint('kept', 'r1', 100, 0));
      await store.createThread({ id: 'other', now: 100 });

      expect(await store.updateThread('kept', { archived: true }, 200)).toMatchObject({ id: 'kept', archived: true, updated_at: 200 });
      expect(await store.getThread('kept')).toMatchObject({ archived: true });
      expect((await store.getThread('other'))?.archived).toBeUndefined();
      const listed = await store.listThreads({ offset: 0, limit: 10 });
      expect(listed.items.map((t) => [t.id, t.archived])).toEqual([
        ['kept', true],
        ['other', undefined],
      ]);

      // A rename and a run leave the mark as it is.
      expect(await store.updateThread('kept', { title: 'Old trip' }, 300)).toMatchObject({ title: 'Old trip', archived: true });
      await store.checkpoint(checkpoint('kept', 'r2', 400, 1));
      expect(await store.getThread('kept')).toMatchObject({ title: 'Old trip', archived: true, latest_run_id: 'r2' });

      if (opened.reopen !== undefined) {
        store = await opened.reopen();
        expect(await store.getThread('kept')).toMatchObject({ title: 'Old trip', archived: true });
      }

      const back = await store.updateThread('kept', { archived: false }, 500);
      expect(back).not.toHaveProperty('archived');
      expect(await store.getThread('kept')).not.toHaveProperty('archived');
      expect(await store.getThread('kept')).toMatchObject({ title: 'Old trip', updated_at: 500 });
    } finally {
      await store.close();
    }
  });
});
