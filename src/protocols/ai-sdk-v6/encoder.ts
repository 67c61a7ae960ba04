import type { AgentEvent } from '../../contract/event.ts';
import type { JsonValue } from '../../contract/json.ts';
import type { TerminationReason } from '../../contract/lifecycle.ts';
import { dispositionOf, scheduleOf, type Schedule, type ToolResult } from '../../contract/tool.ts';
import { runMealy } from '../../core/mealy.ts';
import { passOver, unreachable } from '../../contract/never.ts';

/** The preliminary output that shows a scheduled call waiting, and why, in the stream and in a reloaded chat alike. */
export const scheduledOutput = (message: string | null | undefined, schedule: Schedule): JsonValue => ({ scheduled: message ?? 'scheduled', ...schedule });

/** One chunk of the AI SDK v6 UI message stream (a JSON object with a `type`). */

export type UiChunk = { readonly type: string } & { readonly [key: string]: JsonValue | undefined };

/** Encoder state: a value, so a stream can be snapshotted mid-way (docs/protocols/ai-sdk-v6.md). */
export interface AiSdkState {
  readonly messageId: string;
  /** Id of the open text part, if any. */
  readonly text: string | undefined;
  readonly textCounter: number;
  /** Id of the open reasoning part, if any. */
  readonly reasoning: string | undefined;
  readonly reasoningCounter: number;
  readonly stepOpen: boolean;
  /** Tool calls announced to the client (`tool-input-start` or `-available`), id → tool name. */
  readonly toolCalls: Readonly<Record<string, string>>;
  /** Tool calls whose input is streaming (`tool-input-start` sent, not yet available or settled). */
  readonly inputs: readonly string[];
  /** Accumulated streamed output per tool call (`tool_call_stream_delta`). */
  readonly streamed: Readonly<Record<string, string>>;
  readonly started: boolean;
  readonly finished: boolean;
}

export const initialAiSdkState = (): AiSdkState => ({
  messageId: '',
  text: undefined,
  textCounter: 0,
  reasoning: undefined,
  reasoningCounter: 0,
  stepOpen: false,
  toolCalls: {},
  inputs: [],
  streamed: {},
  started: false,
  finished: false,
});

/**
 * The state a stream of a resumed run starts from: the client holds the run's message (its id is
 * the run id) and these tool calls, so their results update the parts it has, under their names.
 */
export const resumedAiSdkState = (runId: string, calls: readonly { readonly callId: string; readonly name: string }[]): AiSdkState => ({
  ...initialAiSdkState(),
  messageId: runId,
  toolCalls: Object.fromEntries(calls.map((c) => [c.callId, c.name])),
});

/** `finish.finishReason` of a termination. */
export function finishReasonOf(t: TerminationReason): 'stop' | 'tool-calls' | 'error' | 'content-filter' | 'length' {
  switch (t.type) {
    case 'suspended':
      return 'tool-calls';
    case 'error':
      return 'error';
    case 'blocked':
      return 'content-filter';
    case 'stopped':
      return t.value.code === 'max_rounds' || t.value.code === 'token_budget' ? 'length' : 'stop';
    case 'natural_end':
    case 'behavior_requested':
    case 'cancelled':
      return 'stop';
    default:
      return unreachable(t);
  }
}

/** The output a settled tool call shows the client: its data (with metadata, when it has any). */
const outputOf = (r: ToolResult): JsonValue =>
  r.metadata !== undefined && Object.keys(r.metadata).length > 0 ? { data: r.data, metadata: r.metadata } : r.data;

function closeBlocks(s: AiSdkState, out: UiChunk[]): AiSdkState {
  let next = s;
  if (next.text !== undefined) {
    out.push({ type: 'text-end', id: next.text });
    next = { ...next, text: undefined };
  }
  if (next.reasoning !== undefined) {
    out.push({ type: 'reasoning-end', id: next.reasoning });
    next = { ...next, reasoning: undefined };
  }
  return next;
}

/** The call's input is no longer streaming (it is available, or the call is settled). */
const inputDone = (s: AiSdkState, id: string): AiSdkState => (s.inputs.includes(id) ? { ...s, inputs: s.inputs.filter((x) => x !== id) } : s);

/**
 * At the end of a run, every tool input still streaming ends in `tool-input-error`: the client would
 * otherwise show the call's arguments arriving forever.
 */
function closeInputs(s: AiSdkState, out: UiChunk[]): AiSdkState {
  if (s.inputs.length === 0) return s;
  for (const id of s.inputs)
    out.push({
      type: 'tool-input-error',
      toolCallId: id,
      toolName: s.toolCalls[id] ?? 'tool',
      input: null,
      errorText: 'the run ended before the arguments of this call were complete',
    });
  return { ...s, inputs: [] };
}

