import { createHash } from 'node:crypto';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags, type Attributes, type Context, type Link, type Tracer } from '@opentelemetry/api';
import type { AgentMetrics, GenAISpan, MetricsSink, SpanContext, ToolSpan } from './spans.ts';

export { combinedSink, METRIC, OPERATION_DURATION_BUCKETS, otelMetricsSink, TOKEN_USAGE_BUCKETS, type OtelMetricsSink } from './otel-metrics.ts';

/**
 * OpenTelemetry for the observability plugin (book: 启用可观测性 → OTel sink), on
 * `@opentelemetry/api` alone (an optional peer dependency): `awaken-ts/otel`.
 *
 * Each span the plugin reports becomes an OpenTelemetry span named and attributed after the GenAI
 * semantic conventions — `chat {model}` (CLIENT) and `execute_tool {tool}` under the run's
 * `invoke_agent {agent}` — with the plugin's times (the run's clock) as its start and end. Its ids
 * are the plugin's too: the `Env` id of each span and trace, hashed (SHA-256) to the 16 and 32 hex
 * digits OpenTelemetry wants, handed to the tracer provider through `AwakenIdGenerator`. So a
 * replayed run exports the same trace, span ids, parents and times as the run it replays.
 */

/** The OpenTelemetry trace id (32 hex digits) of an `Env` trace id. */
export const otelTraceId = (id: string): string => createHash('sha256').update(`trace:${id}`).digest('hex').slice(0, 32);
/** The OpenTelemetry span id (16 hex digits) of an `Env` span id. */
export const otelSpanId = (id: string): string => createHash('sha256').update(`span:${id}`).digest('hex').slice(0, 16);

/**
 * An OpenTelemetry `IdGenerator` (pass it to the tracer provider: `new BasicTracerProvider({
 * idGenerator })`) that gives each span the sink starts the id the plugin drew for it. A span
 * started by anyone else gets random ids, as with the SDK's own generator.
 */
export class AwakenIdGenerator {
  #traceId: string | undefined;
  #spanId: string | undefined;

  /** The ids of the span about to be started (the sink sets them just before). */
  next(ids: { readonly traceId?: string; readonly spanId: string }): void {
    this.#traceId = ids.traceId;
    this.#spanId = ids.spanId;
  }

  generateTraceId(): string {
    const id = this.#traceId;
    this.#traceId = undefined;
    return id ?? randomHex(32);
  }

  generateSpanId(): string {
    const id = this.#spanId;
    this.#spanId = undefined;
    return id ?? randomHex(16);
  }
}

function randomHex(digits: number): string {
  let out = '';
  while (out.length < digits)
    out += Math.floor(Math.random() * 0x100000000)
      .toString(16)
      .padStart(8, '0');
  return out.slice(0, digits);
}

export interface OtelSinkOptions {
  /** The generator the tracer's provider was made with; without it, spans get the provider's own (random) ids. */
  readonly idGenerator?: AwakenIdGenerator;
  /**
   * Opt-in content capture: each `chat` span also carries `gen_ai.input.messages`,
   * `gen_ai.output.messages` and `gen_ai.system_instructions` (JSON strings in the conventions'
   * message shape). Off by default: prompts and answers may hold personal data.
   */
  readonly captureContent?: boolean;
}

/**
 * A `MetricsSink` that exports through `tracer` (book: OtelMetricsSink). Spans are started when the
 * plugin reports them, with their recorded start and end: an inference or a tool span under the
 * segment's `invoke_agent` span as parent (by ids), that span when the segment ends — linked to the
 * run's first segment when it is a later one (docs/observability.md → One trace per run).
 */
