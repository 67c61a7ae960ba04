// Over 500 lines: the SQLite store implements the whole Store contract (threads, messages, runs,
// leases, seq marks, the mailbox) over one connection, with its migrations beside it: one schema, read whole.
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { JsonValue } from '../contract/json.ts';
import { TerminationReasonSchema, type RunStatus, type TerminationReason } from '../contract/lifecycle.ts';
import type { Message } from '../contract/message.ts';
import type { PersistedState } from '../core/state/state-ops.ts';
import type { RunCheckpoint, ThreadSnapshot } from '../runtime/thread-run-store.ts';
import { Jobs, type MailboxConfig, type MailboxJob, type MailboxJobStatus } from '../core/mailbox/job.ts';
import type { MailboxInterrupt, NewMailboxJob } from '../runtime/mailbox-store.ts';
import { MailboxBook, type MailboxData } from './mailbox-book.ts';
import { WalCheckpointer } from './wal-checkpointer.ts';
import { changedJobs, dataOf, JOB_COLUMNS, jobRow, mailboxSchema, TERMINAL_LIST } from './mailbox-sql.ts';
import {
  appendStart,
  checkExpectedCount,
  checkFence,
  patchedThread,
  newThreadRecord,
  tokenCount,
  type NewThread,
  type ThreadCustom,
  type ThreadPatch,
  checkId,
  checkSeq,
  leaseAfterTake,
  runEnded,
  StoreFailure,
  type LeaseTake,
  type ThreadLease,
  type MessageQuery,
  type Page,
  type RunQuery,
  type ThreadQuery,
  foldCase,
  hasRunFilter,
  likePattern,
  type RunRecord,
  type Store,
  type ThreadRecord,
} from '../runtime/store.ts';

