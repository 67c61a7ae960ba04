import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, vi } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { SqliteStore } from '../../src/stores/sqlite.ts';
import { WalCheckpointer } from '../../src/stores/wal-checkpointer.ts';

/**
 * A SQLite file store copies its write-ahead log into the database file on a thread of its own, so
 * that the sync a checkpoint waits for does not stall the thread serving runs; the writer's own
 * automatic checkpoint stays as a backstop for a larger log.
 */
const dbPath = (): string => join(mkdtempSync(join(tmpdir(), 'awaken-wal-')), 'awaken.db');
const size = (path: string): number => statSync(path).size;

/** A writer that never checkpoints by itself: whatever reaches the file, another connection copied. */
function writer(path: string): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec('CREATE TABLE t (data TEXT NOT NULL)');
  return db;
}

describe('WAL checkpoints on their own thread', () => {
  it('copies the log into the file every `every` commits, and not before', async () => {
    const path = dbPath();
    const db = writer(path);
    const fallBack = vi.fn();
    const wal = new WalCheckpointer(path, fallBack, { every: 40 });
    const insert = db.prepare('INSERT INTO t (data) VALUES (?)');
    const empty = size(path);
    for (let i = 0; i < 39; i++) {
      insert.run('x'.repeat(8192));
      wal.committed();
    }
    expect({ asked: wal.asked, file: size(path) }).toEqual({ asked: 0, file: empty });
    insert.run('x'.repeat(8192));
    wal.committed();
    expect(wal.asked).toBe(1);
    await vi.waitFor(() => expect(size(path)).toBeGreaterThan(40 * 8192), { timeout: 10_000, interval: 20 });
    await wal.close();
    db.close();
    // The worker closed its connection first, so the writer was the last: it folded the log in and removed it.
    expect({ log: existsSync(`${path}-wal`), fallBack: fallBack.mock.calls.length }).toEqual({ log: false, fallBack: 0 });
  });

  it('hands the work back to the writer once when its worker cannot open the database library', async () => {
    const path = dbPath();
    const db = writer(path);
    const fallBack = vi.fn();
    const wal = new WalCheckpointer(path, fallBack, { every: 1, library: join(tmpdir(), 'no-such-better-sqlite3.js') });
    wal.committed();
    await vi.waitFor(() => expect(fallBack).toHaveBeenCalledTimes(1), { timeout: 10_000, interval: 20 });
    wal.committed();
    wal.committed();
    expect({ asked: wal.asked, fallBack: fallBack.mock.calls.length }).toEqual({ asked: 1, fallBack: 1 });
    await wal.close();
    db.close();
  });

  it('a closed checkpointer that never started closes at once', async () => {
    const wal = new WalCheckpointer(dbPath(), () => undefined);
    await expect(wal.close()).resolves.toBeUndefined();
    expect(wal.asked).toBe(0);
  });

  it("the store's checkpoints reach the file without the writer checkpointing, and close leaves no log", async () => {
    const path = dbPath();
    const store = new SqliteStore(path);
    const before = size(path);
    const messages = [Messages.user('go')];
    const runState = { revision: 1, extensions: { 'x.run': { note: 'y' } } };
    // 270 writes of two or three pages: past the worker's 256, below the 1,000 pages at which SQLite's
    // own automatic checkpoint would copy them on the writer (and far below the 4,000 of its backstop).
    for (let i = 0; i < 270; i++) {
      await store.checkpoint({
        threadId: 't',
        runId: 'r',
        agentId: 'a',
        status: 'running',
        steps: i,
        messages,
        appendFrom: i === 0 ? 0 : 1,
        threadState: { revision: i, extensions: {} },
        runState,
        updatedAt: i,
      });
    }
    await vi.waitFor(() => expect(size(path)).toBeGreaterThan(before), { timeout: 10_000, interval: 20 });
    await store.close();
    expect(existsSync(`${path}-wal`)).toBe(false);
  });
});
