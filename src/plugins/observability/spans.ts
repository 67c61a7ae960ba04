import type { TerminationReason } from '../../contract/lifecycle.ts';
import type { JsonValue } from '../../contract/json.ts';
import type { ToolStatus } from '../../contract/tool.ts';

/**
 * What the observability plugin reports (book: 启用可观测性): one span per inference and per tool
 * execution, and the run's metrics when it ends — as data, with the OpenTelemetry GenAI semantic
 * conventions' names beside each field. Ids are the run's `Env` ids and times its clock readings
 * (epoch ms), so a replayed run reports the same spans.
 */
export interface SpanContext {
  readonly run_id: string;
  readonly thread_id: string;
  readonly agent_id: string;
  /** The run that delegated this one. */
  readonly parent_run_id?: string;
  /** The run's trace (an `Env` id of kind `trace`). */
  readonly trace_id: string;
  /** This span's id (an `Env` id of kind `span`). */
  readonly span_id: string;
  /** The span it belongs to: the run's span for an inference or a tool. */
  readonly parent_span_id?: string;
  readonly started_at_ms: number;
  readonly ended_at_ms: number;
  readonly duration_ms: number;
}

/**
 * What a model was sent and answered, in the GenAI conventions' message shape (`gen_ai.input.messages`,
 * `gen_ai.output.messages`, `gen_ai.system_instructions`): a role and its parts.
 */
export type GenAIPart =
  | { readonly type: 'text'; readonly content: string }
  | { readonly type: 'reasoning'; readonly content: string }
  | { readonly type: 'tool_call'; readonly id: string; readonly name: string; readonly arguments: JsonValue }
  | { readonly type: 'tool_call_response'; readonly id: string; readonly response: string }
  | { readonly type: 'uri'; readonly modality: string; readonly uri: string }
  | { readonly type: 'blob'; readonly modality: string; readonly mime_type: string; readonly content: string };

export interface GenAIMessage {
  readonly role: 'user' | 'assistant' | 'tool' | 'system';
  readonly parts: readonly GenAIPart[];
  /** Output messages only: why the model stopped (the span's finish reason). */
  readonly finish_reason?: string;
}

/** The content of one inference, captured only for a sink that asks for it (`MetricsSink.captureContent`). */
export interface GenAIContent {
  /** The history sent, in order, without the system messages. */
  readonly input_messages: readonly GenAIMessage[];
  /** The system messages sent, as parts. */
  readonly system_instructions: readonly GenAIPart[];
  /** What the model answered; absent for a failed inference. */
  readonly output_messages?: readonly GenAIMessage[];
}

/** One inference (`gen_ai.operation.name` `chat`). */
export interface GenAISpan extends SpanContext {
  readonly operation: 'chat';
  /** 0-based, one per inference of the run, counted across its segments (a resumed run goes on counting). */
  readonly step_index: number;
  /**
   * `gen_ai.provider.name`: the provider's well-known name (`openai`, `anthropic`, …) when its
   * executor says which it is, else the model registry's provider id (`ollama`, `scripted`, …).
   */
  readonly provider: string;
  /** The model registry's provider id (the `provider` of the agent's model entry). */
  readonly provider_id: string;
  /** `gen_ai.request.model`. */
  readonly model: string;
  /** The provider-side model the runtime asked last: the request's model, or a fallback model after a retry. */
  readonly answered_by: string;
  /** `gen_ai.response.model`: the model the provider said answered, when it said (never a copy of `model`). */
  readonly response_model?: string;
  /** `gen_ai.response.id`: the id the provider gave its answer, when it gave one. */
  readonly response_id?: string;
  /** `server.address` and `server.port`: where the provider was reached, for one over the network. */
  readonly server_address?: string;
  readonly server_port?: number;
  /**
   * `gen_ai.response.finish_reasons`: `end_turn`, `tool_use`, `max_tokens`, `stop_sequence` — the
   * stop reason the stream ended with; empty for an inference that failed or was cancelled.
   */
  readonly finish_reasons: readonly string[];
  /** `gen_ai.usage.input_tokens` … */
  readonly input_tokens?: number;
  readonly output_tokens?: number;
  readonly total_tokens?: number;
  readonly cache_read_input_tokens?: number;
  readonly cache_creation_input_tokens?: number;
  readonly thinking_tokens?: number;
  /** `gen_ai.request.temperature`, `top_p`, `max_tokens`, when the request set them. */
  readonly temperature?: number;
  readonly top_p?: number;
  readonly max_tokens?: number;
  /** `error.type` and the message, when the inference failed (or `cancelled`). */
  readonly error_type?: string;
  readonly error_message?: string;
  /** What was sent and answered, for a sink that captures content. */
  readonly content?: GenAIContent;
}

