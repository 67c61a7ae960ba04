import { AsyncResource } from 'node:async_hooks';
import type { InferenceExecutionError } from '../../contract/errors.ts';
import type { AgentEvent } from '../../contract/event.ts';
import { mergeInferenceOverride, type InferenceOverride } from '../../contract/inference.ts';
import type { Message, ToolCall } from '../../contract/message.ts';
import { mergeResponseMetadata, streamText, type ResponseMetadataPart, type StreamPart, type StreamResult } from '../../contract/stream.ts';
import type { ToolDescriptor } from '../../contract/tool.ts';
import type { TokenUsage } from '../../contract/usage.ts';
import { unreachable } from '../../contract/never.ts';
import { compactionView, contextChanged } from '../../core/context/index.ts';
import { StreamAccumulator } from '../../core/inference/accumulator.ts';
import type { ReportedRequest } from '../context.ts';
import type { Env } from '../env.ts';
import { markAppendOnly } from '../append-only.ts';
import { InferenceFailure, type InferenceRequest } from '../llm.ts';
import { filterToolIds, type orderedContextMessages, type ToolFilter } from '../loop-keys.ts';
import { andThen, andThenOrElse, eachInOrder, type MaybePromise } from '../maybe-promise.ts';
import type { PhaseRuntime } from '../phase-runtime.ts';
import type { ResolvedAgent } from '../resolve.ts';
import type { RunSignal } from '../run-signal.ts';
import { LoopRequest } from './loop-request.ts';
import type { RunTap, TappedInference } from '../tap.ts';

/** What BeforeInference left for one step's request. */
export interface RequestInputs {
  readonly filter: ReturnType<typeof ToolFilter.init> | undefined;
  readonly override: InferenceOverride | undefined;
  readonly context: ReturnType<typeof orderedContextMessages>;
}

/** One streamed inference: its result, or that it was cancelled or failed, and the calls it opened. */
export interface Inference {
  readonly result: StreamResult;
  readonly cancelled: boolean;
  readonly error?: InferenceFailure;
  readonly started: { id: string; name: string }[];
}

/** What the inference reads of the run it serves. */
export interface InferenceHost {
  readonly env: Env;
  /** The agent the run acts as now (a handoff changes it between steps). */
  readonly resolved: ResolvedAgent;
  readonly phase: PhaseRuntime;
  /** The run's cancellation, read as a flag; a request's `signal` asks it for its `AbortSignal` only when read. */
  readonly cancellation: RunSignal;
  readonly threadId: string;
  readonly tap: RunTap | undefined;
  emit(event: AgentEvent): Promise<void> | undefined;
}

export interface InferenceOptions {
  /** The run's own inference overrides (a request's). */
  readonly overrides: InferenceOverride | undefined;
  /** The provider-side model that answered the last inference (set by retrying executors). */
  readonly answeredBy: () => string | undefined;
  /** Every inference failure of the run, in order: the retry policy adds those it absorbed, the loop the rest. */
  readonly inferenceErrors: InferenceExecutionError[] | undefined;
}

const nothing = (): undefined => undefined;

/**
 * A read in progress: where its parts go, whether a part is awaited from it, and what follows its
 * end — the request it answers (for `#completed`), the continuation and the read's promise.
 */
interface Reading {
  readonly iterator: AsyncIterator<StreamPart>;
  readonly acc: StreamAccumulator;
  readonly started: { id: string; name: string }[];
  readonly request: InferenceRequest;
  readonly startedAt: number;
  readonly onInference: (inference: Inference) => MaybePromise<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (e: unknown) => void;
  waiting: boolean;
}

/** How reading an inference's stream ended: at its end, by the run's abort, or with what was thrown. */
const READ = 'read' as const;
const ABORTED = 'aborted' as const;
type ReadEnd = typeof READ | typeof ABORTED | { readonly thrown: unknown };

/**
 * The inferences of one run: the request each step sends (the history as sent, the tools, the
 * overrides, what the context transform did), the stream read part after part into the run's
 * events, `inference_complete`, the tap, and the usage the run has seen. One per run; its read in
 * progress is the only one (a run infers one request at a time).
 */
