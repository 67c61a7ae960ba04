import fc from 'fast-check';
import type { AgentSpec } from '../contract/agent-spec.ts';
import { AGENT_EVENT_TYPES, type AgentEvent, type AgentEventType } from '../contract/event.ts';
import type { InferenceOverride, ReasoningEffort } from '../contract/inference.ts';
import type { JsonValue } from '../contract/json.ts';
import type { TerminationReason } from '../contract/lifecycle.ts';
import type { ContentBlock, Message, ToolCall } from '../contract/message.ts';
import type { SuspendTicket, ToolCallResume, ToolDescriptor, ToolResult } from '../contract/tool.ts';
import type { TokenUsage } from '../contract/usage.ts';

/**
 * fast-check arbitraries of every contract type, in canonical form (what `parse` returns), for
 * property tests here and downstream. Values are JSON-clean (no `-0`, no `undefined` keys).
 */

const noNegZero = (v: JsonValue): JsonValue => {
  if (typeof v === 'number') return Object.is(v, -0) ? 0 : v;
  if (Array.isArray(v)) return v.map(noNegZero);
  if (v !== null && typeof v === 'object') {
    // fromEntries defines own properties: an own "__proto__" key stays a key (assignment would set the prototype).
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, noNegZero(x)]));
  }
  return v;
};

export const jsonValue = (): fc.Arbitrary<JsonValue> => fc.jsonValue({ maxDepth: 3 }).map((v) => noNegZero(v as JsonValue));
export const jsonObject = (): fc.Arbitrary<{ [k: string]: JsonValue }> => fc.dictionary(fc.string({ maxLength: 8 }), jsonValue(), { maxKeys: 4 });

const str = (): fc.Arbitrary<string> => fc.string({ maxLength: 12 });
// Built once and shared: an arbitrary holds no state, and building one from a regex takes
// milliseconds, which every event type's arbitrary paid for each id it holds.
let idArb: fc.Arbitrary<string> | undefined;
export const id = (): fc.Arbitrary<string> => (idArb ??= fc.stringMatching(/^[a-z0-9_-]{1,10}$/));
const i32 = (): fc.Arbitrary<number> => fc.integer({ min: -2147483648, max: 2147483647 });
const u32 = (): fc.Arbitrary<number> => fc.nat({ max: 4294967295 });

/** `{...}` with the optional fields that `fc.record`'s `requiredKeys` leaves out omitted, never `undefined`. */
const opt = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.option(arb, { nil: undefined });
const compact = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

export const tokenUsage = (): fc.Arbitrary<TokenUsage> =>
  fc
    .record({
      prompt_tokens: opt(i32()),
      completion_tokens: opt(i32()),
      total_tokens: opt(i32()),
      cache_read_tokens: opt(i32()),
      cache_creation_tokens: opt(i32()),
      thinking_tokens: opt(i32()),
    })
    .map(compact) as fc.Arbitrary<TokenUsage>;

export const terminationReason = (): fc.Arbitrary<TerminationReason> =>
  fc.oneof(
    fc.constant<TerminationReason>({ type: 'natural_end' }),
    fc.constant<TerminationReason>({ type: 'behavior_requested' }),
    fc.constant<TerminationReason>({ type: 'cancelled' }),
    fc.constant<TerminationReason>({ type: 'suspended' }),
    str().map((value): TerminationReason => ({ type: 'blocked', value })),
    str().map((value): TerminationReason => ({ type: 'error', value })),
    fc.record({ code: id(), detail: opt(str()) }).map((v): TerminationReason => ({ type: 'stopped', value: compact(v) as { code: string } })),
  );

export const suspendTicket = (): fc.Arbitrary<SuspendTicket> =>
  fc
    .record({
      id: id(),
      action: str(),
      message: opt(fc.string({ minLength: 1, maxLength: 12 })),
      parameters: opt(jsonValue().filter((v) => v !== null)),
      response_schema: opt(jsonValue()),
      pendingId: id(),
      pendingName: id(),
      args: jsonValue(),
      mode: fc.constantFrom('replay_tool_call', 'use_decision_as_tool_result', 'pass_decision_to_tool' as const),
    })
    .map((r) => ({
      suspension: compact({
        id: r.id,
        action: r.action,
        message: r.message,
        parameters: r.parameters,
        response_schema: r.response_schema,
      }) as SuspendTicket['suspension'],
      pending: { id: r.pendingId, name: r.pendingName, arguments: r.args },
      resume_mode: r.mode,
    }));

