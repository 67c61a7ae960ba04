import { mkdir, readdir, readFile, rename, rm, writeFile, open } from 'node:fs/promises';
import { join } from 'node:path';
import type { JsonValue } from '../contract/json.ts';
import type { TerminationReason } from '../contract/lifecycle.ts';
import type { Message } from '../contract/message.ts';
import type { PersistedState } from '../core/state/state-ops.ts';
import { Jobs, type MailboxConfig, type MailboxJob, type MailboxJobStatus } from '../core/mailbox/job.ts';
import type { MailboxInterrupt, NewMailboxJob } from '../runtime/mailbox-store.ts';
import type { RunCheckpoint, ThreadSnapshot } from '../runtime/thread-run-store.ts';
import { MailboxBook, mailboxDataOf, type MailboxData } from './mailbox-book.ts';
import { byUpdatedThenId } from './memory.ts';
import {
  checkExpectedCount,
  checkFence,
  messagesAfter,
  patchedThread,
  threadRecord,
  runEnded,
  newThreadRecord,
  type NewThread,
  type ThreadPatch,
  checkId,
  checkSeq,
  isValidId,
  leaseAfterTake,
  pageOf,
  runRecordOf,
  StoreFailure,
  visibleMessages,
  type MessageQuery,
  type Page,
  type ThreadQuery,
  hasRunFilter,
  threadMatcher,
  type RunQuery,
  type RunRecord,
  type LeaseTake,
  type Store,
  type ThreadLease,
  type ThreadRecord,
} from '../runtime/store.ts';

/** The file layout this release writes (`schema.json`): 1 added `seq/<thread>.json`, `leases.json` and `owners.json`. */
export const FILE_SCHEMA_VERSION = 1;

/** One thread's file: its record, messages and state together, so a checkpoint of it is one rename. */
interface ThreadFile {
  readonly record: ThreadRecord;
  readonly messages: readonly Message[];
  readonly state?: PersistedState;
}

/** One run's file: its record, and the run-scoped state of its last checkpoint while it is unfinished. */
type RunFile = RunRecord & { readonly state?: PersistedState };

/**
 * The file store (book: 使用文件存储): `threads/<id>.json` (record, messages, state), `runs/<id>.json`,
 * `profiles/<owner>/<key>.json` under one directory. Every file is written to a temporary name,
 * flushed and renamed over the old one, so a crash leaves each file either old or new — never torn.
 * A checkpoint writes the thread file first, then the run file. Writes of one store object are
 * serialised; the file store is for one process (use SQLite or PostgreSQL to share).
 */
export class FileStore implements Store {
  readonly kind = 'file' as const;
  readonly #root: string;
  #queue: Promise<unknown> = Promise.resolve();
  #seq = 0;
  #migration: Promise<void> | undefined;

  constructor(root: string) {
    this.#root = root;
  }

  async createThread(t: NewThread): Promise<ThreadRecord> {
    checkId('thread', t.id);
    return this.#serial(async () => {
      if ((await this.#thread(t.id)) !== undefined) throw new StoreFailure({ code: 'already_exists', message: `thread already exists: ${t.id}` });
      const record: ThreadRecord = newThreadRecord(t);
      await this.#put('threads', `${t.id}.json`, { record, messages: [] } satisfies ThreadFile);
      return record;
    });
  }

