// Over 500 lines: the PostgreSQL store implements the whole Store contract (threads, messages, runs,
// leases, seq marks, the mailbox) over one pool, with its migrations beside it: one schema, read whole.
import type pg from 'pg';
import { inTransaction, loadPg } from './pg-module.ts';
import type { JsonValue } from '../contract/json.ts';
import type { TerminationReason } from '../contract/lifecycle.ts';
import type { Message } from '../contract/message.ts';
import type { PersistedState } from '../core/state/state-ops.ts';
import type { RunCheckpoint, ThreadSnapshot } from '../runtime/thread-run-store.ts';
import { Jobs, type MailboxConfig, type MailboxJob, type MailboxJobStatus } from '../core/mailbox/job.ts';
import type { MailboxInterrupt, NewMailboxJob } from '../runtime/mailbox-store.ts';
import { MailboxBook, type MailboxData } from './mailbox-book.ts';
import { changedJobs, dataOf, JOB_COLUMNS, jobRow, mailboxSchema, TERMINAL_LIST } from './mailbox-sql.ts';
import {
  appendStart,
  checkExpectedCount,
  checkFence,
  patchedThread,
  newThreadRecord,
  type NewThread,
  type ThreadPatch,
  checkId,
  checkSeq,
  runEnded,
  StoreFailure,
  type LeaseTake,
  type ThreadLease,
  type MessageQuery,
  type Page,
  type RunQuery,
  type ThreadQuery,
  hasRunFilter,
  likePattern,
  type RunRecord,
  type Store,
  type ThreadRecord,
} from '../runtime/store.ts';
import { archivedArg, leaseOf, RUN_TOTALS_UPDATE, runMetaArgs, runOf, threadColumns, threadMetaArgs, threadOf } from './sqlite.ts';

const PREFIX = /^[a-z][a-z0-9_]{0,30}$/;

/**
 * Changes to the schema since version 0 (the first release's tables): entry `i` takes the tables from
 * version `i` to `i + 1`, given the table prefix.
 */
export const POSTGRES_MIGRATIONS: readonly ((prefix: string) => string)[] = [
  // 1: the durable mark of each thread log's sequence (ThreadSeqStore).
  (p) => `CREATE TABLE IF NOT EXISTS ${p}_thread_seq (thread_id TEXT PRIMARY KEY, seq BIGINT NOT NULL)`,
  // 2: thread leases (ThreadLeaseStore).
  (p) => `CREATE TABLE IF NOT EXISTS ${p}_thread_leases (
     thread_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, owner TEXT NOT NULL, until BIGINT NOT NULL, cancel_requested BOOLEAN NOT NULL DEFAULT FALSE);
   CREATE INDEX IF NOT EXISTS ${p}_thread_leases_owner ON ${p}_thread_leases (owner);
   CREATE INDEX IF NOT EXISTS ${p}_thread_leases_run ON ${p}_thread_leases (run_id);`,
  // 3: thread owners (ThreadOwnerStore).
  (p) => `CREATE TABLE IF NOT EXISTS ${p}_thread_owners (thread_id TEXT PRIMARY KEY, principal TEXT NOT NULL);
   CREATE INDEX IF NOT EXISTS ${p}_thread_owners_principal ON ${p}_thread_owners (principal);`,
  // 4: the run-scoped state of unfinished runs (a waiting run is revived from it).
  (p) => `ALTER TABLE ${p}_runs ADD COLUMN IF NOT EXISTS state TEXT`,
  // 5: thread metadata and run totals; every column nullable, so the rows of earlier releases read as before.
  (p) => `ALTER TABLE ${p}_threads ADD COLUMN IF NOT EXISTS resource_id TEXT;
   ALTER TABLE ${p}_threads ADD COLUMN IF NOT EXISTS parent_thread_id TEXT;
   ALTER TABLE ${p}_threads ADD COLUMN IF NOT EXISTS custom TEXT;
   ALTER TABLE ${p}_runs ADD COLUMN IF NOT EXISTS parent_run_id TEXT;
   ALTER TABLE ${p}_runs ADD COLUMN IF NOT EXISTS input_tokens BIGINT;
   ALTER TABLE ${p}_runs ADD COLUMN IF NOT EXISTS output_tokens BIGINT;`,
  // 6: what each run's agent was when it started; nullable, so the runs of earlier releases read without it.
  (p) => `ALTER TABLE ${p}_runs ADD COLUMN IF NOT EXISTS agent_digest TEXT`,
  // 7: a thread's archived mark (1, or NULL while it is not archived: the rows of earlier releases are not).
  (p) => `ALTER TABLE ${p}_threads ADD COLUMN IF NOT EXISTS archived INTEGER`,
];

