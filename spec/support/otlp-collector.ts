import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';

/**
 * An OpenTelemetry collector on a socket for specs: it answers OTLP/HTTP exports of traces
 * (`/v1/traces`) and metrics (`/v1/metrics`) in JSON or in protobuf and keeps what arrived, both
 * decoded into one shape (ids as hex, 64-bit numbers as numbers), so a spec asserts the same thing
 * whichever protocol carried it. The protobuf decoder reads only the wire format and the fields of
 * opentelemetry-proto's ExportTraceServiceRequest and ExportMetricsServiceRequest a spec needs.
 */

export type AttrValue = string | number | boolean | readonly AttrValue[] | { readonly [key: string]: AttrValue } | null;
export type Attrs = Readonly<Record<string, AttrValue>>;

export interface OtlpLink {
  readonly traceId: string;
  readonly spanId: string;
  readonly attributes: Attrs;
}

export interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly startTimeUnixNano: bigint;
  readonly endTimeUnixNano: bigint;
  readonly attributes: Attrs;
  readonly links: readonly OtlpLink[];
  readonly status: { readonly code: number; readonly message: string };
  readonly scope: string;
  readonly resource: Attrs;
}

export interface HistogramPoint {
  readonly attributes: Attrs;
  readonly count: number;
  readonly sum: number | undefined;
  readonly bucketCounts: readonly number[];
  readonly explicitBounds: readonly number[];
}

export interface NumberPoint {
  readonly attributes: Attrs;
  readonly value: number;
}

export interface OtlpMetric {
  readonly name: string;
  readonly unit: string;
  readonly description: string;
  readonly kind: 'histogram' | 'sum' | 'gauge' | 'other';
  /** For a sum. */
  readonly monotonic?: boolean;
  readonly histogram: readonly HistogramPoint[];
  readonly points: readonly NumberPoint[];
  readonly scope: string;
  readonly resource: Attrs;
}

/** One request the collector answered. */
export interface OtlpRequest {
  readonly path: string;
  readonly contentType: string;
  readonly headers: IncomingHttpHeaders;
  /** The body as it came, for JSON: parsed. */
  readonly json?: unknown;
  readonly spans: readonly OtlpSpan[];
  readonly metrics: readonly OtlpMetric[];
}

export interface Collector {
  /** The base endpoint, e.g. http://127.0.0.1:PORT (no trailing slash). */
  readonly url: string;
  readonly requests: OtlpRequest[];
  spans(): OtlpSpan[];
  metrics(): OtlpMetric[];
  close(): Promise<void>;
}

export interface CollectorOptions {
  /** A port to listen on (a free one by default). */
  readonly port?: number;
  /** A header every export must carry, as a collector's API key: without it the answer is 401. */
  readonly requireHeader?: readonly [name: string, value: string];
}

