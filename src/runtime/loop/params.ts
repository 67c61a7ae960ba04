import type { InferenceExecutionError, ResolveError } from '../../contract/errors.ts';
import type { InferenceOverride } from '../../contract/inference.ts';
import type { Message } from '../../contract/message.ts';
import type { Result } from '../../contract/result.ts';
import type { Env } from '../env.ts';
import type { EventSink } from '../event-sink.ts';
import type { AgentOverlayState } from '../loop-keys.ts';
import type { PhaseRuntime } from '../phase-runtime.ts';
import type { ResolvedAgent } from '../resolve.ts';
import type { CheckpointStamp } from '../run-handle.ts';
import type { RunSignal } from '../run-signal.ts';
import type { RunTap } from '../tap.ts';
import type { ThreadRunStore } from '../thread-run-store.ts';
import type { DecisionSource } from './suspension.ts';

/** What a run of the loop is given by its owner: the agent, its phases and store, the thread's history and the input, and where decisions come from. */
export interface RunParams extends DecisionSource {
  readonly env: Env;
  readonly resolved: ResolvedAgent;
  readonly phase: PhaseRuntime;
  readonly sink: EventSink;
  readonly store: ThreadRunStore | undefined;
  readonly threadId: string;
  readonly runId: string;
  readonly history: readonly Message[];
  /** Messages the store holds for the thread (default: the history's length; more when the history was rewound). */
  readonly storedCount?: number;
  readonly input: readonly Message[];
  readonly overrides: InferenceOverride | undefined;
  /** The run's own cancellation; its owner calls `RunLoop.aborted()` when it fires. */
  readonly cancellation: RunSignal;
  /** The provider-side model that answered the last inference (set by retrying executors). */
  readonly answeredBy: () => string | undefined;
  /** Every inference failure of the run, in order: the retry policy adds those it absorbed, the loop the rest. */
  readonly inferenceErrors?: InferenceExecutionError[];
  /** The run that delegated this one (a sub-run's `run_start` names it). */
  readonly parentRunId?: string;
  /** What each checkpoint of the run carries to its store besides the run (`RunOptions.checkpoint`). */
  readonly stamp?: CheckpointStamp;
  /** What the agent's plugins watch of the run beyond its events (`RunTap`). */
  readonly tap?: RunTap;
  /**
   * Resolves the agent a handoff made active (`AgentOverlayKey`), given the run's own: an overlay of
   * it (its plugins stay the run's), or a registered agent with its own plugins. Without it, a
   * handoff blocks the run.
   */
  readonly reresolve?: (target: AgentOverlayState, base: ResolvedAgent) => Result<ResolvedAgent, ResolveError>;
}
