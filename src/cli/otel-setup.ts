import type { MetricsSink } from '../plugins/observability/spans.ts';
import { CliFailure } from './args.ts';
import { EXIT } from './exit.ts';

/** The optional peer dependencies OpenTelemetry loads with `protocol`'s exporters, as a user installs them. */
export const otelPackages = (protocol: OtlpProtocol): readonly string[] => {
  const exporter = protocol === 'http/json' ? 'http' : 'proto';
  return [
    '@opentelemetry/api@1',
    '@opentelemetry/sdk-trace-base@2',
    '@opentelemetry/sdk-metrics@2',
    '@opentelemetry/resources@2',
    `@opentelemetry/exporter-trace-otlp-${exporter}@0.223`,
    `@opentelemetry/exporter-metrics-otlp-${exporter}@0.223`,
  ];
};

export interface Tracing {
  /** Spans and metrics of every run, inference and tool call. */
  readonly sink: MetricsSink;
  /** Adds `delta` to the `awaken.streams.active` up-down counter: +1 when an event stream opens, -1 when it closes. */
  activeStreams?(delta: number): void;
  /** Exports what is still buffered (spans and a last collection of the metrics) and stops. */
  shutdown(): Promise<void>;
}

export interface OtelOptions {
  /** `--otel URL`: the traces endpoint; metrics go to the same base with `/v1/metrics`. */
  readonly url?: string;
  /** awaken's version: `service.version` and the instrumentation scope's version. */
  readonly version: string;
  /** Whether spans carry messages and tool arguments and results (`captureContent`). */
  readonly content?: boolean;
  /** Where the `OTEL_*` variables are read (the process's environment). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Told what is exported where, and when an export fails (one line per burst of failures) or works again. */
  readonly log?: (level: 'info' | 'warn' | 'error', line: string) => void;
}

export type OtlpProtocol = 'http/protobuf' | 'http/json';

/** Where and how spans and metrics are exported, as the options and the `OTEL_*` variables say. */
export interface OtlpSettings {
  readonly tracesUrl: string;
  readonly metricsUrl: string;
  readonly protocol: OtlpProtocol;
  readonly headers: Readonly<Record<string, string>>;
  /** Resource attributes: `service.name`, `service.version` and `OTEL_RESOURCE_ATTRIBUTES`. */
  readonly resource: Readonly<Record<string, string>>;
  /** `OTEL_EXPORTER_OTLP_TIMEOUT`: one export's time, retries included (ms). */
  readonly timeoutMillis?: number;
  /** `OTEL_METRIC_EXPORT_INTERVAL`: how often metrics are collected and exported (ms). */
  readonly metricIntervalMillis: number;
}

/** The OTLP/HTTP paths of each signal under a base endpoint (the exporter specification's). */
const TRACES_PATH = 'v1/traces';
const METRICS_PATH = 'v1/metrics';
const DEFAULT_METRIC_INTERVAL_MS = 60_000;
/** The service a collector shows when `OTEL_SERVICE_NAME` does not name another. */
export const DEFAULT_SERVICE_NAME = 'awaken';

/**
 * Reads `options` and the `OTEL_*` variables (docs/observability.md → OpenTelemetry from the
 * environment): undefined when no endpoint is set. A value that cannot be used is refused with one
 * line naming the flag or the variable (exit 64).
 */
