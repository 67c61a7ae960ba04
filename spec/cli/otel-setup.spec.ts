import { describe, expect, it } from 'vitest';
import { CliFailure } from '../../src/cli/args.ts';
import { EXIT } from '../../src/cli/exit.ts';
import { openTelemetry, otlpSettings, type OtelOptions } from '../../src/cli/otel-setup.ts';

/**
 * Where `openTelemetry` exports, read from `--otel URL` and the `OTEL_*` variables
 * (docs/observability.md → OpenTelemetry from the environment), and the values it refuses with one
 * line naming the flag or the variable.
 */

const settings = (env: Record<string, string>, url?: string) => otlpSettings({ version: '1.2.3', env, ...(url !== undefined ? { url } : {}) });
const endpoints = (env: Record<string, string>, url?: string) => {
  const s = settings(env, url);
  return s === undefined ? undefined : [s.tracesUrl, s.metricsUrl];
};

describe('endpoints', () => {
  it('none set: no OpenTelemetry (a metrics endpoint alone does not turn it on)', () => {
    expect(settings({})).toBeUndefined();
    expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBeUndefined();
    expect(settings({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://c:4318/v1/metrics' })).toBeUndefined();
  });

  it('OTEL_EXPORTER_OTLP_ENDPOINT is a base: v1/traces and v1/metrics under it', () => {
    expect(endpoints({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toEqual(['http://c:4318/v1/traces', 'http://c:4318/v1/metrics']);
    expect(endpoints({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })).toEqual(['http://c:4318/v1/traces', 'http://c:4318/v1/metrics']);
    expect(endpoints({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c/otlp' })).toEqual(['https://c/otlp/v1/traces', 'https://c/otlp/v1/metrics']);
  });

  it('--otel URL is the traces endpoint; metrics go to the same base with /v1/metrics', () => {
    expect(endpoints({}, 'http://c:4318/v1/traces')).toEqual(['http://c:4318/v1/traces', 'http://c:4318/v1/metrics']);
    expect(endpoints({}, 'http://c:4318/custom')).toEqual(['http://c:4318/custom', 'http://c:4318/custom/v1/metrics']);
    // The flag wins over the variables of the traces endpoint and of the base.
    expect(
      endpoints({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://other:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://other:4318/t' }, 'http://c:4318/v1/traces'),
    ).toEqual(['http://c:4318/v1/traces', 'http://c:4318/v1/metrics']);
  });

  it('a signal’s own endpoint variable is used as it is', () => {
    expect(endpoints({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toEqual(['http://c:4318/v1/traces', 'http://c:4318/v1/metrics']);
    expect(endpoints({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t:1/spans' })).toEqual([
      'http://t:1/spans',
      'http://c:4318/v1/metrics',
    ]);
    expect(endpoints({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://m:2/m' })).toEqual([
      'http://c:4318/v1/traces',
      'http://m:2/m',
    ]);
    expect(endpoints({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://m:2/m' }, 'http://c:4318/v1/traces')).toEqual(['http://c:4318/v1/traces', 'http://m:2/m']);
  });
});

describe('protocol, headers, resource', () => {
  it('http/protobuf unless OTEL_EXPORTER_OTLP_PROTOCOL says http/json', () => {
    expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' })?.protocol).toBe('http/protobuf');
    expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' })?.protocol).toBe('http/protobuf');
    expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })?.protocol).toBe('http/json');
  });

  it('OTEL_EXPORTER_OTLP_HEADERS: key=value pairs, values percent-decoded', () => {
    expect(
      settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=s3cret, authorization=Bearer%20abc%3D,' })?.headers,
    ).toEqual({
      'x-api-key': 's3cret',
      authorization: 'Bearer abc=',
    });
  });

  it('service.name is awaken and service.version the version, unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise (OTEL_SERVICE_NAME first)', () => {
    expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' })?.resource).toEqual({ 'service.name': 'awaken', 'service.version': '1.2.3' });
    expect(
      settings({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c',
        OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attrs,deployment.environment.name=prod,team=ai%20platform',
      })?.resource,
    ).toEqual({
      'service.name': 'from-attrs',
      'service.version': '1.2.3',
      'deployment.environment.name': 'prod',
      team: 'ai platform',
    });
    expect(
      settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attrs', OTEL_SERVICE_NAME: 'checkout' })?.resource[
        'service.name'
      ],
    ).toBe('checkout');
  });

  it('OTEL_EXPORTER_OTLP_TIMEOUT and OTEL_METRIC_EXPORT_INTERVAL, in ms (60 s between metric exports by default)', () => {
    expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' })).toMatchObject({ metricIntervalMillis: 60_000 });
    expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' })?.timeoutMillis).toBeUndefined();
    expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_TIMEOUT: '2500', OTEL_METRIC_EXPORT_INTERVAL: '5000' })).toMatchObject({
      timeoutMillis: 2500,
      metricIntervalMillis: 5000,
    });
  });
});

/** The line and exit code `f` fails with. */
function refusal(f: () => unknown): { line: string; exit: number } {
  try {
    f();
  } catch (e) {
    if (e instanceof CliFailure) return { line: e.message, exit: e.exit };
    throw e;
  }
  throw new Error('not refused');
}

describe('refused, with one line naming the flag or the variable (exit 64)', () => {
  const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
  it.each<[string, Record<string, string>, string | undefined, string]>([
    [
      'grpc',
      { ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      undefined,
      'OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: use http/protobuf (the default) or http/json',
    ],
    [
      'an unknown protocol',
      { ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/xml' },
      undefined,
      'OTEL_EXPORTER_OTLP_PROTOCOL: unknown protocol "http/xml" (http/protobuf or http/json)',
    ],
    ['--otel, not a URL', {}, 'not a url', '--otel: not a URL: "not a url" (an OTLP/HTTP traces endpoint, e.g. http://127.0.0.1:4318/v1/traces)'],
    [
      'the base, not a URL',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
      undefined,
      'OTEL_EXPORTER_OTLP_ENDPOINT: not an http(s) URL: "collector:4318" (an OTLP/HTTP base endpoint, e.g. http://127.0.0.1:4318)',
    ],
    [
      'the traces endpoint, not http',
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://c/v1/traces' },
      undefined,
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: not an http(s) URL: "ftp://c/v1/traces" (an OTLP/HTTP traces endpoint)',
    ],
    [
      'the metrics endpoint, not a URL',
      { ...base, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'nope' },
      undefined,
      'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: not a URL: "nope" (an OTLP/HTTP metrics endpoint)',
    ],
    ['a header without =', { ...base, OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key' }, undefined, 'OTEL_EXPORTER_OTLP_HEADERS: not key=value: "x-api-key"'],
    [
      'a resource attribute badly encoded',
      { ...base, OTEL_RESOURCE_ATTRIBUTES: 'team=%E0%A4%A' },
      undefined,
      'OTEL_RESOURCE_ATTRIBUTES: bad percent-encoding in the value of team',
    ],
    [
      'a timeout that is not a number',
      { ...base, OTEL_EXPORTER_OTLP_TIMEOUT: '10s' },
      undefined,
      'OTEL_EXPORTER_OTLP_TIMEOUT: not a positive number of milliseconds: "10s"',
    ],
  ])('%s', (_, env, url, line) => {
    expect(refusal(() => settings(env, url))).toEqual({ line, exit: EXIT.usage });
  });

  it('openTelemetry refuses grpc before it loads or starts anything', async () => {
    const lines: string[] = [];
    const options: OtelOptions = { version: '1', env: { ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, log: (_, l) => lines.push(l) };
    await expect(openTelemetry(options)).rejects.toMatchObject({
      message: 'OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: use http/protobuf (the default) or http/json',
      exit: 64,
    });
    expect(lines).toEqual([]);
  });

  it('openTelemetry without an endpoint: undefined, nothing logged', async () => {
    const lines: string[] = [];
    expect(await openTelemetry({ version: '1', env: {}, log: (_, l) => lines.push(l) })).toBeUndefined();
    expect(lines).toEqual([]);
  });
});
