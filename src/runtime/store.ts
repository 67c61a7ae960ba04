// Over 500 lines: the store's whole port — thread, run, lease, owner and sequence records, their
// queries and the checks every store shares — is one contract the four stores implement, read in one place.
import type { JsonValue } from '../contract/json.ts';
import type { RunStatus, TerminationReason } from '../contract/lifecycle.ts';
import type { Message } from '../contract/message.ts';
import type { PersistedState } from '../core/state/state-ops.ts';
import type { MailboxStore } from './mailbox-store.ts';
import type { ProfileStore } from './profile-store.ts';
import type { RunCheckpoint, ThreadRunStore } from './thread-run-store.ts';

/** A thread as the HTTP API lists it (book: HTTP API → Threads). Times in ms since the epoch. */
export interface ThreadRecord {
  readonly id: string;
  readonly title?: string;
  readonly created_at: number;
  readonly updated_at: number;
  readonly latest_run_id?: string;
  /** What the thread is about in the caller's own terms (a user, a document): an id, set by the caller. */
  readonly resource_id?: string;
  /** The thread this one was branched or delegated from (never a cycle). */
  readonly parent_thread_id?: string;
  /** The caller's own data about the thread (a JSON object of at most `THREAD_CUSTOM_MAX_BYTES`). */
  readonly custom?: ThreadCustom;
  /** Set aside by its owner (CopilotKit's archive): left out of the lists that leave archived threads out. Absent while it is not. */
  readonly archived?: true;
}

/** A thread's `custom` data: a JSON object. */
export type ThreadCustom = { readonly [key: string]: JsonValue };

/** The largest `custom` object a thread keeps, in bytes of its JSON (UTF-8). */
export const THREAD_CUSTOM_MAX_BYTES = 16 * 1024;

/** A thread to create: its id, the time, and what the caller says about it. */
export interface NewThread {
  readonly id: string;
  readonly now: number;
  readonly title?: string;
  readonly resource_id?: string;
  readonly parent_thread_id?: string;
  readonly custom?: ThreadCustom;
}

/**
 * A change to a thread's metadata: a field given replaces it, `null` clears it, a field left out is
 * kept. The checks (ids, sizes, that the parent exists and makes no cycle) are the caller's.
 */
