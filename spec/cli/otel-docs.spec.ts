import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliFailure } from '../../src/cli/args.ts';
import { openTelemetry, otelPackages, otlpSettings } from '../../src/cli/otel-setup.ts';
import { observabilityPlugin } from '../../src/plugins/observability/plugin.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { startCollector, type Collector } from '../support/otlp-collector.ts';
import { repo } from '../support/serve-process.ts';

/**
 * docs/observability.md → From `awaken serve`, OpenTelemetry from the environment, Metrics, compared
 * with what happens: the packages it installs are the ones asked for, its table of variables is the
 * set `openTelemetry` reads, its refusal and log lines are the lines printed (its collector URL
 * made the spec's), its table of metrics and its bucket boundaries are what a collector on a socket
 * receives from corpus run 46 (two inferences: 30 + 55 input tokens, 12 + 8 output), and its JSON
 * example is that collector's `gen_ai.client.token.usage`, times left out.
 */

const page = readFileSync(join(repo, 'docs/observability.md'), 'utf8');
const FIXTURE = readFileSync(join(repo, 'fixtures/runs/46-observability-spans.jsonl'), 'utf8');
const DOC_URL = 'http://127.0.0.1:4318';

/** The text of the section under `heading`, up to the next heading of its level or above. */
function section(heading: string): string {
  const lines = page.split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`docs/observability.md has no "${heading}"`);
  const level = /^#+/.exec(heading)?.[0].length ?? 0;
  const end = lines.findIndex((l, i) => i > start && /^#+ /.test(l) && (/^#+/.exec(l)?.[0].length ?? 0) <= level);
  return lines.slice(start, end < 0 ? undefined : end).join('\n');
}

/** The fenced blocks of `text` in `lang`, in order. */
function blocks(text: string, lang: string): string[] {
  const out: string[] = [];
  const re = new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\`$`, 'gm');
  for (let m = re.exec(text); m !== null; m = re.exec(text)) out.push(m[1] as string);
  return out;
}

/** The rows of the first table of `text` after its header and separator, as cells. */
function tableRows(text: string): string[][] {
  const rows = text.split('\n').filter((l) => l.startsWith('|'));
  return rows.slice(2).map((r) =>
    r
      .slice(1, -1)
      .split(' | ')
      .map((c) => c.trim()),
  );
}

const serveSection = section('### From `awaken serve`');
const envSection = section('#### OpenTelemetry from the environment');
const metricsSection = section('## Metrics');

let collector: Collector;
let exported: Awaited<ReturnType<Collector['metrics']>>;

