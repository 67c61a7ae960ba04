import type { MemoryThreadRunStore, RunCheckpoint, ThreadRunStore } from '../../src/runtime/thread-run-store.ts';

/**
 * A store whose process dies after `keep` checkpoints: it keeps the first `keep` and never answers
 * the next one, so nothing the run does after its keep-th write is stored — as after a kill -9
 * right after it. A second runtime over `inner` then takes the run up.
 */
export class DyingStore implements ThreadRunStore {
  readonly inner: MemoryThreadRunStore;
  #left: number;
  constructor(inner: MemoryThreadRunStore, keep: number) {
    this.inner = inner;
    this.#left = keep;
  }
  loadThread(threadId: string) {
    return this.inner.loadThread(threadId);
  }
  loadRunState(runId: string) {
    return this.inner.loadRunState(runId);
  }
  getRun(runId: string) {
    return this.inner.getRun(runId);
  }
  checkpoint(checkpoint: RunCheckpoint): void | Promise<void> {
    if (this.#left-- > 0) return this.inner.checkpoint(checkpoint);
    return new Promise<void>(() => {});
  }
}