export const toolResult = (): fc.Arbitrary<ToolResult> =>
  fc
    .record({
      tool_name: id(),
      status: fc.constantFrom('success', 'pending', 'error' as const),
      data: jsonValue(),
      message: fc.option(str(), { nil: null }),
      suspension: opt(suspendTicket()),
      metadata: opt(jsonObject().filter((m) => Object.keys(m).length > 0)),
    })
    .map(compact) as fc.Arbitrary<ToolResult>;

export const toolCallResume = (): fc.Arbitrary<ToolCallResume> =>
  fc
    .record({
      decision_id: str(),
      action: fc.constantFrom('resume', 'cancel' as const),
      result: opt(jsonValue().filter((v) => v !== null)),
      reason: opt(str()),
      updated_at: fc.nat(),
    })
    .map(compact) as fc.Arbitrary<ToolCallResume>;

export const toolCall = (): fc.Arbitrary<ToolCall> => fc.record({ id: id(), name: id(), arguments: jsonValue() });

export const toolDescriptor = (): fc.Arbitrary<ToolDescriptor> =>
  fc.record({ id: id(), name: id(), description: str(), parameters: jsonValue(), category: opt(id()) }).map(compact) as fc.Arbitrary<ToolDescriptor>;

const mediaSource = fc.oneof(
  fc.record({ kind: fc.constant('url' as const), url: str() }),
  fc.record({ kind: fc.constant('base64' as const), media_type: str(), data: str() }),
);

export const contentBlock = (): fc.Arbitrary<ContentBlock> =>
  fc.oneof(
    str().map((text): ContentBlock => ({ type: 'text', text })),
    mediaSource.map((source): ContentBlock => ({ type: 'image', source })),
    fc.record({ source: mediaSource, title: opt(str()) }).map((r): ContentBlock => compact({ type: 'document', ...r }) as ContentBlock),
  );

export const message = (): fc.Arbitrary<Message> =>
  fc
    .record({
      id: opt(id()),
      role: fc.constantFrom('system', 'user', 'assistant', 'tool' as const),
      content: fc.array(contentBlock(), { maxLength: 3 }),
      tool_calls: opt(fc.array(toolCall(), { maxLength: 2 })),
      tool_call_id: opt(id()),
      visibility: opt(fc.constant('internal' as const)),
      metadata: opt(fc.record({ run_id: opt(id()), step_index: opt(fc.nat()) }).map(compact)),
    })
    .map(compact) as fc.Arbitrary<Message>;

export const reasoningEffort = (): fc.Arbitrary<ReasoningEffort> =>
  fc.oneof(
    fc.constantFrom('none', 'low', 'medium', 'high', 'max' as const),
    u32().map((budget) => ({ budget })),
  );

export const inferenceOverride = (): fc.Arbitrary<InferenceOverride> =>
  fc
    .record({
      model: opt(id()),
      fallback_models: opt(fc.array(id(), { maxLength: 2 })),
      temperature: opt(fc.double({ min: 0, max: 2, noNaN: true }).map((x) => (Object.is(x, -0) ? 0 : x))),
      max_tokens: opt(u32()),
      top_p: opt(fc.double({ min: 0, max: 1, noNaN: true }).map((x) => (Object.is(x, -0) ? 0 : x))),
      reasoning_effort: opt(reasoningEffort()),
    })
    .map(compact) as fc.Arbitrary<InferenceOverride>;

export const agentSpec = (): fc.Arbitrary<AgentSpec> =>
  fc
    .record({
      id: id(),
      model: str(),
      system_prompt: str(),
      max_rounds: fc.nat({ max: 100 }),
      max_continuation_retries: fc.nat({ max: 5 }),
      context_policy: opt(
        fc
          .record({
            max_context_tokens: fc.nat(),
            max_output_tokens: fc.nat(),
            min_recent_messages: fc.nat({ max: 50 }),
            enable_prompt_cache: fc.boolean(),
            autocompact_threshold: opt(fc.nat()),
            compaction_mode: fc.constantFrom('keep_recent_raw_suffix', 'compact_to_safe_frontier' as const),
            compaction_raw_suffix_messages: fc.nat({ max: 10 }),
          })
          .map(compact),
      ),
      reasoning_effort: opt(reasoningEffort()),
      plugin_ids: fc.array(id(), { maxLength: 3 }),
      active_hook_filter: fc.uniqueArray(id(), { maxLength: 3 }).map((a) => [...a].sort()),
      allowed_tools: opt(fc.array(id(), { maxLength: 3 })),
      excluded_tools: opt(fc.array(id(), { maxLength: 3 })),
      delegates: fc.array(id(), { maxLength: 2 }),
      sections: jsonObject(),
      registry: opt(id()),
    })
    .map(compact) as fc.Arbitrary<AgentSpec>;

