import type { Attributes, Meter } from '@opentelemetry/api';
import type { AgentMetrics, GenAISpan, MetricsSink, ToolSpan } from './spans.ts';

/**
 * OpenTelemetry metrics for the observability plugin (docs/observability.md → Metrics), on
 * `@opentelemetry/api` alone: the GenAI semantic conventions' two client histograms, recorded per
 * inference, and awaken's own counters of runs, tool calls and open streams.
 */

/** `gen_ai.client.token.usage` (histogram, `{token}`): the conventions' explicit bucket boundaries. */
export const TOKEN_USAGE_BUCKETS: readonly number[] = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
/** `gen_ai.client.operation.duration` (histogram, `s`): the conventions' explicit bucket boundaries. */
export const OPERATION_DURATION_BUCKETS: readonly number[] = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/** The names of the instruments, as a collector receives them. */
export const METRIC = {
  tokenUsage: 'gen_ai.client.token.usage',
  operationDuration: 'gen_ai.client.operation.duration',
  runs: 'awaken.runs',
  toolCalls: 'awaken.tool.calls',
  activeStreams: 'awaken.streams.active',
} as const;

/** A `MetricsSink` that records metrics, and the hook a server drives for its open streams. */
export interface OtelMetricsSink extends MetricsSink {
  /** Adds `delta` (+1 when a stream opens, -1 when it closes) to `awaken.streams.active`. */
  activeStreams(delta: number): void;
}

/**
 * Metrics through `meter` (from a `MeterProvider` of `@opentelemetry/sdk-metrics`):
 * - per inference, `gen_ai.client.token.usage` once for its input tokens and once for its output
 *   tokens (`gen_ai.token.type` `input` / `output`; a count the provider did not report is not
 *   recorded), and `gen_ai.client.operation.duration` in seconds, with `error.type` when it failed;
 *   both with `gen_ai.operation.name` `chat`, `gen_ai.provider.name`, `gen_ai.request.model`, and
 *   `gen_ai.response.model`, `server.address` and `server.port` when the provider's answer or
 *   address gave them;
 * - per tool call, `awaken.tool.calls` +1 with `gen_ai.tool.name` and `awaken.tool.status`;
 * - per run end, `awaken.runs` +1 with `gen_ai.agent.id` and `awaken.run.outcome` (its termination
 *   type: a run that suspends and is resumed ends twice, `suspended` then how it finished).
 * The histograms carry their bucket boundaries as advice, which the SDK applies unless a view says otherwise.
 */
export function otelMetricsSink(meter: Meter): OtelMetricsSink {
  const tokenUsage = meter.createHistogram(METRIC.tokenUsage, {
    unit: '{token}',
    description: 'Number of input and output tokens used.',
    advice: { explicitBucketBoundaries: [...TOKEN_USAGE_BUCKETS] },
  });
  const duration = meter.createHistogram(METRIC.operationDuration, {
    unit: 's',
    description: 'GenAI operation duration.',
    advice: { explicitBucketBoundaries: [...OPERATION_DURATION_BUCKETS] },
  });
  const runs = meter.createCounter(METRIC.runs, { unit: '{run}', description: 'Runs ended, by outcome.' });
  const toolCalls = meter.createCounter(METRIC.toolCalls, { unit: '{call}', description: 'Tool calls settled, by status.' });
  const streams = meter.createUpDownCounter(METRIC.activeStreams, { unit: '{stream}', description: 'Event streams open now.' });
  return {
    onInference(s: GenAISpan): void {
      const attributes: Attributes = {
        'gen_ai.operation.name': s.operation,
        'gen_ai.provider.name': s.provider,
        'gen_ai.request.model': s.model,
        ...(s.response_model !== undefined ? { 'gen_ai.response.model': s.response_model } : {}),
        ...(s.server_address !== undefined ? { 'server.address': s.server_address } : {}),
        ...(s.server_port !== undefined ? { 'server.port': s.server_port } : {}),
      };
      if (s.input_tokens !== undefined) tokenUsage.record(s.input_tokens, { ...attributes, 'gen_ai.token.type': 'input' });
      if (s.output_tokens !== undefined) tokenUsage.record(s.output_tokens, { ...attributes, 'gen_ai.token.type': 'output' });
      duration.record(s.duration_ms / 1000, s.error_type === undefined ? attributes : { ...attributes, 'error.type': s.error_type });
    },
    onTool(s: ToolSpan): void {
      toolCalls.add(1, { 'gen_ai.tool.name': s.name, 'awaken.tool.status': s.status });
    },
    onRunEnd(m: AgentMetrics): void {
      runs.add(1, { 'gen_ai.agent.id': m.agent_id, 'awaken.run.outcome': m.termination.type });
    },
    activeStreams(delta: number): void {
      streams.add(delta);
    },
  };
}

/**
 * One sink that tells each of `sinks` everything, in order (spans and metrics together). Every sink
 * hears each report even when one before it throws; the first error is thrown again after, so the
 * plugin's `onSinkError` still hears of it. It captures content when one of them asks to (the others
 * get spans with `content` they ignore).
 */
export function combinedSink(...sinks: readonly MetricsSink[]): MetricsSink {
  const tellAll = (f: (s: MetricsSink) => void): void => {
    const errors: unknown[] = [];
    for (const s of sinks) {
      try {
        f(s);
      } catch (e) {
        errors.push(e);
      }
    }
    if (errors.length > 0) throw errors[0];
  };
  return {
    captureContent: sinks.some((s) => s.captureContent === true),
    onInference: (span) => tellAll((s) => s.onInference(span)),
    onTool: (span) => tellAll((s) => s.onTool(span)),
    onRunEnd: (metrics) => tellAll((s) => s.onRunEnd(metrics)),
  };
}
