import { SpanStatusCode, type HrTime } from '@opentelemetry/api';
import { ATTR_ERROR_TYPE, ATTR_SERVER_ADDRESS, ATTR_SERVER_PORT } from '@opentelemetry/semantic-conventions';
import {
  ATTR_GEN_AI_AGENT_DESCRIPTION,
  ATTR_GEN_AI_AGENT_ID,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MAX_TOKENS,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_REQUEST_STREAM,
  ATTR_GEN_AI_REQUEST_TEMPERATURE,
  ATTR_GEN_AI_REQUEST_TOP_P,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_ID,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_SYSTEM_INSTRUCTIONS,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_DESCRIPTION,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
  GEN_AI_OPERATION_NAME_VALUE_CHAT,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
  GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
  GEN_AI_PROVIDER_NAME_VALUE_OPENAI,
} from '@opentelemetry/semantic-conventions/incubating';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { openTelemetry, type Tracing } from '../../src/cli/otel-setup.ts';
import { TerminationReasons } from '../../src/contract/lifecycle.ts';
import { fedRun, SYSTEM } from '../plugins/fed-run.ts';
import { otel } from '../plugins/otel-support.ts';
import { startCollector, type Attrs, type AttrValue, type Collector, type OtlpSpan } from '../support/otlp-collector.ts';

/**
 * The GenAI attributes of `chat`, `execute_tool` and `invoke_agent` as a collector receives them
 * (docs/observability.md → Span attributes): a run with every provider fact — the provider's name in
 * the conventions, the response's id and model, the server — a described tool that succeeds and one
 * that fails, a failed inference and a run ending with an error, exported by `openTelemetry` over
 * OTLP/HTTP in protobuf and in JSON to a collector on a socket. Each span arrives with exactly the
 * attributes, values, kind, status, ids and times the in-memory exporter has for the same run: the
 * encoding loses, renames and retypes nothing.
 */

const RUN_ERROR = TerminationReasons.error('rate limited');

const open: { collectors: Collector[]; tracing: Tracing[] } = { collectors: [], tracing: [] };
afterEach(async () => {
  await Promise.all(open.tracing.splice(0).map((t) => t.shutdown()));
  await Promise.all(open.collectors.splice(0).map((c) => c.close()));
});

/** The run exported by `openTelemetry` over `protocol` (content captured) to a collector; the spans it decoded. */
async function overTheWire(protocol: 'http/protobuf' | 'http/json'): Promise<OtlpSpan[]> {
  const c = await startCollector();
  open.collectors.push(c);
  const lines: string[] = [];
  const tracing = await openTelemetry({
    url: `${c.url}/v1/traces`,
    version: '1.2.3',
    content: true,
    env: { OTEL_EXPORTER_OTLP_PROTOCOL: protocol },
    log: (level, line) => lines.push(`${level} ${line}`),
  });
  if (tracing === undefined) throw new Error('no tracing');
  open.tracing.push(tracing);
  fedRun(tracing.sink);
  await tracing.shutdown();
  // Nothing failed to export.
  expect(lines).toEqual([`info exporting OpenTelemetry traces to ${c.url}/v1/traces and metrics to ${c.url}/v1/metrics (${protocol})`]);
  const contentType = protocol === 'http/json' ? 'application/json' : 'application/x-protobuf';
  expect(c.requests.filter((r) => r.path === '/v1/traces').map((r) => r.contentType)).toEqual([contentType]);
  return c.spans();
}

/** The same run through the in-memory exporter (content captured). */
function inMemory(): ReadableSpan[] {
  const { exporter, sink } = otel({ captureContent: true });
  fedRun(sink);
  return exporter.getFinishedSpans();
}

/** OTLP's SpanKind: the API's plus one (0 is SPAN_KIND_UNSPECIFIED). */
const OTLP_KIND = { INTERNAL: 1, CLIENT: 3 } as const;

const ofKind = (spans: readonly OtlpSpan[], op: string): OtlpSpan[] => spans.filter((s) => s.attributes[ATTR_GEN_AI_OPERATION_NAME] === op);
const genAiNames = (attributes: object): string[] =>
  Object.keys(attributes)
    .filter((k) => k.startsWith('gen_ai.'))
    .sort();
const CONTENT: readonly string[] = [ATTR_GEN_AI_INPUT_MESSAGES, ATTR_GEN_AI_OUTPUT_MESSAGES, ATTR_GEN_AI_SYSTEM_INSTRUCTIONS];
/** A span's attributes with the content ones (JSON strings) parsed, to be compared as the conventions' message shapes. */
const readable = (attributes: Attrs): Record<string, unknown> =>
  Object.fromEntries(Object.entries(attributes).map(([k, v]: [string, AttrValue]) => [k, CONTENT.includes(k) ? JSON.parse(String(v)) : v]));