const eventArbs: { [T in AgentEventType]: fc.Arbitrary<Extract<AgentEvent, { event_type: T }>> } = {
  run_start: fc.record({ event_type: fc.constant('run_start' as const), thread_id: id(), run_id: id(), parent_run_id: opt(id()) }).map(compact),
  run_finish: fc
    .record({
      event_type: fc.constant('run_finish' as const),
      thread_id: id(),
      run_id: id(),
      result: opt(jsonValue()),
      termination: terminationReason(),
    })
    .map(compact),
  text_delta: fc.record({ event_type: fc.constant('text_delta' as const), delta: fc.string({ unit: 'grapheme', maxLength: 12 }) }),
  reasoning_delta: fc.record({ event_type: fc.constant('reasoning_delta' as const), delta: str() }),
  tool_call_start: fc.record({ event_type: fc.constant('tool_call_start' as const), id: id(), name: id() }),
  tool_call_delta: fc.record({ event_type: fc.constant('tool_call_delta' as const), id: id(), args_delta: str() }),
  tool_call_ready: fc.record({ event_type: fc.constant('tool_call_ready' as const), id: id(), name: id(), arguments: jsonValue() }),
  tool_call_done: fc
    .record({ id: id(), message_id: id(), result: toolResult(), outcome: fc.constantFrom('succeeded', 'failed', 'suspended' as const) })
    .map((r) => ({ event_type: 'tool_call_done' as const, ...r })),
  tool_call_stream_delta: fc.record({ event_type: fc.constant('tool_call_stream_delta' as const), id: id(), name: id(), delta: str() }),
  reasoning_encrypted_value: fc.record({ event_type: fc.constant('reasoning_encrypted_value' as const), encrypted_value: str() }),
  messages_snapshot: fc.record({ event_type: fc.constant('messages_snapshot' as const), messages: fc.array(jsonValue(), { maxLength: 3 }) }),
  activity_snapshot: fc
    .record({
      event_type: fc.constant('activity_snapshot' as const),
      message_id: id(),
      activity_type: id(),
      content: jsonValue(),
      replace: opt(fc.boolean()),
    })
    .map(compact),
  activity_delta: fc.record({
    event_type: fc.constant('activity_delta' as const),
    message_id: id(),
    activity_type: id(),
    patch: fc.array(jsonValue(), { maxLength: 3 }),
  }),
  tool_call_resumed: fc.record({ event_type: fc.constant('tool_call_resumed' as const), target_id: id(), result: jsonValue() }),
  step_start: fc.record({ event_type: fc.constant('step_start' as const), message_id: id() }),
  step_end: fc.constant({ event_type: 'step_end' as const }),
  inference_complete: fc
    .record({ event_type: fc.constant('inference_complete' as const), model: id(), usage: opt(tokenUsage()), duration_ms: fc.nat() })
    .map(compact),
  state_snapshot: fc.record({ event_type: fc.constant('state_snapshot' as const), snapshot: jsonValue() }),
  state_delta: fc.record({ event_type: fc.constant('state_delta' as const), delta: fc.array(jsonValue(), { maxLength: 3 }) }),
  error: fc.record({ event_type: fc.constant('error' as const), message: str(), code: opt(id()) }).map(compact),
};

/** One arbitrary per `AgentEvent` variant, keyed by `event_type`. */
export const agentEventOf = <T extends AgentEventType>(type: T): fc.Arbitrary<Extract<AgentEvent, { event_type: T }>> =>
  eventArbs[type] as fc.Arbitrary<Extract<AgentEvent, { event_type: T }>>;

export const agentEvent = (): fc.Arbitrary<AgentEvent> => fc.oneof(...AGENT_EVENT_TYPES.map((t) => eventArbs[t] as fc.Arbitrary<AgentEvent>));