/** Starts a collector on 127.0.0.1. */
export async function startCollector(options: CollectorOptions = {}): Promise<Collector> {
  const requests: OtlpRequest[] = [];
  const server: Server = createServer((req, res) => {
    const required = options.requireHeader;
    if (required !== undefined && req.headers[required[0]] !== required[1]) {
      req.resume();
      res.writeHead(401, 'Unauthorized', { 'content-type': 'text/plain' }).end('missing key');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const contentType = String(req.headers['content-type'] ?? '');
      const path = req.url ?? '';
      try {
        const decoded = decodeExport(path, contentType, body);
        const json = contentType.startsWith('application/json') ? (JSON.parse(body.toString('utf8')) as unknown) : undefined;
        requests.push({ path, contentType, headers: req.headers, ...(json !== undefined ? { json } : {}), ...decoded });
        res
          .writeHead(200, { 'content-type': contentType.startsWith('application/json') ? 'application/json' : 'application/x-protobuf' })
          .end(contentType.startsWith('application/json') ? '{}' : '');
      } catch (e) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end(String(e));
      }
    });
  });
  await new Promise<void>((r) => server.listen(options.port ?? 0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    requests,
    spans: () => requests.flatMap((r) => r.spans),
    metrics: () => requests.flatMap((r) => r.metrics),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A request body decoded by its path (traces or metrics) and content type (JSON or protobuf). */
export function decodeExport(path: string, contentType: string, body: Uint8Array): { spans: OtlpSpan[]; metrics: OtlpMetric[] } {
  const json = contentType.startsWith('application/json');
  if (!json && !contentType.startsWith('application/x-protobuf')) throw new Error(`unexpected content-type ${contentType}`);
  if (path.endsWith('/v1/traces')) return { spans: json ? spansOfJson(JSON.parse(Buffer.from(body).toString('utf8'))) : spansOfProto(body), metrics: [] };
  if (path.endsWith('/v1/metrics')) return { spans: [], metrics: json ? metricsOfJson(JSON.parse(Buffer.from(body).toString('utf8'))) : metricsOfProto(body) };
  throw new Error(`unexpected path ${path}`);
}

// ---- protobuf wire format ----

/** One field of a message: its number, and its value — a varint, 64/32 bits, or bytes (a string, a message, or a packed list). */
interface Field {
  readonly no: number;
  readonly wire: 0 | 1 | 2 | 5;
  readonly varint: bigint;
  readonly bytes: Uint8Array;
}

/** The fields of one message, in order (repeated fields appear once each). */
export function fieldsOf(buf: Uint8Array): Field[] {
  const out: Field[] = [];
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      if (i >= buf.length) throw new Error('truncated varint');
      const b = buf[i++] as number;
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
      shift += 7n;
    }
  };
  const empty = new Uint8Array(0);
  while (i < buf.length) {
    const key = Number(varint());
    const no = key >>> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ no, wire, varint: varint(), bytes: empty });
    else if (wire === 1) {
      out.push({ no, wire, varint: view.getBigUint64(i, true), bytes: buf.subarray(i, i + 8) });
      i += 8;
    } else if (wire === 5) {
      out.push({ no, wire, varint: BigInt(view.getUint32(i, true)), bytes: buf.subarray(i, i + 4) });
      i += 4;
    } else if (wire === 2) {
      const len = Number(varint());
      if (i + len > buf.length) throw new Error('truncated field');
      out.push({ no, wire, varint: 0n, bytes: buf.subarray(i, i + len) });
      i += len;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

const utf8 = (b: Uint8Array): string => Buffer.from(b).toString('utf8');
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const f64 = (b: Uint8Array): number => new DataView(b.buffer, b.byteOffset, 8).getFloat64(0, true);
const all = (fields: readonly Field[], no: number): Field[] => fields.filter((f) => f.no === no);
const one = (fields: readonly Field[], no: number): Field | undefined => fields.findLast((f) => f.no === no);
const str = (fields: readonly Field[], no: number): string => {
  const f = one(fields, no);
  return f === undefined ? '' : utf8(f.bytes);
};
const u64 = (fields: readonly Field[], no: number): bigint => one(fields, no)?.varint ?? 0n;

/** A repeated fixed64 (packed, or one field each). */
function fixed64s(fields: readonly Field[], no: number): bigint[] {
  const out: bigint[] = [];
  for (const f of all(fields, no)) {
    if (f.wire === 1) out.push(f.varint);
    else for (let j = 0; j + 8 <= f.bytes.length; j += 8) out.push(new DataView(f.bytes.buffer, f.bytes.byteOffset + j, 8).getBigUint64(0, true));
  }
  return out;
}

/** A repeated double (packed, or one field each). */
function doubles(fields: readonly Field[], no: number): number[] {
  const out: number[] = [];
  for (const f of all(fields, no)) {
    if (f.wire === 1) out.push(f64(f.bytes));
    else for (let j = 0; j + 8 <= f.bytes.length; j += 8) out.push(f64(f.bytes.subarray(j, j + 8)));
  }
  return out;
}

/** AnyValue: string 1, bool 2, int64 3, double 4, ArrayValue 5, KeyValueList 6, bytes 7. */
function anyValueOfProto(buf: Uint8Array): AttrValue {
  const f = fieldsOf(buf).at(-1);
  if (f === undefined) return null;
  switch (f.no) {
    case 1:
      return utf8(f.bytes);
    case 2:
      return f.varint !== 0n;
    case 3:
      return Number(BigInt.asIntN(64, f.varint));
    case 4:
      return f64(f.bytes);
    case 5:
      return all(fieldsOf(f.bytes), 1).map((v) => anyValueOfProto(v.bytes));
    case 6:
      return attrsOfProto(fieldsOf(f.bytes), 1);
    case 7:
      return hex(f.bytes);
    default:
      return null;
  }
}

/** Repeated KeyValue { key 1, value 2 } at field `no`. */
function attrsOfProto(fields: readonly Field[], no: number): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const kv of all(fields, no)) {
    const f = fieldsOf(kv.bytes);
    const value = one(f, 2);
    out[str(f, 1)] = value === undefined ? null : anyValueOfProto(value.bytes);
  }
  return out;
}

/** Resource { attributes 1 } of a ResourceSpans / ResourceMetrics (field 1). */
const resourceOfProto = (fields: readonly Field[]): Attrs => {
  const r = one(fields, 1);
  return r === undefined ? {} : attrsOfProto(fieldsOf(r.bytes), 1);
};

/** InstrumentationScope { name 1 } of a ScopeSpans / ScopeMetrics (field 1). */
const scopeOfProto = (fields: readonly Field[]): string => {
  const s = one(fields, 1);
  return s === undefined ? '' : str(fieldsOf(s.bytes), 1);
};

