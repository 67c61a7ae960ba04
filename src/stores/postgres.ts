import pg from 'pg';
import type { JsonValue } from '../contract/json.ts';
import type { TerminationReason } from '../contract/lifecycle.ts';
import type { Message } from '../contract/message.ts';
import type { PersistedState } from '../core/state/state-store.ts';
import type { RunCheckpoint, ThreadSnapshot } from '../runtime/thread-run-store.ts';
import { checkId, StoreFailure, type MessageQuery, type Page, type PageQuery, type RunQuery, type RunRecord, type Store, type ThreadRecord } from '../runtime/store.ts';
import { runOf, threadOf } from './sqlite.ts';

const PREFIX = /^[a-z][a-z0-9_]{0,30}$/;

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

  constructor(connection: string | pg.PoolConfig, options: { readonly prefix?: string } = {}) {
    const prefix = options.prefix ?? 'awaken';
    if (!PREFIX.test(prefix)) throw new StoreFailure({ code: 'validation', message: `invalid table prefix: ${prefix}` });
    this.#p = prefix;
    this.#pool = new pg.Pool(typeof connection === 'string' ? { connectionString: connection, max: 10 } : connection);
    // An idle client that loses its connection must not crash the process.
    this.#pool.on('error', () => undefined);
  }

  /** `with_prefix`: the same database, other tables. */
  static withPrefix(connection: string | pg.PoolConfig, prefix: string): PostgresStore {
    return new PostgresStore(connection, { prefix });
  }

  /** Creates the tables if they are missing (idempotent; runs once per store, on first use). */
  ensureSchema(): Promise<void> {
    const p = this.#p;
    this.#ready ??= this.#pool
      .query(
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
         CREATE TABLE IF NOT EXISTS ${p}_profiles (owner TEXT NOT NULL, key TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (owner, key));`,
      )
      .then(() => undefined)
      .catch((e: unknown) => {
        this.#ready = undefined;
        throw e;
      });
    return this.#ready;
  }

  async #q<R extends pg.QueryResultRow>(sql: string, args: unknown[] = []): Promise<R[]> {
    await this.ensureSchema();
    return (await this.#pool.query<R>(sql, args)).rows;
  }

  async createThread(t: { readonly id: string; readonly title?: string; readonly now: number }): Promise<ThreadRecord> {
    checkId('thread', t.id);
    const rows = await this.#q(`INSERT INTO ${this.#p}_threads (id, title, created_at, updated_at) VALUES ($1, $2, $3, $3) ON CONFLICT (id) DO NOTHING RETURNING id`, [
      t.id,
      t.title ?? null,
      t.now,
    ]);
    if (rows.length === 0) throw new StoreFailure({ code: 'already_exists', message: `thread already exists: ${t.id}` });
    return threadOf({ id: t.id, title: t.title ?? null, created_at: t.now, updated_at: t.now, latest_run_id: null });
  }

  async getThread(id: string): Promise<ThreadRecord | undefined> {
    const [row] = await this.#q<Parameters<typeof threadOf>[0]>(`SELECT id, title, created_at, updated_at, latest_run_id FROM ${this.#p}_threads WHERE id = $1`, [id]);
    return row === undefined ? undefined : threadOf(row);
  }

  async listThreads(q: PageQuery): Promise<Page<ThreadRecord>> {
    const rows = await this.#q<Parameters<typeof threadOf>[0]>(
      `SELECT id, title, created_at, updated_at, latest_run_id FROM ${this.#p}_threads ORDER BY updated_at DESC, id ASC LIMIT $1 OFFSET $2`,
      [q.limit, q.offset],
    );
    const [count] = await this.#q<{ n: string }>(`SELECT count(*) AS n FROM ${this.#p}_threads`);
    return { items: rows.map(threadOf), total: Number(count?.n ?? 0) };
  }

  async deleteThread(id: string): Promise<boolean> {
    return this.#tx(async (c) => {
      const r = await c.query(`DELETE FROM ${this.#p}_threads WHERE id = $1`, [id]);
      await c.query(`DELETE FROM ${this.#p}_messages WHERE thread_id = $1`, [id]);
      await c.query(`DELETE FROM ${this.#p}_runs WHERE thread_id = $1`, [id]);
      return (r.rowCount ?? 0) > 0;
    });
  }

  async listMessages(threadId: string, q: MessageQuery): Promise<Page<Message>> {
    const exists = await this.#q(`SELECT 1 FROM ${this.#p}_threads WHERE id = $1`, [threadId]);
    if (exists.length === 0) throw new StoreFailure({ code: 'not_found', message: `thread not found: ${threadId}` });
    const filter = q.visibility === 'all' ? '' : ' AND NOT internal';
    const rows = await this.#q<{ data: string }>(`SELECT data FROM ${this.#p}_messages WHERE thread_id = $1${filter} ORDER BY seq LIMIT $2 OFFSET $3`, [threadId, q.limit, q.offset]);
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
    if (q.status !== undefined) (args.push(q.status), where.push(`status = $${args.length}`));
    if (q.threadId !== undefined) (args.push(q.threadId), where.push(`thread_id = $${args.length}`));
    const clause = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
    const rows = await this.#q<Parameters<typeof runOf>[0]>(
      `SELECT * FROM ${this.#p}_runs${clause} ORDER BY created_at DESC, run_id ASC LIMIT $${args.length + 1} OFFSET $${args.length + 2}`,
      [...args, q.limit, q.offset],
    );
    const [count] = await this.#q<{ n: string }>(`SELECT count(*) AS n FROM ${this.#p}_runs${clause}`, args);
    return { items: rows.map(runOf), total: Number(count?.n ?? 0) };
  }

  async finishRun(runId: string, termination: TerminationReason, now: number): Promise<boolean> {
    const rows = await this.#q(`UPDATE ${this.#p}_runs SET status = 'done', termination = $2, updated_at = $3 WHERE run_id = $1 RETURNING run_id`, [runId, JSON.stringify(termination), now]);
    return rows.length > 0;
  }

  async loadThread(threadId: string): Promise<ThreadSnapshot | undefined> {
    const [row] = await this.#q<{ state: string | null }>(`SELECT state FROM ${this.#p}_threads WHERE id = $1`, [threadId]);
    if (row === undefined) return undefined;
    const messages = (await this.#q<{ data: string }>(`SELECT data FROM ${this.#p}_messages WHERE thread_id = $1 ORDER BY seq`, [threadId])).map((r) => JSON.parse(r.data) as Message);
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
      if (c.expectedMessageCount !== undefined && c.expectedMessageCount !== actual) {
        throw new StoreFailure({ code: 'version_conflict', message: `version conflict: expected ${c.expectedMessageCount}, actual ${actual}`, expected: c.expectedMessageCount, actual });
      }
      await db.query(`UPDATE ${p}_threads SET updated_at = $2, latest_run_id = $3, state = $4, message_count = $5 WHERE id = $1`, [
        c.threadId,
        c.updatedAt,
        c.runId,
        JSON.stringify(c.threadState),
        c.messages.length,
      ]);
      await db.query(`DELETE FROM ${p}_messages WHERE thread_id = $1`, [c.threadId]);
      if (c.messages.length > 0) {
        await db.query(
          `INSERT INTO ${p}_messages (thread_id, seq, internal, data)
           SELECT $1, t.ord - 1, t.internal, t.data FROM unnest($2::text[], $3::boolean[]) WITH ORDINALITY AS t(data, internal, ord)`,
          [c.threadId, c.messages.map((m) => JSON.stringify(m)), c.messages.map((m) => m.visibility === 'internal')],
        );
      }
      await db.query(
        `INSERT INTO ${p}_runs (run_id, thread_id, agent_id, status, termination, steps, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
         ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, termination = excluded.termination, steps = excluded.steps, updated_at = excluded.updated_at`,
        [c.runId, c.threadId, c.agentId, c.status, c.termination !== undefined ? JSON.stringify(c.termination) : null, c.steps, c.updatedAt],
      );
    });
  }

  async read(owner: string, key: string): Promise<JsonValue | undefined> {
    const [row] = await this.#q<{ data: string }>(`SELECT data FROM ${this.#p}_profiles WHERE owner = $1 AND key = $2`, [owner, key]);
    return row === undefined ? undefined : (JSON.parse(row.data) as JsonValue);
  }

  async write(owner: string, key: string, value: JsonValue): Promise<void> {
    await this.#q(`INSERT INTO ${this.#p}_profiles (owner, key, data) VALUES ($1, $2, $3) ON CONFLICT (owner, key) DO UPDATE SET data = excluded.data`, [owner, key, JSON.stringify(value)]);
  }

  /** Drops this store's tables (tests). */
  async dropSchema(): Promise<void> {
    const p = this.#p;
    await this.#pool.query(`DROP TABLE IF EXISTS ${p}_threads, ${p}_messages, ${p}_runs, ${p}_profiles`);
    this.#ready = undefined;
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }

  async #tx<T>(body: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    await this.ensureSchema();
    const client = await this.#pool.connect();
    try {
      await client.query('BEGIN');
      const out = await body(client);
      await client.query('COMMIT');
      return out;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  }
}
