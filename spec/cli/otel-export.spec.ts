import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openTelemetry, type Tracing } from '../../src/cli/otel-setup.ts';
import { OPERATION_DURATION_BUCKETS, TOKEN_USAGE_BUCKETS } from '../../src/plugins/observability/otel-metrics.ts';
import { observabilityPlugin } from '../../src/plugins/observability/plugin.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { startCollector, type Collector, type OtlpMetric } from '../support/otlp-collector.ts';
import { repo } from '../support/serve-process.ts';

/**
 * `openTelemetry` against a collector on a socket (spec/support/otlp-collector.ts), in both OTLP/HTTP
 * encodings: corpus run 46 (two inferences, two tool calls, one an error) replayed through the
 * observability plugin into the sink it returns, then shut down — its spans and metrics arrive
 * decoded, with the resource and headers the `OTEL_*` variables set. An unreachable collector is
 * logged, once per burst of failures, and again when exports work.
 */

const FIXTURE = readFileSync(join(repo, 'fixtures/runs/46-observability-spans.jsonl'), 'utf8');

const open: { collectors: Collector[]; tracing: Tracing[] } = { collectors: [], tracing: [] };
afterEach(async () => {
  await Promise.all(open.tracing.splice(0).map((t) => t.shutdown()));
  await Promise.all(open.collectors.splice(0).map((c) => c.close()));
});

async function collector(): Promise<Collector> {
  const c = await startCollector();
  open.collectors.push(c);
  return c;
}

/** Runs corpus run 46 into `tracing`'s sink and shuts it down (the last spans and metrics exported then). */
async function runAndShutdown(tracing: Tracing): Promise<void> {
  const report = await replayTranscript(FIXTURE, { plugins: new Map([['observability', observabilityPlugin(tracing.sink)]]) });
  expect(report.identical).toBe(true);
  await tracing.shutdown();
}

const byName = (metrics: readonly OtlpMetric[], name: string): OtlpMetric | undefined => metrics.find((m) => m.name === name);

describe.each(['http/protobuf', 'http/json'] as const)('OTLP over %s', (protocol) => {
  it('spans and metrics arrive with the resource, the headers and the content type of the protocol', async () => {
    const c = await collector();
    const lines: string[] = [];
    const tracing = await openTelemetry({
      version: '9.9.9',
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: c.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        OTEL_SERVICE_NAME: 'checkout-agents',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=staging,team=ai%20platform',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=s3cret,x-tenant=acme',
      },
      log: (level, line) => lines.push(`${level} ${line}`),
    });
    if (tracing === undefined) throw new Error('no tracing');
    await runAndShutdown(tracing);
    expect(lines).toEqual([`info exporting OpenTelemetry traces to ${c.url}/v1/traces and metrics to ${c.url}/v1/metrics (${protocol})`]);

    const contentType = protocol === 'http/json' ? 'application/json' : 'application/x-protobuf';
    expect(new Set(c.requests.map((r) => r.path))).toEqual(new Set(['/v1/traces', '/v1/metrics']));
    for (const r of c.requests) {
      expect(r.contentType).toBe(contentType);
      expect([r.headers['x-api-key'], r.headers['x-tenant']]).toEqual(['s3cret', 'acme']);
    }

    const spans = c.spans();
    expect(spans.map((s) => s.name).sort()).toEqual([
      'chat scripted-main',
      'chat scripted-main',
      'execute_tool fail',
      'execute_tool report',
      'invoke_agent corpus',
    ]);
    const root = spans.find((s) => s.name === 'invoke_agent corpus');
    expect(root?.parentSpanId).toBe('');
    for (const s of spans.filter((x) => x !== root)) expect([s.traceId, s.parentSpanId]).toEqual([root?.traceId, root?.spanId]);
    expect(spans.find((s) => s.name === 'execute_tool fail')?.status).toEqual({ code: 2, message: 'the tool reported a failure' });
    expect(
      spans.filter((s) => s.name.startsWith('chat ')).map((s) => [s.attributes['gen_ai.usage.input_tokens'], s.attributes['gen_ai.usage.output_tokens']]),
    ).toEqual([
      [30, 12],
      [55, 8],
    ]);

    const metrics = c.metrics();
    for (const x of [...spans, ...metrics]) {
      expect(x.resource).toMatchObject({
        'service.name': 'checkout-agents',
        'service.version': '9.9.9',
        'deployment.environment.name': 'staging',
        team: 'ai platform',
      });
      expect(x.scope).toBe('awaken-ts');
    }
    const usage = byName(metrics, 'gen_ai.client.token.usage');
    expect(usage).toMatchObject({ kind: 'histogram', unit: '{token}' });
    expect(usage?.histogram.map((p) => [p.attributes['gen_ai.token.type'], p.count, p.sum, p.explicitBounds])).toEqual([
      ['input', 2, 85, TOKEN_USAGE_BUCKETS],
      ['output', 2, 20, TOKEN_USAGE_BUCKETS],
    ]);
    expect(usage?.histogram[0]?.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'scripted',
      'gen_ai.request.model': 'scripted-main',
      'gen_ai.token.type': 'input',
    });
    expect(usage?.histogram[0]?.bucketCounts).toEqual([0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    const duration = byName(metrics, 'gen_ai.client.operation.duration');
    expect(duration).toMatchObject({ kind: 'histogram', unit: 's' });
    expect(duration?.histogram.map((p) => [p.count, p.sum, p.explicitBounds, p.bucketCounts[0]])).toEqual([[2, 0.01, OPERATION_DURATION_BUCKETS, 2]]);
    expect(byName(metrics, 'awaken.tool.calls')).toMatchObject({ kind: 'sum', monotonic: true, unit: '{call}' });
    expect(byName(metrics, 'awaken.tool.calls')?.points.map((p) => [p.attributes['gen_ai.tool.name'], p.attributes['awaken.tool.status'], p.value])).toEqual([
      ['report', 'success', 1],
      ['fail', 'error', 1],
    ]);
    expect(byName(metrics, 'awaken.runs')?.points.map((p) => [p.attributes, p.value])).toEqual([
      [{ 'gen_ai.agent.id': 'corpus', 'awaken.run.outcome': 'natural_end' }, 1],
    ]);
  });
});