export class Inferences {
  readonly #host: InferenceHost;
  readonly #options: InferenceOptions;
  /** Tokens the run's inferences reported, summed. */
  readonly usage = { prompt: 0, completion: 0, total: 0, seen: false };
  /** What `#sentView` has sent so far, and how much of the history it holds. */
  #sent: Message[] | undefined;
  #sentUpTo = 0;
  #tools: readonly ToolDescriptor[] | undefined;
  /** What the provider said of the inference being read (`response_metadata` parts, merged), for the tap. */
  #described: Omit<ResponseMetadataPart, 'type'> | undefined;
  /** The provider stream being read (`Reading`): `aborted()` ends it while a part is awaited from it. */
  #reading: Reading | undefined;

  /** A transform's answer, with the run's signal put back when it is a copy that lost it. */
  readonly #mend = (out: ReportedRequest, before: ReportedRequest): ReportedRequest =>
    out === before || out.signal !== undefined ? out : { ...out, signal: this.#host.cancellation.signal };

  /** The run's async context, taken when its loop is made: what an abort wakes runs in it (`aborted`). */
  readonly #scope = new AsyncResource('awaken.inference');

  constructor(host: InferenceHost, options: InferenceOptions) {
    this.#host = host;
    this.#options = options;
  }

  /** The agent changed (a handoff): its tools and system prompt are read again. */
  reset(): void {
    this.#tools = undefined;
    this.#sent = undefined;
    this.#sentUpTo = 0;
  }

  /** Wakes a read waiting on a provider that does not listen to the run's signal. */
  aborted(): void {
    const reading = this.#reading;
    if (reading?.waiting !== true) return;
    this.#reading = undefined;
    // Called by the abort, in its caller's async context (another request's, say): what follows
    // runs in the run's own, where a recorder files its draws and events under the run.
    this.#scope.runInAsyncScope(this.#cut, this, reading, ABORTED);
  }

  /**
   * Reports what the context transform did, streams one inference, reports its completion and hands
   * it to `then`: one promise for all of it (the read's), which settles with what `then` gave.
   */
  infer<R>(request: ReportedRequest, then: (inference: Inference) => MaybePromise<R>): Promise<R> {
    const report = request.contextReport;
    if (report !== undefined && contextChanged(report)) {
      const host = this.#host;
      const wait = host.emit({
        event_type: 'activity_snapshot',
        message_id: host.env.ids.next('message'),
        activity_type: 'context_window',
        content: { ...report },
        replace: true,
      });
      return Promise.resolve(andThen(wait, () => this.#stream(request, then)));
    }
    return this.#stream(request, then);
  }

  /**
   * What follows a read: `inference_complete` with the model that answered, its usage and its
   * duration — unless the provider failed: a failed inference did not complete (the failure is the
   * run's `error` event when it ends the run). A plugin's tap is told of it either way.
   */
  readonly #completed = (inference: Inference, reading: Reading): MaybePromise<Inference> => {
    const host = this.#host;
    const request = reading.request;
    const started = reading.startedAt;
    const model = this.#options.answeredBy() ?? request.model;
    const usage = inference.result.usage;
    const ended = host.env.clock.now();
    const duration = Math.max(0, ended - started);
    host.tap?.inference?.(this.#tapped(request, inference, model, started, ended));
    if (inference.error !== undefined) return inference;
    const wait = host.emit(
      usage === undefined
        ? { event_type: 'inference_complete', model, duration_ms: duration }
        : { event_type: 'inference_complete', model, usage, duration_ms: duration },
    );
    return wait === undefined ? inference : andThen(wait, () => inference);
  };

  /**
   * The inference as a tap is told of it: besides what the loop saw, what the provider said of its
   * answer and of itself (`response_metadata`), and the answer, unless the inference failed.
   */
  #tapped(request: InferenceRequest, inference: Inference, model: string, started: number, ended: number): TappedInference {
    const { result, error } = inference;
    const said = this.#described;
    this.#described = undefined;
    const reasoning = result.reasoning;
    return {
      request,
      provider: this.#host.resolved.providerId,
      answeredBy: model,
      startedAt: started,
      endedAt: ended,
      ...(result.usage !== undefined ? { usage: result.usage } : {}),
      ...(result.stopReason !== undefined ? { stopReason: result.stopReason } : {}),
      ...(error !== undefined ? { error: error.error } : {}),
      cancelled: inference.cancelled,
      ...(said?.provider_name !== undefined ? { providerName: said.provider_name } : {}),
      ...(said?.id !== undefined ? { responseId: said.id } : {}),
      ...(said?.model !== undefined ? { responseModel: said.model } : {}),
      ...(said?.server !== undefined ? { server: said.server } : {}),
      ...(error === undefined ? { output: { text: streamText(result), ...(reasoning !== '' ? { reasoning } : {}), toolCalls: result.toolCalls } } : {}),
    };
  }

  /** The step's request: the history as sent, the tools the filter leaves, the overrides merged, the request transforms applied. */
  request(history: readonly Message[], inputs: RequestInputs): ReportedRequest {
    const { env, resolved, phase, cancellation, threadId } = this.#host;
    const spec = resolved.spec;
    let overrides: InferenceOverride | undefined = spec.reasoning_effort !== undefined ? { reasoning_effort: spec.reasoning_effort } : undefined;
    if (this.#options.overrides !== undefined) overrides = mergeInferenceOverride(overrides ?? {}, this.#options.overrides);
    if (inputs.override !== undefined) overrides = mergeInferenceOverride(overrides ?? {}, inputs.override);

    let messages: Message[];
    if (resolved.context === undefined && inputs.context.length === 0) messages = this.#sentView(history);
    else {
      messages = [];
      if (spec.system_prompt !== '') messages.push(systemMessage(spec.system_prompt));
      // With a context policy, the summarised part of a compacted history is not sent again.
      const view = resolved.context !== undefined ? compactionView(history) : history;
      for (const m of view) if (sent(m)) messages.push(m);
      placeContextMessages(messages, inputs.context, spec.system_prompt !== '', () => env.ids.next('message'));
    }

    const tools = inputs.filter === undefined ? this.allTools() : this.#toolsOf(inputs.filter);
    let request: LoopRequest;
    if (overrides === undefined) request = new LoopRequest(resolved.modelName, messages, tools, undefined, cancellation, threadId);
    else {
      const { model: overrideModel, ...rest } = overrides;
      request = new LoopRequest(overrideModel ?? resolved.modelName, messages, tools, Object.keys(rest).length > 0 ? rest : undefined, cancellation, threadId);
    }
    // A transform's copy made by spreading the request lacks the getter: the signal is put back
    // before the next transform sees it.
    return phase.applyRequestTransforms<ReportedRequest>(request, this.#mend);
  }

  /** Every tool's descriptor, in registration order (one list while the run acts as one agent). */
  allTools(): readonly ToolDescriptor[] {
    return (this.#tools ??= this.#toolsOf(undefined));
  }

  #toolsOf(filter: ReturnType<typeof ToolFilter.init> | undefined): ToolDescriptor[] {
    const tools = this.#host.resolved.tools;
    const ids = filterToolIds([...tools.keys()], filter);
    return ids.map((id) => tools.get(id)?.descriptor).filter((d) => d !== undefined);
  }

  /**
   * The messages sent when nothing is inserted or summarised: one array for the whole run, to which
   * each step appends what the history gained (without a context policy the history only grows).
   * Requests share it, so an executor that keeps a request past its stream copies the messages
   * (`InferenceRequest.messages`).
   */
  #sentView(history: readonly Message[]): Message[] {
    if (this.#sent === undefined) {
      this.#sent = [];
      markAppendOnly(this.#sent);
      const prompt = this.#host.resolved.spec.system_prompt;
      if (prompt !== '') this.#sent.push(systemMessage(prompt));
    }
    for (let i = this.#sentUpTo; i < history.length; i++) {
      const m = history[i] as Message;
      if (sent(m)) this.#sent.push(m);
    }
    this.#sentUpTo = history.length;
    return this.#sent;
  }

  /**
   * Streams one inference, emitting its deltas; tool calls become ready at the end, in start order;
   * then `#completed` and `then`, in the turn the read ended in when nothing waits (`#settle`).
   */
  #stream<R>(request: InferenceRequest, then: (inference: Inference) => MaybePromise<R>): Promise<R> {
    const startedAt = this.#host.env.clock.now();
    const acc = new StreamAccumulator();
    this.#described = undefined;
    const started: { id: string; name: string }[] = [];
    let iterator: AsyncIterator<StreamPart>;
    try {
      iterator = this.#host.resolved.llm.stream(request)[Symbol.asyncIterator]();
    } catch (e) {
      return Promise.reject(e as Error);
    }
    return new Promise<R>((resolve, reject) => {
      const reading: Reading = {
        iterator,
        acc,
        started,
        request,
        startedAt,
        onInference: then as (inference: Inference) => MaybePromise<unknown>,
        resolve: resolve as (value: unknown) => void,
        reject,
        waiting: false,
      };
      if (this.#host.cancellation.aborted) {
        this.#settleLater(reading, Promise.resolve(this.#inferred(ABORTED, iterator, acc, started)));
        return;
      }
      this.#reading = reading;
      this.#pull();
    });
  }

  /** The read's promise settled with what follows its end (`#inferred`, `#completed`, `then`): a throw of any of them rejects it. */
  #settle(reading: Reading, end: ReadEnd): void {
    let out: unknown;
    try {
      out = andThen(andThen(this.#inferred(end, reading.iterator, reading.acc, reading.started), this.#completed, reading), reading.onInference);
    } catch (e) {
      reading.reject(e);
      return;
    }
    reading.resolve(out);
  }

  /** The inference a read ended with: cancelled, failed, or its result with its calls announced ready (`tool_call_ready`). */
  #inferred(
    end: ReadEnd,
    iterator: AsyncIterator<StreamPart>,
    acc: StreamAccumulator,
    started: { id: string; name: string }[],
  ): Inference | Promise<Inference> {
    if (end === ABORTED) {
      void iterator.return?.();
      return { result: acc.finish({ cancelled: true }), cancelled: true, started };
    }
    if (end !== READ) {
      if (this.#host.cancellation.aborted) return { result: acc.finish({ cancelled: true }), cancelled: true, started };
      const e = end.thrown;
      const failure = e instanceof InferenceFailure ? e : new InferenceFailure({ code: 'provider', message: e instanceof Error ? e.message : String(e) });
      if (failure.error.code === 'cancelled') return { result: acc.finish({ cancelled: true }), cancelled: true, started };
      this.#options.inferenceErrors?.push(failure.error);
      return { result: acc.finish({ cancelled: true }), cancelled: false, error: failure, started };
    }
    const result = acc.finish();
    if (result.usage !== undefined) {
      const usage = this.usage;
      usage.seen = true;
      usage.prompt += Math.max(0, result.usage.prompt_tokens ?? 0);
      usage.completion += Math.max(0, result.usage.completion_tokens ?? 0);
      usage.total += Math.max(0, result.usage.total_tokens ?? (result.usage.prompt_tokens ?? 0) + (result.usage.completion_tokens ?? 0));
    }
    const inference: Inference = { result, cancelled: false, started };
    return andThen(eachInOrder(result.toolCalls, this.#announceReady), () => inference);
  }

  /** `tool_call_ready` for a call (a promise only for an asynchronous sink); the calls are announced in start order. */
  readonly #announceReady = (call: ToolCall): MaybePromise<undefined> =>
    andThen(this.#host.emit({ event_type: 'tool_call_ready', id: call.id, name: call.name, arguments: call.arguments }), nothing);

  /**
   * Ends the read in progress (once): one that reached the stream's end goes on in the same turn
   * (`#settle`); one cut short (an abort, a throw) a turn at a time, as it always has (`#cut`), so
   * what the cut stream does as it closes (a recorder writing its part) keeps its place in the run.
   */
  #endRead(end: ReadEnd): void {
    const reading = this.#reading;
    if (reading === undefined) return;
    this.#reading = undefined;
    if (end === READ) this.#settle(reading, end);
    else this.#cut(reading, end);
  }

  #cut(reading: Reading, end: ReadEnd): void {
    this.#settleLater(
      reading,
      Promise.resolve(end).then((cut) => this.#inferred(cut, reading.iterator, reading.acc, reading.started)),
    );
  }

  /** After a read cut short, or never begun (`#stream` on an aborted run): a turn for the completion, one for `then`. */
  #settleLater(reading: Reading, inference: Promise<Inference>): void {
    inference.then((i) => this.#completed(i, reading)).then((i) => this.#handOn(reading, i), reading.reject);
  }

  #handOn(reading: Reading, inference: Inference): void {
    try {
      reading.resolve(reading.onInference(inference));
    } catch (e) {
      reading.reject(e);
    }
  }

  readonly #failRead = (thrown: unknown): void => this.#endRead({ thrown });

  /**
   * Reads the provider's parts into the read's accumulator, emitting their events, part after part:
   * one promise for the inference, not one per part (a part's `then` goes straight to the next pull).
   * Ends `READ` at the stream's end, `ABORTED` when the run's signal fires — between parts, or while the provider has not
   * answered (it may never; `aborted()` wakes the read) — or with what was thrown: by the provider,
   * the accumulator or a sink. A sink's promise is waited for before the next part (never cut short).
   * The callbacks are made once (`#pull`, `#onRead`, `#failRead`); the read in progress is
   * `#reading`. A read ends early only when the run is aborted, and an aborted run starts no other
   * read, so a callback of a read that ended never meets a later one.
   */
  readonly #pull = (): void => {
    const reading = this.#reading;
    if (reading === undefined) return;
    if (this.#host.cancellation.aborted) {
      this.#endRead(ABORTED);
      return;
    }
    let next: Promise<IteratorResult<StreamPart>>;
    try {
      next = reading.iterator.next();
    } catch (e) {
      this.#failRead(e);
      return;
    }
    reading.waiting = true;
    next.then(this.#onRead, this.#failRead);
  };

  readonly #onRead = (r: IteratorResult<StreamPart>): void => {
    const reading = this.#reading;
    if (reading === undefined) return;
    reading.waiting = false;
    if (r.done === true) {
      this.#endRead(READ);
      return;
    }
    let wait: Promise<void> | undefined;
    try {
      wait = this.#onPart(r.value, reading.acc, reading.started);
    } catch (e) {
      this.#failRead(e);
      return;
    }
    // A sink that answers at once lets the next part be pulled in the same turn.
    andThenOrElse(wait, this.#pull, this.#failRead);
  };

  /** One streamed part: into the accumulator, and its event out (a promise only for an asynchronous sink). */
  #onPart(part: StreamPart, acc: StreamAccumulator, started: { id: string; name: string }[]): Promise<void> | undefined {
    acc.push(part);
    const host = this.#host;
    switch (part.type) {
      case 'text_delta':
        return part.delta === '' ? undefined : host.emit({ event_type: 'text_delta', delta: part.delta });
      case 'reasoning_delta':
        return part.delta === '' ? undefined : host.emit({ event_type: 'reasoning_delta', delta: part.delta });
      case 'reasoning_encrypted':
        return host.emit({ event_type: 'reasoning_encrypted_value', encrypted_value: part.value });
      case 'tool_call_start':
        started.push({ id: part.id, name: part.name });
        return host.emit({ event_type: 'tool_call_start', id: part.id, name: part.name });
      case 'tool_call_delta':
        return part.args_delta === '' ? undefined : host.emit({ event_type: 'tool_call_delta', id: part.id, args_delta: part.args_delta });
      case 'response_metadata':
        // Told to the tap alone: no event carries it.
        if (host.tap?.inference !== undefined) this.#described = mergeResponseMetadata(this.#described, part);
        return undefined;
      case 'tool_call_ready':
      case 'usage':
      case 'finish':
        // The accumulator keeps them for the result; no event is streamed for them.
        return undefined;
      default:
        return unreachable(part, 'stream part');
    }
  }

  /** The run's usage so far, as its result reports it. */
  total(): TokenUsage {
    const u = this.usage;
    return u.seen ? { prompt_tokens: u.prompt, completion_tokens: u.completion, total_tokens: u.total } : {};
  }
}

/** Whether a history message goes to the model (internal tool messages do not). */
const sent = (m: Message): boolean => !(m.role === 'tool' && m.visibility === 'internal');

const systemMessage = (text: string): Message => ({ role: 'system', content: [{ type: 'text', text }] });

/** Inserts context messages by target (core-spec §3.7). */
function placeContextMessages(messages: Message[], context: ReturnType<typeof orderedContextMessages>, hasSystemPrompt: boolean, newId: () => string): void {
  const leadingSystem = (): number => {
    let i = 0;
    while (i < messages.length && messages[i]?.role === 'system') i++;
    return i;
  };
  let systemAt = hasSystemPrompt ? 1 : 0;
  const suffix: Message[] = [];
  for (const c of context) {
    const m: Message = { id: newId(), role: c.role, content: [{ type: 'text', text: c.content }], visibility: 'internal' };
    switch (c.target) {
      case 'system':
        messages.splice(systemAt++, 0, m);
        break;
      case 'session':
      case 'conversation':
        messages.splice(leadingSystem(), 0, m);
        break;
      case 'suffix_system':
        suffix.push(m);
        break;
      default:
        unreachable(c.target, 'context target');
    }
  }
  messages.push(...suffix);
}