/** ExportTraceServiceRequest { ResourceSpans 1 { Resource 1, ScopeSpans 2 { scope 1, Span 2 } } }. */
function spansOfProto(body: Uint8Array): OtlpSpan[] {
  const out: OtlpSpan[] = [];
  for (const rs of all(fieldsOf(body), 1)) {
    const rf = fieldsOf(rs.bytes);
    const resource = resourceOfProto(rf);
    for (const ss of all(rf, 2)) {
      const sf = fieldsOf(ss.bytes);
      const scope = scopeOfProto(sf);
      for (const sp of all(sf, 2)) {
        // Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, start 7, end 8, attributes 9, links 13, status 15.
        const f = fieldsOf(sp.bytes);
        const status = one(f, 15);
        const st = status === undefined ? [] : fieldsOf(status.bytes);
        out.push({
          traceId: hex(one(f, 1)?.bytes ?? new Uint8Array()),
          spanId: hex(one(f, 2)?.bytes ?? new Uint8Array()),
          parentSpanId: hex(one(f, 4)?.bytes ?? new Uint8Array()),
          name: str(f, 5),
          kind: Number(u64(f, 6)),
          startTimeUnixNano: u64(f, 7),
          endTimeUnixNano: u64(f, 8),
          attributes: attrsOfProto(f, 9),
          // Link: trace_id 1, span_id 2, attributes 4.
          links: all(f, 13).map((l) => {
            const lf = fieldsOf(l.bytes);
            return { traceId: hex(one(lf, 1)?.bytes ?? new Uint8Array()), spanId: hex(one(lf, 2)?.bytes ?? new Uint8Array()), attributes: attrsOfProto(lf, 4) };
          }),
          // Status: message 2, code 3.
          status: { code: Number(u64(st, 3)), message: str(st, 2) },
          scope,
          resource,
        });
      }
    }
  }
  return out;
}

/** ExportMetricsServiceRequest { ResourceMetrics 1 { Resource 1, ScopeMetrics 2 { scope 1, Metric 2 } } }. */
function metricsOfProto(body: Uint8Array): OtlpMetric[] {
  const out: OtlpMetric[] = [];
  for (const rm of all(fieldsOf(body), 1)) {
    const rf = fieldsOf(rm.bytes);
    const resource = resourceOfProto(rf);
    for (const sm of all(rf, 2)) {
      const sf = fieldsOf(sm.bytes);
      const scope = scopeOfProto(sf);
      for (const m of all(sf, 2)) {
        // Metric: name 1, description 2, unit 3, gauge 5, sum 7, histogram 9.
        const f = fieldsOf(m.bytes);
        const gauge = one(f, 5);
        const sum = one(f, 7);
        const histogram = one(f, 9);
        const base = { name: str(f, 1), description: str(f, 2), unit: str(f, 3), scope, resource };
        if (histogram !== undefined) {
          // Histogram { data_points 1 }; HistogramDataPoint: count 4, sum 5, bucket_counts 6, explicit_bounds 7, attributes 9.
          const points = all(fieldsOf(histogram.bytes), 1).map((p) => {
            const pf = fieldsOf(p.bytes);
            const s = one(pf, 5);
            return {
              attributes: attrsOfProto(pf, 9),
              count: Number(u64(pf, 4)),
              sum: s === undefined ? undefined : f64(s.bytes),
              bucketCounts: fixed64s(pf, 6).map(Number),
              explicitBounds: doubles(pf, 7),
            };
          });
          out.push({ ...base, kind: 'histogram', histogram: points, points: [] });
        } else if (sum !== undefined || gauge !== undefined) {
          // Sum { data_points 1, is_monotonic 3 }, Gauge { data_points 1 }; NumberDataPoint: as_double 4, as_int 6, attributes 7.
          const sf2 = fieldsOf((sum ?? gauge)?.bytes ?? new Uint8Array());
          const points = all(sf2, 1).map((p) => {
            const pf = fieldsOf(p.bytes);
            const d = one(pf, 4);
            return { attributes: attrsOfProto(pf, 7), value: d !== undefined ? f64(d.bytes) : Number(BigInt.asIntN(64, u64(pf, 6))) };
          });
          out.push({
            ...base,
            kind: sum !== undefined ? 'sum' : 'gauge',
            ...(sum !== undefined ? { monotonic: u64(sf2, 3) !== 0n } : {}),
            histogram: [],
            points,
          });
        } else out.push({ ...base, kind: 'other', histogram: [], points: [] });
      }
    }
  }
  return out;
}

// ---- OTLP/JSON ----

interface JsonKeyValue {
  readonly key: string;
  readonly value?: Record<string, unknown>;
}

/** 64-bit integers arrive as strings or numbers in OTLP/JSON. */
const jsonInt = (v: unknown): number => (v === undefined || v === null ? 0 : Number(v));