/** Connection settings a PostgreSQL store takes besides a URL (what `pg.Pool` takes). */
export interface PostgresConnection {
  readonly connectionString?: string;
  readonly host?: string;
  readonly port?: number;
  readonly user?: string;
  readonly password?: string;
  readonly database?: string;
  readonly max?: number;
  readonly [option: string]: unknown;
}

/**
 * The multi-instance store (book: 使用 Postgres 存储): tables `<prefix>_threads`, `_messages`,
 * `_runs`, `_profiles`; the schema is created on first use; a checkpoint is one transaction that locks
 * the thread row (`FOR UPDATE`) and checks the message count (optimistic concurrency).
 */
export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  readonly #pool: pg.Pool;
  readonly #p: string;
  #ready: Promise<void> | undefined;

  constructor(connection: string | PostgresConnection, options: { readonly prefix?: string } = {}) {
    const prefix = options.prefix ?? 'awaken';
    if (!PREFIX.test(prefix)) throw new StoreFailure({ code: 'validation', message: `invalid table prefix: ${prefix}` });
    this.#p = prefix;
    const { Pool } = loadPg();
    this.#pool = new Pool(typeof connection === 'string' ? { connectionString: connection, max: 10 } : (connection as pg.PoolConfig));
    // An idle client that loses its connection must not crash the process.
    this.#pool.on('error', () => undefined);
  }

  /** `with_prefix`: the same database, other tables. */
  static withPrefix(connection: string | PostgresConnection, prefix: string): PostgresStore {
    return new PostgresStore(connection, { prefix });
  }

  /**
   * Creates the tables if they are missing and brings them up to this release's version
   * (`<prefix>_schema`); runs once per store, on first use. All of it is one transaction under an
   * advisory lock, so instances starting together neither race on `CREATE TABLE IF NOT EXISTS` nor
   * migrate twice; tables from a newer release are refused.
   */
  ensureSchema(): Promise<void> {
    this.#ready ??= this.#migrate().catch((e: unknown) => {
      this.#ready = undefined;
      throw e;
    });
    return this.#ready;
  }

  async #migrate(): Promise<void> {
    const p = this.#p;
    await inTransaction(this.#pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`${p}_schema`]);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${p}_threads (
           id TEXT PRIMARY KEY, title TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
           latest_run_id TEXT, state TEXT, message_count INTEGER NOT NULL DEFAULT 0);
         CREATE TABLE IF NOT EXISTS ${p}_messages (
           thread_id TEXT NOT NULL, seq INTEGER NOT NULL, internal BOOLEAN NOT NULL, data TEXT NOT NULL,
           PRIMARY KEY (thread_id, seq));
         CREATE TABLE IF NOT EXISTS ${p}_runs (
           run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, agent_id TEXT NOT NULL, status TEXT NOT NULL,
           termination TEXT, steps INTEGER NOT NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL);
         CREATE INDEX IF NOT EXISTS ${p}_runs_thread ON ${p}_runs (thread_id, created_at);
         CREATE TABLE IF NOT EXISTS ${p}_profiles (owner TEXT NOT NULL, key TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (owner, key));
         ${mailboxSchema(p, 'BIGINT')}
         CREATE TABLE IF NOT EXISTS ${p}_schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);`,
      );
      await client.query(`INSERT INTO ${p}_schema (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`);
      const found = Number((await client.query<{ version: number }>(`SELECT version FROM ${p}_schema WHERE id = 1`)).rows[0]?.version ?? 0);
      if (found > POSTGRES_MIGRATIONS.length)
        throw new StoreFailure({
          code: 'validation',
          message: `tables ${p}_* hold store version ${found}; this release reads up to ${POSTGRES_MIGRATIONS.length}`,
        });
      for (let v = found; v < POSTGRES_MIGRATIONS.length; v++) await client.query((POSTGRES_MIGRATIONS[v] as (prefix: string) => string)(p));
      await client.query(`UPDATE ${p}_schema SET version = $1 WHERE id = 1`, [POSTGRES_MIGRATIONS.length]);
    });
  }

  /** The schema version of the tables. */
  async schemaVersion(): Promise<number> {
    const [row] = await this.#q<{ version: number }>(`SELECT version FROM ${this.#p}_schema WHERE id = 1`);
    return Number(row?.version ?? 0);
  }

  async #q<R extends pg.QueryResultRow>(sql: string, args: unknown[] = []): Promise<R[]> {
    await this.ensureSchema();
    return (await this.#pool.query<R>(sql, args)).rows;
  }

  async createThread(t: NewThread): Promise<ThreadRecord> {
    checkId('thread', t.id);
    const record: ThreadRecord = newThreadRecord(t);
    const rows = await this.#q(
      `INSERT INTO ${this.#p}_threads (id, title, created_at, updated_at, resource_id, parent_thread_id, custom) VALUES ($1, $2, $3, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING RETURNING id`,
      [t.id, t.title ?? null, t.now, ...threadMetaArgs(record)],
    );
    if (rows.length === 0) throw new StoreFailure({ code: 'already_exists', message: `thread already exists: ${t.id}` });
    return record;
  }

  async getThread(id: string): Promise<ThreadRecord | undefined> {
    const [row] = await this.#q<Parameters<typeof threadOf>[0]>(`SELECT ${threadColumns()} FROM ${this.#p}_threads WHERE id = $1`, [id]);
    return row === undefined ? undefined : threadOf(row);
  }

  async updateThread(id: string, patch: ThreadPatch, now: number): Promise<ThreadRecord | undefined> {
    return this.#tx(async (db) => {
      const [row] = (await db.query<Parameters<typeof threadOf>[0]>(`SELECT ${threadColumns()} FROM ${this.#p}_threads WHERE id = $1 FOR UPDATE`, [id])).rows;
      if (row === undefined) return undefined;
      const next = patchedThread(threadOf(row), patch, now);
      await db.query(
        `UPDATE ${this.#p}_threads SET title = $2, updated_at = $3, resource_id = $4, parent_thread_id = $5, custom = $6, archived = $7 WHERE id = $1`,
        [id, next.title ?? null, now, ...threadMetaArgs(next), archivedArg(next)],
      );
      return next;
    });
  }

  async listThreads(q: ThreadQuery): Promise<Page<ThreadRecord>> {
    // The search is one query (threadMatcher says the same over objects); ILIKE folds case as the database's locale does.
    const p = this.#p;
    const where: string[] = [];
    const args: (string | number)[] = [];
    const arg = (v: string | number): string => `$${args.push(v)}`;
    if (q.owner !== undefined) where.push(`EXISTS (SELECT 1 FROM ${p}_thread_owners o WHERE o.thread_id = t.id AND o.principal = ${arg(q.owner)})`);
    if (q.text !== undefined && q.text !== '') {
      const like = arg(likePattern(q.text));
      where.push(
        `(t.id ILIKE ${like} ESCAPE '\\' OR t.title ILIKE ${like} ESCAPE '\\' OR EXISTS (SELECT 1 FROM ${p}_runs r WHERE r.thread_id = t.id AND r.run_id ILIKE ${like} ESCAPE '\\'))`,
      );
    }
    // Ids are ordered and compared in the "C" collation (by their characters' codes, as `isAfter` and
    // the other stores do), not the database's locale, so a keyset page goes on where the last ended.
    if (q.after !== undefined) {
      const at = arg(q.after.updated_at);
      where.push(`(t.updated_at < ${at} OR (t.updated_at = ${at} AND t.id COLLATE "C" > ${arg(q.after.id)}))`);
    }
    if (hasRunFilter(q.run)) {
      const run = ['r.thread_id = t.id'];
      if (q.run.agentId !== undefined) run.push(`r.agent_id = ${arg(q.run.agentId)}`);
      if (q.run.status !== undefined) run.push(`r.status = ${arg(q.run.status)}`);
      if (q.run.failed === true) run.push(`(r.termination::jsonb ->> 'type') = 'error'`);
      where.push(`EXISTS (SELECT 1 FROM ${p}_runs r WHERE ${run.join(' AND ')})`);
    }
    const clause = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
    const filters = [...args];
    const rows = await this.#q<Parameters<typeof threadOf>[0]>(
      `SELECT ${threadColumns('t')} FROM ${p}_threads t${clause} ORDER BY t.updated_at DESC, t.id COLLATE "C" ASC LIMIT ${arg(q.limit)} OFFSET ${arg(q.offset)}`,
      args,
    );
    const [count] = await this.#q<{ n: string }>(`SELECT count(*) AS n FROM ${p}_threads t${clause}`, filters);
    return { items: rows.map(threadOf), total: Number(count?.n ?? 0) };
  }

  async deleteThread(id: string): Promise<boolean> {
    return this.#tx(async (c) => {
      const r = await c.query(`DELETE FROM ${this.#p}_threads WHERE id = $1`, [id]);
      await c.query(`DELETE FROM ${this.#p}_messages WHERE thread_id = $1`, [id]);
      await c.query(`DELETE FROM ${this.#p}_runs WHERE thread_id = $1`, [id]);
      await c.query(`DELETE FROM ${this.#p}_thread_owners WHERE thread_id = $1`, [id]);
      return (r.rowCount ?? 0) > 0;
    });
  }

  async listMessages(threadId: string, q: MessageQuery): Promise<Page<Message>> {
    const exists = await this.#q(`SELECT 1 FROM ${this.#p}_threads WHERE id = $1`, [threadId]);
    if (exists.length === 0) throw new StoreFailure({ code: 'not_found', message: `thread not found: ${threadId}` });
    const filter = q.visibility === 'all' ? '' : ' AND NOT internal';
    const rows = await this.#q<{ data: string }>(`SELECT data FROM ${this.#p}_messages WHERE thread_id = $1${filter} ORDER BY seq LIMIT $2 OFFSET $3`, [
      threadId,
      q.limit,
      q.offset,
    ]);
    const [count] = await this.#q<{ n: string }>(`SELECT count(*) AS n FROM ${this.#p}_messages WHERE thread_id = $1${filter}`, [threadId]);
    return { items: rows.map((r) => JSON.parse(r.data) as Message), total: Number(count?.n ?? 0) };
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const [row] = await this.#q<Parameters<typeof runOf>[0]>(`SELECT * FROM ${this.#p}_runs WHERE run_id = $1`, [runId]);
    return row === undefined ? undefined : runOf(row);
  }

  async listRuns(q: RunQuery): Promise<Page<RunRecord>> {
    const where: string[] = [];
    const args: unknown[] = [];
    if (q.status !== undefined) args.push(q.status), where.push(`status = $${args.length}`);
    if (q.threadId !== undefined) args.push(q.threadId), where.push(`thread_id = $${args.length}`);
    const clause = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
    const rows = await this.#q<Parameters<typeof runOf>[0]>(
      `SELECT * FROM ${this.#p}_runs${clause} ORDER BY created_at DESC, run_id ASC LIMIT $${args.length + 1} OFFSET $${args.length + 2}`,
      [...args, q.limit, q.offset],
    );
    const [count] = await this.#q<{ n: string }>(`SELECT count(*) AS n FROM ${this.#p}_runs${clause}`, args);
    return { items: rows.map(runOf), total: Number(count?.n ?? 0) };
  }

  async finishRun(runId: string, termination: TerminationReason, now: number): Promise<boolean> {
    const rows = await this.#q(
      `UPDATE ${this.#p}_runs SET status = 'done', termination = $2, updated_at = $3, state = NULL WHERE run_id = $1 RETURNING run_id`,
      [runId, JSON.stringify(termination), now],
    );
    return rows.length > 0;
  }

  async loadRunState(runId: string): Promise<PersistedState | undefined> {
    const [row] = await this.#q<{ state: string | null }>(`SELECT state FROM ${this.#p}_runs WHERE run_id = $1 AND status <> 'done'`, [runId]);
    return row?.state == null ? undefined : (JSON.parse(row.state) as PersistedState);
  }

  async loadThread(threadId: string): Promise<ThreadSnapshot | undefined> {
    const [row] = await this.#q<{ state: string | null }>(`SELECT state FROM ${this.#p}_threads WHERE id = $1`, [threadId]);
    if (row === undefined) return undefined;
    const messages = (await this.#q<{ data: string }>(`SELECT data FROM ${this.#p}_messages WHERE thread_id = $1 ORDER BY seq`, [threadId])).map(
      (r) => JSON.parse(r.data) as Message,
    );
    return { messages, ...(row.state !== null ? { threadState: JSON.parse(row.state) as PersistedState } : {}) };
  }

  async checkpoint(c: RunCheckpoint): Promise<void> {
    checkId('thread', c.threadId);
    checkId('run', c.runId);
    const p = this.#p;
    await this.#tx(async (db) => {
      await db.query(`INSERT INTO ${p}_threads (id, created_at, updated_at) VALUES ($1, $2, $2) ON CONFLICT (id) DO NOTHING`, [c.threadId, c.updatedAt]);
      const locked = await db.query<{ message_count: number }>(`SELECT message_count FROM ${p}_threads WHERE id = $1 FOR UPDATE`, [c.threadId]);
      const actual = locked.rows[0]?.message_count ?? 0;
      // Locked: a sweep ending the run elsewhere waits for this checkpoint, or this one sees it ended.
      const run = await db.query<{ status: string }>(`SELECT status FROM ${p}_runs WHERE run_id = $1 FOR UPDATE`, [c.runId]);
      if (run.rows[0]?.status === 'done') throw runEnded(c.runId);
      if (c.fence !== undefined) {
        // Locked too: a takeover, release or steal of the lease waits for this checkpoint, or this one sees it.
        const lease = await db.query<{ run_id: string; owner: string }>(`SELECT run_id, owner FROM ${p}_thread_leases WHERE thread_id = $1 FOR UPDATE`, [
          c.threadId,
        ]);
        checkFence(c, lease.rows[0]);
      }
      checkExpectedCount(c, actual);
      await db.query(`UPDATE ${p}_threads SET updated_at = $2, latest_run_id = $3, state = $4, message_count = $5 WHERE id = $1`, [
        c.threadId,
        c.updatedAt,
        c.runId,
        JSON.stringify(c.threadState),
        c.messages.length,
      ]);
      // The writer says how many leading messages are as it left them (`appendFrom`): only the rest is
      // written. Without that, when the stored messages are a prefix (by id) only the new ones are
      // written; otherwise (a summary inserted, say) the thread's messages are rewritten.
      let from = appendStart(c, actual);
      if (from !== undefined) {
        if (from < actual) await db.query(`DELETE FROM ${p}_messages WHERE thread_id = $1 AND seq >= $2`, [c.threadId, from]);
      } else {
        const stored = (
          await db.query<{ id: string | null }>(`SELECT (data::json)->>'id' AS id FROM ${p}_messages WHERE thread_id = $1 ORDER BY seq`, [c.threadId])
        ).rows.map((r) => r.id);
        const grown = stored.length <= c.messages.length && stored.every((id, i) => id !== null && id === c.messages[i]?.id);
        from = grown ? stored.length : 0;
        if (!grown) await db.query(`DELETE FROM ${p}_messages WHERE thread_id = $1`, [c.threadId]);
      }
      const fresh = c.messages.slice(from);
      if (fresh.length > 0) {
        await db.query(
          `INSERT INTO ${p}_messages (thread_id, seq, internal, data)
           SELECT $1, $4 + t.ord - 1, t.internal, t.data FROM unnest($2::text[], $3::boolean[]) WITH ORDINALITY AS t(data, internal, ord)`,
          [c.threadId, fresh.map((m) => JSON.stringify(m)), fresh.map((m) => m.visibility === 'internal'), from],
        );
      }
      await db.query(
        `INSERT INTO ${p}_runs (run_id, thread_id, agent_id, status, termination, steps, created_at, updated_at, state, parent_run_id, agent_digest, input_tokens, output_tokens) VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10, $11, $12)
         ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, termination = excluded.termination, steps = excluded.steps, updated_at = excluded.updated_at, state = excluded.state,
           ${RUN_TOTALS_UPDATE(`${p}_runs`)}`,
        [
          c.runId,
          c.threadId,
          c.agentId,
          c.status,
          c.termination !== undefined ? JSON.stringify(c.termination) : null,
          c.steps,
          c.updatedAt,
          c.status === 'done' ? null : JSON.stringify(c.runState),
          ...runMetaArgs(c),
        ],
      );
    });
  }

  async read(owner: string, key: string): Promise<JsonValue | undefined> {
    const [row] = await this.#q<{ data: string }>(`SELECT data FROM ${this.#p}_profiles WHERE owner = $1 AND key = $2`, [owner, key]);
    return row === undefined ? undefined : (JSON.parse(row.data) as JsonValue);
  }

  async write(owner: string, key: string, value: JsonValue): Promise<void> {
    await this.#q(`INSERT INTO ${this.#p}_profiles (owner, key, data) VALUES ($1, $2, $3) ON CONFLICT (owner, key) DO UPDATE SET data = excluded.data`, [
      owner,
      key,
      JSON.stringify(value),
    ]);
  }

  /** Drops this store's tables (tests). */
  async dropSchema(): Promise<void> {
    const p = this.#p;
    await this.#pool.query(
      `DROP TABLE IF EXISTS ${p}_threads, ${p}_messages, ${p}_runs, ${p}_profiles, ${p}_mailbox_jobs, ${p}_mailbox_generations, ${p}_thread_seq, ${p}_thread_leases, ${p}_thread_owners, ${p}_schema`,
    );
    this.#ready = undefined;
  }

  async loadThreadSeq(threadId: string): Promise<number> {
    const [row] = await this.#q<{ seq: string }>(`SELECT seq FROM ${this.#p}_thread_seq WHERE thread_id = $1`, [threadId]);
    return row === undefined ? 0 : Number(row.seq);
  }

  async saveThreadSeq(threadId: string, seq: number): Promise<void> {
    checkId('thread', threadId);
    checkSeq(seq);
    await this.#q(`INSERT INTO ${this.#p}_thread_seq (thread_id, seq) VALUES ($1, $2) ON CONFLICT (thread_id) DO UPDATE SET seq = excluded.seq`, [
      threadId,
      seq,
    ]);
  }

  /** One statement: the lease is written only when free, expired, the same run's, or stolen; else the holder is read back. */
  async takeLease(l: Parameters<Store['takeLease']>[0]): Promise<LeaseTake> {
    const p = this.#p;
    const taken = await this.#q(
      `INSERT INTO ${p}_thread_leases AS t (thread_id, run_id, owner, until, cancel_requested) VALUES ($1, $2, $3, $4, FALSE)
       ON CONFLICT (thread_id) DO UPDATE SET run_id = excluded.run_id, owner = excluded.owner, until = excluded.until,
         cancel_requested = (t.run_id = excluded.run_id AND t.owner = excluded.owner AND t.cancel_requested)
       WHERE $5 OR (t.run_id = excluded.run_id AND t.owner = excluded.owner)
       RETURNING thread_id`,
      [l.threadId, l.runId, l.owner, l.now + l.ttlMs, l.steal === true],
    );
    if (taken.length > 0) return { ok: true };
    const holder = await this.getLease(l.threadId);
    // Released between the two statements: try again.
    return holder === undefined ? this.takeLease(l) : { ok: false, holder };
  }

  async renewLeases(owner: string, now: number, ttlMs: number): Promise<ThreadLease[]> {
    const rows = await this.#q<Parameters<typeof leaseOf>[0]>(`UPDATE ${this.#p}_thread_leases SET until = $1 WHERE owner = $2 RETURNING *`, [
      now + ttlMs,
      owner,
    ]);
    return rows.map(leaseOf).sort((a, b) => (a.thread_id < b.thread_id ? -1 : 1));
  }

  async releaseLease(threadId: string, runId: string): Promise<void> {
    await this.#q(`DELETE FROM ${this.#p}_thread_leases WHERE thread_id = $1 AND run_id = $2`, [threadId, runId]);
  }

  async expiredLeases(now: number, limit: number): Promise<ThreadLease[]> {
    return (await this.#q<Parameters<typeof leaseOf>[0]>(`SELECT * FROM ${this.#p}_thread_leases WHERE until <= $1 ORDER BY until LIMIT $2`, [now, limit])).map(
      leaseOf,
    );
  }

  async takeOverLease(threadId: string, runId: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    const rows = await this.#q(
      `UPDATE ${this.#p}_thread_leases SET owner = $1, until = $2 WHERE thread_id = $3 AND run_id = $4 AND until <= $5 RETURNING thread_id`,
      [owner, now + ttlMs, threadId, runId, now],
    );
    return rows.length > 0;
  }

  async getLease(threadId: string): Promise<ThreadLease | undefined> {
    const [row] = await this.#q<Parameters<typeof leaseOf>[0]>(`SELECT * FROM ${this.#p}_thread_leases WHERE thread_id = $1`, [threadId]);
    return row === undefined ? undefined : leaseOf(row);
  }

  async requestCancel(runId: string): Promise<boolean> {
    return (await this.#q(`UPDATE ${this.#p}_thread_leases SET cancel_requested = TRUE WHERE run_id = $1 RETURNING thread_id`, [runId])).length > 0;
  }

  async clearLeases(): Promise<number> {
    return (await this.#q(`DELETE FROM ${this.#p}_thread_leases RETURNING thread_id`)).length;
  }

  async claimThread(threadId: string, principal: string): Promise<string> {
    checkId('thread', threadId);
    await this.#q(`INSERT INTO ${this.#p}_thread_owners (thread_id, principal) VALUES ($1, $2) ON CONFLICT (thread_id) DO NOTHING`, [threadId, principal]);
    return (await this.threadOwner(threadId)) as string;
  }

  async threadOwner(threadId: string): Promise<string | undefined> {
    const [row] = await this.#q<{ principal: string }>(`SELECT principal FROM ${this.#p}_thread_owners WHERE thread_id = $1`, [threadId]);
    return row?.principal;
  }

  async ownedThreads(principal: string): Promise<string[]> {
    return (await this.#q<{ thread_id: string }>(`SELECT thread_id FROM ${this.#p}_thread_owners WHERE principal = $1 ORDER BY thread_id`, [principal])).map(
      (r) => r.thread_id,
    );
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }

  // ---- mailbox: each operation locks the rows it needs (FOR UPDATE), applies the book's pure step and writes back, in one transaction ----

  async #mailbox<T>(
    load: (db: pg.PoolClient) => Promise<{ data: string }[]>,
    mailboxes: (db: pg.PoolClient) => Promise<string[]>,
    step: (d: MailboxData) => T,
    lockKey?: string,
  ): Promise<T> {
    const p = this.#p;
    return this.#tx(async (db) => {
      if (typeof lockKey === 'string') await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`${p}:${lockKey}`]);
      const rows = await load(db);
      const ids = await mailboxes(db);
      const gens =
        ids.length === 0
          ? []
          : (
              await db.query<{ mailbox_id: string; generation: number }>(
                `SELECT mailbox_id, generation FROM ${p}_mailbox_generations WHERE mailbox_id = ANY($1::text[]) FOR UPDATE`,
                [ids],
              )
            ).rows;
      const before = dataOf(rows, gens);
      const after = dataOf(rows, gens);
      const out = step(after);
      for (const j of changedJobs(before, after)) {
        await db.query(
          `INSERT INTO ${p}_mailbox_jobs (${JOB_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
           ON CONFLICT (job_id) DO UPDATE SET status = excluded.status, priority = excluded.priority, available_at = excluded.available_at, updated_at = excluded.updated_at,
             lease_until = excluded.lease_until, dedupe_key = excluded.dedupe_key, generation = excluded.generation, data = excluded.data`,
          jobRow(j),
        );
      }
      for (const [id, g] of Object.entries(after.generations)) {
        if (before.generations[id] !== g) {
          await db.query(
            `INSERT INTO ${p}_mailbox_generations (mailbox_id, generation) VALUES ($1, $2) ON CONFLICT (mailbox_id) DO UPDATE SET generation = excluded.generation`,
            [id, g],
          );
        }
      }
      return out;
    });
  }

  #rows(db: pg.PoolClient, where: string, args: unknown[], lock = 'FOR UPDATE'): Promise<{ data: string }[]> {
    return db.query<{ data: string }>(`SELECT data FROM ${this.#p}_mailbox_jobs WHERE ${where} ${lock}`, args).then((r) => r.rows);
  }

  enqueue(job: NewMailboxJob, now: number, defaults?: Pick<MailboxConfig, 'default_max_attempts'>): Promise<MailboxJob> {
    return this.#mailbox(
      (db) => this.#rows(db, `job_id = $1 OR (mailbox_id = $2 AND dedupe_key IS NOT NULL AND status NOT IN (${TERMINAL_LIST}))`, [job.job_id, job.mailbox_id]),
      async () => [job.mailbox_id],
      (d) => MailboxBook.enqueue(d, job, now, defaults),
      `mailbox:${job.mailbox_id}`,
    );
  }
  claim(consumer: string, token: string, leaseMs: number, now: number, limit: number): Promise<MailboxJob[]> {
    const p = this.#p;
    // Claims of every instance take one advisory lock, so "one claimed job per mailbox" holds across processes;
    // the candidate rows are taken with FOR UPDATE SKIP LOCKED.
    return this.#mailbox(
      async (db) => [
        ...(await this.#rows(
          db,
          `status = 'queued' AND available_at <= $1 ORDER BY priority, created_at, job_id LIMIT $2`,
          [now, Math.max(limit * 4, 32)],
          'FOR UPDATE SKIP LOCKED',
        )),
        ...(await this.#rows(db, `status = 'claimed'`, [], '')),
      ],
      async (db) =>
        (
          await db.query<{ mailbox_id: string }>(`SELECT DISTINCT mailbox_id FROM ${p}_mailbox_jobs WHERE status = 'queued' AND available_at <= $1`, [now])
        ).rows.map((r) => r.mailbox_id),
      (d) => MailboxBook.claim(d, consumer, token, leaseMs, now, limit),
      'claim',
    );
  }
  ack(jobId: string, token: string, now: number): Promise<MailboxJob> {
    return this.#mailbox(
      (db) => this.#rows(db, 'job_id = $1', [jobId]),
      async () => [],
      (d) => MailboxBook.update(d, jobId, (j) => Jobs.ack(j, token, now)),
    );
  }
  nack(
    jobId: string,
    token: string,
    error: string,
    permanent: boolean,
    now: number,
    config: Pick<MailboxConfig, 'default_retry_delay_ms' | 'max_retry_delay_ms'>,
  ): Promise<MailboxJob> {
    return this.#mailbox(
      (db) => this.#rows(db, 'job_id = $1', [jobId]),
      async () => [],
      (d) => MailboxBook.update(d, jobId, (j) => Jobs.nack(j, token, error, permanent, now, config)),
    );
  }
  cancelJob(jobId: string, now: number): Promise<MailboxJob | undefined> {
    return this.#mailbox(
      (db) => this.#rows(db, 'job_id = $1', [jobId]),
      async () => [],
      (d) => MailboxBook.cancel(d, jobId, now),
    );
  }
  extendLease(jobId: string, token: string, leaseMs: number, now: number): Promise<boolean> {
    return this.#mailbox(
      (db) => this.#rows(db, 'job_id = $1', [jobId]),
      async () => [],
      (d) => MailboxBook.extendLease(d, jobId, token, leaseMs, now),
    );
  }
  interrupt(mailboxId: string, now: number): Promise<MailboxInterrupt> {
    return this.#mailbox(
      (db) => this.#rows(db, `mailbox_id = $1 AND status IN ('queued', 'claimed')`, [mailboxId]),
      async () => [mailboxId],
      (d) => MailboxBook.interrupt(d, mailboxId, now),
      `mailbox:${mailboxId}`,
    );
  }
  reclaimExpired(now: number, limit: number): Promise<MailboxJob[]> {
    return this.#mailbox(
      (db) => this.#rows(db, `status = 'claimed' AND lease_until < $1 LIMIT $2`, [now, limit], 'FOR UPDATE SKIP LOCKED'),
      async () => [],
      (d) => MailboxBook.reclaimExpired(d, now, limit),
      'claim',
    );
  }
  async purgeTerminal(olderThan: number): Promise<number> {
    const rows = await this.#q(`DELETE FROM ${this.#p}_mailbox_jobs WHERE status IN (${TERMINAL_LIST}) AND updated_at < $1 RETURNING job_id`, [olderThan]);
    return rows.length;
  }
  async loadJob(jobId: string): Promise<MailboxJob | undefined> {
    const [row] = await this.#q<{ data: string }>(`SELECT data FROM ${this.#p}_mailbox_jobs WHERE job_id = $1`, [jobId]);
    return row === undefined ? undefined : (JSON.parse(row.data) as MailboxJob);
  }
  async listJobs(mailboxId: string, q: { readonly status?: MailboxJobStatus; readonly offset: number; readonly limit: number }): Promise<Page<MailboxJob>> {
    const rows = await this.#q<{ data: string }>(
      `SELECT data FROM ${this.#p}_mailbox_jobs WHERE mailbox_id = $1${q.status !== undefined ? ' AND status = $2' : ''}`,
      q.status !== undefined ? [mailboxId, q.status] : [mailboxId],
    );
    return MailboxBook.list(dataOf(rows, []), mailboxId, q);
  }

  async #tx<T>(body: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    await this.ensureSchema();
    return inTransaction(this.#pool, body);
  }
}
