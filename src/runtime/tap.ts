import type { AgentSpec } from '../contract/agent-spec.ts';
import type { InferenceExecutionError } from '../contract/errors.ts';
import type { AgentEvent } from '../contract/event.ts';
import type { Message, ToolCall } from '../contract/message.ts';
import type { PersistedState } from '../core/state/state-ops.ts';
import type { StopReason } from '../contract/stream.ts';
import type { ToolResult } from '../contract/tool.ts';
import type { TokenUsage } from '../contract/usage.ts';
import type { Env } from './env.ts';
import type { StateStore } from './state-store.ts';
import type { InferenceRequest } from './llm.ts';

/**
 * What a plugin may watch of a run besides its phases (`RuntimePlugin.tap`): its events, each
 * inference and each tool execution as they happen. A tap only watches — it changes nothing the
 * run does — and it is told synchronously, in the run's own order, so whatever it draws from the
 * run's `Env` (a clock reading, an id) is drawn at the same points of every run and of its replay.
 */
export interface RunTap {
  /** Every event the run emits, before its sink gets it. */
  event?(event: AgentEvent): void;
  /** One inference, once its stream ended or failed. */
  inference?(inference: TappedInference): void;
  /** A tool call about to run (after its gate allowed it). */
  toolStarted?(call: ToolCall): void;
  /** The tool call's outcome, as soon as it settles. */
  toolSettled?(call: ToolCall, result: ToolResult): void;
  /**
   * The run where it checkpoints between steps (with a store or without one): once it has started
   * (steps 0), then at the end of each step — the steps done, the thread's messages and its state by
   * scope, as a store would be given them. What a fork of a recorded run starts from (`forkTranscript`).
   */
  stepEnded?(step: TappedStep): void;
}

/** The run between steps, at its start or a step's end (`RunTap.stepEnded`). */
export interface TappedStep {
  readonly steps: number;
  readonly messages: readonly Message[];
  readonly state: { readonly thread: PersistedState; readonly run: PersistedState };
}

/** One inference as the loop saw it: its request, its times on the run's clock, how it ended. */
export interface TappedInference {
  readonly request: InferenceRequest;
  /** The model registry's provider id of the agent's model (its name in the GenAI conventions is `providerName`). */
  readonly provider: string;
  /** The provider-side model that answered (a fallback model when the retry policy took one). */
  readonly answeredBy: string;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly usage?: TokenUsage;
  readonly stopReason?: StopReason;
  readonly error?: InferenceExecutionError;
  readonly cancelled: boolean;
  /**
   * The provider as the GenAI semantic conventions name it (`gen_ai.provider.name`: `openai`,
   * `anthropic`, …), when the provider that answered says which kind it is. This and the three
   * fields after it are what the provider's stream said (`response_metadata` parts, which a
   * transcript records and a replay serves again): none when it failed before any content came.
   */
  readonly providerName?: string;
  /** The id the provider gave its answer (`gen_ai.response.id`), when it gave one. */
  readonly responseId?: string;
  /** The model the provider said answered (`gen_ai.response.model`), as it said it, when it said. */
  readonly responseModel?: string;
  /** Where the provider was reached (`server.address`, `server.port`), for a provider over the network. */
  readonly server?: { readonly address: string; readonly port?: number };
  /** What the model answered (content capture: `gen_ai.output.messages`); absent for a failed inference. */
  readonly output?: { readonly text: string; readonly reasoning?: string; readonly toolCalls: readonly ToolCall[] };
}

/** The run a tap watches. */
export interface TapRun {
  /** The run's `Env`: a tap that needs a time or an id draws it here, so that a replay hands out the same. */
  readonly env: Env;
  readonly threadId: string;
  readonly runId: string;
  readonly agent: AgentSpec;
  /** The run that delegated this one, if any. */
  readonly parentRunId?: string;
}

/** Tells `stepEnded` of the run as its step's checkpoint would store it (nothing when its state cannot be exported: the checkpoint halts then). */
export function tellStepEnded(stepEnded: (step: TappedStep) => void, steps: number, messages: readonly Message[], store: StateStore): void {
  const state = store.exportByScope();
  if (state.ok) stepEnded({ steps, messages: [...messages], state: state.value });
}

/** One tap telling every tap of `taps` in order; `undefined` when there is none. */
export function combinedTap(taps: readonly RunTap[]): RunTap | undefined {
  if (taps.length === 0) return undefined;
  if (taps.length === 1) return taps[0];
  return {
    event: (e) => {
      for (const t of taps) t.event?.(e);
    },
    inference: (i) => {
      for (const t of taps) t.inference?.(i);
    },
    toolStarted: (c) => {
      for (const t of taps) t.toolStarted?.(c);
    },
    toolSettled: (c, r) => {
      for (const t of taps) t.toolSettled?.(c, r);
    },
    stepEnded: (s) => {
      for (const t of taps) t.stepEnded?.(s);
    },
  };
}
