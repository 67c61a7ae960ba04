import type { StreamPart } from '../contract/stream.ts';
import { InferenceFailure, type InferenceRequest, type LlmExecutor } from '../runtime/llm.ts';

/** One recorded inference: its parts, and the error that ended it, if any. */
export interface RecordedInference {
  readonly parts: readonly StreamPart[];
  readonly error?: ConstructorParameters<typeof InferenceFailure>[0];
}

/**
 * A model that answers from recorded inferences, in order, whatever it is asked (`--model
 * transcript:FILE`): any recorded conversation can drive the real loop. Past the end it fails.
 */
export class TranscriptLlm implements LlmExecutor {
  readonly name = 'transcript';
  readonly #inferences: RecordedInference[];

  constructor(inferences: readonly RecordedInference[]) {
    this.#inferences = [...inferences];
  }

  stream(_request: InferenceRequest): AsyncIterable<StreamPart> {
    const next = this.#inferences.shift();
    return (async function* (): AsyncGenerator<StreamPart> {
      if (next === undefined) throw new InferenceFailure({ code: 'provider', message: 'the transcript has no more recorded responses' });
      for (const part of next.parts) yield part;
      if (next.error !== undefined) throw new InferenceFailure(next.error);
    })();
  }
}
