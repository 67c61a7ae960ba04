import type { RunStatus, TerminationReason } from '../contract/lifecycle.ts';
import type { Message } from '../contract/message.ts';
import type { MailboxStore } from './mailbox-store.ts';
import type { ProfileStore } from './profile-store.ts';
import type { ThreadRunStore } from './thread-run-store.ts';

/** A thread as the HTTP API lists it (book: HTTP API → Threads). Times in ms since the epoch. */
export interface ThreadRecord {
  readonly id: string;
  readonly title?: string;
  readonly created_at: number;
  readonly updated_at: number;
  readonly latest_run_id?: string;
}

/** A run as the HTTP API lists it (book: HTTP API → Runs). */
export interface RunRecord {
  readonly run_id: string;
  readonly thread_id: string;
  readonly agent_id: string;
  readonly status: RunStatus;
  readonly termination?: TerminationReason;
  readonly steps: number;
  readonly created_at: number;
  readonly updated_at: number;
}

export interface Page<T> {
  readonly items: readonly T[];
  readonly total: number;
}

export interface PageQuery {
  readonly offset: number;
  readonly limit: number;
}

/** Messages of a thread, in order; `visibility: external` (default) leaves internal ones out. */
export interface MessageQuery extends PageQuery {
  readonly visibility?: 'external' | 'all';
}

export interface RunQuery extends PageQuery {
  readonly status?: RunStatus;
  readonly threadId?: string;
}

/** Why a store refused (book: StorageError). */
export type StoreError =
  | { readonly code: 'not_found'; readonly message: string }
  | { readonly code: 'already_exists'; readonly message: string }
  | { readonly code: 'version_conflict'; readonly message: string; readonly expected: number; readonly actual: number }
  | { readonly code: 'validation'; readonly message: string };

export class StoreFailure extends Error {
  readonly error: StoreError;
  constructor(error: StoreError) {
    super(error.message);
    this.name = 'StoreFailure';
    this.error = error;
  }
}

/** Threads and their messages (book: ThreadStore). */
export interface ThreadStore {
  createThread(thread: { readonly id: string; readonly title?: string; readonly now: number }): Promise<ThreadRecord>;
  getThread(id: string): Promise<ThreadRecord | undefined>;
  listThreads(query: PageQuery): Promise<Page<ThreadRecord>>;
  /** Deletes the thread, its messages, state and runs; false when there was none. */
  deleteThread(id: string): Promise<boolean>;
  listMessages(threadId: string, query: MessageQuery): Promise<Page<Message>>;
}

/** Run records (book: RunStore). */
export interface RunStore {
  getRun(runId: string): Promise<RunRecord | undefined>;
  listRuns(query: RunQuery): Promise<Page<RunRecord>>;
  /** Ends a run record outside a checkpoint (a run found unfinished after a restart); false when there is none. */
  finishRun(runId: string, termination: TerminationReason, now: number): Promise<boolean>;
}

/**
 * The durable mark of a thread event log's `seq` (seed 001 §4.2): the highest sequence number the log
 * may have handed out. It outlives the process, so after a restart the log goes on above every frame a
 * client may hold — a `Last-Event-ID` from before resumes exactly or gets a resync, never a silent gap.
 */
export interface ThreadSeqStore {
  /** The thread's mark; 0 for a thread that never had one. */
  loadThreadSeq(threadId: string): Promise<number>;
  /** Sets the mark (up before frames beyond it are handed out; down to the last frame at a clean end). Kept when the thread is deleted. */
  saveThreadSeq(threadId: string, seq: number): Promise<void>;
}

/** Checks a sequence mark before it reaches a store. */
export function checkSeq(seq: number): void {
  if (!Number.isSafeInteger(seq) || seq < 0) throw new StoreFailure({ code: 'validation', message: `invalid sequence number: ${seq}` });
}

/**
 * Everything the server persists: threads, messages, runs, profiles, the mailbox. `checkpoint` (the
 * loop's `ThreadRunStore` port) writes a thread's messages, state and run record in one atomic step;
 * with `expectedMessageCount` it refuses (`version_conflict`) when another writer moved the thread on.
 */
export interface Store extends ThreadStore, RunStore, ThreadRunStore, ProfileStore, MailboxStore, ThreadSeqStore {
  readonly kind: 'memory' | 'file' | 'sqlite' | 'postgres';
  close(): Promise<void>;
}

/**
 * Ids that reach a store: 1–200 characters of letters, digits and `._:-`, not starting with a dot
 * (so no path, key or `..` can be escaped).
 */
export const ID_PATTERN = /^[A-Za-z0-9_:-][A-Za-z0-9._:-]{0,199}$/;

/** Whether an id may reach a store (see `ID_PATTERN`). */
export const isValidId = (id: string): boolean => ID_PATTERN.test(id) && id !== '__proto__';

export function checkId(kind: string, id: string): void {
  if (!isValidId(id)) throw new StoreFailure({ code: 'validation', message: `invalid ${kind} id: ${JSON.stringify(id.slice(0, 60))}` });
}

/** The run record a checkpoint describes. */
export function runRecordOf(c: Parameters<ThreadRunStore['checkpoint']>[0], createdAt: number): RunRecord {
  return {
    run_id: c.runId,
    thread_id: c.threadId,
    agent_id: c.agentId,
    status: c.status,
    ...(c.termination !== undefined ? { termination: c.termination } : {}),
    steps: c.steps,
    created_at: createdAt,
    updated_at: c.updatedAt,
  };
}

export const pageOf = <T>(all: readonly T[], q: PageQuery): Page<T> => ({ items: all.slice(q.offset, q.offset + q.limit), total: all.length });

export const visibleMessages = (messages: readonly Message[], visibility: MessageQuery['visibility']): readonly Message[] =>
  visibility === 'all' ? messages : messages.filter((m) => m.visibility !== 'internal');

