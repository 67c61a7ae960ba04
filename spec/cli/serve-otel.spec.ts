import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCollector, type Collector } from '../support/otlp-collector.ts';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * `awaken serve --otel URL` (docs/observability.md): a real server exports its runs as OpenTelemetry
 * spans and metrics over OTLP/HTTP (protobuf) to a collector on a socket (spec/support/otlp-collector.ts)
 * — spans to the URL, metrics beside it at /v1/metrics — and every agent is observed without naming
 * the plugin. The `OTEL_*` variables alone turn it on too.
 */

let collector: Collector;
let server: ServeProcess;

beforeAll(async () => {
  collector = await startCollector();
  server = await startServe(['--store', 'memory', '--model', 'scripted:fixtures/scripts/demo-weather.yaml', '--otel', `${collector.url}/v1/traces`], {
    OTEL_METRIC_EXPORT_INTERVAL: '500',
  });
});
afterAll(async () => {
  await server?.stop();
  await collector?.close();
});

describe('awaken serve --otel', () => {
  it('exports a run as invoke_agent with its chat and execute_tool spans (GenAI attributes, one trace, parents by id), and its metrics, to the collector', async () => {
    const r = await fetch(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ threadId: 'otel-1', messages: [{ role: 'user', content: 'weather in Tokyo?' }] }),
    });
    expect(await r.text()).toContain('cloudy in Tokyo');
    await expect.poll(() => collector.spans().length, { timeout: 15_000 }).toBe(4);
    const received = collector.spans();
    const root = received.find((s) => s.name === 'invoke_agent demo');
    const chats = received.filter((s) => s.name.startsWith('chat '));
    const tool = received.find((s) => s.name === 'execute_tool get_weather');
    expect(chats).toHaveLength(2);
    for (const s of [...chats, tool]) {
      expect(s?.traceId).toBe(root?.traceId);
      expect(s?.parentSpanId).toBe(root?.spanId);
    }
    expect(root?.parentSpanId).toBe('');
    expect(chats[0]?.attributes['gen_ai.operation.name']).toBe('chat');
    expect(chats[0]?.attributes['gen_ai.request.model']).toBe(chats[0]?.name.slice('chat '.length));
    expect(chats[0]?.attributes['gen_ai.usage.input_tokens']).toBe(42);
    expect(tool?.attributes['gen_ai.tool.name']).toBe('get_weather');
    expect(tool?.attributes['gen_ai.tool.call.id']).toBe('call_1');
    expect(root?.attributes['gen_ai.conversation.id']).toBe('otel-1');
    expect(root?.resource['service.name']).toBe('awaken');
    expect(root?.endTimeUnixNano).toBeGreaterThanOrEqual(tool?.endTimeUnixNano ?? 1n);
    // Metrics every OTEL_METRIC_EXPORT_INTERVAL (500 ms here), beside the traces endpoint.
    await expect.poll(() => collector.metrics().some((m) => m.name === 'awaken.runs'), { timeout: 15_000 }).toBe(true);
    const usage = collector.metrics().find((m) => m.name === 'gen_ai.client.token.usage');
    expect(usage?.unit).toBe('{token}');
    expect(usage?.histogram.map((p) => p.attributes['gen_ai.token.type']).sort()).toEqual(['input', 'output']);
    // The run's event stream opened and closed: awaken.streams.active went to 1 and back to 0.
    const streams = () =>
      collector
        .metrics()
        .filter((m) => m.name === 'awaken.streams.active')
        .flatMap((m) => m.points.map((p) => p.value));
    await expect.poll(() => streams().at(-1), { timeout: 15_000 }).toBe(0);
    expect(new Set(collector.requests.map((q) => `${q.path} ${q.contentType}`))).toEqual(
      new Set(['/v1/traces application/x-protobuf', '/v1/metrics application/x-protobuf']),
    );
    expect(server.log()).toContain(`exporting OpenTelemetry traces to ${collector.url}/v1/traces and metrics to ${collector.url}/v1/metrics (http/protobuf)`);
  });

  it('OTEL_EXPORTER_OTLP_ENDPOINT without --otel: exported as JSON when OTEL_EXPORTER_OTLP_PROTOCOL says so, under OTEL_SERVICE_NAME', async () => {
    const c = await startCollector();
    const s = await startServe(['--store', 'memory', '--model', 'scripted:fixtures/scripts/demo-weather.yaml'], {
      OTEL_EXPORTER_OTLP_ENDPOINT: c.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'weather-desk',
    });
    try {
      const r = await fetch(`${s.url}/v1/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ threadId: 'otel-env', messages: [{ role: 'user', content: 'weather in Tokyo?' }] }),
      });
      expect(await r.text()).toContain('cloudy in Tokyo');
      await expect.poll(() => c.spans().length, { timeout: 15_000 }).toBe(4);
      expect(c.requests.every((q) => q.contentType.startsWith('application/json'))).toBe(true);
      expect(c.spans()[0]?.resource['service.name']).toBe('weather-desk');
    } finally {
      await s.stop();
      await c.close();
    }
  });

  it('refuses OTEL_EXPORTER_OTLP_PROTOCOL=grpc with one line (exit 64)', () => {
    const r = spawnSync(
      process.execPath,
      [join(repo, 'src/cli/awaken.js'), 'serve', '--store', 'memory', '--port', '0', '--otel', 'http://127.0.0.1:4318/v1/traces'],
      {
        cwd: repo,
        encoding: 'utf8',
        env: { ...process.env, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      },
    );
    expect({ status: r.status, stderr: r.stderr.trim() }).toEqual({
      status: 64,
      stderr: expect.stringContaining('OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: use http/protobuf (the default) or http/json'),
    });
  });

  it('refuses a URL it cannot use, naming the flag or the config field', () => {
    const r = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), 'serve', '--store', 'memory', '--port', '0', '--otel', 'not a url'], {
      cwd: repo,
      encoding: 'utf8',
    });
    expect({ status: r.status, stderr: r.stderr.trim() }).toEqual({ status: 64, stderr: expect.stringContaining('--otel: not a URL: "not a url"') });
    const config = join(mkdtempSync(join(tmpdir(), 'awaken-otel-config-')), 'awaken.yaml');
    writeFileSync(config, 'server:\n  store: memory\n  otel: ftp://collector/v1/traces\n');
    const c = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), 'serve', '--config', config, '--port', '0'], { cwd: repo, encoding: 'utf8' });
    expect(c.status).toBe(65);
    expect(c.stderr).toContain('server.otel');
  });
});
