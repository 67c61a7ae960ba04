import type { TerminationReason } from '../../contract/lifecycle.ts';
import type { Message } from '../../contract/message.ts';
import { failed, type Halting } from '../halt.ts';
import { RunLifecycle } from '../loop-keys.ts';
import { andThenOrElse } from '../maybe-promise.ts';
import { StoreFailure } from '../store.ts';
import type { PhaseRuntime } from '../phase-runtime.ts';
import type { PersistedState } from '../../core/state/state-ops.ts';
import type { RunCheckpoint, ThreadRunStore } from '../thread-run-store.ts';
import type { Env } from '../env.ts';
import type { CheckpointStamp } from '../run-handle.ts';

/** What a checkpoint reads of its run at the moment it is written. */
export interface CheckpointFacts {
  readonly agentId: string;
  readonly messages: readonly Message[];
  readonly steps: number;
  /** Tokens the run's inferences reported so far. */
  readonly inputTokens: number;
  readonly outputTokens: number;
}

type Writable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * A run's writes to its thread's store (a checkpoint at every step's end, at a suspension and at
 * the end): what the store already holds of the run's messages (optimistic concurrency, and the
 * part a rewound or compacted history replaces) and of its tokens (the store adds what came after).
 */
export class Checkpoints {
  readonly #store: ThreadRunStore | undefined;
  readonly #env: Env;
  readonly #phase: PhaseRuntime;
  readonly #threadId: string;
  readonly #runId: string;
  readonly #parentRunId: string | undefined;
  readonly #stamp: CheckpointStamp | undefined;
  readonly #onFenced: (() => void) | undefined;
  /** Messages the store holds for this thread as far as this run knows. */
  #persistedCount: number;
  /** Leading messages the store holds as this run holds them (the rest it replaces at the next checkpoint). */
  #storedPrefix: number;
  /** The tokens the store already counted. */
  #inputStored = 0;
  #outputStored = 0;

  constructor(options: {
    readonly store: ThreadRunStore | undefined;
    readonly env: Env;
    readonly phase: PhaseRuntime;
    readonly threadId: string;
    readonly runId: string;
    readonly parentRunId: string | undefined;
    readonly stamp?: CheckpointStamp | undefined;
    /** Told when the store refuses a checkpoint because another instance took the run over (`fenced`). */
    readonly onFenced?: () => void;
    readonly persistedCount: number;
    readonly storedPrefix: number;
  }) {
    this.#store = options.store;
    this.#env = options.env;
    this.#phase = options.phase;
    this.#threadId = options.threadId;
    this.#runId = options.runId;
    this.#parentRunId = options.parentRunId;
    this.#stamp = options.stamp;
    this.#onFenced = options.onFenced;
    this.#persistedCount = options.persistedCount;
    this.#storedPrefix = options.storedPrefix;
  }

  /** The history was rewritten from its start (a compaction): the next checkpoint replaces all of it. */
  rewritten(): void {
    this.#storedPrefix = 0;
  }

  /** Whether the run has a store to write to (without one, a checkpoint is nothing to do). */
  get stored(): boolean {
    return this.#store !== undefined;
  }

  /**
   * Writes the run (stamped `at`, else now; its thread- and run-scoped state as `amend` makes each):
   * `undefined` once written (or without a store), a halt when the state cannot be exported.
   */
  write(termination: TerminationReason | undefined, facts: CheckpointFacts, at?: number, amend?: (run: PersistedState) => PersistedState): Halting {
    const store = this.#store;
    if (store === undefined) return undefined;
    const state = this.#phase.store.exportByScope();
    if (!state.ok) return failed('state could not be exported for the checkpoint');
    const lifecycle = this.#phase.store.snapshot().get(RunLifecycle);
    const checkpoint: Writable<RunCheckpoint> = {
      threadId: this.#threadId,
      runId: this.#runId,
      agentId: facts.agentId,
      messages: facts.messages,
      appendFrom: this.#storedPrefix,
      status: lifecycle?.status ?? 'running',
      steps: facts.steps,
      threadState: amend === undefined ? state.value.thread : amend(state.value.thread),
      runState: amend === undefined ? state.value.run : amend(state.value.run),
      updatedAt: at ?? this.#env.clock.now(),
      expectedMessageCount: this.#persistedCount,
    };
    if (termination !== undefined) checkpoint.termination = termination;
    if (this.#parentRunId !== undefined) checkpoint.parentRunId = this.#parentRunId;
    const stamp = this.#stamp;
    if (stamp !== undefined) {
      if (stamp.fence !== undefined) checkpoint.fence = stamp.fence;
      if (stamp.agentDigest !== undefined) checkpoint.agentDigest = stamp.agentDigest;
    }
    // The store adds these to the run's totals: what the run inferred since its last checkpoint written.
    const tokens = { input: facts.inputTokens - this.#inputStored, output: facts.outputTokens - this.#outputStored };
    checkpoint.tokens = tokens;
    const written = facts.messages.length;
    return andThenOrElse(store.checkpoint(checkpoint), () => this.#stored(written, tokens), this.#refused);
  }

  /** A refused checkpoint fails the run as before; one refused because the run went on elsewhere is told first. */
  readonly #refused = (e: unknown): never => {
    if (e instanceof StoreFailure && e.error.code === 'fenced') this.#onFenced?.();
    throw e;
  };

  /** The store holds the first `written` messages as this run holds them, and the tokens reported. */
  #stored(written: number, tokens: { readonly input: number; readonly output: number }): undefined {
    this.#inputStored += tokens.input;
    this.#outputStored += tokens.output;
    this.#persistedCount = written;
    this.#storedPrefix = written;
    return undefined;
  }
}
