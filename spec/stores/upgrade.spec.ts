import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/runtime/store.ts';
import { FILE_SCHEMA_VERSION, FileStore } from '../../src/stores/file.ts';
import { POSTGRES_MIGRATIONS, PostgresStore } from '../../src/stores/postgres.ts';
import { SQLITE_MIGRATIONS, SqliteStore } from '../../src/stores/sqlite.ts';
import { PG_URL } from '../support/postgres.ts';

/**
 * Data written by the first release (fixtures/stores/v0: one run of the demo agent on thread t1, an
 * empty thread t2) opens, reads and takes new writes after the upgrade; data from a newer release is
 * refused, never misread.
 */
const V0 = join(import.meta.dirname, '../../fixtures/stores/v0');
const RUN = '01a22d37';

async function readsTheFirstRelease(store: Store): Promise<void> {
  const t1 = await store.getThread('t1');
  expect(t1?.latest_run_id).toBeDefined();
  expect((await store.getThread('t2'))?.title).toBe('empty');
  const messages = await store.listMessages('t1', { offset: 0, limit: 50 });
  expect(messages.items.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
  const run = await store.getRun(t1?.latest_run_id as string);
  expect(run).toMatchObject({ thread_id: 't1', status: 'done', termination: { type: 'natural_end' } });
  expect((await store.loadThread('t1'))?.messages).toHaveLength(4);
  // What the upgrade added works on the old data.
  expect(await store.loadThreadSeq('t1')).toBe(0);
  await store.saveThreadSeq('t1', 9);
  expect(await store.loadThreadSeq('t1')).toBe(9);
  // Records from before thread metadata and run totals read without them, and take them after.
  expect(await store.getThread('t2')).toEqual({ id: 't2', title: 'empty', created_at: expect.any(Number), updated_at: expect.any(Number) });
  expect(run).not.toHaveProperty('input_tokens');
  expect(run).not.toHaveProperty('parent_run_id');
  expect(run).not.toHaveProperty('agent_digest');
  expect(await store.updateThread('t2', { resource_id: 'doc-1', custom: { k: 'v' } }, 2_000_000_000_000)).toMatchObject({
    id: 't2',
    title: 'empty',
    resource_id: 'doc-1',
    custom: { k: 'v' },
  });
  await store.checkpoint({
    threadId: 't2',
    runId: 'after-upgrade',
    agentId: 'a',
    messages: [],
    status: 'done',
    steps: 1,
    threadState: { revision: 1, extensions: {} },
    runState: { revision: 1, extensions: {} },
    updatedAt: 2_000_000_000_001,
    parentRunId: RUN,
    agentDigest: 'sha256:after',
    tokens: { input: 9, output: 4 },
  });
  expect(await store.getRun('after-upgrade')).toEqual({
    run_id: 'after-upgrade',
    thread_id: 't2',
    agent_id: 'a',
    status: 'done',
    steps: 1,
    created_at: 2_000_000_000_001,
    updated_at: 2_000_000_000_001,
    parent_run_id: RUN,
    agent_digest: 'sha256:after',
    input_tokens: 9,
    output_tokens: 4,
  });
  expect(await store.getThread('t2')).toMatchObject({ resource_id: 'doc-1', custom: { k: 'v' }, latest_run_id: 'after-upgrade' });
}

const tmp = (): string => mkdtempSync(join(tmpdir(), 'awaken-upgrade-'));

describe('a store written by the first release, after the upgrade', () => {
  it('SQLite: migrates to the current version on open and reads every record', async () => {
    const path = join(tmp(), 'awaken.db');
    cpSync(join(V0, 'awaken.db'), path);
    const before = new Database(path);
    expect(before.pragma('user_version', { simple: true })).toBe(0);
    before.close();
    const store = new SqliteStore(path);
    expect(store.schemaVersion).toBe(SQLITE_MIGRATIONS.length);
    expect(SQLITE_MIGRATIONS.length).toBeGreaterThanOrEqual(1);
    await readsTheFirstRelease(store);
    await store.close();
    const again = new SqliteStore(path);
    expect(await again.loadThreadSeq('t1')).toBe(9);
    expect((await again.getThread('t1'))?.latest_run_id?.startsWith(RUN)).toBe(true);
    await again.close();
  });

  it('SQLite: a database from a newer release is refused with its version named', () => {
    const path = join(tmp(), 'new.db');
    const db = new Database(path);
    db.pragma(`user_version = ${SQLITE_MIGRATIONS.length + 1}`);
    db.close();
    expect(() => new SqliteStore(path)).toThrow(
      new RegExp(`store version ${SQLITE_MIGRATIONS.length + 1}; this release reads up to ${SQLITE_MIGRATIONS.length}`),
    );
  });

  it('file: reads every record and marks the directory with the current version at the first write', async () => {
    const root = join(tmp(), 'file');
    cpSync(join(V0, 'file'), root, { recursive: true });
    const store = new FileStore(root);
    await readsTheFirstRelease(store);
    expect(JSON.parse(readFileSync(join(root, 'schema.json'), 'utf8'))).toEqual({ version: FILE_SCHEMA_VERSION });
    await store.close();
  });

  it('file: a directory from a newer release takes no write', async () => {
    const root = tmp();
    writeFileSync(join(root, 'schema.json'), JSON.stringify({ version: FILE_SCHEMA_VERSION + 1 }));
    const store = new FileStore(root);
    await expect(store.createThread({ id: 'x', now: 1 })).rejects.toThrow(/this release reads up to/);
    expect(await store.getThread('x')).toBeUndefined();
  });

  describe('PostgreSQL', () => {
    const prefix = `up${process.pid}`;
    const stores: PostgresStore[] = [];
    afterAll(async () => {
      for (const s of stores) await s.close().catch(() => undefined);
      const cleanup = PostgresStore.withPrefix(PG_URL, prefix);
      await cleanup.dropSchema();
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`DROP TABLE IF EXISTS ${prefix}_events`);
      await c.end();
      await cleanup.close();
    });

    it("migrates the first release's tables under the advisory lock and reads every record; a newer schema is refused", async () => {
      // The first release's tables and rows (pg_dump --inserts), under this spec's own prefix.
      const dump = readFileSync(join(V0, 'postgres.sql'), 'utf8').replaceAll('awaken_', `${prefix}_`);
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      await PostgresStore.withPrefix(PG_URL, prefix).dropSchema();
      await c.query(`DROP TABLE IF EXISTS ${prefix}_events`);
      await c.query(dump);
      // Two instances opening together migrate once.
      const a = PostgresStore.withPrefix(PG_URL, prefix);
      const b = PostgresStore.withPrefix(PG_URL, prefix);
      stores.push(a, b);
      await Promise.all([a.ensureSchema(), b.ensureSchema()]);
      expect(await a.schemaVersion()).toBe(POSTGRES_MIGRATIONS.length);
      await readsTheFirstRelease(a);
      expect(await b.loadThreadSeq('t1')).toBe(9);
      await c.query(`UPDATE ${prefix}_schema SET version = ${POSTGRES_MIGRATIONS.length + 1}`);
      await c.end();
      const newer = PostgresStore.withPrefix(PG_URL, prefix);
      stores.push(newer);
      await expect(newer.getThread('t1')).rejects.toThrow(/this release reads up to/);
    });
  });
});