/** One tool execution (`gen_ai.operation.name` `execute_tool`). */
export interface ToolSpan extends SpanContext {
  readonly operation: 'execute_tool';
  /** The inference whose call this is (0-based). */
  readonly step_index: number;
  /** `gen_ai.tool.name`. */
  readonly name: string;
  /** `gen_ai.tool.call.id`. */
  readonly call_id: string;
  /** `gen_ai.tool.type`. */
  readonly tool_type: 'function';
  /** `gen_ai.tool.description`: the description the model was given for the tool, when this segment of the run sent it one. */
  readonly description?: string;
  readonly status: ToolStatus;
  /** `error.type` and the message, for a result that is an error. */
  readonly error_type?: string;
  readonly error_message?: string;
}

/**
 * A segment of a run, once it ended (`gen_ai.operation.name` `invoke_agent`): the whole run, or the
 * part of it up to a suspension, or from a resume on. Every segment of a run has the run's trace; a
 * later one names the first segment's span (`first_span_id`, an OpenTelemetry span link). Its
 * `inferences` and `tools` are the segment's; the counts and token totals are the run's so far.
 */
export interface AgentMetrics extends SpanContext {
  readonly operation: 'invoke_agent';
  readonly termination: TerminationReason;
  /** `gen_ai.provider.name` and `gen_ai.request.model` of the run's last inference (`provider` `unknown` and the agent's model id before any). */
  readonly provider: string;
  readonly model: string;
  /** `gen_ai.agent.description`: the agent spec's, when it has one. */
  readonly agent_description?: string;
  /** The span of the run's first segment, for every later segment. */
  readonly first_span_id?: string;
  /** 0-based: the segments of the run before this one. */
  readonly segment_index: number;
  readonly inferences: readonly GenAISpan[];
  readonly tools: readonly ToolSpan[];
  /** The run's inferences and tool executions so far, across its segments. */
  readonly inference_count: number;
  readonly tool_count: number;
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly total_tokens: number;
  readonly inference_errors: number;
  readonly tool_errors: number;
}

/** Where the plugin reports (book: MetricsSink). A sink that throws is ignored: observing never stops a run. */
export interface MetricsSink {
  /** `true`: each `GenAISpan` carries what was sent and answered (`content`); off unless a sink asks (it may hold personal data). */
  readonly captureContent?: boolean;
  onInference(span: GenAISpan): void;
  onTool(span: ToolSpan): void;
  onRunEnd(metrics: AgentMetrics): void;
}

/** Totals over everything an `InMemorySink` heard. */
export interface SinkMetrics {
  readonly runs: readonly AgentMetrics[];
  readonly inferences: readonly GenAISpan[];
  readonly tools: readonly ToolSpan[];
  readonly inference_count: number;
  readonly tool_count: number;
  readonly inference_errors: number;
  readonly tool_errors: number;
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly total_tokens: number;
  readonly inference_duration_ms: number;
  readonly tool_duration_ms: number;
}

const sum = <T>(xs: readonly T[], f: (x: T) => number | undefined): number => xs.reduce((n, x) => n + (f(x) ?? 0), 0);

/** Token totals and error counts of some inferences and tool calls (a run's, or a sink's). */
export function totalsOf(
  inferences: readonly GenAISpan[],
  tools: readonly ToolSpan[],
): Pick<AgentMetrics, 'input_tokens' | 'output_tokens' | 'total_tokens' | 'inference_errors' | 'tool_errors'> {
  return {
    input_tokens: sum(inferences, (s) => s.input_tokens),
    output_tokens: sum(inferences, (s) => s.output_tokens),
    total_tokens: sum(inferences, (s) => s.total_tokens),
    inference_errors: inferences.filter((s) => s.error_type !== undefined).length,
    tool_errors: tools.filter((s) => s.status === 'error').length,
  };
}

/** Keeps every span in memory (book: InMemorySink), for development and tests. */
export class InMemorySink implements MetricsSink {
  readonly captureContent: boolean;
  readonly #runs: AgentMetrics[] = [];
  readonly #inferences: GenAISpan[] = [];
  readonly #tools: ToolSpan[] = [];

  /** `captureContent`: keep what each inference was sent and answered (`GenAISpan.content`). */
  constructor(options: { readonly captureContent?: boolean } = {}) {
    this.captureContent = options.captureContent === true;
  }

  onInference(span: GenAISpan): void {
    this.#inferences.push(span);
  }

  onTool(span: ToolSpan): void {
    this.#tools.push(span);
  }

  onRunEnd(metrics: AgentMetrics): void {
    this.#runs.push(metrics);
  }

  metrics(): SinkMetrics {
    const inferences = [...this.#inferences];
    const tools = [...this.#tools];
    return {
      runs: [...this.#runs],
      inferences,
      tools,
      inference_count: inferences.length,
      tool_count: tools.length,
      ...totalsOf(inferences, tools),
      inference_duration_ms: sum(inferences, (s) => s.duration_ms),
      tool_duration_ms: sum(tools, (s) => s.duration_ms),
    };
  }

  /** Forgets everything heard so far. */
  clear(): void {
    this.#runs.length = 0;
    this.#inferences.length = 0;
    this.#tools.length = 0;
  }
}
