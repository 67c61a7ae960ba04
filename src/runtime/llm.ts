import { describeInferenceError } from './errors.ts';
import type { InferenceExecutionError } from '../contract/errors.ts';
import type { InferenceOverride } from '../contract/inference.ts';
import type { Message } from '../contract/message.ts';
import type { StreamPart, StreamResult } from '../contract/stream.ts';
import { StreamAccumulator } from '../core/inference/accumulator.ts';
import type { ToolDescriptor } from '../contract/tool.ts';

/** One inference request, as the loop hands it to a provider. */
export interface InferenceRequest {
  /** The provider-side model name (after the model registry lookup and overrides). */
  readonly model: string;
  /**
   * The messages to send. Valid while the stream is read: the loop appends the next step's messages
   * to the same array, so an executor that keeps a request past its stream copies them. No one else
   * writes to it: a recorder that saw the array before reads only what was appended (`isAppendOnly`).
   */
  readonly messages: readonly Message[];
  /** The tools offered; like `messages`, valid while the stream is read (the run may send the same array again). */
  readonly tools: readonly ToolDescriptor[];
  readonly overrides?: InferenceOverride;
  /** The id of the one tool offered that the model must call (a forced tool choice); absent, the model chooses. */
  readonly requiredTool?: string;
  /**
   * The run's signal: aborts when the run is cancelled. On a request the loop makes it is a getter
   * of the request's class, made at the first read (docs/adr/0075): a copy of the request made by
   * spreading it does not carry it, so read it before copying.
   */
  readonly signal?: AbortSignal;
  /**
   * The thread whose run asks: an executor that keeps state per conversation (a script served to
   * many threads) keys it by this. Absent outside a run (a summary asked for by a context policy).
   */
  readonly threadId?: string;
}

/**
 * The LLM port: a request in, an async stream of parts out (text and reasoning deltas, tool-call
 * start/args-delta/ready, usage, finish). Failures are thrown as `InferenceFailure`.
 */
export interface LlmExecutor {
  readonly name: string;
  stream(request: InferenceRequest): AsyncIterable<StreamPart>;
}

/** A failed inference, carrying its typed error. */
export class InferenceFailure extends Error {
  readonly error: InferenceExecutionError;
  constructor(error: InferenceExecutionError) {
    super(describeInferenceError(error));
    this.name = 'InferenceFailure';
    this.error = error;
  }
}

/** Retryable: provider, rate_limited, timeout. Never: cancelled. */
export const isRetryable = (e: InferenceExecutionError): boolean => e.code !== 'cancelled';

/** Drains a stream into its final `StreamResult` (for callers that do not stream). */
export async function collectStream(parts: AsyncIterable<StreamPart>): Promise<StreamResult> {
  const acc = new StreamAccumulator();
  for await (const part of parts) acc.push(part);
  return acc.finish();
}
