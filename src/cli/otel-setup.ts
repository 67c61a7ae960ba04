import type { MetricsSink } from '../plugins/observability/spans.ts';
import { CliFailure } from './args.ts';
import { EXIT } from './exit.ts';

/** The optional peer dependencies `awaken serve --otel` loads, as a user installs them. */
export const OTEL_PACKAGES = ['@opentelemetry/api@1', '@opentelemetry/sdk-trace-base@2', '@opentelemetry/exporter-trace-otlp-http'] as const;

export interface Tracing {
  readonly sink: MetricsSink;
  /** Exports what is still buffered and stops. */
  shutdown(): Promise<void>;
}

/**
 * OpenTelemetry for `awaken serve --otel URL`: the observability plugin's spans exported over
 * OTLP/HTTP to `url` (a collector's traces endpoint, e.g. http://127.0.0.1:4318/v1/traces), through a
 * tracer provider whose ids are the runs' own (`AwakenIdGenerator`). The packages load only here; a
 * project without them is told which to install.
 */
export async function openTelemetry(url: string, version: string): Promise<Tracing> {
  let loaded: [typeof import('@opentelemetry/sdk-trace-base'), typeof import('@opentelemetry/exporter-trace-otlp-http'), typeof import('../plugins/observability/otel.ts')];
  try {
    loaded = await Promise.all([import('@opentelemetry/sdk-trace-base'), import('@opentelemetry/exporter-trace-otlp-http'), import('../plugins/observability/otel.ts')]);
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw e;
    throw new CliFailure(`--otel needs ${OTEL_PACKAGES.join(', ')} (optional peer dependencies of awaken-ts): npm install ${OTEL_PACKAGES.join(' ')}`, EXIT.unavailable);
  }
  const [{ BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { AwakenIdGenerator, otelSink }] = loaded;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliFailure(`--otel: not a URL: ${JSON.stringify(url)} (an OTLP/HTTP traces endpoint, e.g. http://127.0.0.1:4318/v1/traces)`, EXIT.usage);
  }
  const idGenerator = new AwakenIdGenerator();
  const provider = new BasicTracerProvider({ idGenerator, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: parsed.href }), { scheduledDelayMillis: 500 })] });
  return {
    sink: otelSink(provider.getTracer('awaken-ts', version), { idGenerator }),
    shutdown: () => provider.shutdown(),
  };
}
