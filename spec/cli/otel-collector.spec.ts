import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { JsonMetricsSerializer, JsonTraceSerializer, ProtobufMetricsSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { decodeExport, fieldsOf } from '../support/otlp-collector.ts';

/**
 * The spec collector's decoders (spec/support/otlp-collector.ts): what the OpenTelemetry SDK's own
 * serializers write, in protobuf and in JSON, decodes to the same spans and metrics — ids, links,
 * every attribute type, status, histogram buckets, sums — so the specs that read a collector assert
 * the same thing for both protocols.
 */

/** An epoch time in ms (a small number would be read as relative to the process's start). */
const T = 1_764_800_000_000;
const resource = resourceFromAttributes({ 'service.name': 'decoder', 'service.version': '1' });

function spans() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer('scope-a', '2');
  const first = tracer.startSpan('first', {
    kind: SpanKind.SERVER,
    startTime: T,
    attributes: { s: 'x', i: 42, neg: -7, d: 1.5, b: true, list: ['a', 'b'], nums: [1, 2] },
  });
  first.end(T + 1_000);
  const second = tracer.startSpan('second', {
    kind: SpanKind.CLIENT,
    startTime: T + 2_000,
    links: [{ context: first.spanContext(), attributes: { 'link.kind': 'previous segment' } }],
  });
  second.setStatus({ code: SpanStatusCode.ERROR, message: 'went wrong' });
  second.end(T + 3_000);
  return { finished: exporter.getFinishedSpans(), first: first.spanContext(), second: second.spanContext() };
}

async function metrics() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
  const provider = new MeterProvider({ resource, readers: [reader] });
  const meter = provider.getMeter('scope-m');
  meter.createHistogram('h', { unit: 's', description: 'hist', advice: { explicitBucketBoundaries: [0.5, 1, 2] } }).record(0.75, { k: 'v' });
  meter.createCounter('c', { unit: '{x}' }).add(3, { k: 'w' });
  meter.createUpDownCounter('u').add(-2);
  await reader.forceFlush();
  const [collected] = exporter.getMetrics();
  await provider.shutdown();
  if (collected === undefined) throw new Error('nothing collected');
  return collected;
}

describe('otlp-collector decoding', () => {
  it('traces: protobuf and JSON decode to the same spans, ids, links, attributes and status', () => {
    const { finished, first, second } = spans();
    const proto = decodeExport('/v1/traces', 'application/x-protobuf', ProtobufTraceSerializer.serializeRequest(finished) as Uint8Array);
    const json = decodeExport('/v1/traces', 'application/json', JsonTraceSerializer.serializeRequest(finished) as Uint8Array);
    expect(proto).toEqual(json);
    const [a, b] = proto.spans;
    expect(a).toMatchObject({
      name: 'first',
      kind: 2,
      traceId: first.traceId,
      spanId: first.spanId,
      parentSpanId: '',
      startTimeUnixNano: BigInt(T) * 1_000_000n,
      endTimeUnixNano: BigInt(T + 1_000) * 1_000_000n,
      scope: 'scope-a',
    });
    expect(a?.attributes).toEqual({ s: 'x', i: 42, neg: -7, d: 1.5, b: true, list: ['a', 'b'], nums: [1, 2] });
    expect(a?.resource).toMatchObject({ 'service.name': 'decoder', 'service.version': '1' });
    expect(b).toMatchObject({ name: 'second', kind: 3, spanId: second.spanId, status: { code: 2, message: 'went wrong' } });
    expect(b?.links).toEqual([{ traceId: first.traceId, spanId: first.spanId, attributes: { 'link.kind': 'previous segment' } }]);
  });

  it('metrics: protobuf and JSON decode to the same histogram, sum and up-down sum', async () => {
    const collected = await metrics();
    const proto = decodeExport('/v1/metrics', 'application/x-protobuf', ProtobufMetricsSerializer.serializeRequest(collected) as Uint8Array);
    const json = decodeExport('/v1/metrics', 'application/json', JsonMetricsSerializer.serializeRequest(collected) as Uint8Array);
    expect(proto).toEqual(json);
    const [h, c, u] = proto.metrics;
    expect(h).toMatchObject({ name: 'h', unit: 's', description: 'hist', kind: 'histogram', scope: 'scope-m' });
    expect(h?.histogram).toEqual([{ attributes: { k: 'v' }, count: 1, sum: 0.75, bucketCounts: [0, 1, 0, 0], explicitBounds: [0.5, 1, 2] }]);
    expect(c).toMatchObject({ name: 'c', unit: '{x}', kind: 'sum', monotonic: true, points: [{ attributes: { k: 'w' }, value: 3 }] });
    expect(u).toMatchObject({ name: 'u', kind: 'sum', monotonic: false, points: [{ attributes: {}, value: -2 }] });
  });

  it('the wire format: varints of several bytes, unpacked repeated fields, a truncated message refused', () => {
    // Field 1 varint 300 (0xac 0x02), field 2 fixed64 5 unpacked twice, field 3 string "hi".
    const bytes = Uint8Array.from([0x08, 0xac, 0x02, 0x11, 5, 0, 0, 0, 0, 0, 0, 0, 0x11, 6, 0, 0, 0, 0, 0, 0, 0, 0x1a, 2, 0x68, 0x69]);
    expect(fieldsOf(bytes).map((f) => [f.no, f.wire, f.varint, Buffer.from(f.bytes).toString('latin1')])).toEqual([
      [1, 0, 300n, ''],
      [2, 1, 5n, '\u0005\0\0\0\0\0\0\0'],
      [2, 1, 6n, '\u0006\0\0\0\0\0\0\0'],
      [3, 2, 0n, 'hi'],
    ]);
    expect(() => fieldsOf(Uint8Array.from([0x1a, 5, 0x68]))).toThrow('truncated field');
    expect(() => fieldsOf(Uint8Array.from([0x08, 0xac]))).toThrow('truncated varint');
  });
});
