import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { recordScenario, SCENARIOS } from '../../replay/corpus.ts';
import { Messages } from '../../src/contract/message.ts';
import { observabilityPlugin } from '../../src/plugins/observability/plugin.ts';
import { AwakenIdGenerator, otelSink, otelSpanId, otelTraceId } from '../../src/plugins/observability/otel.ts';
import { InMemorySink, type MetricsSink } from '../../src/plugins/observability/spans.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { harness } from '../support/runtime.ts';
import { repo } from '../support/serve-process.ts';

/**
 * The observability plugin (book: 启用可观测性; docs/observability.md) on corpus run 46: an inference
 * with two tool calls (one reports progress, one returns an error), then an answer. Its spans come
 * from the run's Env — ids and clock — so the run and its replay report the same spans, and the
 * OpenTelemetry sink exports the same span tree for both.
 */

const SCENARIO = SCENARIOS.find((s) => s.name === 'observability-spans');
const FIXTURE = readFileSync(join(repo, 'fixtures/runs/46-observability-spans.jsonl'), 'utf8');
const withSink = (sink: MetricsSink) => new Map([['observability', observabilityPlugin(sink)]]);

/** An OpenTelemetry pipeline as a user sets one up: a tracer provider with awaken's ids, an in-memory exporter. */
function otel() {
  const exporter = new InMemorySpanExporter();
  const idGenerator = new AwakenIdGenerator();
  const provider = new BasicTracerProvider({ idGenerator, spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { exporter, sink: otelSink(provider.getTracer('awaken'), { idGenerator }) };
}

/** What of an exported span is compared: names, ids, parent, kind, attributes, times, status. */
const shape = (s: ReadableSpan) => ({
  name: s.name,
  kind: s.kind,
  traceId: s.spanContext().traceId,
  spanId: s.spanContext().spanId,
  parent: s.parentSpanContext?.spanId,
  attributes: s.attributes,
  start: s.startTime,
  end: s.endTime,
  status: s.status,
});

describe('observability (book: 启用可观测性)', () => {
  it('InMemorySink: a span per inference and per tool, under the run; token totals, errors and durations from the run’s clock', async () => {
    const sink = new InMemorySink();
    const report = await replayTranscript(FIXTURE, { plugins: withSink(sink) });
    expect(report.identical).toBe(true);
    const m = sink.metrics();
    expect(m).toMatchObject({ inference_count: 2, tool_count: 2, tool_errors: 1, inference_errors: 0, input_tokens: 85, output_tokens: 20, total_tokens: 105 });
    expect(m.inferences.map((s) => [s.step_index, s.model, s.provider, s.finish_reasons])).toEqual([
      [0, 'scripted-main', 'scripted', ['tool_use']],
      [1, 'scripted-main', 'scripted', ['end_turn']],
    ]);
    expect(m.tools.map((s) => [s.name, s.call_id, s.status, s.step_index, s.error_message])).toEqual([
      ['report', 'c1', 'success', 0, undefined],
      ['fail', 'c2', 'error', 0, 'the tool reported a failure'],
    ]);
    const [run] = m.runs;
    expect(run).toMatchObject({
      operation: 'invoke_agent',
      trace_id: 'trace-1',
      span_id: 'span-1',
      agent_id: 'corpus',
      termination: { type: 'natural_end' },
      input_tokens: 85,
    });
    for (const s of [...m.inferences, ...m.tools]) {
      expect(s).toMatchObject({ trace_id: 'trace-1', parent_span_id: 'span-1', run_id: run?.run_id });
      expect(s.started_at_ms).toBeGreaterThanOrEqual(run?.started_at_ms ?? Infinity);
      expect(s.ended_at_ms).toBeLessThanOrEqual(run?.ended_at_ms ?? 0);
      expect(s.duration_ms).toBe(s.ended_at_ms - s.started_at_ms);
    }
    // The clock ticks 5 ms a reading: each inference and tool took time on it.
    expect([...m.inferences, ...m.tools].every((s) => s.duration_ms > 0)).toBe(true);
    expect(new Set([...m.inferences, ...m.tools].map((s) => s.span_id)).size).toBe(4);
  });

  it('OpenTelemetry: the span tree of the run — invoke_agent with chat and execute_tool children, GenAI attributes, Env ids, clock times', async () => {
    const { exporter, sink } = otel();
    expect((await replayTranscript(FIXTURE, { plugins: withSink(sink) })).identical).toBe(true);
    const spans = exporter.getFinishedSpans();
    const root = spans.find((s) => s.parentSpanContext === undefined);
    expect(root?.name).toBe('invoke_agent corpus');
    expect(root?.spanContext()).toMatchObject({ traceId: otelTraceId('trace-1'), spanId: otelSpanId('span-1') });
    const children = spans.filter((s) => s !== root);
    expect(children.map((s) => [s.name, s.kind])).toEqual([
      ['chat scripted-main', SpanKind.CLIENT],
      ['execute_tool report', SpanKind.INTERNAL],
      ['execute_tool fail', SpanKind.INTERNAL],
      ['chat scripted-main', SpanKind.CLIENT],
    ]);
    for (const c of children) {
      expect(c.parentSpanContext?.spanId).toBe(root?.spanContext().spanId);
      expect(c.spanContext().traceId).toBe(root?.spanContext().traceId);
    }
    expect(children[0]?.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'scripted',
      'gen_ai.request.model': 'scripted-main',
      'gen_ai.usage.input_tokens': 30,
      'gen_ai.usage.output_tokens': 12,
      'gen_ai.response.finish_reasons': ['tool_use'],
      'gen_ai.conversation.id': 'thread-1',
    });
    expect(children[1]?.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'report',
      'gen_ai.tool.call.id': 'c1',
      'gen_ai.tool.type': 'function',
    });
    expect(children[2]?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'the tool reported a failure' });
    expect(children[2]?.attributes['error.type']).toBe('tool_error');
    expect(root?.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.id': 'corpus',
      'gen_ai.usage.input_tokens': 85,
      'awaken.termination': 'natural_end',
    });
    // Times are the run's clock (epoch ms from the deterministic start), not the machine's.
    const ms = (t: readonly [number, number]): number => t[0] * 1000 + t[1] / 1e6;
    expect(ms(root?.startTime as [number, number])).toBeGreaterThanOrEqual(1_700_000_000_000);
    expect(ms(root?.endTime as [number, number])).toBeLessThan(1_700_000_010_000);
  });

  it('record → replay: the run as recorded and its replay export identical spans (ids, parents, attributes, times)', async () => {
    if (SCENARIO === undefined) throw new Error('no observability scenario in the corpus');
    const live = otel();
    const recording = await recordScenario({ ...SCENARIO, extra: { ...SCENARIO.extra, pluginInstances: withSink(live.sink) } });
    expect(recording.transcript).toBe(FIXTURE);
    const replayed = otel();
    expect((await replayTranscript(recording.transcript, { plugins: withSink(replayed.sink) })).identical).toBe(true);
    const recorded = live.exporter.getFinishedSpans().map(shape);
    expect(recorded).toHaveLength(5);
    expect(replayed.exporter.getFinishedSpans().map(shape)).toEqual(recorded);
  });

  it('a sink that throws loses its span, not the run: onSinkError is told', async () => {
    const errors: unknown[] = [];
    const plugin = observabilityPlugin(
      {
        onInference: () => {
          throw new Error('collector down');
        },
        onTool: () => undefined,
        onRunEnd: () => undefined,
      },
      { onSinkError: (e) => errors.push(e) },
    );
    const h = harness([{ text: 'fine' }], { plugins: [plugin] });
    const r = await h.runtime.run({ messages: [Messages.user('hi')] }, new VecEventSink());
    expect(r.ok && r.value.response).toBe('fine');
    expect(errors.map(String)).toEqual(['Error: collector down']);
  });
});