beforeAll(async () => {
  collector = await startCollector();
  const tracing = await openTelemetry({ version: '1', env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' } });
  if (tracing === undefined) throw new Error('no tracing');
  tracing.activeStreams?.(1);
  await replayTranscript(FIXTURE, { plugins: new Map([['observability', observabilityPlugin(tracing.sink)]]) });
  await tracing.shutdown();
  exported = collector.metrics();
});
afterAll(() => collector?.close());

describe('docs/observability.md → OpenTelemetry from awaken serve', () => {
  it('installs the packages a missing one would name (the default protocol’s exporters)', () => {
    const [sh] = blocks(serveSection, 'sh');
    expect(sh?.split('\n')[0]).toBe(`npm install ${otelPackages('http/protobuf').join(' ')}`);
  });

  it('its table of variables is every OTEL_* variable read', () => {
    const read = new Set<string>();
    const env = new Proxy({ OTEL_EXPORTER_OTLP_ENDPOINT: DOC_URL } as Record<string, string | undefined>, {
      get: (target, key) => {
        if (typeof key === 'string') read.add(key);
        return target[key as string];
      },
    });
    otlpSettings({ version: '1', env });
    const documented = tableRows(envSection).map((row) => /^`(OTEL_[A-Z_]+)`$/.exec(row[0] ?? '')?.[1]);
    expect(documented.sort()).toEqual([...read].sort());
  });

  it('its refusal line is the line printed', () => {
    const [refusal] = blocks(envSection, 'text');
    let message = '';
    try {
      otlpSettings({ version: '1', env: { OTEL_EXPORTER_OTLP_ENDPOINT: DOC_URL, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' } });
    } catch (e) {
      if (e instanceof CliFailure) message = e.message;
    }
    expect(refusal).toBe(`${message}\n`);
  });

  it('its log lines are the lines logged: at start, when the collector is not there, when it is back', async () => {
    const [, logBlock] = blocks(envSection, 'text');
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const lines: string[] = [];
    const tracing = await openTelemetry({
      version: '1',
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_EXPORTER_OTLP_TIMEOUT: '100', OTEL_METRIC_EXPORT_INTERVAL: '150' },
      log: (level, line) => lines.push(`${level} ${line}`),
    });
    if (tracing === undefined) throw new Error('no tracing');
    tracing.activeStreams?.(1);
    const back = await (async () => {
      await expect.poll(() => lines.length, { timeout: 10_000 }).toBe(2);
      return startCollector({ port });
    })();
    try {
      await expect.poll(() => lines.length, { timeout: 10_000 }).toBe(3);
    } finally {
      await tracing.shutdown();
      await back.close();
    }
    expect(`${lines.join('\n')}\n`).toBe(logBlock?.replaceAll(DOC_URL, url));
  });
});

describe('docs/observability.md → Metrics', () => {
  it('its table: every metric a collector receives, with its unit and every attribute it carries', () => {
    const rows = tableRows(metricsSection);
    expect(rows.map((r) => r[0]?.replaceAll('`', '')).sort()).toEqual(exported.map((m) => m.name).sort());
    for (const [name, instrument, , attributes] of rows) {
      const m = exported.find((x) => `\`${x.name}\`` === name);
      expect(instrument, String(name)).toMatch(
        new RegExp(
          `^${m?.kind === 'histogram' ? 'histogram' : m?.monotonic === true ? 'counter' : 'up-down counter'}, \`${m?.unit.replace(/[{}]/g, '\\$&')}\`$`,
        ),
      );
      const keys = new Set([...(m?.histogram ?? []), ...(m?.points ?? [])].flatMap((p) => Object.keys(p.attributes)));
      for (const k of keys) expect(attributes, `${name} ${k}`).toContain(`\`${k}\``);
    }
  });

  it('its bucket boundaries are those the collector receives', () => {
    const [buckets] = blocks(metricsSection, 'text');
    const documented = (buckets ?? '')
      .trim()
      .split('\n')
      .map((l) => {
        const [name, ...bounds] = l.split(/,?\s+/);
        return [name, bounds.map(Number)];
      });
    expect(documented).toEqual(exported.filter((m) => m.kind === 'histogram').map((m) => [m.name, m.histogram[0]?.explicitBounds]));
  });

  it('its JSON example is what the collector receives for gen_ai.client.token.usage, times left out', () => {
    const [example] = blocks(metricsSection, 'json');
    const body = collector.requests.find((r) => r.path === '/v1/metrics')?.json as {
      resourceMetrics: { scopeMetrics: { scope: { name: string }; metrics: { name: string; histogram: { dataPoints: Record<string, unknown>[] } }[] }[] }[];
    };
    const scope = body.resourceMetrics[0]?.scopeMetrics.find((s) => s.scope.name === 'awaken-ts');
    const usage = scope?.metrics.find((m) => m.name === 'gen_ai.client.token.usage');
    const withoutTimes = {
      ...usage,
      histogram: { ...usage?.histogram, dataPoints: usage?.histogram.dataPoints.map(({ startTimeUnixNano: _s, timeUnixNano: _t, ...p }) => p) },
    };
    expect(JSON.parse(example ?? '')).toEqual(withoutTimes);
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
