import { createHash } from 'node:crypto';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags, type Attributes, type Context, type Tracer } from '@opentelemetry/api';
import type { AgentMetrics, GenAISpan, MetricsSink, SpanContext, ToolSpan } from './spans.ts';

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
  while (out.length < digits) out += Math.floor(Math.random() * 0x100000000).toString(16).padStart(8, '0');
  return out.slice(0, digits);
}

export interface OtelSinkOptions {
  /** The generator the tracer's provider was made with; without it, spans get the provider's own (random) ids. */
  readonly idGenerator?: AwakenIdGenerator;
}

/**
 * A `MetricsSink` that exports through `tracer` (book: OtelMetricsSink). Spans are started when the
 * plugin reports them, with their recorded start and end: an inference or a tool span under the
 * run's span as parent (by ids), the run's span when the run ends.
 */
export function otelSink(tracer: Tracer, options: OtelSinkOptions = {}): MetricsSink {
  const ids = options.idGenerator;
  const parentOf = (s: SpanContext): Context =>
    s.parent_span_id === undefined
      ? ROOT_CONTEXT
      : trace.setSpanContext(ROOT_CONTEXT, { traceId: otelTraceId(s.trace_id), spanId: otelSpanId(s.parent_span_id), traceFlags: TraceFlags.SAMPLED, isRemote: false });
  /** One span, started and ended at its recorded times, under its parent (by ids); with ERROR status when `error` says why. */
  const exported = (name: string, kind: SpanKind, s: SpanContext, attributes: Attributes, error: string | undefined): void => {
    ids?.next({ traceId: otelTraceId(s.trace_id), spanId: otelSpanId(s.span_id) });
    const span = tracer.startSpan(name, { kind, attributes, startTime: s.started_at_ms }, parentOf(s));
    if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    span.end(s.ended_at_ms);
  };
  const common = (s: SpanContext): Attributes => ({
    'gen_ai.conversation.id': s.thread_id,
    'gen_ai.agent.id': s.agent_id,
    'awaken.run_id': s.run_id,
    ...(s.parent_run_id !== undefined ? { 'awaken.parent_run_id': s.parent_run_id } : {}),
  });
  return {
    onInference(s: GenAISpan): void {
      const attributes: Attributes = {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': s.provider,
        'gen_ai.request.model': s.model,
        'gen_ai.response.model': s.response_model,
        'gen_ai.response.finish_reasons': [...s.finish_reasons],
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
      };
      exported(`chat ${s.model}`, SpanKind.CLIENT, s, attributes, s.error_type === undefined ? undefined : (s.error_message ?? s.error_type));
    },
    onTool(s: ToolSpan): void {
      const attributes: Attributes = {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': s.name,
        'gen_ai.tool.call.id': s.call_id,
        'gen_ai.tool.type': s.tool_type,
        ...common(s),
        'awaken.step_index': s.step_index,
        'awaken.tool.status': s.status,
        ...optional('error.type', s.error_type),
      };
      exported(`execute_tool ${s.name}`, SpanKind.INTERNAL, s, attributes, s.status === 'error' ? (s.error_message ?? 'tool error') : undefined);
    },
    onRunEnd(m: AgentMetrics): void {
      const failed = m.termination.type === 'error';
      const attributes: Attributes = {
        'gen_ai.operation.name': 'invoke_agent',
        ...common(m),
        'awaken.termination': m.termination.type,
        'gen_ai.usage.input_tokens': m.input_tokens,
        'gen_ai.usage.output_tokens': m.output_tokens,
        ...(failed ? { 'error.type': 'run_error' } : {}),
      };
      // The run's span has no parent: it is the root of its trace.
      exported(`invoke_agent ${m.agent_id}`, SpanKind.INTERNAL, m, attributes, failed ? JSON.stringify(m.termination) : undefined);
    },
  };
}

const optional = (name: string, value: string | number | undefined): Attributes => (value === undefined ? {} : { [name]: value });
