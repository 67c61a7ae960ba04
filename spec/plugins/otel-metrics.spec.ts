import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
  type Histogram,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { observabilityPlugin } from '../../src/plugins/observability/plugin.ts';
import { combinedSink, METRIC, OPERATION_DURATION_BUCKETS, otelMetricsSink, TOKEN_USAGE_BUCKETS } from '../../src/plugins/observability/otel-metrics.ts';
import { InMemorySink, type AgentMetrics, type GenAISpan, type MetricsSink, type ToolSpan } from '../../src/plugins/observability/spans.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { repo } from '../support/serve-process.ts';

/**
 * The OpenTelemetry metrics sink (docs/observability.md → Metrics) on corpus run 46 — two inferences
 * (30 + 55 input tokens, 12 + 8 output) and two tool calls, one an error — replayed through the
 * observability plugin into a meter provider whose reader keeps what it collects.
 */

const FIXTURE = readFileSync(join(repo, 'fixtures/runs/46-observability-spans.jsonl'), 'utf8');

function meter() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
  const provider = new MeterProvider({ readers: [reader] });
  const sink = otelMetricsSink(provider.getMeter('awaken-ts'));
  /** Everything collected, by instrument name. */
  const collect = async (): Promise<Map<string, MetricData>> => {
    await reader.forceFlush();
    const out = new Map<string, MetricData>();
    for (const rm of exporter.getMetrics()) for (const sm of rm.scopeMetrics) for (const m of sm.metrics) out.set(m.descriptor.name, m);
    return out;
  };
  return { sink, collect, shutdown: () => provider.shutdown() };
}

const points = <T>(m: MetricData | undefined): DataPoint<T>[] => (m?.dataPoints ?? []) as DataPoint<T>[];