export function otlpSettings(options: OtelOptions): OtlpSettings | undefined {
  const env = options.env ?? {};
  const read = (name: string): string | undefined => {
    const v = env[name]?.trim();
    return v === undefined || v === '' ? undefined : v;
  };
  const base = read('OTEL_EXPORTER_OTLP_ENDPOINT');
  const tracesVar = read('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (options.url === undefined && base === undefined && tracesVar === undefined) return undefined;
  const protocol = protocolOf(read('OTEL_EXPORTER_OTLP_PROTOCOL'));
  const flagUrl = options.url === undefined ? undefined : httpUrl('--otel', options.url, 'an OTLP/HTTP traces endpoint, e.g. http://127.0.0.1:4318/v1/traces');
  const baseUrl = base === undefined ? undefined : httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', base, 'an OTLP/HTTP base endpoint, e.g. http://127.0.0.1:4318');
  const tracesUrl =
    flagUrl ??
    (tracesVar !== undefined
      ? httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', tracesVar, 'an OTLP/HTTP traces endpoint')
      : under(baseUrl as string, TRACES_PATH));
  const metricsVar = read('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT');
  const metricsUrl =
    metricsVar !== undefined
      ? httpUrl('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT', metricsVar, 'an OTLP/HTTP metrics endpoint')
      : flagUrl === undefined && baseUrl !== undefined
        ? under(baseUrl, METRICS_PATH)
        : besideTraces(tracesUrl);
  const serviceName = read('OTEL_SERVICE_NAME');
  const timeout = read('OTEL_EXPORTER_OTLP_TIMEOUT');
  return {
    tracesUrl,
    metricsUrl,
    protocol,
    headers: keyValues('OTEL_EXPORTER_OTLP_HEADERS', read('OTEL_EXPORTER_OTLP_HEADERS')),
    resource: {
      'service.name': DEFAULT_SERVICE_NAME,
      'service.version': options.version,
      ...keyValues('OTEL_RESOURCE_ATTRIBUTES', read('OTEL_RESOURCE_ATTRIBUTES')),
      // The specification: OTEL_SERVICE_NAME wins over a service.name in OTEL_RESOURCE_ATTRIBUTES.
      ...(serviceName !== undefined ? { 'service.name': serviceName } : {}),
    },
    ...(timeout !== undefined ? { timeoutMillis: millis('OTEL_EXPORTER_OTLP_TIMEOUT', timeout) } : {}),
    metricIntervalMillis: millis('OTEL_METRIC_EXPORT_INTERVAL', read('OTEL_METRIC_EXPORT_INTERVAL') ?? String(DEFAULT_METRIC_INTERVAL_MS)),
  };
}

function protocolOf(value: string | undefined): OtlpProtocol {
  if (value === undefined || value === 'http/protobuf') return 'http/protobuf';
  if (value === 'http/json') return 'http/json';
  if (value === 'grpc') throw new CliFailure('OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: use http/protobuf (the default) or http/json', EXIT.usage);
  throw new CliFailure(`OTEL_EXPORTER_OTLP_PROTOCOL: unknown protocol ${JSON.stringify(value)} (http/protobuf or http/json)`, EXIT.usage);
}

function httpUrl(name: string, value: string, what: string): string {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new CliFailure(`${name}: not a URL: ${JSON.stringify(value)} (${what})`, EXIT.usage);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new CliFailure(`${name}: not an http(s) URL: ${JSON.stringify(value)} (${what})`, EXIT.usage);
  return parsed.href;
}

/** `path` under a base endpoint, as the specification joins them (one slash between). */
const under = (base: string, path: string): string => (base.endsWith('/') ? `${base}${path}` : `${base}/${path}`);

/** The metrics endpoint beside a traces endpoint: its trailing `/v1/traces` made `/v1/metrics`, or `/v1/metrics` under it. */
function besideTraces(tracesUrl: string): string {
  const u = new URL(tracesUrl);
  const suffix = `/${TRACES_PATH}`;
  u.pathname = u.pathname.endsWith(suffix) ? `${u.pathname.slice(0, -suffix.length)}/${METRICS_PATH}` : under(u.pathname, METRICS_PATH);
  return u.href;
}

/** `key=value,key2=value2` with percent-encoded values (the specification's format for headers and resource attributes). */
function keyValues(name: string, value: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (value === undefined) return out;
  for (const pair of value.split(',')) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    const key = eq < 0 ? '' : pair.slice(0, eq).trim();
    if (key === '') throw new CliFailure(`${name}: not key=value: ${JSON.stringify(pair.trim())}`, EXIT.usage);
    let decoded: string;
    try {
      decoded = decodeURIComponent(pair.slice(eq + 1).trim());
    } catch {
      throw new CliFailure(`${name}: bad percent-encoding in the value of ${key}`, EXIT.usage);
    }
    out[key] = decoded;
  }
  return out;
}

function millis(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new CliFailure(`${name}: not a positive number of milliseconds: ${JSON.stringify(value)}`, EXIT.usage);
  return n;
}

/** The line `openTelemetry` logs when it starts. */
export const exportingLine = (s: Pick<OtlpSettings, 'tracesUrl' | 'metricsUrl' | 'protocol'>): string =>
  `exporting OpenTelemetry traces to ${s.tracesUrl} and metrics to ${s.metricsUrl} (${s.protocol})`;

/** The result of one export, as the exporters report it (`ExportResult` of `@opentelemetry/core`: 0 success, 1 failed). */
interface ExportResult {
  readonly code: number;
  readonly error?: Error;
}

/** Logs the first failed export of a burst, and the first that works after one. */
function exportWatcher(signal: 'traces' | 'metrics', url: string, log: OtelOptions['log']): (r: ExportResult) => void {
  let failing = false;
  return (r) => {
    if (r.code !== 0 && !failing) {
      failing = true;
      log?.('warn', `OpenTelemetry ${signal} not exported to ${url}: ${reasonOf(r.error)}`);
    } else if (r.code === 0 && failing) {
      failing = false;
      log?.('info', `OpenTelemetry ${signal} exported to ${url} again`);
    }
  };
}

/**
 * Why an export failed, in a few words: the network error's code when there is one (the collector
 * is not there), the HTTP status when the collector refused, else the message.
 */
function reasonOf(error: Error | undefined): string {
  if (error === undefined) return 'the export failed';
  const code = (error as { code?: unknown }).code ?? (error.cause as { code?: unknown } | undefined)?.code;
  const message = error.message.split('\n')[0] ?? '';
  if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return code;
  if (typeof code === 'number') return `HTTP ${code}${message !== '' ? ` ${message}` : ''}`;
  return message !== '' ? message : 'the export failed';
}

