import { Messages, type Message } from '../../contract/message.ts';
import type { Phase } from '../../contract/phase.ts';
import { streamText } from '../../contract/stream.ts';
import { CONTINUATION_PROMPT, needsTruncationRecovery } from '../../core/context/index.ts';
import type { LoopInput } from '../../core/loop/step.ts';
import type { PhaseFields } from '../../core/phase/plugin.ts';
import { StateCommand } from '../../core/state/state-command.ts';
import { andThenUnlessHalted, type Halting } from '../halt.ts';
import { ContextMessages, InferenceOverrideState, orderedContextMessages, ToolFilter } from '../loop-keys.ts';
import { andThen, type MaybePromise } from '../maybe-promise.ts';
import { INTERRUPTED } from '../tool-batch.ts';
import { RAN } from './answers.ts';
import { Inferences, type Inference, type InferenceHost, type InferenceOptions, type RequestInputs } from './inference.ts';
import { closeCalls } from './open-calls.ts';

/** Result message of a requested call that did not run because the run stopped after inference. */
export const NOT_EXECUTED = '[Tool call not executed: the run stopped]';

/** What a step's way to its answer needs of its run, beyond what the inference reads. */
export interface StepInferenceHost extends InferenceHost {
  runPhase<P extends Phase>(phase: P, fields: PhaseFields<P>, cancellable?: boolean): Halting;
  submit(command: StateCommand): Halting;
}

/**
 * One step's way to the model's answer: what BeforeInference left for the request (consumed once
 * read), the inference — asked again after a cut response (book: 截断恢复) — AfterInference with what
 * the stop policies observe of it, and an answer without tools kept in the history. The history is
 * the run's own array: what a step adds to it, the run holds.
 */
export class StepInference {
  /** The run's inferences: its request, its stream and its usage. */
  readonly inferences: Inferences;
  readonly #host: StepInferenceHost;
  readonly #messages: Message[];
  /** What this step's BeforeInference left, and its inference (with its text, once asked). */
  #inputs: RequestInputs | undefined;
  #inference: Inference | undefined;
  #text: string | undefined;

  constructor(host: StepInferenceHost, messages: Message[], options: InferenceOptions) {
    this.#host = host;
    this.#messages = messages;
    this.inferences = new Inferences(host, options);
  }

  /** The step's inference; asked only once it has one (the step machine infers before it asks). */
  get current(): Inference {
    return this.#inference as Inference;
  }

  /** The step's text: what the model said, streamed parts joined once. */
  text(): string {
    return (this.#text ??= streamText(this.current.result));
  }

  /** BeforeInference, then what it left for this step's request: a tool filter, an override, context messages (each consumed). */
  requestInputs(): Halting {
    this.#inference = undefined;
    this.#text = undefined;
    return andThenUnlessHalted(this.#host.runPhase('before_inference', { messages: this.#messages, tools: this.inferences.allTools() }), this.#consumeInputs);
  }

  readonly #consumeInputs = (): Halting => {
    const snap = this.#host.phase.store.snapshot();
    const inputs: RequestInputs = {
      filter: snap.get(ToolFilter),
      override: snap.get(InferenceOverrideState),
      context: orderedContextMessages(snap.get(ContextMessages)),
    };
    this.#inputs = inputs;
    // The per-step accumulators are emptied (back to absent) once read; with none set nothing is committed.
    if (inputs.filter === undefined && inputs.override === undefined && inputs.context.length === 0) return undefined;
    const clear = StateCommand.empty();
    if (inputs.filter !== undefined) clear.clear(ToolFilter);
    if (inputs.override !== undefined) clear.clear(InferenceOverrideState);
    if (inputs.context.length > 0) clear.update(ContextMessages, { op: 'consume' });
    return this.#host.submit(clear);
  };

  /**
   * One inference. A continuation first closes the calls the cut response left incomplete and keeps
   * what it said, then asks the model to go on with the same request inputs.
   */
  infer(continuation: boolean): MaybePromise<LoopInput> {
    const previous = this.#inference;
    if (!continuation || previous === undefined) return this.#inferNow();
    return this.#continueAfter(previous);
  }

  #continueAfter(previous: Inference): MaybePromise<LoopInput> {
    const complete = new Set(previous.result.toolCalls.map((c) => c.id));
    const host = this.#host;
    return andThen(
      closeCalls(
        host,
        previous.started.filter((c) => !complete.has(c.id)),
        INTERRUPTED,
      ),
      () => {
        const partial = streamText(previous.result);
        if (partial !== '') this.#messages.push({ id: host.env.ids.next('message'), role: 'assistant', content: [{ type: 'text', text: partial }] });
        this.#messages.push(Messages.internalUser(CONTINUATION_PROMPT, { id: host.env.ids.next('message') }));
        return this.#inferNow();
      },
    );
  }

  #inferNow(): Promise<LoopInput> {
    return this.inferences.infer(this.inferences.request(this.#messages, this.#inputs as RequestInputs), this.#inferred);
  }

  readonly #inferred = (inference: Inference): LoopInput => {
    this.#inference = inference;
    this.#text = undefined;
    const error = inference.error;
    const resolved = this.#host.resolved;
    return {
      type: 'inferred',
      cancelled: inference.cancelled,
      failure: error === undefined ? undefined : { message: error.message, code: error.error.code },
      truncated: !inference.cancelled && error === undefined && needsTruncationRecovery(inference.result),
      maxContinuations: resolved.spec.max_continuation_retries,
      toolCalls: inference.result.toolCalls.length,
      toleratesErrors: resolved.stopPolicies.some((p) => p.id === 'consecutive_errors'),
    };
  };

  /** AfterInference, with what the stop policies observe of the inference. */
  afterInference(): Halting {
    const inference = this.current;
    const result = inference.result;
    const text = this.text();
    const observation =
      inference.error === undefined
        ? {
            ok: true as const,
            inputTokens: result.usage?.prompt_tokens ?? 0,
            outputTokens: result.usage?.completion_tokens ?? 0,
            text,
            toolNames: result.toolCalls.map((c) => c.name),
          }
        : { ok: false as const };
    return this.#host.runPhase('after_inference', {
      inference: observation,
      now: this.#host.env.clock.now(),
      llmResponse: inference.error === undefined ? result : { error: inference.error.error },
      messages: this.#messages,
    });
  }

  /** An answer without tools, or a stop after inference: the text is kept (0.6 loses it ⟂), no tool runs. */
  answer(): MaybePromise<LoopInput> {
    return andThen(closeCalls(this.#host, this.current.started, NOT_EXECUTED), () => {
      const text = this.text();
      if (text !== '') this.#messages.push({ id: this.#host.env.ids.next('message'), role: 'assistant', content: [{ type: 'text', text }] });
      return RAN;
    });
  }
}