export interface ThreadPatch {
  readonly title?: string;
  readonly resource_id?: string | null;
  readonly parent_thread_id?: string | null;
  readonly custom?: ThreadCustom;
  /** `true` archives the thread, `false` brings it back (the record then has no `archived`). */
  readonly archived?: boolean;
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
  /** The run that delegated this one (a sub-agent's run); absent for a run started by a caller. */
  readonly parent_run_id?: string;
  /** What the run's agent was (its config and code) when the run started (`RunCheckpoint.agentDigest`); absent for a run stored before digests were kept. */
  readonly agent_digest?: string;
  /** Prompt tokens of every inference of the run, over all its segments; absent while no checkpoint reported any. */
  readonly input_tokens?: number;
  /** Completion tokens of every inference of the run, over all its segments; absent while no checkpoint reported any. */
  readonly output_tokens?: number;
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

/**
 * Threads, newest first; each field given narrows them (the inspector's search,
 * `GET /v1/inspector/threads`). Without any, every thread.
 */
export interface ThreadQuery extends PageQuery {
  /** A substring of the thread's id, its title or the id of one of its runs, in any case. */
  readonly text?: string;
  /** Only threads with a run that is all of these at once: of this agent, in this status, ended in error (termination `error`). */
  readonly run?: ThreadRunFilter;
  /** Only the threads this principal owns (`ThreadOwnerStore`). */
  readonly owner?: string;
  /**
   * Only the threads listed after this one (a keyset: the list's order is `updated_at` descending,
   * then id ascending, ids compared by their characters' codes): a page that goes on from the last
   * thread a client was given, whatever was deleted or added before it since.
   */
  readonly after?: ThreadKey;
}

/** Where a thread stands in the list's order: its `updated_at` and id. */
export interface ThreadKey {
  readonly updated_at: number;
  readonly id: string;
}

/** Whether a thread comes after `key` in the list's order (`ThreadQuery.after`). */
export const isAfter = (thread: ThreadKey, key: ThreadKey): boolean =>
  thread.updated_at < key.updated_at || (thread.updated_at === key.updated_at && thread.id > key.id);

export interface ThreadRunFilter {
  readonly agentId?: string;
  readonly status?: RunStatus;
  readonly failed?: boolean;
}

/** Whether a run filter asks for anything (an empty one keeps threads without runs too). */
export const hasRunFilter = (f: ThreadRunFilter | undefined): f is ThreadRunFilter =>
  f !== undefined && (f.agentId !== undefined || f.status !== undefined || f.failed === true);

/** How a search text and what it is matched against are compared: case folded (Unicode, as JavaScript folds it). */
export const foldCase = (s: string): string => s.toLowerCase();

/**
 * A thread search as a predicate over a thread, its runs and its owner: what the stores that keep
 * their data as objects (memory, files) filter with, and what the SQL stores' queries say.
 */
export function threadMatcher(q: ThreadQuery): (thread: ThreadRecord, runs: readonly RunRecord[], owner: string | undefined) => boolean {
  const text = q.text === undefined || q.text === '' ? undefined : foldCase(q.text);
  const run = hasRunFilter(q.run) ? q.run : undefined;
  return (thread, runs, owner) => {
    if (q.owner !== undefined && owner !== q.owner) return false;
    if (q.after !== undefined && !isAfter(thread, q.after)) return false;
    if (
      text !== undefined &&
      !foldCase(thread.id).includes(text) &&
      !(thread.title !== undefined && foldCase(thread.title).includes(text)) &&
      !runs.some((r) => foldCase(r.run_id).includes(text))
    ) {
      return false;
    }
    return (
      run === undefined ||
      runs.some(
        (r) =>
          (run.agentId === undefined || r.agent_id === run.agentId) &&
          (run.status === undefined || r.status === run.status) &&
          (run.failed !== true || r.termination?.type === 'error'),
      )
    );
  };
}

/**
 * Whether every thread of a page a store listed for `owner` is the owner's: a store written before
 * the owner was part of the thread query ignores it and lists every thread, which its callers refuse
 * rather than show (one `threadOwner` lookup a thread of the page).
 */
export async function ownedPage(store: Pick<Store, 'threadOwner'>, items: readonly { readonly id: string }[], owner: string): Promise<boolean> {
  const owners = await Promise.all(items.map((t) => store.threadOwner(t.id)));
  return owners.every((o) => o === owner);
}

/** A search text as a `LIKE` pattern that matches it as a substring (`\` escapes `%`, `_` and itself). */
export const likePattern = (text: string): string => `%${text.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;

export interface RunQuery extends PageQuery {
  readonly status?: RunStatus;
  readonly threadId?: string;
}

/** Why a store refused (book: StorageError). */
export type StoreError =
  | { readonly code: 'not_found'; readonly message: string }
  | { readonly code: 'already_exists'; readonly message: string }
  | { readonly code: 'version_conflict'; readonly message: string; readonly expected: number; readonly actual: number }
  | { readonly code: 'validation'; readonly message: string }
  /** A checkpoint of a run already ended (elsewhere: its lease swept, a cancel taken over): its instance must stop writing. */
  | { readonly code: 'run_ended'; readonly message: string }
  /** A checkpoint whose writer does not hold the thread's lease for the run (`RunCheckpoint.fence`): another instance took the run up. */
  | { readonly code: 'fenced'; readonly message: string };

export class StoreFailure extends Error {
  readonly error: StoreError;
  constructor(error: StoreError) {
    super(error.message);
    this.name = 'StoreFailure';
    this.error = error;
  }
}

/** The refusal of a checkpoint whose writer does not hold the thread's lease for its run (`RunCheckpoint.fence`). */
export const fenced = (runId: string, threadId: string, owner: string): StoreFailure =>
  new StoreFailure({ code: 'fenced', message: `run ${runId}: ${owner} does not hold the lease of thread ${threadId}` });

/** The refusal of a checkpoint of a run already ended. */
export const runEnded = (runId: string): StoreFailure => new StoreFailure({ code: 'run_ended', message: `run ${runId} has already ended` });

/*
 * A checkpoint's refusals, in the order every store checks them inside the checkpoint's atomic step:
 * the run already ended (`run_ended`: whoever holds the lease, nothing more of the run is written),
 * then the writer's lease (`fenced`), then the message count (`version_conflict`). A writer that lost
 * its lease learns that, not that the thread moved on: the new holder is what moved it.
 */

/**
 * Refuses a checkpoint with a `fence` (`fenced`) when `held`, the thread's lease, is held for the
 * checkpoint's run by another owner: another instance took the run over (it found the lease expired)
 * and goes on with it. Expiry alone fences nothing. A lease released, or taken for another run (a
 * start that superseded this one), fences nothing either: the run may still write its own end, and
 * what it may not write is refused by the run's end (`run_ended`) and the message count.
 */
export function checkFence(c: Pick<RunCheckpoint, 'fence' | 'runId' | 'threadId'>, held: Pick<ThreadLease, 'run_id' | 'owner'> | undefined): void {
  if (c.fence !== undefined && held !== undefined && held.run_id === c.runId && held.owner !== c.fence.owner) throw fenced(c.runId, c.threadId, c.fence.owner);
}

/** Refuses a checkpoint whose `expectedMessageCount` is not the count the store holds (`version_conflict`). */
export function checkExpectedCount(c: Pick<RunCheckpoint, 'expectedMessageCount'>, actual: number): void {
  if (c.expectedMessageCount !== undefined && c.expectedMessageCount !== actual) {
    throw new StoreFailure({
      code: 'version_conflict',
      message: `version conflict: expected ${c.expectedMessageCount}, actual ${actual}`,
      expected: c.expectedMessageCount,
      actual,
    });
  }
}

/** Threads and their messages (book: ThreadStore). */
export interface ThreadStore {
  createThread(thread: NewThread): Promise<ThreadRecord>;
  getThread(id: string): Promise<ThreadRecord | undefined>;
  /** Applies a metadata change (`ThreadPatch`) and sets `updated_at` to `now`; `undefined` when there is no such thread. */
  updateThread(id: string, patch: ThreadPatch, now: number): Promise<ThreadRecord | undefined>;
  /** Newest first (`updated_at`, then id); a search narrows them (`ThreadQuery`). */
  listThreads(query: ThreadQuery): Promise<Page<ThreadRecord>>;
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
  /**
   * The run-scoped state of the run's last checkpoint while the run is unfinished (a run waiting for
   * a decision is taken up from it after a restart or on another instance); `undefined` once it is done.
   */
  loadRunState(runId: string): Promise<PersistedState | undefined>;
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

/**
 * A thread's lease, so that servers sharing a store survive one of them dying: the run that holds
 * the thread and the instance that runs it, until `until` unless renewed. An instance that dies
 * stops renewing; once the lease has expired any instance may take it over, end the run as
 * interrupted and free the thread.
 */
export interface ThreadLease {
  readonly thread_id: string;
  readonly run_id: string;
  readonly owner: string;
  readonly until: number;
  /** A cancel asked for from anywhere; the owner sees it when it renews (a lost notification loses nothing). */
  readonly cancel_requested: boolean;
}

export type LeaseTake = { readonly ok: true } | { readonly ok: false; readonly holder: ThreadLease };

/** Thread leases: one run in flight per thread across every instance on a store. Each method is atomic. */
export interface ThreadLeaseStore {
  /**
   * Takes the thread for a run: when it is free, the same run of the same owner already holds it, or
   * `steal` (supersede) — else the holder is returned and nothing changes. An expired holder is
   * returned too: its run must be ended (`takeOverLease`) before the thread is taken, so no run
   * silently loses its thread.
   */
  takeLease(lease: {
    readonly threadId: string;
    readonly runId: string;
    readonly owner: string;
    readonly now: number;
    readonly ttlMs: number;
    readonly steal?: boolean;
  }): Promise<LeaseTake>;
  /** Extends every lease `owner` holds to `now + ttlMs`; returns them (one missing was taken over). */
  renewLeases(owner: string, now: number, ttlMs: number): Promise<ThreadLease[]>;
  /** Frees the thread if `runId` still holds it. */
  releaseLease(threadId: string, runId: string): Promise<void>;
  /** Leases expired at `now`, oldest first. */
  expiredLeases(now: number, limit: number): Promise<ThreadLease[]>;
  /** Takes over an expired lease of `runId` for `owner` (true for exactly one caller). */
  takeOverLease(threadId: string, runId: string, owner: string, now: number, ttlMs: number): Promise<boolean>;
  getLease(threadId: string): Promise<ThreadLease | undefined>;
  /** Marks the lease of a run as cancel-requested; false when the run holds none. */
  requestCancel(runId: string): Promise<boolean>;
  /** Drops every lease (a single-process store at start: no other instance can hold one). */
  clearLeases(): Promise<number>;
}

/**
 * Who a thread belongs to when the server authenticates its callers: the principal that first wrote
 * to it. Kept apart from the thread record, so an owner is set once, atomically, even for a thread a
 * run creates.
 */
export interface ThreadOwnerStore {
  /** Sets the owner when the thread has none; returns the owner after the call (this one or the earlier). */
  claimThread(threadId: string, principal: string): Promise<string>;
  threadOwner(threadId: string): Promise<string | undefined>;
  /** Every thread a principal owns. */
  ownedThreads(principal: string): Promise<string[]>;
}

/** The lease a take or a renewal leaves (pure; the stores share it). */
export function leaseAfterTake(held: ThreadLease | undefined, l: Parameters<ThreadLeaseStore['takeLease']>[0]): LeaseTake & { readonly lease?: ThreadLease } {
  const same = held !== undefined && held.run_id === l.runId && held.owner === l.owner;
  if (held !== undefined && l.steal !== true && !same) return { ok: false, holder: held };
  const keep = same && held.cancel_requested;
  return { ok: true, lease: { thread_id: l.threadId, run_id: l.runId, owner: l.owner, until: l.now + l.ttlMs, cancel_requested: keep } };
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
export interface Store extends ThreadStore, RunStore, ThreadRunStore, ProfileStore, MailboxStore, ThreadSeqStore, ThreadLeaseStore, ThreadOwnerStore {
  readonly kind: 'memory' | 'file' | 'sqlite' | 'postgres';
  /** Always a promise here: the server's stores write through I/O (or behind a lease check). */
  checkpoint(checkpoint: RunCheckpoint): Promise<void>;
  loadRunState(runId: string): Promise<PersistedState | undefined>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  close(): Promise<void>;
}

import { isValidId } from '../contract/id.ts';

export { ID_PATTERN, isValidId } from '../contract/id.ts';

export function checkId(kind: string, id: string): void {
  if (!isValidId(id)) throw new StoreFailure({ code: 'validation', message: `invalid ${kind} id: ${JSON.stringify(id.slice(0, 60))}` });
}

/**
 * Where a checkpoint's messages differ from what the store holds: its `appendFrom` when the store
 * holds at least that many (the messages before it are kept, the ones after replaced), else
 * `undefined` (compare, or write them whole).
 */
export function appendStart(c: Pick<RunCheckpoint, 'appendFrom'>, held: number): number | undefined {
  return c.appendFrom !== undefined && c.appendFrom >= 0 && c.appendFrom <= held ? c.appendFrom : undefined;
}

/**
 * The thread's messages after a checkpoint, for a store that keeps them as one list: the held ones
 * before `appendFrom` (see `appendStart`) and the checkpoint's after it, else the checkpoint's whole;
 * what comes from the checkpoint passes through `take` (its array is the writer's, valid during the call).
 */
export function messagesAfter(
  c: Pick<RunCheckpoint, 'appendFrom' | 'messages'>,
  held: readonly Message[] | undefined,
  take: (messages: readonly Message[]) => Message[] = (messages) => messages.slice(),
): Message[] {
  const from = held === undefined ? undefined : appendStart(c, held.length);
  return from === undefined ? take(c.messages) : [...(held as readonly Message[]).slice(0, from), ...take(c.messages.slice(from))];
}

/**
 * The run record a checkpoint describes, over the record the store held (`previous`): the creation
 * time, the parent run and the agent digest are kept, the checkpoint's tokens are added to the totals held.
 */
export function runRecordOf(c: Parameters<ThreadRunStore['checkpoint']>[0], createdAt: number, previous?: RunRecord): RunRecord {
  const parent = previous?.parent_run_id ?? c.parentRunId;
  const digest = previous?.agent_digest ?? c.agentDigest;
  const counted = c.tokens !== undefined || previous?.input_tokens !== undefined || previous?.output_tokens !== undefined;
  return {
    run_id: c.runId,
    thread_id: c.threadId,
    agent_id: c.agentId,
    status: c.status,
    ...(c.termination !== undefined ? { termination: c.termination } : {}),
    steps: c.steps,
    created_at: createdAt,
    updated_at: c.updatedAt,
    ...(parent !== undefined ? { parent_run_id: parent } : {}),
    ...(digest !== undefined ? { agent_digest: digest } : {}),
    ...(counted
      ? {
          input_tokens: (previous?.input_tokens ?? 0) + tokenCount(c.tokens?.input),
          output_tokens: (previous?.output_tokens ?? 0) + tokenCount(c.tokens?.output),
        }
      : {}),
  };
}

/** A token count a checkpoint reports, as a store adds it: a non-negative integer (anything else counts 0). */
export const tokenCount = (n: number | undefined): number => (n !== undefined && Number.isSafeInteger(n) && n > 0 ? n : 0);

/**
 * How a run ended, as one code: the termination's type, and for `stopped` its stop code after a colon
 * (`stopped:max_rounds`). Blocked and error terminations carry a message, not a code: their code is
 * the type alone (the message stays in `termination`).
 */
export function terminationCode(t: TerminationReason): string {
  switch (t.type) {
    case 'stopped':
      return `stopped:${t.value.code}`;
    case 'natural_end':
    case 'behavior_requested':
    case 'cancelled':
    case 'blocked':
    case 'suspended':
    case 'error':
      return t.type;
    default: {
      // A termination a store holds from another version is named by its type.
      const unknown: never = t;
      return String((unknown as { readonly type: unknown }).type);
    }
  }
}

/**
 * A thread record with its fields in one order, whichever store wrote it (the SQL stores' columns'
 * order): its answers read the same from every store.
 */
export function threadRecord(t: ThreadRecord): ThreadRecord {
  return {
    id: t.id,
    ...(t.title !== undefined ? { title: t.title } : {}),
    created_at: t.created_at,
    updated_at: t.updated_at,
    ...(t.latest_run_id !== undefined ? { latest_run_id: t.latest_run_id } : {}),
    ...(t.resource_id !== undefined ? { resource_id: t.resource_id } : {}),
    ...(t.parent_thread_id !== undefined ? { parent_thread_id: t.parent_thread_id } : {}),
    ...(t.custom !== undefined ? { custom: t.custom } : {}),
    ...(t.archived === true ? { archived: true as const } : {}),
  };
}

/** The thread a patch leaves (pure; every store applies it to the record it holds). */
export function patchedThread(t: ThreadRecord, patch: ThreadPatch, now: number): ThreadRecord {
  const cleared = (given: string | null | undefined, held: string | undefined): string | undefined =>
    given === undefined ? held : given === null ? undefined : given;
  const { resource_id: _r, parent_thread_id: _p, archived: _a, ...kept } = t;
  const resource = cleared(patch.resource_id, t.resource_id);
  const parent = cleared(patch.parent_thread_id, t.parent_thread_id);
  const archived = patch.archived ?? t.archived === true;
  return threadRecord({
    ...kept,
    ...(patch.title !== undefined ? { title: patch.title } : {}),
    updated_at: now,
    ...(resource !== undefined ? { resource_id: resource } : {}),
    ...(parent !== undefined ? { parent_thread_id: parent } : {}),
    ...(patch.custom !== undefined ? { custom: patch.custom } : {}),
    ...(archived ? { archived: true as const } : {}),
  });
}

/** A new thread's record: its id, the fields given, created and updated `now`. */
export const newThreadRecord = (t: NewThread): ThreadRecord =>
  threadRecord({
    id: t.id,
    created_at: t.now,
    updated_at: t.now,
    ...(t.title !== undefined ? { title: t.title } : {}),
    ...(t.resource_id !== undefined ? { resource_id: t.resource_id } : {}),
    ...(t.parent_thread_id !== undefined ? { parent_thread_id: t.parent_thread_id } : {}),
    ...(t.custom !== undefined ? { custom: t.custom } : {}),
  });

export const pageOf = <T>(all: readonly T[], q: PageQuery): Page<T> => ({ items: all.slice(q.offset, q.offset + q.limit), total: all.length });

export const visibleMessages = (messages: readonly Message[], visibility: MessageQuery['visibility']): readonly Message[] =>
  visibility === 'all' ? messages : messages.filter((m) => m.visibility !== 'internal');
