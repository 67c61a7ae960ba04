import type { InferenceExecutionError } from './errors.ts';
import type { TerminationReason } from './lifecycle.ts';
import type { TokenUsage } from './usage.ts';

/** The outcome of a run (book: AgentRunResult). */
export interface AgentRunResult {
  readonly threadId: string;
  readonly runId: string;
  readonly response: string;
  readonly steps: number;
  readonly termination: TerminationReason;
  readonly usage: TokenUsage;
  /**
   * Every inference failure the run saw, in order: those its retry policy absorbed (retried, fallen
   * back from, refused by an open circuit breaker), those counted as failed steps, and one that ended it.
   */
  readonly inferenceErrors: readonly InferenceExecutionError[];
}
