import { z } from 'zod';
import { JsonValueSchema, type JsonValue } from './json.ts';
import { TerminationReasonSchema, type TerminationReason } from './lifecycle.ts';
import { ToolCallOutcomeSchema, ToolResultSchema, type SuspendTicket, type ToolCallOutcome, type ToolResult } from './tool.ts';
import { TokenUsageSchema, type TokenUsage } from './usage.ts';

const U64 = z.number().int().nonnegative();

/**
 * Every variant of the book's 事件 section, tagged by `event_type`, fields in the book's order.
 * 0.6 additions (`identity`, `tool_call_cancel`, `stream_reset`) are not part of this contract.
 */
export const AgentEventSchema = z.discriminatedUnion('event_type', [
  z.object({
    event_type: z.literal('run_start'),
    thread_id: z.string(),
    run_id: z.string(),
    parent_run_id: z.string().optional(),
  }),
  z.object({
    event_type: z.literal('run_finish'),
    thread_id: z.string(),
    run_id: z.string(),
    result: JsonValueSchema.optional(),
    termination: TerminationReasonSchema,
  }),
  z.object({ event_type: z.literal('text_delta'), delta: z.string() }),
  z.object({ event_type: z.literal('reasoning_delta'), delta: z.string() }),
  z.object({ event_type: z.literal('tool_call_start'), id: z.string(), name: z.string() }),
  z.object({ event_type: z.literal('tool_call_delta'), id: z.string(), args_delta: z.string() }),
  z.object({ event_type: z.literal('tool_call_ready'), id: z.string(), name: z.string(), arguments: JsonValueSchema }),
  z.object({
    event_type: z.literal('tool_call_done'),
    id: z.string(),
    message_id: z.string(),
    result: ToolResultSchema,
    outcome: ToolCallOutcomeSchema,
  }),
  z.object({ event_type: z.literal('tool_call_stream_delta'), id: z.string(), name: z.string(), delta: z.string() }),
  z.object({ event_type: z.literal('reasoning_encrypted_value'), encrypted_value: z.string() }),
  z.object({ event_type: z.literal('messages_snapshot'), messages: z.array(JsonValueSchema) }),
  z.object({
    event_type: z.literal('activity_snapshot'),
    message_id: z.string(),
    activity_type: z.string(),
    content: JsonValueSchema,
    replace: z.boolean().optional(),
  }),
  z.object({
    event_type: z.literal('activity_delta'),
    message_id: z.string(),
    activity_type: z.string(),
    patch: z.array(JsonValueSchema),
  }),
  z.object({ event_type: z.literal('tool_call_resumed'), target_id: z.string(), result: JsonValueSchema }),
  z.object({ event_type: z.literal('step_start'), message_id: z.string().default('') }),
  z.object({ event_type: z.literal('step_end') }),
  z.object({
    event_type: z.literal('inference_complete'),
    model: z.string(),
    usage: TokenUsageSchema.optional(),
    duration_ms: U64,
  }),
  z.object({ event_type: z.literal('state_snapshot'), snapshot: JsonValueSchema }),
  z.object({ event_type: z.literal('state_delta'), delta: z.array(JsonValueSchema) }),
  z.object({ event_type: z.literal('error'), message: z.string(), code: z.string().optional() }),
]);

type Schema = z.infer<typeof AgentEventSchema>;
type Fix<E> = E extends { event_type: 'tool_call_done' }
  ? Omit<E, 'result'> & { result: ToolResult; outcome: ToolCallOutcome }
  : E extends { event_type: 'run_finish' }
    ? Omit<E, 'termination'> & { termination: TerminationReason }
    : E;
export type AgentEvent = Fix<Schema>;
export type AgentEventType = AgentEvent['event_type'];
export type AgentEventOf<T extends AgentEventType> = Extract<AgentEvent, { event_type: T }>;

export const AGENT_EVENT_TYPES: readonly AgentEventType[] = AgentEventSchema.options.map((o) => o.shape.event_type.value) as AgentEventType[];

/** `run_finish` and `error` end a stream (0.6 `is_terminal`). */
export const isTerminalEvent = (e: AgentEvent): boolean => e.event_type === 'run_finish' || e.event_type === 'error';

/** `result.response` of a `run_finish`, or `""`. */
export function extractResponse(result: JsonValue | undefined): string {
  if (typeof result === 'object' && result !== null && !Array.isArray(result)) {
    const r = result['response'];
    if (typeof r === 'string') return r;
  }
  return '';
}

export const parseAgentEvent = (value: unknown): AgentEvent => AgentEventSchema.parse(value) as AgentEvent;

// ---- canonical serialisation -------------------------------------------------------------------
// Hand-written for the hot path (one call per streamed delta); spec/contract/event.spec.ts proves it
// byte-identical to `JSON.stringify(AgentEventSchema.parse(e))` for every variant.

const s = JSON.stringify as (v: unknown) => string;

function usage(u: TokenUsage): string {
  let out = '';
  const add = (k: string, v: number | undefined): void => {
    if (v !== undefined) out += `${out === '' ? '' : ','}"${k}":${s(v)}`;
  };
  add('prompt_tokens', u.prompt_tokens);
  add('completion_tokens', u.completion_tokens);
  add('total_tokens', u.total_tokens);
  add('cache_read_tokens', u.cache_read_tokens);
  add('cache_creation_tokens', u.cache_creation_tokens);
  add('thinking_tokens', u.thinking_tokens);
  return `{${out}}`;
}