  async updateThread(id: string, patch: ThreadPatch, now: number): Promise<ThreadRecord | undefined> {
    if (!isValidId(id)) return undefined;
    return this.#serial(async () => {
      const t = await this.#thread(id);
      if (t === undefined) return undefined;
      const record = patchedThread(t.record, patch, now);
      await this.#put('threads', `${id}.json`, { ...t, record } satisfies ThreadFile);
      return record;
    });
  }

  async getThread(id: string): Promise<ThreadRecord | undefined> {
    if (!isValidId(id)) return undefined;
    return (await this.#thread(id))?.record;
  }

  async listThreads(q: ThreadQuery): Promise<Page<ThreadRecord>> {
    const ids = await this.#ids('threads');
    let records: ThreadRecord[] = [];
    for (const id of ids) {
      const t = await this.#thread(id);
      if (t !== undefined) records.push(t.record);
    }
    if (q.text !== undefined || q.owner !== undefined || q.after !== undefined || hasRunFilter(q.run)) {
      // The runs are read only when the query looks at them (an owner or a keyset alone does not).
      const runs = new Map<string, RunRecord[]>();
      if ((q.text !== undefined && q.text !== '') || hasRunFilter(q.run)) {
        for (const runId of await this.#ids('runs')) {
          const r = await this.#run(runId);
          if (r !== undefined) runs.set(r.thread_id, [...(runs.get(r.thread_id) ?? []), r]);
        }
      }
      const owners = (await this.#get<Record<string, string>>('.', 'owners.json')) ?? {};
      const matches = threadMatcher(q);
      records = records.filter((t) => matches(t, runs.get(t.id) ?? [], Object.hasOwn(owners, t.id) ? owners[t.id] : undefined));
    }
    return pageOf(records.sort(byUpdatedThenId), q);
  }

  async deleteThread(id: string): Promise<boolean> {
    if (!isValidId(id)) return false;
    return this.#serial(async () => {
      if ((await this.#thread(id)) === undefined) return false;
      for (const runId of await this.#ids('runs')) {
        const run = await this.#run(runId);
        if (run?.thread_id === id) await rm(join(this.#root, 'runs', `${runId}.json`), { force: true });
      }
      await rm(join(this.#root, 'threads', `${id}.json`), { force: true });
      const owners = (await this.#get<Record<string, string>>('.', 'owners.json')) ?? {};
      if (Object.hasOwn(owners, id)) {
        delete owners[id];
        await this.#put('.', 'owners.json', owners);
      }
      return true;
    });
  }

  async listMessages(threadId: string, q: MessageQuery): Promise<Page<Message>> {
    const t = isValidId(threadId) ? await this.#thread(threadId) : undefined;
    if (t === undefined) throw new StoreFailure({ code: 'not_found', message: `thread not found: ${threadId}` });
    return pageOf(visibleMessages(t.messages, q.visibility), q);
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    return isValidId(runId) ? this.#run(runId) : undefined;
  }

  async listRuns(q: RunQuery): Promise<Page<RunRecord>> {
    const runs: RunRecord[] = [];
    for (const id of await this.#ids('runs')) {
      const r = await this.#run(id);
      if (r !== undefined && (q.status === undefined || r.status === q.status) && (q.threadId === undefined || r.thread_id === q.threadId)) runs.push(r);
    }
    return pageOf(
      runs.sort((a, b) => b.created_at - a.created_at || (a.run_id < b.run_id ? -1 : 1)),
      q,
    );
  }

  async finishRun(runId: string, termination: TerminationReason, now: number): Promise<boolean> {
    if (!isValidId(runId)) return false;
    return this.#serial(async () => {
      const run = await this.#run(runId);
      if (run === undefined) return false;
      await this.#put('runs', `${runId}.json`, { ...run, status: 'done', termination, updated_at: now } satisfies RunRecord);
      return true;
    });
  }

  async loadRunState(runId: string): Promise<PersistedState | undefined> {
    const file = isValidId(runId) ? await this.#get<RunFile>('runs', `${runId}.json`) : undefined;
    return file === undefined || file.status === 'done' ? undefined : file.state;
  }

  async loadThread(threadId: string): Promise<ThreadSnapshot | undefined> {
    const t = isValidId(threadId) ? await this.#thread(threadId) : undefined;
    if (t === undefined) return undefined;
    return { messages: t.messages, ...(t.state !== undefined ? { threadState: t.state } : {}) };
  }

  async checkpoint(c: RunCheckpoint): Promise<void> {
    checkId('thread', c.threadId);
    checkId('run', c.runId);
    await this.#serial(async () => {
      const previous = await this.#run(c.runId);
      if (previous?.status === 'done') throw runEnded(c.runId);
      // Read here, under the write lock the lease methods take too (not through them: they queue behind it).
      if (c.fence !== undefined) {
        const leases = (await this.#get<Record<string, ThreadLease>>('.', 'leases.json')) ?? {};
        checkFence(c, Object.hasOwn(leases, c.threadId) ? leases[c.threadId] : undefined);
      }
      const t = await this.#thread(c.threadId);
      checkExpectedCount(c, t?.messages.length ?? 0);
      const record = threadRecord({ ...(t?.record ?? { id: c.threadId, created_at: c.updatedAt }), updated_at: c.updatedAt, latest_run_id: c.runId });
      await this.#put('threads', `${c.threadId}.json`, { record, messages: messagesAfter(c, t?.messages), state: c.threadState } satisfies ThreadFile);
      const run: RunFile = { ...runRecordOf(c, previous?.created_at ?? c.updatedAt, previous), ...(c.status !== 'done' ? { state: c.runState } : {}) };
      await this.#put('runs', `${c.runId}.json`, run);
    });
  }

  async read(owner: string, key: string): Promise<JsonValue | undefined> {
    return this.#get<JsonValue>(join('profiles', encodeURIComponent(owner)), `${encodeURIComponent(key)}.json`);
  }

  async write(owner: string, key: string, value: JsonValue): Promise<void> {
    await this.#serial(() => this.#put(join('profiles', encodeURIComponent(owner)), `${encodeURIComponent(key)}.json`, value));
  }

  async loadThreadSeq(threadId: string): Promise<number> {
    if (!isValidId(threadId)) return 0;
    return (await this.#get<{ seq: number }>('seq', `${threadId}.json`))?.seq ?? 0;
  }

  async saveThreadSeq(threadId: string, seq: number): Promise<void> {
    checkId('thread', threadId);
    checkSeq(seq);
    await this.#serial(() => this.#put('seq', `${threadId}.json`, { seq }));
  }

  // ---- thread leases: one file, leases.json, read, changed and renamed back under the write lock ----
  #leases<T>(change: (leases: Record<string, ThreadLease>) => T, write = true): Promise<T> {
    return this.#serial(async () => {
      const leases = (await this.#get<Record<string, ThreadLease>>('.', 'leases.json')) ?? {};
      const out = change(leases);
      if (write) await this.#put('.', 'leases.json', leases);
      return out;
    });
  }
  takeLease(l: Parameters<Store['takeLease']>[0]): Promise<LeaseTake> {
    return this.#leases((all) => {
      const r = leaseAfterTake(Object.hasOwn(all, l.threadId) ? all[l.threadId] : undefined, l);
      if (r.lease !== undefined) all[l.threadId] = r.lease;
      return r.ok ? { ok: true as const } : { ok: false as const, holder: r.holder };
    });
  }
  renewLeases(owner: string, now: number, ttlMs: number): Promise<ThreadLease[]> {
    return this.#leases((all) => {
      const out: ThreadLease[] = [];
      for (const [id, l] of Object.entries(all)) if (l.owner === owner) out.push((all[id] = { ...l, until: now + ttlMs }));
      return out.sort((a, b) => (a.thread_id < b.thread_id ? -1 : 1));
    });
  }
  async releaseLease(threadId: string, runId: string): Promise<void> {
    await this.#leases((all) => {
      if (Object.hasOwn(all, threadId) && all[threadId]?.run_id === runId) delete all[threadId];
    });
  }
  expiredLeases(now: number, limit: number): Promise<ThreadLease[]> {
    return this.#leases(
      (all) =>
        Object.values(all)
          .filter((l) => l.until <= now)
          .sort((a, b) => a.until - b.until)
          .slice(0, limit),
      false,
    );
  }
  takeOverLease(threadId: string, runId: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    return this.#leases((all) => {
      const l = Object.hasOwn(all, threadId) ? all[threadId] : undefined;
      if (l === undefined || l.run_id !== runId || l.until > now) return false;
      all[threadId] = { ...l, owner, until: now + ttlMs };
      return true;
    });
  }
  getLease(threadId: string): Promise<ThreadLease | undefined> {
    return this.#leases((all) => (Object.hasOwn(all, threadId) ? all[threadId] : undefined), false);
  }
  requestCancel(runId: string): Promise<boolean> {
    return this.#leases((all) => {
      const l = Object.values(all).find((x) => x.run_id === runId);
      if (l === undefined) return false;
      all[l.thread_id] = { ...l, cancel_requested: true };
      return true;
    });
  }
  clearLeases(): Promise<number> {
    return this.#leases((all) => {
      const n = Object.keys(all).length;
      for (const k of Object.keys(all)) delete all[k];
      return n;
    });
  }

  // ---- thread owners: owners.json, under the write lock ----
  async claimThread(threadId: string, principal: string): Promise<string> {
    checkId('thread', threadId);
    return this.#serial(async () => {
      const owners = (await this.#get<Record<string, string>>('.', 'owners.json')) ?? {};
      if (Object.hasOwn(owners, threadId)) return owners[threadId] as string;
      owners[threadId] = principal;
      await this.#put('.', 'owners.json', owners);
      return principal;
    });
  }
  async threadOwner(threadId: string): Promise<string | undefined> {
    const owners = (await this.#get<Record<string, string>>('.', 'owners.json')) ?? {};
    return Object.hasOwn(owners, threadId) ? owners[threadId] : undefined;
  }
  async ownedThreads(principal: string): Promise<string[]> {
    const owners = (await this.#get<Record<string, string>>('.', 'owners.json')) ?? {};
    return Object.entries(owners)
      .filter(([, p]) => p === principal)
      .map(([id]) => id)
      .sort();
  }

  async close(): Promise<void> {
    await this.#queue.catch(() => undefined);
  }

  // ---- mailbox: one file, mailbox/jobs.json, read, changed and renamed back under the write lock ----
  #book<T>(change: (d: MailboxData) => T, write = true): Promise<T> {
    return this.#serial(async () => {
      const d = mailboxDataOf(await this.#get('mailbox', 'jobs.json'));
      const out = change(d);
      if (write) await this.#put('mailbox', 'jobs.json', d);
      return out;
    });
  }
  enqueue(job: NewMailboxJob, now: number, defaults?: Pick<MailboxConfig, 'default_max_attempts'>): Promise<MailboxJob> {
    return this.#book((d) => MailboxBook.enqueue(d, job, now, defaults));
  }
  claim(consumer: string, token: string, leaseMs: number, now: number, limit: number): Promise<MailboxJob[]> {
    return this.#book((d) => MailboxBook.claim(d, consumer, token, leaseMs, now, limit));
  }
  ack(jobId: string, token: string, now: number): Promise<MailboxJob> {
    return this.#book((d) => MailboxBook.update(d, jobId, (j) => Jobs.ack(j, token, now)));
  }
  nack(
    jobId: string,
    token: string,
    error: string,
    permanent: boolean,
    now: number,
    config: Pick<MailboxConfig, 'default_retry_delay_ms' | 'max_retry_delay_ms'>,
  ): Promise<MailboxJob> {
    return this.#book((d) => MailboxBook.update(d, jobId, (j) => Jobs.nack(j, token, error, permanent, now, config)));
  }
  cancelJob(jobId: string, now: number): Promise<MailboxJob | undefined> {
    return this.#book((d) => MailboxBook.cancel(d, jobId, now));
  }
  extendLease(jobId: string, token: string, leaseMs: number, now: number): Promise<boolean> {
    return this.#book((d) => MailboxBook.extendLease(d, jobId, token, leaseMs, now));
  }
  interrupt(mailboxId: string, now: number): Promise<MailboxInterrupt> {
    return this.#book((d) => MailboxBook.interrupt(d, mailboxId, now));
  }
  reclaimExpired(now: number, limit: number): Promise<MailboxJob[]> {
    return this.#book((d) => MailboxBook.reclaimExpired(d, now, limit));
  }
  purgeTerminal(olderThan: number): Promise<number> {
    return this.#book((d) => MailboxBook.purgeTerminal(d, olderThan));
  }
  loadJob(jobId: string): Promise<MailboxJob | undefined> {
    return this.#book((d) => d.jobs[jobId], false);
  }
  listJobs(mailboxId: string, q: { readonly status?: MailboxJobStatus; readonly offset: number; readonly limit: number }): Promise<Page<MailboxJob>> {
    return this.#book((d) => MailboxBook.list(d, mailboxId, q), false);
  }

  #thread(id: string): Promise<ThreadFile | undefined> {
    return this.#get<ThreadFile>('threads', `${id}.json`);
  }

  /** A run's record (its file without the state it keeps while unfinished). */
  async #run(id: string): Promise<RunRecord | undefined> {
    const file = await this.#get<RunFile>('runs', `${id}.json`);
    if (file === undefined) return undefined;
    const { state: _state, ...record } = file;
    return record;
  }

  async #ids(dir: string): Promise<string[]> {
    try {
      return (await readdir(join(this.#root, dir)))
        .filter((f) => f.endsWith('.json') && !f.startsWith('.'))
        .map((f) => f.slice(0, -5))
        .sort();
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
  }

  async #get<T>(dir: string, file: string): Promise<T | undefined> {
    try {
      return JSON.parse(await readFile(join(this.#root, dir, file), 'utf8')) as T;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  }

  /** Temp file, fsync, rename over the target: the target is always whole. */
  async #put(dir: string, file: string, value: unknown): Promise<void> {
    const folder = join(this.#root, dir);
    await mkdir(folder, { recursive: true });
    const tmp = join(folder, `.${file}.${process.pid}.${++this.#seq}.tmp`);
    await writeFile(tmp, JSON.stringify(value));
    const handle = await open(tmp, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, join(folder, file));
  }

  /**
   * The layout version in `schema.json`, checked and brought up to `FILE_SCHEMA_VERSION` before the
   * first write: version 0 (no file; before thread sequence marks) needs nothing moved, a newer one is
   * refused rather than misread.
   */
  async #migrate(): Promise<void> {
    const found = (await this.#get<{ version?: unknown }>('.', 'schema.json'))?.version ?? 0;
    if (typeof found !== 'number' || found > FILE_SCHEMA_VERSION) {
      throw new StoreFailure({
        code: 'validation',
        message: `${this.#root} holds store version ${String(found)}; this release reads up to ${FILE_SCHEMA_VERSION}`,
      });
    }
    if (found < FILE_SCHEMA_VERSION) await this.#put('.', 'schema.json', { version: FILE_SCHEMA_VERSION });
  }

  #serial<T>(body: () => Promise<T>): Promise<T> {
    // Every write waits for the migration, and none happens when it failed.
    const migration = (this.#migration ??= this.#queue.then(() => this.#migrate()));
    const run = (): Promise<T> => migration.then(body);
    const next = this.#queue.then(run, run);
    this.#queue = next.catch(() => undefined);
    return next;
  }
}