const nanos = (t: HrTime): bigint => BigInt(t[0]) * 1_000_000_000n + BigInt(t[1]);

/** What every span of the run says of it. */
const RUN = { [ATTR_GEN_AI_CONVERSATION_ID]: 'thread-9', [ATTR_GEN_AI_AGENT_ID]: 'planner', 'awaken.run_id': 'run-9', 'awaken.parent_run_id': 'run-0' };
const ASKED = { role: 'user', parts: [{ type: 'text', content: 'Two nights in Lyon' }] };
const CALLS = [
  { type: 'tool_call', id: 'c1', name: 'lookup', arguments: { city: 'Lyon' } },
  { type: 'tool_call', id: 'c2', name: 'book', arguments: { nights: 2 } },
];

describe.each(['http/protobuf', 'http/json'] as const)('GenAI span attributes over OTLP %s', (protocol) => {
  it('chat, execute_tool and invoke_agent arrive with every attribute at its value, their kinds and statuses, as the in-memory exporter has them', async () => {
    const wire = await overTheWire(protocol);
    expect(wire.map((s) => s.name)).toEqual(['chat gpt-4o', 'execute_tool lookup', 'execute_tool book', 'chat gpt-4o', 'invoke_agent planner']);

    const [chat, failed] = ofKind(wire, GEN_AI_OPERATION_NAME_VALUE_CHAT);
    expect(chat?.kind).toBe(OTLP_KIND.CLIENT);
    expect(readable(chat?.attributes ?? {})).toEqual({
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_CHAT,
      [ATTR_GEN_AI_PROVIDER_NAME]: GEN_AI_PROVIDER_NAME_VALUE_OPENAI,
      [ATTR_GEN_AI_REQUEST_MODEL]: 'gpt-4o',
      [ATTR_GEN_AI_REQUEST_STREAM]: true,
      [ATTR_GEN_AI_RESPONSE_MODEL]: 'gpt-4o-2024-08-06',
      [ATTR_GEN_AI_RESPONSE_ID]: 'chatcmpl-1',
      [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: ['tool_use'],
      [ATTR_SERVER_ADDRESS]: 'api.openai.com',
      [ATTR_SERVER_PORT]: 443,
      ...RUN,
      'awaken.step_index': 0,
      [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: 40,
      [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: 9,
      [ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]: 10,
      [ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS]: 5,
      [ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS]: 3,
      [ATTR_GEN_AI_REQUEST_TEMPERATURE]: 0.2,
      [ATTR_GEN_AI_REQUEST_TOP_P]: 0.9,
      [ATTR_GEN_AI_REQUEST_MAX_TOKENS]: 512,
      [ATTR_GEN_AI_SYSTEM_INSTRUCTIONS]: [{ type: 'text', content: SYSTEM }],
      [ATTR_GEN_AI_INPUT_MESSAGES]: [ASKED],
      [ATTR_GEN_AI_OUTPUT_MESSAGES]: [
        {
          role: 'assistant',
          parts: [{ type: 'reasoning', content: 'Lyon first.' }, { type: 'text', content: 'Looking.' }, ...CALLS],
          finish_reason: 'tool_use',
        },
      ],
    });
    // The model that answered is reported as such, not as a copy of the one asked.
    expect(chat?.attributes[ATTR_GEN_AI_RESPONSE_MODEL]).not.toBe(chat?.attributes[ATTR_GEN_AI_REQUEST_MODEL]);
    expect(chat?.status).toEqual({ code: SpanStatusCode.UNSET, message: '' });

    // The failed inference: error.type, the provider named as its earlier answer was, no provider
    // facts, no finish reason made up from its empty result, nothing answered.
    expect(failed?.kind).toBe(OTLP_KIND.CLIENT);
    expect(readable(failed?.attributes ?? {})).toEqual({
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_CHAT,
      [ATTR_GEN_AI_PROVIDER_NAME]: GEN_AI_PROVIDER_NAME_VALUE_OPENAI,
      [ATTR_GEN_AI_REQUEST_MODEL]: 'gpt-4o',
      [ATTR_GEN_AI_REQUEST_STREAM]: true,
      ...RUN,
      'awaken.step_index': 1,
      [ATTR_ERROR_TYPE]: 'rate_limited',
      [ATTR_GEN_AI_SYSTEM_INSTRUCTIONS]: [{ type: 'text', content: SYSTEM }],
      [ATTR_GEN_AI_INPUT_MESSAGES]: [
        ASKED,
        { role: 'assistant', parts: [{ type: 'text', content: 'Looking.' }, ...CALLS] },
        { role: 'tool', parts: [{ type: 'tool_call_response', id: 'c1', response: '{"city":"Lyon"}' }] },
        { role: 'tool', parts: [{ type: 'tool_call_response', id: 'c2', response: 'no rooms' }] },
      ],
    });
    expect(failed?.attributes).not.toHaveProperty(ATTR_GEN_AI_RESPONSE_FINISH_REASONS);
    expect(failed?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'slow down' });

    const [lookup, book] = ofKind(wire, GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL);
    const tool = {
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
      [ATTR_GEN_AI_TOOL_TYPE]: 'function',
      ...RUN,
      'awaken.step_index': 0,
    };
    expect([lookup?.kind, book?.kind]).toEqual([OTLP_KIND.INTERNAL, OTLP_KIND.INTERNAL]);
    expect(lookup?.attributes).toEqual({
      ...tool,
      [ATTR_GEN_AI_TOOL_NAME]: 'lookup',
      [ATTR_GEN_AI_TOOL_CALL_ID]: 'c1',
      [ATTR_GEN_AI_TOOL_DESCRIPTION]: 'Looks a city up',
      'awaken.tool.status': 'success',
    });
    expect(lookup?.status).toEqual({ code: SpanStatusCode.UNSET, message: '' });
    expect(book?.attributes).toEqual({
      ...tool,
      [ATTR_GEN_AI_TOOL_NAME]: 'book',
      [ATTR_GEN_AI_TOOL_CALL_ID]: 'c2',
      [ATTR_GEN_AI_TOOL_DESCRIPTION]: 'Books a room',
      'awaken.tool.status': 'error',
      [ATTR_ERROR_TYPE]: 'tool_error',
    });
    expect(book?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'no rooms' });

    const [agent] = ofKind(wire, GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT);
    expect(agent?.kind).toBe(OTLP_KIND.INTERNAL);
    expect(agent?.attributes).toEqual({
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
      [ATTR_GEN_AI_PROVIDER_NAME]: GEN_AI_PROVIDER_NAME_VALUE_OPENAI,
      [ATTR_GEN_AI_REQUEST_MODEL]: 'gpt-4o',
      [ATTR_GEN_AI_AGENT_NAME]: 'planner',
      [ATTR_GEN_AI_AGENT_DESCRIPTION]: 'Plans trips',
      ...RUN,
      'awaken.termination': 'error',
      'awaken.segment_index': 0,
      [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: 40,
      [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: 9,
      [ATTR_ERROR_TYPE]: 'run_error',
    });
    expect(agent?.status).toEqual({ code: SpanStatusCode.ERROR, message: JSON.stringify(RUN_ERROR) });
    // One trace: the run's span a root, the others under it.
    expect(agent?.parentSpanId).toBe('');
    for (const s of wire.filter((x) => x !== agent)) expect([s.traceId, s.parentSpanId], s.name).toEqual([agent?.traceId, agent?.spanId]);
  });

  it('each span on the wire is the in-memory exporter’s span of the same run: the same gen_ai.* names, every attribute, kind, status, parent and times', async () => {
    const wire = await overTheWire(protocol);
    const memory = inMemory();
    expect(wire.map((s) => s.spanId)).toEqual(memory.map((s) => s.spanContext().spanId));
    for (const m of memory) {
      const w = wire.find((s) => s.spanId === m.spanContext().spanId);
      // Named first, so that a lost or renamed attribute is reported as such.
      expect(genAiNames(w?.attributes ?? {}), m.name).toEqual(genAiNames(m.attributes));
      expect(w?.attributes, m.name).toEqual(m.attributes);
      expect(
        {
          name: w?.name,
          kind: w?.kind,
          status: w?.status,
          traceId: w?.traceId,
          parent: w?.parentSpanId,
          start: w?.startTimeUnixNano,
          end: w?.endTimeUnixNano,
          links: w?.links.length,
        },
        m.name,
      ).toEqual({
        name: m.name,
        kind: m.kind + 1,
        status: { code: m.status.code, message: m.status.message ?? '' },
        traceId: m.spanContext().traceId,
        parent: m.parentSpanContext?.spanId ?? '',
        start: nanos(m.startTime),
        end: nanos(m.endTime),
        links: m.links.length,
      });
    }
  });
});
