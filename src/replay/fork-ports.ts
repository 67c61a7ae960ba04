import type { InferenceExecutionError } from '../contract/errors.ts';
import type { JsonValue } from '../contract/json.ts';
import type { StreamPart } from '../contract/stream.ts';
import { ToolResults } from '../contract/tool.ts';
import { MutationBatch } from '../core/state/mutation-batch.ts';
import { StateCommand, type ScheduledAction, type TypedEffect } from '../core/state/state-command.ts';
import type { AgentEvent } from '../contract/event.ts';
import { InferenceFailure, type InferenceRequest, type LlmExecutor } from '../runtime/llm.ts';
import { ToolFailure, type Tool } from '../runtime/tool.ts';
import { jsonChanges } from './json-diff.ts';
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
  #inference: number;
  #steps = 0;
  #switched = false;
  readonly #tools: ToolRecord[];
  recorded = 0;
  answeredByModel = 0;
  stopped: ForkError | undefined;
  abort: () => void = () => undefined;

  constructor(parent: Recorded, atStep: number, options: Answerers) {
    this.#parent = parent;
    this.#inference = 0;
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
    const record = this.#switched ? undefined : this.#parent.llm[i];
    const recorded = this.#switched ? undefined : this.#parent.requests[i];
    if (record !== undefined && recorded !== undefined && record.interrupted !== true) {
      const changes = jsonChanges(withoutIds(recorded), withoutIds(normaliseRequest(request)));
      if (changes.length === 0) {
        this.recorded++;
        return partsOf(record.parts as readonly StreamPart[], record.error);
      }
      this.#switched = true;
      if (this.#options.model === undefined)
        throw this.#stop('model_required', `the request differs from the recorded one at ${changes[0]?.path || '/'}: a model must answer from here (--model)`);
    }
    this.#switched = true;
    if (this.#options.model === undefined) throw this.#stop('model_required', 'the recording has no answer here: a model must answer from here (--model)');
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
async function replayed(r: ToolRecord, toolId: string, ctx: Parameters<Tool['execute']>[1]): Promise<Awaited<ReturnType<Tool['execute']>>> {
  for (const a of r.activity) {
    if (a.method === 'activity') await ctx.reportActivity(a.args[0], a.args[1]);
    else if (a.method === 'activity_delta') await ctx.reportActivityDelta(a.args[0], a.args[1]);
    else if (a.method === 'stream_output') await ctx.streamOutput(a.args[0]);
    else await ctx.reportProgress(a.args[0], a.args[1] ?? undefined, a.args[2] ?? undefined);
  }
  return outcomeOf(r, toolId);
}

/** A recorded call's outcome, as the replay gives it back. */
function outcomeOf(r: ToolRecord, toolId: string): ReturnType<Tool['execute']> {
  if (r.tool_error !== undefined) throw new ToolFailure(r.tool_error);
  if (r.thrown !== undefined) throw new Error(r.thrown);
  const result = r.result ?? ToolResults.error(toolId, 'the recording has no result');
  if (r.command === undefined) return result;
  const patch = new MutationBatch(
    undefined,
    r.command.ops.map((op) => (op.kind === 'clear' ? { kind: 'clear' as const, key: op.key } : { kind: 'update' as const, key: op.key, update: op.update })),
  );
  return { result, command: new StateCommand(patch, r.command.actions as unknown as ScheduledAction[], r.command.effects as unknown as TypedEffect[]) };
}
