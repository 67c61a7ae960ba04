import type { Message } from '../contract/message.ts';
import type { RunStatus, TerminationReason } from '../contract/lifecycle.ts';
import type { PersistedState } from '../core/state/state-store.ts';

/** What a checkpoint records (book: Checkpoint Triggers): messages, lifecycle, persistent state. */
export interface RunCheckpoint {
  readonly threadId: string;
  readonly runId: string;
  readonly agentId: string;
  readonly messages: readonly Message[];
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
}

export interface ThreadSnapshot {
  readonly messages: readonly Message[];
  readonly threadState?: PersistedState;
}

/** The store port of the loop: load a thread's history and state, write checkpoints. */
export interface ThreadRunStore {
  loadThread(threadId: string): Promise<ThreadSnapshot | undefined>;
  checkpoint(checkpoint: RunCheckpoint): Promise<void>;
  /** The run-scoped state of an unfinished run's last checkpoint (`RunStore.loadRunState`); needed to revive a parked run. */
  loadRunState?(runId: string): Promise<PersistedState | undefined>;
}

/** An in-memory `ThreadRunStore` (the durable stores arrive with the server). */
export class MemoryThreadRunStore implements ThreadRunStore {
  readonly threads = new Map<string, ThreadSnapshot>();
  readonly checkpoints: RunCheckpoint[] = [];

  loadThread(threadId: string): Promise<ThreadSnapshot | undefined> {
    return Promise.resolve(this.threads.get(threadId));
  }

  loadRunState(runId: string): Promise<PersistedState | undefined> {
    const last = this.checkpoints.findLast((c) => c.runId === runId);
    return Promise.resolve(last === undefined || last.status === 'done' ? undefined : last.runState);
  }

  checkpoint(checkpoint: RunCheckpoint): Promise<void> {
    this.checkpoints.push(checkpoint);
    this.threads.set(checkpoint.threadId, { messages: checkpoint.messages, threadState: checkpoint.threadState });
    return Promise.resolve();
  }
}
