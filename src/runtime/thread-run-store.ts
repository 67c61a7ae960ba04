import type { Message } from '../contract/message.ts';
import type { RunStatus, TerminationReason } from '../contract/lifecycle.ts';
import type { PersistedState } from '../core/state/state-ops.ts';
import { appendStart, messagesAfter } from './store.ts';

/** What a checkpoint records (book: Checkpoint Triggers): messages, lifecycle, persistent state. */
export interface RunCheckpoint {
  readonly threadId: string;
  readonly runId: string;
  readonly agentId: string;
  /**
   * The thread's whole history. Valid during the call only (the run goes on appending to it): a
   * store copies what it keeps.
   */
  readonly messages: readonly Message[];
  /**
   * The first `appendFrom` messages are the ones this writer's previous checkpoint (or its load)
   * left in the store, unchanged: a store may keep those and write only `messages.slice(appendFrom)`,
   * dropping anything it holds after them. Absent: write `messages` whole.
   */
  readonly appendFrom?: number;
  readonly status: RunStatus;
  readonly steps: number;
  readonly threadState: PersistedState;
  readonly runState: PersistedState;
  readonly termination?: TerminationReason;
  readonly updatedAt: number;
  /**
   * The thread's message count this writer last saw (at load or its previous checkpoint): a store
   * holding a different count refuses with `version_conflict` (optimistic concurrency).
   */
  readonly expectedMessageCount?: number;
  /** The run that delegated this one (a sub-agent's run): the store keeps the first one named. */
  readonly parentRunId?: string;
  /**
   * The lease its writer holds the thread by: the store refuses the checkpoint (`fenced`), and
   * changes nothing, unless the thread's lease is held for this run by this owner — a process that
   * lost its lease (another instance took the run up) writes nothing more of it.
   */
  readonly fence?: CheckpointFence;
  /** What the run's agent was (its config and code) when the run started: the store keeps the first one named (`RunRecord.agent_digest`). */
  readonly agentDigest?: string;
  /**
   * Tokens of the inferences that ended since this writer's previous checkpoint of the run (since it
   * started or took the run up, for its first): the store adds them to the run's totals, so a run
   * that suspends and is taken up again — here or on another instance — counts every segment once.
   */
  readonly tokens?: CheckpointTokens;
}

/** The lease a checkpoint's writer holds its thread by (`RunCheckpoint.fence`). */
export interface CheckpointFence {
  /** The lease owner: the writer's instance (`RunLeases.owner`). */
  readonly owner: string;
}

/** Tokens a checkpoint reports (`RunCheckpoint.tokens`). */
export interface CheckpointTokens {
  readonly input: number;
  readonly output: number;
}

export interface ThreadSnapshot {
  readonly messages: readonly Message[];
  readonly threadState?: PersistedState;
}

/** The store port of the loop: load a thread's history and state, write checkpoints. */
export interface ThreadRunStore {
  loadThread(threadId: string): Promise<ThreadSnapshot | undefined>;
  /** Writes a checkpoint: a promise while it is written, or nothing when it was written at once (the loop then waits for no promise). */
  checkpoint(checkpoint: RunCheckpoint): Promise<void> | void;
  /** The run-scoped state of an unfinished run's last checkpoint (`RunStore.loadRunState`); needed to revive a parked run. */
  loadRunState?(runId: string): Promise<PersistedState | undefined>;
  /** The run's record as its last checkpoint left it (`RunStore.getRun`): the steps it had begun, which a recovery reads. */
  getRun?(runId: string): Promise<{ readonly steps: number } | undefined>;
}

/**
 * An in-memory `ThreadRunStore` (the durable stores arrive with the server). A checkpoint costs no
 * copy of the history: the thread's messages grow by what the run appended, and each checkpoint
 * kept in `checkpoints` reads its messages from the thread's array as it was then (an array that is
 * only ever appended to, or replaced).
 */
export class MemoryThreadRunStore implements ThreadRunStore {
  readonly threads = new Map<string, ThreadSnapshot>();
  /** Every checkpoint written, in order (`messages` reads the thread as it was then). */
  readonly checkpoints: RunCheckpoint[] = [];

  loadThread(threadId: string): Promise<ThreadSnapshot | undefined> {
    const thread = this.threads.get(threadId);
    return Promise.resolve(thread === undefined ? undefined : { ...thread, messages: thread.messages.slice() });
  }

  loadRunState(runId: string): Promise<PersistedState | undefined> {
    const last = this.checkpoints.findLast((c) => c.runId === runId);
    return Promise.resolve(last === undefined || last.status === 'done' ? undefined : last.runState);
  }

  getRun(runId: string): Promise<{ readonly steps: number } | undefined> {
    const last = this.checkpoints.findLast((c) => c.runId === runId);
    return Promise.resolve(last === undefined ? undefined : { steps: last.steps });
  }

  /** Written at once: returns nothing. */
  checkpoint(checkpoint: RunCheckpoint): void {
    const held = this.threads.get(checkpoint.threadId)?.messages as Message[] | undefined;
    let messages: Message[];
    // All that is held is kept: the new messages are appended in place (no copy of the history).
    // Otherwise a new array, so that earlier checkpoints keep reading theirs.
    if (held !== undefined && appendStart(checkpoint, held.length) === held.length) {
      messages = held;
      for (let i = held.length; i < checkpoint.messages.length; i++) messages.push(checkpoint.messages[i] as Message);
    } else messages = messagesAfter(checkpoint, held);
    this.checkpoints.push(new KeptCheckpoint(checkpoint, messages, messages.length));
    this.threads.set(checkpoint.threadId, { messages, threadState: checkpoint.threadState });
  }
}

/** A checkpoint as `MemoryThreadRunStore` keeps it: its fields, and its messages read from the thread's array as it was then. */
class KeptCheckpoint {
  readonly threadId: string;
  readonly runId: string;
  readonly agentId: string;
  readonly appendFrom?: number;
  readonly status: RunStatus;
  readonly steps: number;
  readonly threadState: PersistedState;
  readonly runState: PersistedState;
  readonly termination?: TerminationReason;
  readonly updatedAt: number;
  readonly expectedMessageCount?: number;
  readonly parentRunId?: string;
  readonly tokens?: CheckpointTokens;
  readonly fence?: CheckpointFence;
  readonly agentDigest?: string;
  readonly #messages: readonly Message[];
  readonly #count: number;

  constructor(c: RunCheckpoint, messages: readonly Message[], count: number) {
    this.threadId = c.threadId;
    this.runId = c.runId;
    this.agentId = c.agentId;
    if (c.appendFrom !== undefined) this.appendFrom = c.appendFrom;
    this.status = c.status;
    this.steps = c.steps;
    this.threadState = c.threadState;
    this.runState = c.runState;
    if (c.termination !== undefined) this.termination = c.termination;
    this.updatedAt = c.updatedAt;
    if (c.expectedMessageCount !== undefined) this.expectedMessageCount = c.expectedMessageCount;
    if (c.parentRunId !== undefined) this.parentRunId = c.parentRunId;
    if (c.tokens !== undefined) this.tokens = c.tokens;
    if (c.fence !== undefined) this.fence = c.fence;
    if (c.agentDigest !== undefined) this.agentDigest = c.agentDigest;
    this.#messages = messages;
    this.#count = count;
  }

  /** The thread's messages as of this checkpoint (a copy). */
  get messages(): Message[] {
    return this.#messages.slice(0, this.#count);
  }
}
