import { z } from 'zod';
import { definePluginConfigKey } from '../contract/agent-spec.ts';
import type { InferenceExecutionError } from '../contract/errors.ts';
import type { StreamPart } from '../contract/stream.ts';
import type { CircuitBreaker } from './circuit-breaker.ts';
import type { Env } from './env.ts';
import { InferenceFailure, isRetryable, type InferenceRequest, type LlmExecutor } from './llm.ts';

/** The `retry` section of an agent spec (book: LlmRetryPolicy). */
export const LlmRetryPolicySchema = z
  .object({
    max_retries: z.number().int().nonnegative().default(2),
    fallback_models: z.array(z.string()).default([]),
    backoff_base_ms: z.number().int().nonnegative().default(500),
  })
  .strict();
export type LlmRetryPolicy = z.output<typeof LlmRetryPolicySchema>;

/** The policy of an agent without a `retry` section: one frozen value, not a parse per run. */
const DEFAULT_RETRY: LlmRetryPolicy = ((policy: LlmRetryPolicy) => {
  Object.freeze(policy.fallback_models);
  return Object.freeze(policy);
})(LlmRetryPolicySchema.parse({}));

export const RetryConfigKey = definePluginConfigKey('retry', LlmRetryPolicySchema as z.ZodType<LlmRetryPolicy>, () => DEFAULT_RETRY);

/** Largest backoff between attempts (0.6 `MAX_BACKOFF_MS`). */
export const MAX_BACKOFF_MS = 8000;

/** `base · 2^attempt` ms, capped at 8 s; 0 when the base is 0 (attempt is 0-based). */
export const backoffMs = (base: number, attempt: number): number => (base === 0 ? 0 : Math.min(base * 2 ** Math.min(attempt, 16), MAX_BACKOFF_MS));

/** One model the retrying executor may try: the executor serving it and its provider-side name. */
export interface ModelTarget {
  readonly modelName: string;
  readonly executor: LlmExecutor;
}

/**
 * Retries a failed stream *open* (a failure before the first part) with exponential backoff through
 * `env.sleep`, then falls back to each fallback model in order; a per-model circuit breaker skips
 * models that keep failing. A failure after parts were yielded is not retried (they reached the
 * client already). The request's `model` is replaced by each target's name; the observer hears which
 * one answered and each failure another attempt followed.
 */
export function retryingExecutor(
  targets: readonly ModelTarget[],
  policy: LlmRetryPolicy,
  env: Env,
  breaker?: CircuitBreaker,
  observer: InferenceObserver = {},
): LlmExecutor {
  const setup: RetrySetup = { targets, policy, env, breaker, observer };
  return {
    name: `retrying(${targets.map((t) => t.executor.name).join(',')})`,
    stream: (request) => new RetryingStream(setup, request),
  };
}

/** What a run hears of its inference attempts. */
export interface InferenceObserver {
  /** The provider-side model name that answered an inference. */
  readonly onModel?: (model: string) => void;
  /** A failure another attempt followed (absorbed); the failure that ends the retries is thrown instead. */
  readonly onAbsorbed?: (error: InferenceExecutionError) => void;
}

/** What every stream of one retrying executor shares. */
interface RetrySetup {
  readonly targets: readonly ModelTarget[];
  readonly policy: LlmRetryPolicy;
  readonly env: Env;
  readonly breaker: CircuitBreaker | undefined;
  readonly observer: InferenceObserver;
}

/**
 * One stream through the retry loop, its own iterator (methods, not a closure per stream). The retry
 * loop runs only until the first part: from then on the inner iterator is used as it is, so a
 * streamed delta costs no extra generator hop.
 */
class RetryingStream implements AsyncIterable<StreamPart>, AsyncIterator<StreamPart> {
  #inner: AsyncIterator<StreamPart> | undefined;
  readonly #setup: RetrySetup;
  readonly #request: InferenceRequest;

