import type { JsonValue } from '../contract/json.ts';
import type { TerminationReason } from '../contract/lifecycle.ts';
import type { Message } from '../contract/message.ts';
import type { PersistedState } from '../core/state/state-ops.ts';
import { Jobs, type MailboxConfig, type MailboxJob, type MailboxJobStatus } from '../core/mailbox/job.ts';
import type { MailboxInterrupt, NewMailboxJob } from '../runtime/mailbox-store.ts';
import type { RunCheckpoint, ThreadSnapshot } from '../runtime/thread-run-store.ts';
import { emptyMailboxData, MailboxBook, type MailboxData } from './mailbox-book.ts';
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
  leaseAfterTake,
  pageOf,
  runRecordOf,
  StoreFailure,
  visibleMessages,
  type MessageQuery,
  type Page,
  type RunQuery,
  type ThreadQuery,
  hasRunFilter,
  threadMatcher,
  type RunRecord,
  type LeaseTake,
  type Store,
  type ThreadLease,
  type ThreadRecord,
} from '../runtime/store.ts';

interface ThreadEntry {
  record: ThreadRecord;
  messages: readonly Message[];
  state?: PersistedState;
}

/** Values go in and out as copies, as they would through a real store. */
const copy = <T>(x: T): T => (x === undefined ? x : structuredClone(x));

/** The in-memory store: one process, nothing survives it. Every method is atomic (single-threaded). */
export class MemoryStore implements Store {
  readonly kind = 'memory' as const;
  readonly #threads = new Map<string, ThreadEntry>();
  readonly #runs = new Map<string, RunRecord>();
  /** The run-scoped state of unfinished runs. */
  readonly #runStates = new Map<string, PersistedState>();
  readonly #profiles = new Map<string, string>();
  readonly #seqs = new Map<string, number>();
  readonly #leases = new Map<string, ThreadLease>();
  readonly #owners = new Map<string, string>();
  readonly #mailbox: MailboxData = emptyMailboxData();