/** SQLite's default automatic checkpoint, in pages of log. */
const SQLITE_AUTOCHECKPOINT = 1000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS awaken_threads (
  id TEXT PRIMARY KEY, title TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  latest_run_id TEXT, state TEXT, message_count INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS awaken_messages (
  thread_id TEXT NOT NULL, seq INTEGER NOT NULL, internal INTEGER NOT NULL, data TEXT NOT NULL,
  PRIMARY KEY (thread_id, seq));
CREATE TABLE IF NOT EXISTS awaken_runs (
  run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, agent_id TEXT NOT NULL, status TEXT NOT NULL,
  termination TEXT, steps INTEGER NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS awaken_runs_thread ON awaken_runs (thread_id, created_at);
CREATE TABLE IF NOT EXISTS awaken_profiles (owner TEXT NOT NULL, key TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (owner, key));
`;

/**
 * Changes to the schema since version 0 (the first release's tables, above): entry `i` takes a
 * database from version `i` to `i + 1` (`PRAGMA user_version`), each in one transaction on open.
 */
export const SQLITE_MIGRATIONS: readonly string[] = [
  // 1: the durable mark of each thread log's sequence (ThreadSeqStore).
  `CREATE TABLE IF NOT EXISTS awaken_thread_seq (thread_id TEXT PRIMARY KEY, seq INTEGER NOT NULL);`,
  // 2: thread leases (ThreadLeaseStore).
  `CREATE TABLE IF NOT EXISTS awaken_thread_leases (
     thread_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, owner TEXT NOT NULL, until INTEGER NOT NULL, cancel_requested INTEGER NOT NULL DEFAULT 0);
   CREATE INDEX IF NOT EXISTS awaken_thread_leases_owner ON awaken_thread_leases (owner);
   CREATE INDEX IF NOT EXISTS awaken_thread_leases_run ON awaken_thread_leases (run_id);`,
  // 3: thread owners (ThreadOwnerStore).
  `CREATE TABLE IF NOT EXISTS awaken_thread_owners (thread_id TEXT PRIMARY KEY, principal TEXT NOT NULL);
   CREATE INDEX IF NOT EXISTS awaken_thread_owners_principal ON awaken_thread_owners (principal);`,
  // 4: the run-scoped state of unfinished runs (a waiting run is revived from it).
  `ALTER TABLE awaken_runs ADD COLUMN state TEXT;`,
  // 5: thread metadata and run totals; every column nullable, so the rows of earlier releases read as before.
  `ALTER TABLE awaken_threads ADD COLUMN resource_id TEXT;
   ALTER TABLE awaken_threads ADD COLUMN parent_thread_id TEXT;
   ALTER TABLE awaken_threads ADD COLUMN custom TEXT;
   ALTER TABLE awaken_runs ADD COLUMN parent_run_id TEXT;
   ALTER TABLE awaken_runs ADD COLUMN input_tokens INTEGER;
   ALTER TABLE awaken_runs ADD COLUMN output_tokens INTEGER;`,
  // 6: what each run's agent was when it started; nullable, so the runs of earlier releases read without it.
  `ALTER TABLE awaken_runs ADD COLUMN agent_digest TEXT;`,
  // 7: a thread's archived mark (1, or NULL while it is not archived: the rows of earlier releases are not).
  `ALTER TABLE awaken_threads ADD COLUMN archived INTEGER;`,
];

/**
 * What a checkpoint of a run already stored does to its added columns (SQLite and PostgreSQL say it
 * alike): the first parent and the first agent digest named are kept, the checkpoint's tokens are
 * added to the totals.
 */
export const RUN_TOTALS_UPDATE = (table: string): string =>
  `parent_run_id = COALESCE(${table}.parent_run_id, excluded.parent_run_id),
   agent_digest = COALESCE(${table}.agent_digest, excluded.agent_digest),
   input_tokens = CASE WHEN excluded.input_tokens IS NULL THEN ${table}.input_tokens ELSE COALESCE(${table}.input_tokens, 0) + excluded.input_tokens END,
   output_tokens = CASE WHEN excluded.output_tokens IS NULL THEN ${table}.output_tokens ELSE COALESCE(${table}.output_tokens, 0) + excluded.output_tokens END`;

/** The columns of a thread record (`threadOf`) in the SQL stores, of the table under `alias` when given. */
export const threadColumns = (alias?: string): string =>
  ['id', 'title', 'created_at', 'updated_at', 'latest_run_id', 'resource_id', 'parent_thread_id', 'custom', 'archived']
    .map((c) => (alias === undefined ? c : `${alias}.${c}`))
    .join(', ');

interface LeaseRow {
  thread_id: string;
  run_id: string;
  owner: string;
  until: number | string;
  cancel_requested: number | boolean;
}
export const leaseOf = (r: LeaseRow): ThreadLease => ({
  thread_id: r.thread_id,
  run_id: r.run_id,
  owner: r.owner,
  until: Number(r.until),
  cancel_requested: r.cancel_requested === true || Number(r.cancel_requested) === 1,
});

interface ThreadRow {
  id: string;
  title: string | null;
  created_at: number;
  updated_at: number;
  latest_run_id: string | null;
  resource_id?: string | null;
  parent_thread_id?: string | null;
  custom?: string | null;
  archived?: number | string | null;
  state: string | null;
  message_count: number;
}
interface RunRow {
  run_id: string;
  thread_id: string;
  agent_id: string;
  status: string;
  termination: string | null;
  steps: number;
  created_at: number;
  updated_at: number;
  parent_run_id?: string | null;
  agent_digest?: string | null;
  input_tokens?: number | string | null;
  output_tokens?: number | string | null;
}

export const threadOf = (r: Omit<ThreadRow, 'state' | 'message_count'>): ThreadRecord => ({
  id: r.id,
  ...(r.title !== null ? { title: r.title } : {}),
  created_at: Number(r.created_at),
  updated_at: Number(r.updated_at),
  ...(r.latest_run_id !== null ? { latest_run_id: r.latest_run_id } : {}),
  ...(r.resource_id != null ? { resource_id: r.resource_id } : {}),
  ...(r.parent_thread_id != null ? { parent_thread_id: r.parent_thread_id } : {}),
  ...(r.custom != null ? { custom: JSON.parse(r.custom) as ThreadCustom } : {}),
  ...(r.archived != null && Number(r.archived) === 1 ? { archived: true as const } : {}),
});

/** A thread's archived mark as its column holds it: 1, or NULL while it is not archived. */
export const archivedArg = (t: Pick<ThreadRecord, 'archived'>): number | null => (t.archived === true ? 1 : null);

/** A thread's metadata columns as SQL parameters: resource, parent, custom (JSON text). */
export const threadMetaArgs = (t: Pick<ThreadRecord, 'resource_id' | 'parent_thread_id' | 'custom'>): (string | null)[] => [
  t.resource_id ?? null,
  t.parent_thread_id ?? null,
  t.custom !== undefined ? JSON.stringify(t.custom) : null,
];

/** A run's added columns as SQL parameters: the parent run, the agent digest, and the checkpoint's tokens (NULL: none reported). */
export const runMetaArgs = (c: RunCheckpoint): (string | number | null)[] => [
  c.parentRunId ?? null,
  c.agentDigest ?? null,
  c.tokens !== undefined ? tokenCount(c.tokens.input) : null,
  c.tokens !== undefined ? tokenCount(c.tokens.output) : null,
];

export const runOf = (r: RunRow): RunRecord => ({
  run_id: r.run_id,
  thread_id: r.thread_id,
  agent_id: r.agent_id,
  status: r.status as RunStatus,
  ...(r.termination !== null
    ? { termination: TerminationReasonSchema.parse(typeof r.termination === 'string' ? JSON.parse(r.termination) : r.termination) }
    : {}),
  steps: Number(r.steps),
  created_at: Number(r.created_at),
  updated_at: Number(r.updated_at),
  ...(r.parent_run_id != null ? { parent_run_id: r.parent_run_id } : {}),
  ...(r.agent_digest != null ? { agent_digest: r.agent_digest } : {}),
  ...(r.input_tokens != null || r.output_tokens != null ? { input_tokens: Number(r.input_tokens ?? 0), output_tokens: Number(r.output_tokens ?? 0) } : {}),
});

/** What a checkpoint checks first, in one read: its run's status and its thread's message count (NULL: none stored). */
const CHECKPOINT_READ = `SELECT (SELECT status FROM awaken_runs WHERE run_id = ?) AS status, (SELECT message_count FROM awaken_threads WHERE id = ?) AS message_count`;
const CHECKPOINT_THREAD = `INSERT INTO awaken_threads (id, created_at, updated_at, latest_run_id, state, message_count) VALUES (?, ?, ?, ?, ?, ?)
  ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at, latest_run_id = excluded.latest_run_id, state = excluded.state, message_count = excluded.message_count`;
/** The thread's lease, read for a fenced checkpoint (the text `takeLease` and `getLease` run too: one statement). */
const LEASE_READ = 'SELECT * FROM awaken_thread_leases WHERE thread_id = ?';
/** The run's row (the parameters of `runMetaArgs` last). */
const CHECKPOINT_RUN = `INSERT INTO awaken_runs (run_id, thread_id, agent_id, status, termination, steps, created_at, updated_at, state, parent_run_id, agent_digest, input_tokens, output_tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, termination = excluded.termination, steps = excluded.steps, updated_at = excluded.updated_at, state = excluded.state,
    ${RUN_TOTALS_UPDATE('awaken_runs')}`;

/**
 * The embedded default store (book: 使用文件存储 / SQLite): one database file, WAL journal, every
 * checkpoint one transaction.
 */
export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  readonly #db: Database.Database;
  /**
   * Statements by their text, compiled once per open database: better-sqlite3 compiles the SQL at
   * every `prepare`, which cost more than most writes themselves. Only texts from a bounded set come here.
   */
  readonly #statements = new Map<string, Database.Statement>();
  /** A checkpoint in one transaction (wrapped once: `transaction` makes a new function at each call). */
  readonly #checkpoint: (c: RunCheckpoint) => void;
  /** Copies the log into the file off this thread (a file database only). */
  readonly #wal: WalCheckpointer | undefined;

  constructor(path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.#db = new Database(path);
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = NORMAL');
    this.#db.pragma('busy_timeout = 5000');
    if (path !== ':memory:' && path !== '') {
      // The checkpointer's thread copies the log; the writer's own automatic checkpoint stays as a backstop for a log it lets grow larger.
      this.#db.pragma(`wal_autocheckpoint = ${4 * SQLITE_AUTOCHECKPOINT}`);
      this.#wal = new WalCheckpointer(path, () => this.#db.pragma(`wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT}`));
    }
    // Case folding as JavaScript does it (SQLite's lower() folds ASCII only): the thread search's titles.
    this.#db.function('awaken_fold', { deterministic: true }, (s: unknown) => (typeof s === 'string' ? foldCase(s) : null));
    this.#db.exec(SCHEMA);
    this.#db.exec(mailboxSchema('awaken', 'INTEGER'));
    this.#migrate(path);
    this.#checkpoint = this.#db.transaction((c: RunCheckpoint) => this.#writeCheckpoint(c));
  }

  #sql(text: string): Database.Statement {
    let statement = this.#statements.get(text);
    if (statement === undefined) {
      statement = this.#db.prepare(text);
      this.#statements.set(text, statement);
    }
    return statement;
  }

  /** Brings the schema up to this release's version; a database from a newer release is refused, not misread. */
  #migrate(path: string): void {
    const found = Number(this.#db.pragma('user_version', { simple: true }));
    if (found > SQLITE_MIGRATIONS.length) {
      this.#db.close();
      throw new StoreFailure({ code: 'validation', message: `${path} holds store version ${found}; this release reads up to ${SQLITE_MIGRATIONS.length}` });
    }
    for (let v = found; v < SQLITE_MIGRATIONS.length; v++) {
      this.#db.transaction(() => {
        this.#db.exec(SQLITE_MIGRATIONS[v] as string);
        this.#db.pragma(`user_version = ${v + 1}`);
      })();
    }
  }

  /** The schema version of the open database. */
  get schemaVersion(): number {
    return Number(this.#db.pragma('user_version', { simple: true }));
  }

  async createThread(t: NewThread): Promise<ThreadRecord> {
    checkId('thread', t.id);
    const record: ThreadRecord = newThreadRecord(t);
    const r = this.#sql(
      'INSERT INTO awaken_threads (id, title, created_at, updated_at, resource_id, parent_thread_id, custom) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING',
    ).run(t.id, t.title ?? null, t.now, t.now, ...threadMetaArgs(record));
    if (r.changes === 0) throw new StoreFailure({ code: 'already_exists', message: `thread already exists: ${t.id}` });
    return record;
  }

  async getThread(id: string): Promise<ThreadRecord | undefined> {
    const row = this.#sql(`SELECT ${threadColumns()} FROM awaken_threads WHERE id = ?`).get(id) as ThreadRow | undefined;
    return row === undefined ? undefined : threadOf(row);
  }

  async updateThread(id: string, patch: ThreadPatch, now: number): Promise<ThreadRecord | undefined> {
    return this.#db
      .transaction(() => {
        const row = this.#sql(`SELECT ${threadColumns()} FROM awaken_threads WHERE id = ?`).get(id) as ThreadRow | undefined;
        if (row === undefined) return undefined;
        const next = patchedThread(threadOf(row), patch, now);
        this.#sql('UPDATE awaken_threads SET title = ?, updated_at = ?, resource_id = ?, parent_thread_id = ?, custom = ?, archived = ? WHERE id = ?').run(
          next.title ?? null,
          now,
          ...threadMetaArgs(next),
          archivedArg(next),
          id,
        );
        return next;
      })
      .immediate();
  }

  async listThreads(q: ThreadQuery): Promise<Page<ThreadRecord>> {
    // The search is one query (threadMatcher says the same over objects): thread ids and run ids are
    // ASCII (ID_PATTERN), which LIKE compares in any case; a title is folded as JavaScript folds it.
    const where: string[] = [];
    const args: (string | number)[] = [];
    if (q.owner !== undefined) where.push('EXISTS (SELECT 1 FROM awaken_thread_owners o WHERE o.thread_id = t.id AND o.principal = ?)'), args.push(q.owner);
    if (q.text !== undefined && q.text !== '') {
      const like = likePattern(q.text);
      where.push(
        `(t.id LIKE ? ESCAPE '\\' OR instr(awaken_fold(t.title), ?) > 0 OR EXISTS (SELECT 1 FROM awaken_runs r WHERE r.thread_id = t.id AND r.run_id LIKE ? ESCAPE '\\'))`,
      );
      args.push(like, foldCase(q.text), like);
    }
    // Ids compare as SQLite's default (binary) collation compares them: by their characters' codes, as `isAfter` does.
    if (q.after !== undefined)
      where.push('(t.updated_at < ? OR (t.updated_at = ? AND t.id > ?))'), args.push(q.after.updated_at, q.after.updated_at, q.after.id);
    if (hasRunFilter(q.run)) {
      const run = ['r.thread_id = t.id'];
      if (q.run.agentId !== undefined) run.push('r.agent_id = ?'), args.push(q.run.agentId);
      if (q.run.status !== undefined) run.push('r.status = ?'), args.push(q.run.status);
      if (q.run.failed === true) run.push(`json_extract(r.termination, '$.type') = 'error'`);
      where.push(`EXISTS (SELECT 1 FROM awaken_runs r WHERE ${run.join(' AND ')})`);
    }
    const clause = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
    const rows = this.#sql(`SELECT ${threadColumns('t')} FROM awaken_threads t${clause} ORDER BY t.updated_at DESC, t.id ASC LIMIT ? OFFSET ?`).all(
      ...args,
      q.limit,
      q.offset,
    ) as ThreadRow[];
    const total = (this.#sql(`SELECT count(*) AS n FROM awaken_threads t${clause}`).get(...args) as { n: number }).n;
    return { items: rows.map(threadOf), total };
  }

  async deleteThread(id: string): Promise<boolean> {
    return this.#db.transaction(() => {
      const r = this.#sql('DELETE FROM awaken_threads WHERE id = ?').run(id);
      this.#sql('DELETE FROM awaken_messages WHERE thread_id = ?').run(id);
      this.#sql('DELETE FROM awaken_runs WHERE thread_id = ?').run(id);
      this.#sql('DELETE FROM awaken_thread_owners WHERE thread_id = ?').run(id);
      return r.changes > 0;
    })();
  }

  async listMessages(threadId: string, q: MessageQuery): Promise<Page<Message>> {
    if (this.#sql('SELECT 1 FROM awaken_threads WHERE id = ?').get(threadId) === undefined) {
      throw new StoreFailure({ code: 'not_found', message: `thread not found: ${threadId}` });
    }
    const filter = q.visibility === 'all' ? '' : ' AND internal = 0';
    const rows = this.#sql(`SELECT data FROM awaken_messages WHERE thread_id = ?${filter} ORDER BY seq LIMIT ? OFFSET ?`).all(threadId, q.limit, q.offset) as {
      data: string;
    }[];
    const total = (this.#sql(`SELECT count(*) AS n FROM awaken_messages WHERE thread_id = ?${filter}`).get(threadId) as { n: number }).n;
    return { items: rows.map((r) => JSON.parse(r.data) as Message), total };
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const row = this.#sql('SELECT * FROM awaken_runs WHERE run_id = ?').get(runId) as RunRow | undefined;
    return row === undefined ? undefined : runOf(row);
  }

  async listRuns(q: RunQuery): Promise<Page<RunRecord>> {
    const where: string[] = [];
    const args: (string | number)[] = [];
    if (q.status !== undefined) where.push('status = ?'), args.push(q.status);
    if (q.threadId !== undefined) where.push('thread_id = ?'), args.push(q.threadId);
    const clause = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
    const rows = this.#sql(`SELECT * FROM awaken_runs${clause} ORDER BY created_at DESC, run_id ASC LIMIT ? OFFSET ?`).all(
      ...args,
      q.limit,
      q.offset,
    ) as RunRow[];
    const total = (this.#sql(`SELECT count(*) AS n FROM awaken_runs${clause}`).get(...args) as { n: number }).n;
    return { items: rows.map(runOf), total };
  }

  async finishRun(runId: string, termination: TerminationReason, now: number): Promise<boolean> {
    const r = this.#sql(`UPDATE awaken_runs SET status = 'done', termination = ?, updated_at = ?, state = NULL WHERE run_id = ?`).run(
      JSON.stringify(termination),
      now,
      runId,
    );
    return r.changes > 0;
  }

  async loadRunState(runId: string): Promise<PersistedState | undefined> {
    const row = this.#sql(`SELECT state FROM awaken_runs WHERE run_id = ? AND status <> 'done'`).get(runId) as { state: string | null } | undefined;
    return row?.state == null ? undefined : (JSON.parse(row.state) as PersistedState);
  }

  async loadThread(threadId: string): Promise<ThreadSnapshot | undefined> {
    const row = this.#sql('SELECT state FROM awaken_threads WHERE id = ?').get(threadId) as { state: string | null } | undefined;
    if (row === undefined) return undefined;
    const messages = (this.#sql('SELECT data FROM awaken_messages WHERE thread_id = ? ORDER BY seq').all(threadId) as { data: string }[]).map(
      (r) => JSON.parse(r.data) as Message,
    );
    return { messages, ...(row.state !== null ? { threadState: JSON.parse(row.state) as PersistedState } : {}) };
  }

  async checkpoint(c: RunCheckpoint): Promise<void> {
    checkId('thread', c.threadId);
    checkId('run', c.runId);
    this.#checkpoint(c);
    this.#wal?.committed();
  }

  /** The body of a checkpoint, inside its transaction (`#checkpoint`). */
  #writeCheckpoint(c: RunCheckpoint): void {
    const held = this.#sql(CHECKPOINT_READ).get(c.runId, c.threadId) as { status: string | null; message_count: number | null };
    if (held.status === 'done') throw runEnded(c.runId);
    // Read in this transaction, so no takeover lands between the check and the write; a checkpoint without a fence reads nothing more.
    if (c.fence !== undefined) {
      const lease = this.#sql(LEASE_READ).get(c.threadId) as LeaseRow | undefined;
      checkFence(c, lease);
    }
    const actual = held.message_count ?? 0;
    checkExpectedCount(c, actual);
    this.#sql(CHECKPOINT_THREAD).run(c.threadId, c.updatedAt, c.updatedAt, c.runId, JSON.stringify(c.threadState), c.messages.length);
    // The writer says how many leading messages are as it left them (`appendFrom`): only the rest is
    // written. Without that, when the stored messages are a prefix (by id) only the new ones are
    // written; otherwise (a summary inserted, say) the thread's messages are rewritten.
    let from = appendStart(c, actual);
    if (from !== undefined) {
      if (from < actual) this.#sql('DELETE FROM awaken_messages WHERE thread_id = ? AND seq >= ?').run(c.threadId, from);
    } else {
      const storedIds = (
        this.#sql(`SELECT json_extract(data, '$.id') AS id FROM awaken_messages WHERE thread_id = ? ORDER BY seq`).all(c.threadId) as {
          id: string | null;
        }[]
      ).map((r) => r.id);
      const grown = storedIds.length <= c.messages.length && storedIds.every((id, i) => id !== null && id === c.messages[i]?.id);
      from = grown ? storedIds.length : 0;
      if (!grown) this.#sql('DELETE FROM awaken_messages WHERE thread_id = ?').run(c.threadId);
    }
    if (from < c.messages.length) {
      const insert = this.#sql('INSERT INTO awaken_messages (thread_id, seq, internal, data) VALUES (?, ?, ?, ?)');
      for (let i = from; i < c.messages.length; i++) {
        const m = c.messages[i] as Message;
        insert.run(c.threadId, i, m.visibility === 'internal' ? 1 : 0, JSON.stringify(m));
      }
    }
    this.#sql(CHECKPOINT_RUN).run(
      c.runId,
      c.threadId,
      c.agentId,
      c.status,
      c.termination !== undefined ? JSON.stringify(c.termination) : null,
      c.steps,
      c.updatedAt,
      c.updatedAt,
      c.status === 'done' ? null : JSON.stringify(c.runState),
      ...runMetaArgs(c),
    );
  }

  async read(owner: string, key: string): Promise<JsonValue | undefined> {
    const row = this.#sql('SELECT data FROM awaken_profiles WHERE owner = ? AND key = ?').get(owner, key) as { data: string } | undefined;
    return row === undefined ? undefined : (JSON.parse(row.data) as JsonValue);
  }

  async write(owner: string, key: string, value: JsonValue): Promise<void> {
    this.#sql('INSERT INTO awaken_profiles (owner, key, data) VALUES (?, ?, ?) ON CONFLICT (owner, key) DO UPDATE SET data = excluded.data').run(
      owner,
      key,
      JSON.stringify(value),
    );
  }

  async loadThreadSeq(threadId: string): Promise<number> {
    const row = this.#sql('SELECT seq FROM awaken_thread_seq WHERE thread_id = ?').get(threadId) as { seq: number } | undefined;
    return row === undefined ? 0 : Number(row.seq);
  }

  async saveThreadSeq(threadId: string, seq: number): Promise<void> {
    checkId('thread', threadId);
    checkSeq(seq);
    this.#sql('INSERT INTO awaken_thread_seq (thread_id, seq) VALUES (?, ?) ON CONFLICT (thread_id) DO UPDATE SET seq = excluded.seq').run(threadId, seq);
  }

  async takeLease(l: Parameters<Store['takeLease']>[0]): Promise<LeaseTake> {
    return this.#db
      .transaction((): LeaseTake => {
        const row = this.#sql(LEASE_READ).get(l.threadId) as LeaseRow | undefined;
        const r = leaseAfterTake(row === undefined ? undefined : leaseOf(row), l);
        if (!r.ok) return { ok: false, holder: r.holder };
        const n = r.lease as ThreadLease;
        this.#sql(
          `INSERT INTO awaken_thread_leases (thread_id, run_id, owner, until, cancel_requested) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (thread_id) DO UPDATE SET run_id = excluded.run_id, owner = excluded.owner, until = excluded.until, cancel_requested = excluded.cancel_requested`,
        ).run(n.thread_id, n.run_id, n.owner, n.until, n.cancel_requested ? 1 : 0);
        return { ok: true };
      })
      .immediate();
  }

  async renewLeases(owner: string, now: number, ttlMs: number): Promise<ThreadLease[]> {
    const rows = this.#sql('UPDATE awaken_thread_leases SET until = ? WHERE owner = ? RETURNING *').all(now + ttlMs, owner) as LeaseRow[];
    return rows.map(leaseOf).sort((a, b) => (a.thread_id < b.thread_id ? -1 : 1));
  }

  async releaseLease(threadId: string, runId: string): Promise<void> {
    this.#sql('DELETE FROM awaken_thread_leases WHERE thread_id = ? AND run_id = ?').run(threadId, runId);
  }

  async expiredLeases(now: number, limit: number): Promise<ThreadLease[]> {
    return (this.#sql('SELECT * FROM awaken_thread_leases WHERE until <= ? ORDER BY until LIMIT ?').all(now, limit) as LeaseRow[]).map(leaseOf);
  }

  async takeOverLease(threadId: string, runId: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    return (
      this.#sql('UPDATE awaken_thread_leases SET owner = ?, until = ? WHERE thread_id = ? AND run_id = ? AND until <= ?').run(
        owner,
        now + ttlMs,
        threadId,
        runId,
        now,
      ).changes > 0
    );
  }

  async getLease(threadId: string): Promise<ThreadLease | undefined> {
    const row = this.#sql(LEASE_READ).get(threadId) as LeaseRow | undefined;
    return row === undefined ? undefined : leaseOf(row);
  }

  async requestCancel(runId: string): Promise<boolean> {
    return this.#sql('UPDATE awaken_thread_leases SET cancel_requested = 1 WHERE run_id = ?').run(runId).changes > 0;
  }

  async clearLeases(): Promise<number> {
    return this.#sql('DELETE FROM awaken_thread_leases').run().changes;
  }

  async claimThread(threadId: string, principal: string): Promise<string> {
    checkId('thread', threadId);
    this.#sql('INSERT INTO awaken_thread_owners (thread_id, principal) VALUES (?, ?) ON CONFLICT (thread_id) DO NOTHING').run(threadId, principal);
    return (await this.threadOwner(threadId)) as string;
  }

  async threadOwner(threadId: string): Promise<string | undefined> {
    return (this.#sql('SELECT principal FROM awaken_thread_owners WHERE thread_id = ?').get(threadId) as { principal: string } | undefined)?.principal;
  }

  async ownedThreads(principal: string): Promise<string[]> {
    return (this.#sql('SELECT thread_id FROM awaken_thread_owners WHERE principal = ? ORDER BY thread_id').all(principal) as { thread_id: string }[]).map(
      (r) => r.thread_id,
    );
  }

  async close(): Promise<void> {
    await this.#wal?.close();
    this.#db.close();
  }

  // ---- mailbox: each operation loads the rows it needs, applies the book's pure step and writes back, in one transaction ----

  /** Runs `step` on the loaded subset inside one transaction and writes back every job it changed. */
  #mailbox<T>(load: () => { data: string }[], mailboxes: () => string[], step: (d: MailboxData) => T): T {
    return this.#db.transaction(() => {
      const rows = load();
      const ids = mailboxes();
      const gens =
        ids.length === 0
          ? []
          : (this.#db
              .prepare(`SELECT mailbox_id, generation FROM awaken_mailbox_generations WHERE mailbox_id IN (${ids.map(() => '?').join(', ')})`)
              .all(...ids) as { mailbox_id: string; generation: number }[]);
      const before = dataOf(rows, gens);
      const after = dataOf(rows, gens);
      const out = step(after);
      const upsert = this.#sql(
        `INSERT OR REPLACE INTO awaken_mailbox_jobs (${JOB_COLUMNS}) VALUES (${JOB_COLUMNS.split(',')
          .map(() => '?')
          .join(', ')})`,
      );
      for (const j of changedJobs(before, after)) upsert.run(...jobRow(j));
      for (const [id, g] of Object.entries(after.generations)) {
        if (before.generations[id] !== g) this.#sql('INSERT OR REPLACE INTO awaken_mailbox_generations (mailbox_id, generation) VALUES (?, ?)').run(id, g);
      }
      return out;
    })();
  }

  #jobRows(where: string, ...args: (string | number)[]): { data: string }[] {
    return this.#sql(`SELECT data FROM awaken_mailbox_jobs WHERE ${where}`).all(...args) as { data: string }[];
  }

  async enqueue(job: NewMailboxJob, now: number, defaults?: Pick<MailboxConfig, 'default_max_attempts'>): Promise<MailboxJob> {
    return this.#mailbox(
      () => this.#jobRows(`job_id = ? OR (mailbox_id = ? AND dedupe_key IS NOT NULL AND status NOT IN (${TERMINAL_LIST}))`, job.job_id, job.mailbox_id),
      () => [job.mailbox_id],
      (d) => MailboxBook.enqueue(d, job, now, defaults),
    );
  }
  async claim(consumer: string, token: string, leaseMs: number, now: number, limit: number): Promise<MailboxJob[]> {
    return this.#mailbox(
      () => this.#jobRows(`(status = 'queued' AND available_at <= ?) OR status = 'claimed'`, now),
      () =>
        (
          this.#sql(`SELECT DISTINCT mailbox_id FROM awaken_mailbox_jobs WHERE status = 'queued' AND available_at <= ?`).all(now) as {
            mailbox_id: string;
          }[]
        ).map((r) => r.mailbox_id),
      (d) => MailboxBook.claim(d, consumer, token, leaseMs, now, limit),
    );
  }
  async ack(jobId: string, token: string, now: number): Promise<MailboxJob> {
    return this.#mailbox(
      () => this.#jobRows('job_id = ?', jobId),
      () => [],
      (d) => MailboxBook.update(d, jobId, (j) => Jobs.ack(j, token, now)),
    );
  }
  async nack(
    jobId: string,
    token: string,
    error: string,
    permanent: boolean,
    now: number,
    config: Pick<MailboxConfig, 'default_retry_delay_ms' | 'max_retry_delay_ms'>,
  ): Promise<MailboxJob> {
    return this.#mailbox(
      () => this.#jobRows('job_id = ?', jobId),
      () => [],
      (d) => MailboxBook.update(d, jobId, (j) => Jobs.nack(j, token, error, permanent, now, config)),
    );
  }
  async cancelJob(jobId: string, now: number): Promise<MailboxJob | undefined> {
    return this.#mailbox(
      () => this.#jobRows('job_id = ?', jobId),
      () => [],
      (d) => MailboxBook.cancel(d, jobId, now),
    );
  }
  async extendLease(jobId: string, token: string, leaseMs: number, now: number): Promise<boolean> {
    return this.#mailbox(
      () => this.#jobRows('job_id = ?', jobId),
      () => [],
      (d) => MailboxBook.extendLease(d, jobId, token, leaseMs, now),
    );
  }
  async interrupt(mailboxId: string, now: number): Promise<MailboxInterrupt> {
    return this.#mailbox(
      () => this.#jobRows(`mailbox_id = ? AND status IN ('queued', 'claimed')`, mailboxId),
      () => [mailboxId],
      (d) => MailboxBook.interrupt(d, mailboxId, now),
    );
  }
  async reclaimExpired(now: number, limit: number): Promise<MailboxJob[]> {
    return this.#mailbox(
      () => this.#jobRows(`status = 'claimed' AND lease_until < ? LIMIT ?`, now, limit),
      () => [],
      (d) => MailboxBook.reclaimExpired(d, now, limit),
    );
  }
  async purgeTerminal(olderThan: number): Promise<number> {
    return this.#sql(`DELETE FROM awaken_mailbox_jobs WHERE status IN (${TERMINAL_LIST}) AND updated_at < ?`).run(olderThan).changes;
  }
  async loadJob(jobId: string): Promise<MailboxJob | undefined> {
    const [row] = this.#jobRows('job_id = ?', jobId);
    return row === undefined ? undefined : (JSON.parse(row.data) as MailboxJob);
  }
  async listJobs(mailboxId: string, q: { readonly status?: MailboxJobStatus; readonly offset: number; readonly limit: number }): Promise<Page<MailboxJob>> {
    const rows = q.status === undefined ? this.#jobRows('mailbox_id = ?', mailboxId) : this.#jobRows('mailbox_id = ? AND status = ?', mailboxId, q.status);
    return MailboxBook.list(dataOf(rows, []), mailboxId, q);
  }
}