export function otelSink(tracer: Tracer, options: OtelSinkOptions = {}): MetricsSink {
  const ids = options.idGenerator;
  const capture = options.captureContent === true;
  const parentOf = (s: SpanContext): Context =>
    s.parent_span_id === undefined
      ? ROOT_CONTEXT
      : trace.setSpanContext(ROOT_CONTEXT, {
          traceId: otelTraceId(s.trace_id),
          spanId: otelSpanId(s.parent_span_id),
          traceFlags: TraceFlags.SAMPLED,
          isRemote: false,
        });
  /** One span, started and ended at its recorded times, under its parent (by ids); with ERROR status when `error` says why. */
  const exported = (name: string, kind: SpanKind, s: SpanContext, attributes: Attributes, error: string | undefined, links: Link[] = []): void => {
    ids?.next({ traceId: otelTraceId(s.trace_id), spanId: otelSpanId(s.span_id) });
    const span = tracer.startSpan(name, { kind, attributes, startTime: s.started_at_ms, links }, parentOf(s));
    if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    span.end(s.ended_at_ms);
  };
  return {
    captureContent: capture,
    onInference(s: GenAISpan): void {
      exported(`chat ${s.model}`, SpanKind.CLIENT, s, chatAttributes(s, capture), s.error_type === undefined ? undefined : (s.error_message ?? s.error_type));
    },
    onTool(s: ToolSpan): void {
      exported(`execute_tool ${s.name}`, SpanKind.INTERNAL, s, toolAttributes(s), s.status === 'error' ? (s.error_message ?? 'tool error') : undefined);
    },
    onRunEnd(m: AgentMetrics): void {
      const failed = m.termination.type === 'error';
      // A later segment of the run links to its first: one trace, read as one run.
      const links: Link[] =
        m.first_span_id === undefined
          ? []
          : [{ context: { traceId: otelTraceId(m.trace_id), spanId: otelSpanId(m.first_span_id), traceFlags: TraceFlags.SAMPLED, isRemote: false } }];
      // The segment's span has no parent: it is a root of the run's trace.
      exported(`invoke_agent ${m.agent_id}`, SpanKind.INTERNAL, m, agentAttributes(m), failed ? JSON.stringify(m.termination) : undefined, links);
    },
  };
}

/** What every span of a run says of it: the conversation (the thread), the agent, the run. */
const common = (s: SpanContext): Attributes => ({
  'gen_ai.conversation.id': s.thread_id,
  'gen_ai.agent.id': s.agent_id,
  'awaken.run_id': s.run_id,
  ...(s.parent_run_id !== undefined ? { 'awaken.parent_run_id': s.parent_run_id } : {}),
});

/** A `chat` span's attributes; content only when the sink captures it. */
function chatAttributes(s: GenAISpan, capture: boolean): Attributes {
  const content = capture ? s.content : undefined;
  return {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': s.provider,
    'gen_ai.request.model': s.model,
    // Every inference is read as a stream of parts.
    'gen_ai.request.stream': true,
    ...optional('gen_ai.response.model', s.response_model),
    ...optional('gen_ai.response.id', s.response_id),
    ...(s.finish_reasons.length > 0 ? { 'gen_ai.response.finish_reasons': [...s.finish_reasons] } : {}),
    ...optional('server.address', s.server_address),
    ...optional('server.port', s.server_port),
    ...common(s),
    'awaken.step_index': s.step_index,
    ...optional('gen_ai.usage.input_tokens', s.input_tokens),
    ...optional('gen_ai.usage.output_tokens', s.output_tokens),
    ...optional('gen_ai.usage.cache_read.input_tokens', s.cache_read_input_tokens),
    ...optional('gen_ai.usage.cache_creation.input_tokens', s.cache_creation_input_tokens),
    ...optional('gen_ai.usage.reasoning.output_tokens', s.thinking_tokens),
    ...optional('gen_ai.request.temperature', s.temperature),
    ...optional('gen_ai.request.top_p', s.top_p),
    ...optional('gen_ai.request.max_tokens', s.max_tokens),
    ...optional('error.type', s.error_type),
    ...(content !== undefined ? { 'gen_ai.input.messages': JSON.stringify(content.input_messages) } : {}),
    ...(content !== undefined && content.system_instructions.length > 0 ? { 'gen_ai.system_instructions': JSON.stringify(content.system_instructions) } : {}),
    ...(content?.output_messages !== undefined ? { 'gen_ai.output.messages': JSON.stringify(content.output_messages) } : {}),
  };
}

function toolAttributes(s: ToolSpan): Attributes {
  return {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': s.name,
    'gen_ai.tool.call.id': s.call_id,
    'gen_ai.tool.type': s.tool_type,
    ...optional('gen_ai.tool.description', s.description),
    ...common(s),
    'awaken.step_index': s.step_index,
    'awaken.tool.status': s.status,
    ...optional('error.type', s.error_type),
  };
}

function agentAttributes(m: AgentMetrics): Attributes {
  return {
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.provider.name': m.provider,
    'gen_ai.request.model': m.model,
    // An agent spec has an id and no other name: the id is both.
    'gen_ai.agent.name': m.agent_id,
    ...optional('gen_ai.agent.description', m.agent_description),
    ...common(m),
    'awaken.termination': m.termination.type,
    'awaken.segment_index': m.segment_index,
    'gen_ai.usage.input_tokens': m.input_tokens,
    'gen_ai.usage.output_tokens': m.output_tokens,
    ...(m.termination.type === 'error' ? { 'error.type': 'run_error' } : {}),
  };
}

const optional = (name: string, value: string | number | undefined): Attributes => (value === undefined ? {} : { [name]: value });