/** Makes sure the client knows the tool call before an output for it (it rejects unknown ids). */
function ensureToolCall(s: AiSdkState, id: string, name: string, out: UiChunk[]): AiSdkState {
  if (Object.hasOwn(s.toolCalls, id)) return s;
  out.push({ type: 'tool-input-available', toolCallId: id, toolName: name, input: {} });
  return { ...s, toolCalls: { ...s.toolCalls, [id]: name } };
}

function ensureStarted(s: AiSdkState, out: UiChunk[]): AiSdkState {
  if (s.started) return s;
  out.push({ type: 'start' });
  return { ...s, started: true };
}

/**
 * One `AgentEvent` → the UI message stream chunks it becomes (a pure Mealy step). After the
 * terminal chunk nothing is emitted, except that a `run_start` (HITL resume on the same stream)
 * opens a new message.
 */
export function transcodeAiSdk(state: AiSdkState, event: AgentEvent): [AiSdkState, UiChunk[]] {
  const out: UiChunk[] = [];
  let s = state;
  if (s.finished && event.event_type !== 'run_start') return [s, out];
  switch (event.event_type) {
    case 'run_start':
      // A resumed run (same run id, after its suspension) continues the same assistant message: the
      // client still knows its tool calls.
      s = { ...initialAiSdkState(), messageId: event.run_id, started: true, ...(event.run_id === s.messageId ? { toolCalls: s.toolCalls } : {}) };
      out.push({ type: 'start', messageId: event.run_id });
      out.push({ type: 'data-run-info', data: { runId: event.run_id, threadId: event.thread_id } });
      break;
    case 'step_start':
      s = ensureStarted(s, out);
      out.push({ type: 'start-step' });
      s = { ...s, stepOpen: true };
      break;
    case 'step_end':
      s = closeBlocks(s, out);
      if (s.stepOpen) out.push({ type: 'finish-step' });
      s = { ...s, stepOpen: false };
      break;
    case 'text_delta':
      s = ensureStarted(s, out);
      if (event.delta === '') break;
      if (s.reasoning !== undefined) {
        out.push({ type: 'reasoning-end', id: s.reasoning });
        s = { ...s, reasoning: undefined };
      }
      if (s.text === undefined) {
        const id = `txt_${s.textCounter}`;
        out.push({ type: 'text-start', id });
        s = { ...s, text: id, textCounter: s.textCounter + 1 };
      }
      out.push({ type: 'text-delta', id: s.text as string, delta: event.delta });
      break;
    case 'reasoning_delta':
      s = ensureStarted(s, out);
      if (event.delta === '') break;
      if (s.text !== undefined) {
        out.push({ type: 'text-end', id: s.text });
        s = { ...s, text: undefined };
      }
      if (s.reasoning === undefined) {
        const id = `reasoning_${s.reasoningCounter}`;
        out.push({ type: 'reasoning-start', id });
        s = { ...s, reasoning: id, reasoningCounter: s.reasoningCounter + 1 };
      }
      out.push({ type: 'reasoning-delta', id: s.reasoning as string, delta: event.delta });
      break;
    case 'reasoning_encrypted_value':
      out.push({ type: 'data-reasoning-encrypted', data: { encryptedValue: event.encrypted_value }, transient: true });
      break;
    case 'tool_call_start':
      s = closeBlocks(ensureStarted(s, out), out);
      out.push({ type: 'tool-input-start', toolCallId: event.id, toolName: event.name });
      s = { ...s, toolCalls: { ...s.toolCalls, [event.id]: event.name }, inputs: [...s.inputs, event.id] };
      break;
    case 'tool_call_delta':
      if (!Object.hasOwn(s.toolCalls, event.id)) break;
      out.push({ type: 'tool-input-delta', toolCallId: event.id, inputTextDelta: event.args_delta });
      break;
    case 'tool_call_ready':
      s = closeBlocks(ensureStarted(s, out), out);
      out.push({ type: 'tool-input-available', toolCallId: event.id, toolName: event.name, input: event.arguments });
      s = inputDone(s, event.id);
      if (!Object.hasOwn(s.toolCalls, event.id)) s = { ...s, toolCalls: { ...s.toolCalls, [event.id]: event.name } };
      break;
    case 'tool_call_stream_delta': {
      s = ensureToolCall(closeBlocks(ensureStarted(s, out), out), event.id, event.name, out);
      const text = (s.streamed[event.id] ?? '') + event.delta;
      s = { ...s, streamed: { ...s.streamed, [event.id]: text } };
      out.push({ type: 'tool-output-available', toolCallId: event.id, output: text, preliminary: true });
      break;
    }
    case 'tool_call_done': {
      s = inputDone(ensureToolCall(closeBlocks(ensureStarted(s, out), out), event.id, event.result.tool_name, out), event.id);
      const r = event.result;
      const schedule = event.outcome === 'suspended' ? scheduleOf(r.suspension?.suspension) : undefined;
      if (schedule !== undefined) {
        // A scheduled call asks the client nothing: it shows as waiting, and why, until the server wakes it.
        out.push({ type: 'tool-output-available', toolCallId: event.id, output: scheduledOutput(r.message, schedule), preliminary: true });
      } else if (event.outcome === 'suspended' && dispositionOf(r) === 'pending_client') {
        // The client's own tool: `tool-input-available` was the call, `onToolCall` runs it and
        // `addToolOutput` sends its output back with the next request.
      } else if (event.outcome === 'suspended') {
        const id = r.suspension?.suspension.id;
        out.push({ type: 'tool-approval-request', approvalId: id !== undefined && id.trim() !== '' ? id : event.id, toolCallId: event.id });
      } else if (event.outcome === 'failed') {
        out.push({ type: 'tool-output-error', toolCallId: event.id, errorText: r.message ?? 'tool execution error' });
      } else {
        out.push({ type: 'tool-output-available', toolCallId: event.id, output: outputOf(r) });
      }
      break;
    }
    case 'tool_call_resumed': {
      s = ensureToolCall(closeBlocks(ensureStarted(s, out), out), event.target_id, s.toolCalls[event.target_id] ?? 'tool', out);
      const r = event.result;
      const obj = typeof r === 'object' && r !== null && !Array.isArray(r) ? r : undefined;
      if (obj !== undefined && typeof obj['error'] === 'string') out.push({ type: 'tool-output-error', toolCallId: event.target_id, errorText: obj['error'] });
      else if (obj !== undefined && obj['approved'] === false) out.push({ type: 'tool-output-denied', toolCallId: event.target_id });
      else out.push({ type: 'tool-output-available', toolCallId: event.target_id, output: r });
      break;
    }
    case 'messages_snapshot':
      out.push({ type: 'data-messages-snapshot', data: event.messages });
      break;
    case 'activity_snapshot':
      out.push({
        type: 'data-activity-snapshot',
        data: { messageId: event.message_id, activityType: event.activity_type, content: event.content, replace: event.replace ?? null },
      });
      break;
    case 'activity_delta':
      out.push({ type: 'data-activity-delta', data: { messageId: event.message_id, activityType: event.activity_type, patch: event.patch } });
      break;
    case 'inference_complete':
      out.push({ type: 'data-inference-complete', data: { model: event.model, usage: (event.usage ?? null) as JsonValue, durationMs: event.duration_ms } });
      break;
    case 'state_snapshot':
      out.push({ type: 'data-state-snapshot', data: event.snapshot });
      break;
    case 'state_delta':
      out.push({ type: 'data-state-delta', data: event.delta });
      break;
    case 'run_finish':
      s = closeInputs(closeBlocks(ensureStarted(s, out), out), out);
      // A failed run says why: the client shows the error (useChat's `error`), then the stream ends.
      if (event.termination.type === 'error') out.push({ type: 'error', errorText: event.termination.value });
      if (s.stepOpen) out.push({ type: 'finish-step' });
      out.push({ type: 'finish', finishReason: finishReasonOf(event.termination) });
      s = { ...s, stepOpen: false, finished: true };
      break;
    case 'error':
      s = closeInputs(closeBlocks(ensureStarted(s, out), out), out);
      out.push({ type: 'error', errorText: event.message });
      s = { ...s, finished: true };
      break;
    default:
      // An event type this version does not know (a newer instance's frame) is not shown.
      passOver(event);
  }
  return [s, out];
}