  constructor(setup: RetrySetup, request: InferenceRequest) {
    this.#setup = setup;
    this.#request = request;
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamPart> {
    return this;
  }

  // After the first part the provider's iterator is used as it is: a failure from here on is not
  // retried (its parts reached the client) and the loop reports it.
  next(): Promise<IteratorResult<StreamPart>> {
    return this.#inner === undefined ? this.#open() : this.#inner.next();
  }

  async return(value?: unknown): Promise<IteratorResult<StreamPart>> {
    await this.#inner?.return?.(value);
    return { done: true, value: undefined };
  }

  /**
   * The first attempt, without the retry loop's machinery when it succeeds (the common case): the
   * primary's stream opened and its first part read. A failure goes on in `#retry`, as the loop's
   * first attempt would.
   */
  #open(): Promise<IteratorResult<StreamPart>> {
    const { targets, breaker } = this.#setup;
    const target = targets[0];
    const request = this.#request;
    // An open or half-open circuit needs the loop (its check may refuse, or admit a probe).
    if (target === undefined || (breaker !== undefined && !breaker.isClosed(request.model))) return this.#retry(undefined);
    let it: AsyncIterator<StreamPart>;
    let first: Promise<IteratorResult<StreamPart>>;
    try {
      it = target.executor.stream(request)[Symbol.asyncIterator]();
      first = it.next();
    } catch (e) {
      return this.#retry({ thrown: e });
    }
    return first.then(
      (part) => {
        this.#setup.observer.onModel?.(request.model);
        breaker?.recordSuccess(request.model);
        this.#inner = it;
        return part;
      },
      (e: unknown) => this.#retry({ thrown: e }),
    );
  }

  /**
   * The retry loop: every attempt by policy, each fallback model in turn. `failed` holds what the
   * primary's first attempt threw when `#open` made it (the loop then goes on from there).
   */
  async #retry(failed: { readonly thrown: unknown } | undefined): Promise<IteratorResult<StreamPart>> {
    const request = this.#request;
    const { targets, policy, env, breaker, observer } = this.#setup;
    let last: InferenceFailure | undefined;
    let resumeAt = 0;
    if (failed !== undefined) {
      const failure = toFailure(failed.thrown);
      if (!isRetryable(failure.error)) throw failure;
      breaker?.recordFailure(request.model);
      last = failure;
      if (policy.max_retries > 0) await env.sleep(backoffMs(policy.backoff_base_ms, 0), request.signal);
      resumeAt = 1;
    }
    for (let t = 0; t < targets.length; t++) {
      const target = targets[t] as ModelTarget;
      // The primary keeps the request's model (an override may have changed it); fallbacks use theirs.
      const model = t === 0 ? request.model : target.modelName;
      for (let attempt = t === 0 ? resumeAt : 0; attempt <= policy.max_retries; attempt++) {
        // Another attempt follows the last failure: it was absorbed.
        if (last !== undefined) {
          observer.onAbsorbed?.(last.error);
          last = undefined;
        }
        if (breaker !== undefined && !breaker.check(model)) {
          last = new InferenceFailure({ code: 'provider', message: `circuit breaker open for model ${model}` });
          break;
        }
        try {
          const it = target.executor
            .stream(model === request.model ? request : { ...request, model, ...(request.signal !== undefined ? { signal: request.signal } : {}) })
            [Symbol.asyncIterator]();
          const first = await it.next();
          // As in 0.6, a stream that opened is a success for the breaker.
          observer.onModel?.(model);
          breaker?.recordSuccess(model);
          this.#inner = it;
          return first;
        } catch (e) {
          const failure = toFailure(e);
          if (!isRetryable(failure.error)) throw failure;
          breaker?.recordFailure(model);
          last = failure;
          if (attempt < policy.max_retries) await env.sleep(backoffMs(policy.backoff_base_ms, attempt), request.signal);
        }
      }
    }
    throw last ?? new InferenceFailure({ code: 'provider', message: 'no model to try' });
  }
}

const toFailure = (e: unknown): InferenceFailure =>
  e instanceof InferenceFailure ? e : new InferenceFailure({ code: 'provider', message: e instanceof Error ? e.message : String(e) });