/** The SDK, the exporters of `protocol` (JSON or protobuf) and the sinks: loaded only when asked for. */
async function loadOtel(json: boolean) {
  const [trace, metrics, resources, traceExporter, metricExporter, spans, metricSinks] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/sdk-metrics'),
    import('@opentelemetry/resources'),
    json ? import('@opentelemetry/exporter-trace-otlp-http') : import('@opentelemetry/exporter-trace-otlp-proto'),
    json ? import('@opentelemetry/exporter-metrics-otlp-http') : import('@opentelemetry/exporter-metrics-otlp-proto'),
    import('../plugins/observability/otel.ts'),
    import('../plugins/observability/otel-metrics.ts'),
  ]);
  return {
    BasicTracerProvider: trace.BasicTracerProvider,
    BatchSpanProcessor: trace.BatchSpanProcessor,
    MeterProvider: metrics.MeterProvider,
    PeriodicExportingMetricReader: metrics.PeriodicExportingMetricReader,
    defaultResource: resources.defaultResource,
    resourceFromAttributes: resources.resourceFromAttributes,
    OTLPTraceExporter: traceExporter.OTLPTraceExporter,
    OTLPMetricExporter: metricExporter.OTLPMetricExporter,
    AwakenIdGenerator: spans.AwakenIdGenerator,
    otelSink: spans.otelSink,
    combinedSink: metricSinks.combinedSink,
    otelMetricsSink: metricSinks.otelMetricsSink,
  };
}

/**
 * OpenTelemetry for `awaken serve` (docs/observability.md): the observability plugin's spans and
 * metrics exported over OTLP/HTTP, protobuf by default or JSON, to the endpoints `otlpSettings`
 * finds — undefined when none is set. Spans go through a tracer provider whose ids are the runs' own
 * (`AwakenIdGenerator`); metrics through a meter provider read every `OTEL_METRIC_EXPORT_INTERVAL`
 * and once more at shutdown. Both share one resource (`service.name` `awaken` unless
 * `OTEL_SERVICE_NAME` names another). The packages load only here; a project without them is told
 * which to install.
 */
export async function openTelemetry(options: OtelOptions): Promise<Tracing | undefined> {
  const settings = otlpSettings(options);
  if (settings === undefined) return undefined;
  const json = settings.protocol === 'http/json';
  let loaded: Awaited<ReturnType<typeof loadOtel>>;
  try {
    loaded = await loadOtel(json);
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw e;
    const packages = otelPackages(settings.protocol);
    throw new CliFailure(
      `OpenTelemetry needs ${packages.join(', ')} (optional peer dependencies of awaken-ts): npm install ${packages.join(' ')}`,
      EXIT.unavailable,
    );
  }
  const {
    BasicTracerProvider,
    BatchSpanProcessor,
    MeterProvider,
    PeriodicExportingMetricReader,
    defaultResource,
    resourceFromAttributes,
    OTLPTraceExporter,
    OTLPMetricExporter,
    AwakenIdGenerator,
    otelSink,
    combinedSink,
    otelMetricsSink,
  } = loaded;
  const resource = defaultResource().merge(resourceFromAttributes(settings.resource));
  const common = { headers: { ...settings.headers }, ...(settings.timeoutMillis !== undefined ? { timeoutMillis: settings.timeoutMillis } : {}) };

  const spans = new OTLPTraceExporter({ ...common, url: settings.tracesUrl });
  const tracesWatched = exportWatcher('traces', settings.tracesUrl, options.log);
  const idGenerator = new AwakenIdGenerator();
  const tracerProvider = new BasicTracerProvider({
    resource,
    idGenerator,
    spanProcessors: [
      new BatchSpanProcessor(
        {
          export: (items, done) => spans.export(items, (r) => (tracesWatched(r), done(r))),
          shutdown: () => spans.shutdown(),
          forceFlush: () => spans.forceFlush(),
        },
        { scheduledDelayMillis: 500 },
      ),
    ],
  });

  const metrics = new OTLPMetricExporter({ ...common, url: settings.metricsUrl });
  const metricsWatched = exportWatcher('metrics', settings.metricsUrl, options.log);
  const meterProvider = new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({
        exporter: {
          export: (items, done) => metrics.export(items, (r) => (metricsWatched(r), done(r))),
          shutdown: () => metrics.shutdown(),
          forceFlush: () => metrics.forceFlush(),
          selectAggregationTemporality: (kind) => metrics.selectAggregationTemporality(kind),
          selectAggregation: (kind) => metrics.selectAggregation(kind),
        },
        exportIntervalMillis: settings.metricIntervalMillis,
        exportTimeoutMillis: Math.min(settings.metricIntervalMillis, settings.timeoutMillis ?? 30_000),
      }),
    ],
  });

  const metricSink = otelMetricsSink(meterProvider.getMeter('awaken-ts', options.version));
  options.log?.('info', exportingLine(settings));
  return {
    sink: combinedSink(otelSink(tracerProvider.getTracer('awaken-ts', options.version), { idGenerator, captureContent: options.content === true }), metricSink),
    activeStreams: (delta) => metricSink.activeStreams(delta),
    // A last export that fails was logged by its watcher: stopping goes on regardless.
    shutdown: async () => {
      await Promise.allSettled([tracerProvider.shutdown(), meterProvider.shutdown()]);
    },
  };
}
