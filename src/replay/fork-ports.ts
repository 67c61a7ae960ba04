import type { InferenceExecutionError } from '../contract/errors.ts';
import type { JsonValue } from '../contract/json.ts';
import type { StreamPart } from '../contract/stream.ts';
import type { ToolResult } from '../contract/tool.ts';
import type { AgentEvent } from '../contract/event.ts';
import { InferenceFailure, type InferenceRequest, type LlmExecutor } from '../runtime/llm.ts';
import type { Tool, ToolCallContext, ToolOutput } from '../runtime/tool.ts';
import { jsonChanges } from './json-diff.ts';
import { recordedOutcome, reportAgain } from './recorded-call.ts';
import { normaliseRequest, type LlmRecord, type NormalisedRequest, type ToolRecord } from './transcript.ts';

export type ForkErrorCode =
  | 'unreadable'
  | 'step_past_end'
  | 'no_such_field'
  | 'invalid_edit'
  | 'prefix_diverges'
  | 'model_required'
  | 'tool_required'
  | 'cannot_run';

/** Why a fork was not made: one line (`message`), and the step of the run it names where there is one. */
export interface ForkError {
  readonly code: ForkErrorCode;
  readonly message: string;
  readonly step?: number;
}

/** What of the parent the rest of a fork is answered from: its inferences (requests and answers) and tool calls after the fork point. */
export interface Recorded {
  readonly llm: readonly LlmRecord[];
  readonly requests: readonly (NormalisedRequest | undefined)[];
  readonly tools: readonly ToolRecord[];
}

/** What answers the rest beside the recording: a model, and tools by id. */
export interface Answerers {
  readonly model?: LlmExecutor;
  readonly tools?: readonly Tool[];
}

/** The ports of the run after the fork point: the recorded answers while asked the same, then the model and tools given. */
export class Suffix {
  readonly #parent: Recorded;
  readonly #options: Answerers;
  readonly #atStep: number;
  #inference = 0;
  #steps = 0;
  #switched = false;
  readonly #tools: ToolRecord[];
  recorded = 0;
  answeredByModel = 0;
  stopped: ForkError | undefined;
  abort: () => void = () => undefined;

  constructor(parent: Recorded, atStep: number, options: Answerers) {
    this.#parent = parent;
    this.#atStep = atStep;
    this.#options = options;
    this.#tools = [...parent.tools];
  }

  saw(e: AgentEvent): void {
    if (e.event_type === 'step_start') this.#steps++;
  }

  get #step(): number {
    return this.#atStep + Math.max(1, this.#steps);
  }

  #stop(code: ForkErrorCode, message: string): Error {
    const step = this.#step;
    this.stopped ??= { code, message: `step ${step}: ${message}`, step };
    this.abort();
    return new Error(this.stopped.message);
  }

  llm(provider: string): LlmExecutor {
    return { name: provider, stream: (request) => this.#stream(request) };
  }

  #stream(request: InferenceRequest): AsyncIterable<StreamPart> {
    const i = this.#inference++;
    let why = 'the recording has no answer here';
    if (!this.#switched) {
      const record = this.#parent.llm[i];
      const recorded = this.#parent.requests[i];
      if (record !== undefined && recorded !== undefined && record.interrupted !== true) {
        const changes = jsonChanges(withoutIds(recorded), withoutIds(normaliseRequest(request)));
        if (changes.length === 0) {
          this.recorded++;
          return partsOf(record.parts as readonly StreamPart[], record.error);
        }
        why = `the request differs from the recorded one at ${changes[0]?.path || '/'}`;
      }
      // From the first request the recording cannot answer on, the model answers all the rest.
      this.#switched = true;
    }
    if (this.#options.model === undefined) throw this.#stop('model_required', `${why}: a model must answer from here (--model)`);
    this.answeredByModel++;
    return this.#options.model.stream(request);
  }

  tool(descriptor: Tool['descriptor']): Tool {
    const own = this.#options.tools?.find((t) => t.descriptor.id === descriptor.id);
    return {
      descriptor,
      execute: (args, ctx) => {
        const i = this.#tools.findIndex(
          (r) => r.call_id === ctx.callId && r.name === descriptor.id && r.resume === undefined && JSON.stringify(r.arguments) === JSON.stringify(args),
        );
        const r = i >= 0 ? this.#tools.splice(i, 1)[0] : undefined;
        if (r !== undefined) return replayed(r, descriptor.id, ctx);
        if (own !== undefined) return own.execute(args, ctx);
        throw this.#stop('tool_required', `the recording does not answer the call of ${descriptor.id} [${ctx.callId}]: its tool must run it (--app)`);
      },
    };
  }
}

/** A recorded answer: its parts, then its error where it failed. */
async function* partsOf(parts: readonly StreamPart[], error: LlmRecord['error']): AsyncGenerator<StreamPart> {
  for (const p of parts) yield p;
  if (error !== undefined) throw new InferenceFailure(error as InferenceExecutionError);
}

/** A request as a model sees it: the messages without the ids the run gives them (a fork draws its own). */
const withoutIds = (r: NormalisedRequest): JsonValue => ({ ...r, messages: r.messages.map(({ id: _id, ...m }) => m) }) as unknown as JsonValue;

/** A recorded call: what it reported while it ran, then its outcome. */
async function replayed(r: ToolRecord, toolId: string, ctx: ToolCallContext): Promise<ToolResult | ToolOutput> {
  for (const a of r.activity) await reportAgain(ctx, a);
  return recordedOutcome(r, toolId);
}