describe('otelMetricsSink', () => {
  it('a run: gen_ai.client.token.usage per token type, gen_ai.client.operation.duration per inference, awaken.tool.calls by status, awaken.runs by outcome', async () => {
    const { sink, collect, shutdown } = meter();
    const report = await replayTranscript(FIXTURE, { plugins: new Map([['observability', observabilityPlugin(sink)]]) });
    expect(report.identical).toBe(true);
    const metrics = await collect();

    const usage = metrics.get(METRIC.tokenUsage);
    expect(usage?.descriptor).toMatchObject({ name: 'gen_ai.client.token.usage', unit: '{token}' });
    expect(usage?.dataPointType).toBe(DataPointType.HISTOGRAM);
    // The scripted provider names no response model: gen_ai.response.model is left out.
    const chat = { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'scripted', 'gen_ai.request.model': 'scripted-main' };
    expect(
      points<Histogram>(usage).map((p) => ({
        attributes: p.attributes,
        count: p.value.count,
        sum: p.value.sum,
        boundaries: p.value.buckets.boundaries,
        counts: p.value.buckets.counts,
      })),
    ).toEqual([
      {
        attributes: { ...chat, 'gen_ai.token.type': 'input' },
        count: 2,
        sum: 85,
        boundaries: TOKEN_USAGE_BUCKETS,
        counts: [0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      },
      {
        attributes: { ...chat, 'gen_ai.token.type': 'output' },
        count: 2,
        sum: 20,
        boundaries: TOKEN_USAGE_BUCKETS,
        counts: [0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      },
    ]);

    const duration = metrics.get(METRIC.operationDuration);
    expect(duration?.descriptor).toMatchObject({ name: 'gen_ai.client.operation.duration', unit: 's' });
    // The replay's clock ticks 5 ms a reading: each inference took 5 ms.
    expect(
      points<Histogram>(duration).map((p) => ({ attributes: p.attributes, count: p.value.count, sum: p.value.sum, boundaries: p.value.buckets.boundaries })),
    ).toEqual([{ attributes: chat, count: 2, sum: 0.01, boundaries: OPERATION_DURATION_BUCKETS }]);

    const tools = metrics.get(METRIC.toolCalls);
    expect(tools?.descriptor).toMatchObject({ name: 'awaken.tool.calls', unit: '{call}' });
    expect(points<number>(tools).map((p) => [p.attributes, p.value])).toEqual([
      [{ 'gen_ai.tool.name': 'report', 'awaken.tool.status': 'success' }, 1],
      [{ 'gen_ai.tool.name': 'fail', 'awaken.tool.status': 'error' }, 1],
    ]);
    const runs = metrics.get(METRIC.runs);
    expect(runs?.descriptor).toMatchObject({ name: 'awaken.runs', unit: '{run}' });
    expect(points<number>(runs).map((p) => [p.attributes, p.value])).toEqual([[{ 'gen_ai.agent.id': 'corpus', 'awaken.run.outcome': 'natural_end' }, 1]]);
    await shutdown();
  });

  it('the bucket boundaries are the GenAI conventions’ (semantic-conventions gen-ai-metrics.md)', () => {
    expect(TOKEN_USAGE_BUCKETS).toEqual([1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]);
    expect(OPERATION_DURATION_BUCKETS).toEqual([0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]);
    // Each is the one before times 4 (tokens) or 2 (seconds).
    TOKEN_USAGE_BUCKETS.slice(1).forEach((b, i) => {
      expect(b).toBe((TOKEN_USAGE_BUCKETS[i] as number) * 4);
    });
    OPERATION_DURATION_BUCKETS.slice(1).forEach((b, i) => {
      expect(b).toBeCloseTo((OPERATION_DURATION_BUCKETS[i] as number) * 2, 10);
    });
  });

  it('a failed inference: its duration carries error.type, the response model and the server; token counts the provider did not report are not recorded', async () => {
    const { sink, collect, shutdown } = meter();
    const failed: GenAISpan = {
      run_id: 'r',
      thread_id: 't',
      agent_id: 'a',
      trace_id: 'x',
      span_id: 's',
      started_at_ms: 1000,
      ended_at_ms: 3500,
      duration_ms: 2500,
      operation: 'chat',
      step_index: 0,
      provider: 'openai',
      provider_id: 'main',
      model: 'gpt-4o',
      answered_by: 'gpt-4o',
      response_model: 'gpt-4o-2024-08-06',
      server_address: 'api.openai.com',
      server_port: 443,
      finish_reasons: [],
      error_type: 'rate_limited',
      error_message: 'slow down',
    };
    sink.onInference(failed);
    const metrics = await collect();
    expect(metrics.has(METRIC.tokenUsage)).toBe(false);
    const [p] = points<Histogram>(metrics.get(METRIC.operationDuration));
    expect(p?.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o',
      'gen_ai.response.model': 'gpt-4o-2024-08-06',
      'server.address': 'api.openai.com',
      'server.port': 443,
      'error.type': 'rate_limited',
    });
    expect(p?.value.sum).toBe(2.5);
    // 2.5 s falls in (1.28, 2.56].
    expect(p?.value.buckets.counts.indexOf(1)).toBe(OPERATION_DURATION_BUCKETS.indexOf(2.56));
    await shutdown();
  });

  it('activeStreams drives the awaken.streams.active up-down counter', async () => {
    const { sink, collect, shutdown } = meter();
    sink.activeStreams(1);
    sink.activeStreams(1);
    sink.activeStreams(-1);
    const m = (await collect()).get(METRIC.activeStreams);
    expect(m?.descriptor).toMatchObject({ name: 'awaken.streams.active', unit: '{stream}' });
    expect(points<number>(m).map((p) => p.value)).toEqual([1]);
    await shutdown();
  });
});

const tool = (i: number): ToolSpan => ({
  run_id: 'r',
  thread_id: 't',
  agent_id: 'a',
  trace_id: 'x',
  span_id: `s${i}`,
  started_at_ms: 0,
  ended_at_ms: 1,
  duration_ms: 1,
  operation: 'execute_tool',
  step_index: 0,
  name: `t${i}`,
  call_id: `c${i}`,
  tool_type: 'function',
  status: 'success',
});

describe('combinedSink', () => {
  it('every sink hears every report in order, whichever of them throw; the first error is thrown after all have heard', () => {
    fc.assert(
      fc.property(
        fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
        fc.array(fc.constantFrom('inference', 'tool', 'run'), { maxLength: 8 }),
        (throwing, reports) => {
          const heard = throwing.map(() => new InMemorySink());
          const sinks: MetricsSink[] = heard.map((h, i) => ({
            onInference: (s) => (h.onInference(s), throwing[i] === true ? fail(i) : undefined),
            onTool: (s) => (h.onTool(s), throwing[i] === true ? fail(i) : undefined),
            onRunEnd: (m) => (h.onRunEnd(m), throwing[i] === true ? fail(i) : undefined),
          }));
          const combined = combinedSink(...sinks);
          const firstThrowing = throwing.indexOf(true);
          reports.forEach((r, n) => {
            const tell = (): void =>
              r === 'inference'
                ? combined.onInference({
                    ...tool(n),
                    operation: 'chat',
                    provider: 'p',
                    provider_id: 'p',
                    model: 'm',
                    answered_by: 'm',
                    finish_reasons: [],
                  } as GenAISpan)
                : r === 'tool'
                  ? combined.onTool(tool(n))
                  : combined.onRunEnd({ ...tool(n), operation: 'invoke_agent' } as unknown as AgentMetrics);
            if (firstThrowing < 0) tell();
            else expect(tell).toThrow(`sink ${firstThrowing}`);
          });
          const expected = {
            inferences: reports.filter((r) => r === 'inference').length,
            tools: reports.filter((r) => r === 'tool').length,
            runs: reports.filter((r) => r === 'run').length,
          };
          for (const h of heard) {
            const m = h.metrics();
            expect({ inferences: m.inference_count, tools: m.tool_count, runs: m.runs.length }).toEqual(expected);
          }
          // The same order for each sink.
          const order = (h: InMemorySink) => [...h.metrics().inferences, ...h.metrics().tools, ...h.metrics().runs].map((s) => s.span_id).join();
          expect(new Set(heard.map(order)).size).toBe(1);
        },
      ),
    );
  });
});

describe('combinedSink captureContent', () => {
  it('asks for content when one of its sinks does, and not otherwise', () => {
    const plain = new InMemorySink();
    const capturing = new InMemorySink({ captureContent: true });
    expect(combinedSink(plain, capturing).captureContent).toBe(true);
    expect(combinedSink(plain, plain).captureContent).toBe(false);
  });
});

function fail(i: number): never {
  throw new Error(`sink ${i}`);
}