function anyValueOfJson(v: Record<string, unknown> | undefined): AttrValue {
  if (v === undefined) return null;
  if ('stringValue' in v) return String(v['stringValue']);
  if ('boolValue' in v) return Boolean(v['boolValue']);
  if ('intValue' in v) return jsonInt(v['intValue']);
  if ('doubleValue' in v) return Number(v['doubleValue']);
  if ('arrayValue' in v) return ((v['arrayValue'] as { values?: Record<string, unknown>[] }).values ?? []).map(anyValueOfJson);
  if ('kvlistValue' in v) return attrsOfJson((v['kvlistValue'] as { values?: JsonKeyValue[] }).values);
  if ('bytesValue' in v) return String(v['bytesValue']);
  return null;
}

function attrsOfJson(kvs: readonly JsonKeyValue[] | undefined): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const kv of kvs ?? []) out[kv.key] = anyValueOfJson(kv.value);
  return out;
}

interface JsonResource {
  readonly resource?: { readonly attributes?: JsonKeyValue[] };
}

type JsonScoped<T> = { readonly scope?: { readonly name?: string } } & T;

function spansOfJson(body: { resourceSpans?: (JsonResource & { scopeSpans?: JsonScoped<{ spans?: Record<string, unknown>[] }>[] })[] }): OtlpSpan[] {
  const out: OtlpSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const resource = attrsOfJson(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        const status = (s['status'] ?? {}) as { code?: number; message?: string };
        out.push({
          traceId: String(s['traceId'] ?? ''),
          spanId: String(s['spanId'] ?? ''),
          parentSpanId: String(s['parentSpanId'] ?? ''),
          name: String(s['name'] ?? ''),
          kind: jsonInt(s['kind']),
          startTimeUnixNano: BigInt(String(s['startTimeUnixNano'] ?? '0')),
          endTimeUnixNano: BigInt(String(s['endTimeUnixNano'] ?? '0')),
          attributes: attrsOfJson(s['attributes'] as JsonKeyValue[] | undefined),
          links: ((s['links'] ?? []) as { traceId: string; spanId: string; attributes?: JsonKeyValue[] }[]).map((l) => ({
            traceId: l.traceId,
            spanId: l.spanId,
            attributes: attrsOfJson(l.attributes),
          })),
          status: { code: jsonInt(status.code), message: status.message ?? '' },
          scope: ss.scope?.name ?? '',
          resource,
        });
      }
    }
  }
  return out;
}

interface JsonPoint {
  readonly attributes?: JsonKeyValue[];
  readonly count?: string | number;
  readonly sum?: number;
  readonly bucketCounts?: (string | number)[];
  readonly explicitBounds?: number[];
  readonly asDouble?: number;
  readonly asInt?: string | number;
}

function metricsOfJson(body: { resourceMetrics?: (JsonResource & { scopeMetrics?: JsonScoped<{ metrics?: Record<string, unknown>[] }>[] })[] }): OtlpMetric[] {
  const out: OtlpMetric[] = [];
  for (const rm of body.resourceMetrics ?? []) {
    const resource = attrsOfJson(rm.resource?.attributes);
    for (const sm of rm.scopeMetrics ?? []) {
      for (const m of sm.metrics ?? []) {
        const base = {
          name: String(m['name'] ?? ''),
          description: String(m['description'] ?? ''),
          unit: String(m['unit'] ?? ''),
          scope: sm.scope?.name ?? '',
          resource,
        };
        const histogram = m['histogram'] as { dataPoints?: JsonPoint[] } | undefined;
        const sum = m['sum'] as { dataPoints?: JsonPoint[]; isMonotonic?: boolean } | undefined;
        const gauge = m['gauge'] as { dataPoints?: JsonPoint[] } | undefined;
        if (histogram !== undefined) {
          const points = (histogram.dataPoints ?? []).map((p) => ({
            attributes: attrsOfJson(p.attributes),
            count: jsonInt(p.count),
            sum: p.sum,
            bucketCounts: (p.bucketCounts ?? []).map(jsonInt),
            explicitBounds: p.explicitBounds ?? [],
          }));
          out.push({ ...base, kind: 'histogram', histogram: points, points: [] });
        } else if (sum !== undefined || gauge !== undefined) {
          const points = ((sum ?? gauge)?.dataPoints ?? []).map((p) => ({
            attributes: attrsOfJson(p.attributes),
            value: p.asDouble !== undefined ? p.asDouble : jsonInt(p.asInt),
          }));
          out.push({
            ...base,
            kind: sum !== undefined ? 'sum' : 'gauge',
            ...(sum !== undefined ? { monotonic: sum.isMonotonic === true } : {}),
            histogram: [],
            points,
          });
        } else out.push({ ...base, kind: 'other', histogram: [], points: [] });
      }
    }
  }
  return out;
}