/** The chunks that end a stream cut short: close what is open, then one terminal `finish`. */
export function finishAiSdk(state: AiSdkState): UiChunk[] {
  if (state.finished) return [];
  const out: UiChunk[] = [];
  const s = closeInputs(closeBlocks(ensureStarted(state, out), out), out);
  if (s.stepOpen) out.push({ type: 'finish-step' });
  out.push({ type: 'finish', finishReason: 'other' });
  return out;
}

/** Encodes a whole event stream. */
export function encodeAiSdk(events: readonly AgentEvent[]): UiChunk[] {
  return runMealy(initialAiSdkState(), transcodeAiSdk, finishAiSdk, events);
}

/** The response headers of a UI message stream (equal to `ai`'s `UI_MESSAGE_STREAM_HEADERS`). */
export const UI_MESSAGE_STREAM_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-vercel-ai-ui-message-stream': 'v1',
  'x-accel-buffering': 'no',
} as const;

/** SSE framing: `data: <json>\n\n` per chunk, then `data: [DONE]\n\n`. */
export function frameAiSdk(chunks: readonly UiChunk[], options: { readonly done?: boolean } = {}): string {
  let out = '';
  for (const c of chunks) out += `data: ${JSON.stringify(c)}\n\n`;
  if (options.done !== false) out += 'data: [DONE]\n\n';
  return out;
}