  async createThread(t: NewThread): Promise<ThreadRecord> {
    checkId('thread', t.id);
    if (this.#threads.has(t.id)) throw new StoreFailure({ code: 'already_exists', message: `thread already exists: ${t.id}` });
    const record: ThreadRecord = copy(newThreadRecord(t));
    this.#threads.set(t.id, { record, messages: [] });
    return copy(record);
  }

  async updateThread(id: string, patch: ThreadPatch, now: number): Promise<ThreadRecord | undefined> {
    const e = this.#threads.get(id);
    if (e === undefined) return undefined;
    e.record = patchedThread(e.record, copy(patch), now);
    return copy(e.record);
  }

  async getThread(id: string): Promise<ThreadRecord | undefined> {
    const e = this.#threads.get(id);
    return e === undefined ? undefined : copy(e.record);
  }

  async listThreads(q: ThreadQuery): Promise<Page<ThreadRecord>> {
    let all = [...this.#threads.values()].map((e) => e.record);
    if (q.text !== undefined || q.owner !== undefined || q.after !== undefined || hasRunFilter(q.run)) {
      const runs = new Map<string, RunRecord[]>();
      for (const r of this.#runs.values()) {
        const list = runs.get(r.thread_id);
        if (list === undefined) runs.set(r.thread_id, [r]);
        else list.push(r);
      }
      const matches = threadMatcher(q);
      all = all.filter((t) => matches(t, runs.get(t.id) ?? [], this.#owners.get(t.id)));
    }
    return copy(pageOf(all.sort(byUpdatedThenId), q));
  }

  async deleteThread(id: string): Promise<boolean> {
    this.#owners.delete(id);
    if (!this.#threads.delete(id)) return false;
    for (const [runId, run] of this.#runs) if (run.thread_id === id) this.#runs.delete(runId), this.#runStates.delete(runId);
    return true;
  }

  async listMessages(threadId: string, q: MessageQuery): Promise<Page<Message>> {
    const e = this.#threads.get(threadId);
    if (e === undefined) throw new StoreFailure({ code: 'not_found', message: `thread not found: ${threadId}` });
    return copy(pageOf(visibleMessages(e.messages, q.visibility), q));
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const r = this.#runs.get(runId);
    return r === undefined ? undefined : copy(r);
  }

  async listRuns(q: RunQuery): Promise<Page<RunRecord>> {
    const all = [...this.#runs.values()]
      .filter((r) => (q.status === undefined || r.status === q.status) && (q.threadId === undefined || r.thread_id === q.threadId))
      .sort((a, b) => b.created_at - a.created_at || (a.run_id < b.run_id ? -1 : 1));
    return copy(pageOf(all, q));
  }

  async finishRun(runId: string, termination: TerminationReason, now: number): Promise<boolean> {
    const run = this.#runs.get(runId);
    if (run === undefined) return false;
    this.#runs.set(runId, { ...run, status: 'done', termination, updated_at: now });
    this.#runStates.delete(runId);
    return true;
  }

  async loadRunState(runId: string): Promise<PersistedState | undefined> {
    const state = this.#runStates.get(runId);
    return state === undefined ? undefined : copy(state);
  }

  async loadThread(threadId: string): Promise<ThreadSnapshot | undefined> {
    const e = this.#threads.get(threadId);
    if (e === undefined) return undefined;
    return copy({ messages: e.messages, ...(e.state !== undefined ? { threadState: e.state } : {}) });
  }

  async checkpoint(c: RunCheckpoint): Promise<void> {
    checkId('thread', c.threadId);
    checkId('run', c.runId);
    if (this.#runs.get(c.runId)?.status === 'done') throw runEnded(c.runId);
    checkFence(c, this.#leases.get(c.threadId));
    const e = this.#threads.get(c.threadId);
    checkExpectedCount(c, e?.messages.length ?? 0);
    const previous = this.#runs.get(c.runId);
    const record = threadRecord({
      ...(e?.record ?? { id: c.threadId, created_at: c.updatedAt }),
      updated_at: c.updatedAt,
      latest_run_id: c.runId,
    });
    this.#threads.set(c.threadId, { record, messages: messagesAfter(c, e?.messages, (ms) => copy(ms) as Message[]), state: copy(c.threadState) });
    this.#runs.set(c.runId, runRecordOf(c, previous?.created_at ?? c.updatedAt, previous));
    if (c.status === 'done') this.#runStates.delete(c.runId);
    else this.#runStates.set(c.runId, copy(c.runState));
  }

  async read(owner: string, key: string): Promise<JsonValue | undefined> {
    const doc = this.#profiles.get(JSON.stringify([owner, key]));
    return doc === undefined ? undefined : (JSON.parse(doc) as JsonValue);
  }

  async write(owner: string, key: string, value: JsonValue): Promise<void> {
    this.#profiles.set(JSON.stringify([owner, key]), JSON.stringify(value));
  }

  async loadThreadSeq(threadId: string): Promise<number> {
    return this.#seqs.get(threadId) ?? 0;
  }

  async saveThreadSeq(threadId: string, seq: number): Promise<void> {
    checkId('thread', threadId);
    checkSeq(seq);
    this.#seqs.set(threadId, seq);
  }

  async takeLease(l: Parameters<Store['takeLease']>[0]): Promise<LeaseTake> {
    const r = leaseAfterTake(this.#leases.get(l.threadId), l);
    if (r.lease !== undefined) this.#leases.set(l.threadId, r.lease);
    return r.ok ? { ok: true } : { ok: false, holder: { ...r.holder } };
  }

  async renewLeases(owner: string, now: number, ttlMs: number): Promise<ThreadLease[]> {
    const out: ThreadLease[] = [];
    for (const [id, l] of this.#leases) {
      if (l.owner !== owner) continue;
      const renewed = { ...l, until: now + ttlMs };
      this.#leases.set(id, renewed);
      out.push(renewed);
    }
    return out.sort((a, b) => (a.thread_id < b.thread_id ? -1 : 1));
  }

  async releaseLease(threadId: string, runId: string): Promise<void> {
    if (this.#leases.get(threadId)?.run_id === runId) this.#leases.delete(threadId);
  }

  async expiredLeases(now: number, limit: number): Promise<ThreadLease[]> {
    return [...this.#leases.values()]
      .filter((l) => l.until <= now)
      .sort((a, b) => a.until - b.until)
      .slice(0, limit)
      .map((l) => ({ ...l }));
  }

  async takeOverLease(threadId: string, runId: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    const l = this.#leases.get(threadId);
    if (l === undefined || l.run_id !== runId || l.until > now) return false;
    this.#leases.set(threadId, { ...l, owner, until: now + ttlMs });
    return true;
  }

  async getLease(threadId: string): Promise<ThreadLease | undefined> {
    const l = this.#leases.get(threadId);
    return l === undefined ? undefined : { ...l };
  }

  async requestCancel(runId: string): Promise<boolean> {
    for (const [id, l] of this.#leases) {
      if (l.run_id !== runId) continue;
      this.#leases.set(id, { ...l, cancel_requested: true });
      return true;
    }
    return false;
  }

  async clearLeases(): Promise<number> {
    const n = this.#leases.size;
    this.#leases.clear();
    return n;
  }

  async claimThread(threadId: string, principal: string): Promise<string> {
    checkId('thread', threadId);
    const owner = this.#owners.get(threadId) ?? principal;
    this.#owners.set(threadId, owner);
    return owner;
  }

  async threadOwner(threadId: string): Promise<string | undefined> {
    return this.#owners.get(threadId);
  }

  async ownedThreads(principal: string): Promise<string[]> {
    return [...this.#owners]
      .filter(([, p]) => p === principal)
      .map(([id]) => id)
      .sort();
  }

  async close(): Promise<void> {}

  // ---- mailbox ----
  async enqueue(job: NewMailboxJob, now: number, defaults?: Pick<MailboxConfig, 'default_max_attempts'>): Promise<MailboxJob> {
    return copy(MailboxBook.enqueue(this.#mailbox, copy(job), now, defaults));
  }
  async claim(consumer: string, token: string, leaseMs: number, now: number, limit: number): Promise<MailboxJob[]> {
    return copy(MailboxBook.claim(this.#mailbox, consumer, token, leaseMs, now, limit));
  }
  async ack(jobId: string, token: string, now: number): Promise<MailboxJob> {
    return copy(MailboxBook.update(this.#mailbox, jobId, (j) => Jobs.ack(j, token, now)));
  }
  async nack(
    jobId: string,
    token: string,
    error: string,
    permanent: boolean,
    now: number,
    config: Pick<MailboxConfig, 'default_retry_delay_ms' | 'max_retry_delay_ms'>,
  ): Promise<MailboxJob> {
    return copy(MailboxBook.update(this.#mailbox, jobId, (j) => Jobs.nack(j, token, error, permanent, now, config)));
  }
  async cancelJob(jobId: string, now: number): Promise<MailboxJob | undefined> {
    return copy(MailboxBook.cancel(this.#mailbox, jobId, now));
  }
  async extendLease(jobId: string, token: string, leaseMs: number, now: number): Promise<boolean> {
    return MailboxBook.extendLease(this.#mailbox, jobId, token, leaseMs, now);
  }
  async interrupt(mailboxId: string, now: number): Promise<MailboxInterrupt> {
    return copy(MailboxBook.interrupt(this.#mailbox, mailboxId, now));
  }
  async reclaimExpired(now: number, limit: number): Promise<MailboxJob[]> {
    return copy(MailboxBook.reclaimExpired(this.#mailbox, now, limit));
  }
  async purgeTerminal(olderThan: number): Promise<number> {
    return MailboxBook.purgeTerminal(this.#mailbox, olderThan);
  }
  async loadJob(jobId: string): Promise<MailboxJob | undefined> {
    const j = this.#mailbox.jobs[jobId];
    return j === undefined ? undefined : copy(j);
  }
  async listJobs(mailboxId: string, q: { readonly status?: MailboxJobStatus; readonly offset: number; readonly limit: number }): Promise<Page<MailboxJob>> {
    return copy(MailboxBook.list(this.#mailbox, mailboxId, q));
  }
}

export const byUpdatedThenId = (a: ThreadRecord, b: ThreadRecord): number => b.updated_at - a.updated_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