describe('openTelemetry', () => {
  it('--otel URL: spans there, metrics beside it at /v1/metrics; service.name awaken, activeStreams exported as awaken.streams.active', async () => {
    const c = await collector();
    const tracing = await openTelemetry({ url: `${c.url}/v1/traces`, version: '0.1.0', env: {} });
    if (tracing === undefined) throw new Error('no tracing');
    tracing.activeStreams?.(1);
    tracing.activeStreams?.(1);
    tracing.activeStreams?.(-1);
    await runAndShutdown(tracing);
    expect(c.spans()).toHaveLength(5);
    expect(c.spans()[0]?.resource).toMatchObject({ 'service.name': 'awaken', 'service.version': '0.1.0' });
    expect(c.metrics()[0]?.resource).toMatchObject({ 'service.name': 'awaken', 'service.version': '0.1.0' });
    const streams = byName(c.metrics(), 'awaken.streams.active');
    expect(streams).toMatchObject({ kind: 'sum', monotonic: false, unit: '{stream}' });
    expect(streams?.points.map((p) => p.value)).toEqual([1]);
  });

  it('content: true — the chat spans carry what was sent and answered (through the combined sink); without it they do not', async () => {
    for (const content of [true, false]) {
      const c = await collector();
      const tracing = await openTelemetry({ url: `${c.url}/v1/traces`, version: '1', content, env: {} });
      if (tracing === undefined) throw new Error('no tracing');
      expect(tracing.sink.captureContent).toBe(content);
      await runAndShutdown(tracing);
      const chats = c.spans().filter((s) => s.name.startsWith('chat '));
      expect(chats).toHaveLength(2);
      for (const s of chats)
        expect(['gen_ai.input.messages', 'gen_ai.output.messages'].map((k) => typeof s.attributes[k])).toEqual(
          content ? ['string', 'string'] : ['undefined', 'undefined'],
        );
    }
  });

  it('an unreachable collector: one warn line per signal for a burst of failures, an info line when exports work again', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const lines: string[] = [];
    const tracing = await openTelemetry({
      version: '1',
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_EXPORTER_OTLP_TIMEOUT: '100', OTEL_METRIC_EXPORT_INTERVAL: '150' },
      log: (level, line) => lines.push(`${level} ${line}`),
    });
    if (tracing === undefined) throw new Error('no tracing');
    open.tracing.push(tracing);
    // Something to export every interval.
    tracing.activeStreams?.(1);
    const warning = `warn OpenTelemetry metrics not exported to ${url}/v1/metrics: ECONNREFUSED`;
    await expect.poll(() => lines, { timeout: 10_000 }).toContain(warning);
    // Several more intervals fail: still one line.
    await new Promise((r) => setTimeout(r, 600));
    expect(lines.filter((l) => l.startsWith('warn'))).toEqual([warning]);
    const c = await startCollector({ port });
    open.collectors.push(c);
    await expect.poll(() => lines, { timeout: 10_000 }).toContain(`info OpenTelemetry metrics exported to ${url}/v1/metrics again`);
    expect(lines[0]).toBe(`info exporting OpenTelemetry traces to ${url}/v1/traces and metrics to ${url}/v1/metrics (http/protobuf)`);
  });

  it('a collector that refuses (401 without its key): logged with the HTTP status; with OTEL_EXPORTER_OTLP_HEADERS carrying the key, exported', async () => {
    const c = await startCollector({ requireHeader: ['x-api-key', 's3cret'] });
    open.collectors.push(c);
    const lines: string[] = [];
    const refused = await openTelemetry({ version: '1', env: { OTEL_EXPORTER_OTLP_ENDPOINT: c.url }, log: (level, line) => lines.push(`${level} ${line}`) });
    if (refused === undefined) throw new Error('no tracing');
    await runAndShutdown(refused);
    expect(lines.slice(1).sort()).toEqual([
      `warn OpenTelemetry metrics not exported to ${c.url}/v1/metrics: HTTP 401 Unauthorized`,
      `warn OpenTelemetry traces not exported to ${c.url}/v1/traces: HTTP 401 Unauthorized`,
    ]);
    expect(c.requests).toEqual([]);
    const keyed = await openTelemetry({ version: '1', env: { OTEL_EXPORTER_OTLP_ENDPOINT: c.url, OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=s3cret' } });
    if (keyed === undefined) throw new Error('no tracing');
    await runAndShutdown(keyed);
    expect(c.spans()).toHaveLength(5);
  });

  it('an unreachable collector at shutdown: the traces and metrics not exported are logged, and shutdown still ends', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const lines: string[] = [];
    const tracing = await openTelemetry({
      version: '1',
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_EXPORTER_OTLP_TIMEOUT: '100' },
      log: (level, line) => lines.push(`${level} ${line}`),
    });
    if (tracing === undefined) throw new Error('no tracing');
    await runAndShutdown(tracing);
    expect(lines.slice(1).sort()).toEqual([
      `warn OpenTelemetry metrics not exported to ${url}/v1/metrics: ECONNREFUSED`,
      `warn OpenTelemetry traces not exported to ${url}/v1/traces: ECONNREFUSED`,
    ]);
  });
});

/** A port nothing listens on (taken, then let go). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