function termination(t: TerminationReason): string {
  switch (t.type) {
    case 'natural_end':
    case 'behavior_requested':
    case 'cancelled':
    case 'suspended':
      return `{"type":"${t.type}"}`;
    case 'blocked':
    case 'error':
      return `{"type":"${t.type}","value":${s(t.value)}}`;
    case 'stopped':
      return `{"type":"stopped","value":{"code":${s(t.value.code)}${t.value.detail !== undefined ? `,"detail":${s(t.value.detail)}` : ''}}}`;
    default:
      return unreachable(t);
  }
}

function ticket(t: SuspendTicket): string {
  const su = t.suspension;
  let out = `{"suspension":{"id":${s(su.id)},"action":${s(su.action)}`;
  if (su.message !== undefined && su.message !== '') out += `,"message":${s(su.message)}`;
  if (su.parameters !== undefined && su.parameters !== null) out += `,"parameters":${s(su.parameters)}`;
  if (su.response_schema !== undefined) out += `,"response_schema":${s(su.response_schema)}`;
  const p = t.pending;
  out += `},"pending":{"id":${s(p.id)},"name":${s(p.name)},"arguments":${s(p.arguments)}},"resume_mode":"${t.resume_mode}"}`;
  return out;
}

/** Canonical wire text of a `ToolResult`. */
export function serialiseToolResult(r: ToolResult): string {
  let out = `{"tool_name":${s(r.tool_name)},"status":"${r.status}","data":${s(r.data)},"message":${r.message == null ? 'null' : s(r.message)}`;
  if (r.suspension !== undefined) out += `,"suspension":${ticket(r.suspension)}`;
  if (r.metadata !== undefined && Object.keys(r.metadata).length > 0) out += `,"metadata":${s(r.metadata)}`;
  return `${out}}`;
}

/** The one function that turns an `AgentEvent` into its exact wire bytes. */
export function serialiseEvent(e: AgentEvent): string {
  switch (e.event_type) {
    case 'run_start':
      return `{"event_type":"run_start","thread_id":${s(e.thread_id)},"run_id":${s(e.run_id)}${
        e.parent_run_id !== undefined ? `,"parent_run_id":${s(e.parent_run_id)}` : ''
      }}`;
    case 'run_finish':
      return `{"event_type":"run_finish","thread_id":${s(e.thread_id)},"run_id":${s(e.run_id)}${
        e.result !== undefined ? `,"result":${s(e.result)}` : ''
      },"termination":${termination(e.termination)}}`;
    case 'text_delta':
    case 'reasoning_delta':
      return `{"event_type":"${e.event_type}","delta":${s(e.delta)}}`;
    case 'tool_call_start':
      return `{"event_type":"tool_call_start","id":${s(e.id)},"name":${s(e.name)}}`;
    case 'tool_call_delta':
      return `{"event_type":"tool_call_delta","id":${s(e.id)},"args_delta":${s(e.args_delta)}}`;
    case 'tool_call_ready':
      return `{"event_type":"tool_call_ready","id":${s(e.id)},"name":${s(e.name)},"arguments":${s(e.arguments)}}`;
    case 'tool_call_done':
      return `{"event_type":"tool_call_done","id":${s(e.id)},"message_id":${s(e.message_id)},"result":${serialiseToolResult(
        e.result,
      )},"outcome":"${e.outcome}"}`;
    case 'tool_call_stream_delta':
      return `{"event_type":"tool_call_stream_delta","id":${s(e.id)},"name":${s(e.name)},"delta":${s(e.delta)}}`;
    case 'reasoning_encrypted_value':
      return `{"event_type":"reasoning_encrypted_value","encrypted_value":${s(e.encrypted_value)}}`;
    case 'messages_snapshot':
      return `{"event_type":"messages_snapshot","messages":${s(e.messages)}}`;
    case 'activity_snapshot':
      return `{"event_type":"activity_snapshot","message_id":${s(e.message_id)},"activity_type":${s(e.activity_type)},"content":${s(
        e.content,
      )}${e.replace !== undefined ? `,"replace":${e.replace}` : ''}}`;
    case 'activity_delta':
      return `{"event_type":"activity_delta","message_id":${s(e.message_id)},"activity_type":${s(e.activity_type)},"patch":${s(e.patch)}}`;
    case 'tool_call_resumed':
      return `{"event_type":"tool_call_resumed","target_id":${s(e.target_id)},"result":${s(e.result)}}`;
    case 'step_start':
      return `{"event_type":"step_start","message_id":${s(e.message_id)}}`;
    case 'step_end':
      return '{"event_type":"step_end"}';
    case 'inference_complete':
      return `{"event_type":"inference_complete","model":${s(e.model)}${
        e.usage !== undefined ? `,"usage":${usage(e.usage)}` : ''
      },"duration_ms":${s(e.duration_ms)}}`;
    case 'state_snapshot':
      return `{"event_type":"state_snapshot","snapshot":${s(e.snapshot)}}`;
    case 'state_delta':
      return `{"event_type":"state_delta","delta":${s(e.delta)}}`;
    case 'error':
      return `{"event_type":"error","message":${s(e.message)}${e.code !== undefined ? `,"code":${s(e.code)}` : ''}}`;
    default:
      return unreachable(e);
  }
}

function unreachable(e: never): never {
  throw new TypeError(`unknown event_type: ${JSON.stringify(e)}`);
}

/** Parses one wire line into an `AgentEvent` (throws `ZodError` or `SyntaxError` on bad input). */
export const deserialiseEvent = (text: string): AgentEvent => parseAgentEvent(JSON.parse(text));
