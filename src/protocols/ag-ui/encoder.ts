// Over 500 lines: AG-UI's transcoder is one switch over every event type, with the state it threads
// (open messages, open calls, interrupts), so that what each event becomes reads in one place.
import { A2UI_SURFACE_ACTIVITY, a2uiSurfaceMessageId } from '../../contract/a2ui.ts';
import type { AgentEvent } from '../../contract/event.ts';
import type { JsonValue } from '../../contract/json.ts';
import { messageText, MessageSchema, type ContentBlock, type Message } from '../../contract/message.ts';
import { CLIENT_TOOL_ACTION, dispositionOf, type ToolResult } from '../../contract/tool.ts';
import type { TokenUsage } from '../../contract/usage.ts';
import { runMealy } from '../../core/mealy.ts';
import { passOver, unreachable } from '../../contract/never.ts';

/** One AG-UI 1.0 event (a JSON object with a SCREAMING_SNAKE `type`, camelCase fields). */
export type AgUiEvent = { readonly type: string } & { readonly [key: string]: JsonValue | undefined };

/** An entry of `RUN_FINISHED.outcome.interrupts`. */
export interface AgUiInterrupt {
  readonly [key: string]: JsonValue;
  readonly id: string;
  readonly reason: string;
  readonly toolCallId: string;
}

interface ToolCallState {
  readonly name: string;
  /** Argument text sent so far (`TOOL_CALL_ARGS`). */
  readonly args: string;
  /** `TOOL_CALL_END` not yet sent. */
  readonly open: boolean;
}

/** Encoder state: a value, so a stream can be snapshotted mid-way (docs/protocols/ag-ui.md). */
export interface AgUiState {
  readonly threadId: string;
  /** The runtime's run id (a resumed run keeps it). */
  readonly runId: string;
  /** The run id the client chose (`RunAgentInput.runId`): `RUN_STARTED` and `RUN_FINISHED` carry it. */
  readonly clientRunId: string | undefined;
  /**
   * The root of the AG-UI state: `extensions` while the snapshots are the runtime's state document
   * (`{revision, extensions}`; the client's state is the state keys, and deltas are rebased onto
   * them), `document` for any other snapshot (sent whole, deltas as they are).
   */
  readonly stateRoot: 'extensions' | 'document';
  /**
   * The state keys the client is shown, when a server answers it: its agent's `client_state` (none
   * when it declares none). Undefined: every key (an encoder outside a server: the judge, a replay).
   */
  readonly shared: readonly string[] | undefined;
  /** Id of the current assistant message: the run id, replaced by each non-empty `step_start.message_id`. */
  readonly messageId: string;
  /** Name of the open step, if any. */
  readonly step: string | undefined;
  /** Steps opened on this stream; never reset, so step names stay unique across a resume. */
  readonly stepCounter: number;
  /** Id of the open text message, if any, and how many were opened on the current message id. */
  readonly text: string | undefined;
  readonly textCounter: number;
  /** Id of the open reasoning message, if any; the last one opened (for encrypted values). */
  readonly reasoning: string | undefined;
  readonly lastReasoning: string | undefined;
  readonly reasoningCounter: number;
  readonly toolCalls: Readonly<Record<string, ToolCallState>>;
  /** Accumulated streamed output per tool call (`tool_call_stream_delta`). */
  readonly streamed: Readonly<Record<string, string>>;
  /** Suspended tool calls not yet settled, in order: the `interrupt` outcome lists them. */
  readonly interrupts: readonly AgUiInterrupt[];
  /**
   * Calls left to the client (`pending_client`), as an interrupt would list them: not interrupts
   * while nothing else waits — the client runs them once the run has finished and sends their
   * results with its next run — but listed with the interrupts when something else does, so one
   * `resume[]` can answer every call the run waits on.
   */
  readonly clientCalls: readonly AgUiInterrupt[];
  /** Calls whose results the client sent as its own `tool` messages: their results are not sent back. */
  readonly held: readonly string[];
  readonly usage: readonly JsonValue[];
  readonly started: boolean;
  readonly finished: boolean;
}

export const initialAgUiState = (): AgUiState => ({
  threadId: '',
  runId: '',
  clientRunId: undefined,
  stateRoot: 'extensions',
  shared: undefined,
  messageId: '',
  step: undefined,
  stepCounter: 0,
  text: undefined,
  textCounter: 0,
  reasoning: undefined,
  lastReasoning: undefined,
  reasoningCounter: 0,
  toolCalls: {},
  streamed: {},
  interrupts: [],
  clientCalls: [],
  held: [],
  usage: [],
  started: false,
  finished: false,
});

/**
 * The state a stream starts from when it answers a request: the run id the client chose, and for a
 * resumed run the tool calls the client already holds (their results join them; no call is
 * announced again, so none is renamed or moved to another message).
 */
export function requestAgUiState(options: {
  readonly clientRunId?: string;
  /** The state keys the client is shown (`AgUiState.shared`). */
  readonly shared?: readonly string[];
  /** The calls whose results the request carried as `tool` messages (`AgUiState.held`). */
  readonly held?: readonly string[];
  readonly resumed?: {
    readonly runId: string;
    readonly calls: readonly {
      readonly callId: string;
      readonly name: string;
      readonly arguments: JsonValue;
      readonly suspension?: { readonly id: string; readonly action: string; readonly message?: string };
    }[];
  };
}): AgUiState {
  const base = initialAgUiState();
  const resumed = options.resumed;
  return {
    ...base,
    ...(options.clientRunId !== undefined ? { clientRunId: options.clientRunId } : {}),
    ...(options.shared !== undefined ? { shared: options.shared } : {}),
    ...(options.held !== undefined ? { held: options.held } : {}),
    ...(resumed !== undefined
      ? {
          runId: resumed.runId,
          toolCalls: Object.fromEntries(resumed.calls.map((c) => [c.callId, { name: c.name, args: JSON.stringify(c.arguments), open: false }])),
          // What the run waited on: those its decisions do not settle still wait when it parks again.
          interrupts: resumed.calls.filter((c) => c.suspension?.action !== CLIENT_TOOL_ACTION).map(waitingInterrupt),
          clientCalls: resumed.calls.filter((c) => c.suspension?.action === CLIENT_TOOL_ACTION).map(waitingInterrupt),
        }
      : {}),
  };
}

/** Whether a snapshot is the runtime's state document `{revision, extensions}`. */
const isStateDocument = (v: JsonValue): v is { readonly revision: number; readonly extensions: { readonly [k: string]: JsonValue } } =>
  isObject(v) && typeof v['revision'] === 'number' && isObject(v['extensions']) && Object.keys(v).every((k) => k === 'revision' || k === 'extensions');

/** A JSON Pointer into the state document, on the `extensions` root; `undefined` outside it. */
function onExtensions(pointer: string): string | undefined {
  if (pointer === '/extensions') return '';
  return pointer.startsWith('/extensions/') ? pointer.slice('/extensions'.length) : undefined;
}

/**
 * A patch on the state document, rebased onto the `extensions` root: operations outside it (the
 * revision) are left out; a whole-document value is replaced by its extensions.
 */
function rebaseDelta(delta: readonly JsonValue[]): JsonValue[] {
  const out: JsonValue[] = [];
  for (const op of delta) {
    if (!isObject(op) || typeof op['path'] !== 'string') continue;
    if (op['path'] === '') {
      const value = op['value'];
      if ((op['op'] === 'replace' || op['op'] === 'add') && value !== undefined && isStateDocument(value)) out.push({ ...op, value: value.extensions });
      continue;
    }
    const path = onExtensions(op['path']);
    if (path === undefined) continue;
    const from = typeof op['from'] === 'string' ? onExtensions(op['from']) : null;
    if (from === undefined) continue;
    out.push({ ...op, path, ...(from !== null ? { from } : {}) });
  }
  return out;
}

/** The keys of `state` the client is shown (all of them without a list). */
export function sharedOf(state: { readonly [k: string]: JsonValue }, shared: readonly string[] | undefined): { readonly [k: string]: JsonValue } {
  if (shared === undefined) return state;
  const out: { [k: string]: JsonValue } = {};
  for (const key of shared) if (Object.hasOwn(state, key)) out[key] = state[key] as JsonValue;
  return out;
}

/** The operations of a delta (on the client's root) that touch only keys the client is shown. */
function sharedDelta(delta: readonly JsonValue[], shared: readonly string[] | undefined): JsonValue[] {
  if (shared === undefined) return [...delta];
  const keyOf = (pointer: string): string => (pointer.split('/')[1] ?? '').replaceAll('~1', '/').replaceAll('~0', '~');
  const out: JsonValue[] = [];
  for (const op of delta) {
    if (!isObject(op) || typeof op['path'] !== 'string') continue;
    if (op['path'] === '') {
      if (isObject(op['value'])) out.push({ ...op, value: sharedOf(op['value'], shared) });
      continue;
    }
    const from = op['from'];
    const to = shared.includes(keyOf(op['path']));
    if (typeof from !== 'string') {
      if (to) out.push(op);
      continue;
    }
    // A move or copy between keys: kept whole when both are shown; a move out of a shown key into a
    // hidden one leaves the client without it (a remove); a value from a hidden key is never sent.
    const shown = shared.includes(keyOf(from));
    if (to && shown) out.push(op);
    else if (shown && op['op'] === 'move') out.push({ op: 'remove', path: from });
  }
  return out;
}

/** The `activityType` of a tool's streamed output. */
export const TOOL_STREAM_ACTIVITY = 'tool-stream-output';

const isObject = (v: JsonValue | undefined): v is { readonly [k: string]: JsonValue } => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The content of a settled tool call: its data (with metadata, when it has any), as JSON text. */
const contentOf = (r: ToolResult): string =>
  JSON.stringify(r.metadata !== undefined && Object.keys(r.metadata).length > 0 ? { data: r.data, metadata: r.metadata } : r.data);

function tokenUsage(model: string, u: TokenUsage): JsonValue {
  const out: Record<string, JsonValue> = { model };
  if (u.prompt_tokens !== undefined) out['inputTokens'] = u.prompt_tokens;
  if (u.completion_tokens !== undefined) out['outputTokens'] = u.completion_tokens;
  if (u.total_tokens !== undefined) out['totalTokens'] = u.total_tokens;
  if (u.thinking_tokens !== undefined) out['reasoningTokens'] = u.thinking_tokens;
  if (u.cache_read_tokens !== undefined) out['cachedInputTokens'] = u.cache_read_tokens;
  if (u.cache_creation_tokens !== undefined) out['cacheWriteInputTokens'] = u.cache_creation_tokens;
  return out;
}

/** A `messages_snapshot` entry as an AG-UI message; entries that are not messages are left out. */
function agUiMessage(value: JsonValue, index: number): JsonValue | undefined {
  const r = MessageSchema.safeParse(value);
  return r.success ? agUiMessageOf(r.data, index) : undefined;
}

/**
 * A stored message as an AG-UI message — what a `messages_snapshot` event is encoded with, and what
 * the server sends a client on `connect` and at the end of a run: a user's images and documents as
 * content parts (what a client sends them as), else the text; an assistant's calls as `toolCalls`.
 * A message without an id (one an event stream carries) is `msg_<index>`.
 */
export function agUiMessageOf(m: Message, index: number): JsonValue {
  const id = m.id ?? `msg_${index}`;
  switch (m.role) {
    case 'tool':
      return { id, role: 'tool', content: messageText(m), toolCallId: m.tool_call_id ?? '' };
    case 'assistant':
      return {
        id,
        role: 'assistant',
        content: messageText(m),
        ...(m.tool_calls !== undefined
          ? { toolCalls: m.tool_calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } })) }
          : {}),
      };
    case 'user':
      return { id, role: 'user', content: m.content.some((b) => b.type !== 'text') ? m.content.map(agUiPart) : messageText(m) };
    case 'system':
      return { id, role: 'system', content: messageText(m) };
    default:
      return unreachable(m.role);
  }
}

/** A content block as an AG-UI 1.0 content part (`{type: text, text}`, or an image or document with its source). */
function agUiPart(b: ContentBlock): JsonValue {
  if (b.type === 'text') return { type: 'text', text: b.text };
  const source = b.source.kind === 'url' ? { type: 'url', value: b.source.url } : { type: 'data', value: b.source.data, mimeType: b.source.media_type };
  return { type: b.type, source };
}

function closeMessages(s: AgUiState, out: AgUiEvent[]): AgUiState {
  let next = s;
  if (next.text !== undefined) {
    out.push({ type: 'TEXT_MESSAGE_END', messageId: next.text });
    next = { ...next, text: undefined };
  }
  if (next.reasoning !== undefined) {
    out.push({ type: 'REASONING_MESSAGE_END', messageId: next.reasoning });
    out.push({ type: 'REASONING_END', messageId: next.reasoning });
    next = { ...next, reasoning: undefined };
  }
  return next;
}

/** Closes everything a terminal event may not leave open: messages, tool calls, the step. */
function closeAll(s: AgUiState, out: AgUiEvent[]): AgUiState {
  let next = closeMessages(s, out);
  let calls = next.toolCalls;
  for (const [id, call] of Object.entries(next.toolCalls)) {
    if (!call.open) continue;
    out.push({ type: 'TOOL_CALL_END', toolCallId: id });
    calls = { ...calls, [id]: { ...call, open: false } };
  }
  next = { ...next, toolCalls: calls };
  if (next.step !== undefined) {
    out.push({ type: 'STEP_FINISHED', stepName: next.step });
    next = { ...next, step: undefined };
  }
  return next;
}

/** Makes sure the client knows a tool call (started and ended) before a result for it. */
function ensureToolCall(s: AgUiState, id: string, name: string, out: AgUiEvent[]): AgUiState {
  const call = s.toolCalls[id];
  if (call !== undefined && !call.open) return s;
  if (call === undefined) out.push({ type: 'TOOL_CALL_START', toolCallId: id, toolCallName: name, parentMessageId: s.messageId });
  out.push({ type: 'TOOL_CALL_END', toolCallId: id });
  return { ...s, toolCalls: { ...s.toolCalls, [id]: { name: call?.name ?? name, args: call?.args ?? '', open: false } } };
}

const withoutInterrupt = (s: AgUiState, toolCallId: string): AgUiState =>
  s.interrupts.some((i) => i.toolCallId === toolCallId) ? { ...s, interrupts: s.interrupts.filter((i) => i.toolCallId !== toolCallId) } : s;

function interruptOf(callId: string, r: ToolResult): AgUiInterrupt {
  const ticket = r.suspension;
  const su = ticket?.suspension;
  const out: Record<string, JsonValue> = {
    id: su !== undefined && su.id.trim() !== '' ? su.id : callId,
    reason: su !== undefined && su.action.trim() !== '' ? su.action : 'tool_approval',
    toolCallId: callId,
  };
  if (su?.message !== undefined) out['message'] = su.message;
  if (isObject(su?.response_schema)) out['responseSchema'] = su.response_schema;
  if (ticket !== undefined) {
    const pending: Record<string, JsonValue> = { name: ticket.pending.name, arguments: ticket.pending.arguments };
    out['metadata'] = {
      pendingTool: pending,
      resumeMode: ticket.resume_mode,
      ...(su?.parameters !== undefined ? { parameters: su.parameters } : {}),
    };
  }
  return out as AgUiInterrupt;
}

/** A call a parked run waits on, as `interruptOf` made it when the call suspended (without what only its ticket had). */
export function waitingInterrupt(c: {
  readonly callId: string;
  readonly name: string;
  readonly arguments: JsonValue;
  readonly suspension?: { readonly id: string; readonly action: string; readonly message?: string };
}): AgUiInterrupt {
  const su = c.suspension;
  return {
    id: su !== undefined && su.id.trim() !== '' ? su.id : c.callId,
    reason: su !== undefined && su.action.trim() !== '' ? su.action : 'tool_approval',
    toolCallId: c.callId,
    ...(su?.message !== undefined ? { message: su.message } : {}),
    metadata: { pendingTool: { name: c.name, arguments: c.arguments } },
  };
}

function runFinished(s: AgUiState, outcome: JsonValue, result: JsonValue | undefined): AgUiEvent {
  return {
    type: 'RUN_FINISHED',
    threadId: s.threadId,
    runId: s.clientRunId ?? s.runId,
    // The official encoder drops optional nulls; an absent result says the same.
    ...(result !== undefined && result !== null ? { result } : {}),
    outcome,
    ...(s.usage.length > 0 ? { usage: [...s.usage] } : {}),
  };
}

function runError(s: AgUiState, message: string, code: string | undefined): AgUiEvent {
  return { type: 'RUN_ERROR', message, ...(code !== undefined ? { code } : {}), ...(s.usage.length > 0 ? { usage: [...s.usage] } : {}) };
}

/**
 * One `AgentEvent` → the AG-UI events it becomes (a pure Mealy step). After the terminal event
 * (`RUN_FINISHED` or `RUN_ERROR`) nothing is emitted, except that a `run_start` (HITL resume on the
 * same stream) opens a new run.
 */
export function transcodeAgUi(state: AgUiState, event: AgentEvent): [AgUiState, AgUiEvent[]] {
  const out: AgUiEvent[] = [];
  let s = state;
  if ((s.finished || !s.started) && event.event_type !== 'run_start') {
    // Nothing is sent outside a run: the first event of an AG-UI stream must be RUN_STARTED.
    return [s, out];
  }
  switch (event.event_type) {
    case 'run_start':
      s = {
        ...initialAgUiState(),
        threadId: event.thread_id,
        runId: event.run_id,
        clientRunId: s.clientRunId,
        stateRoot: s.stateRoot,
        shared: s.shared,
        messageId: event.run_id,
        stepCounter: s.stepCounter,
        // A resumed run on the same stream: the client still knows its tool calls, and what they wait on.
        ...(event.run_id === s.runId ? { toolCalls: s.toolCalls, interrupts: s.interrupts, clientCalls: s.clientCalls } : {}),
        held: s.held,
        started: true,
      };
      out.push({
        type: 'RUN_STARTED',
        threadId: event.thread_id,
        runId: s.clientRunId ?? event.run_id,
        ...(event.parent_run_id !== undefined ? { parentRunId: event.parent_run_id } : {}),
      });
      break;
    case 'step_start': {
      s = closeMessages(s, out);
      if (s.step !== undefined) out.push({ type: 'STEP_FINISHED', stepName: s.step });
      const n = s.stepCounter + 1;
      const messageId = event.message_id !== '' ? event.message_id : s.messageId;
      s = { ...s, step: `step_${n}`, stepCounter: n, ...(messageId !== s.messageId ? { messageId, textCounter: 0, reasoningCounter: 0 } : {}) };
      out.push({ type: 'STEP_STARTED', stepName: `step_${n}` });
      break;
    }
    case 'step_end':
      s = closeMessages(s, out);
      if (s.step !== undefined) out.push({ type: 'STEP_FINISHED', stepName: s.step });
      s = { ...s, step: undefined };
      break;
    case 'text_delta':
      if (event.delta === '') break;
      if (s.reasoning !== undefined) s = closeMessages(s, out);
      if (s.text === undefined) {
        // The first text of a message carries the message id, so tool calls parented to it join it.
        const id = s.textCounter === 0 ? s.messageId : `${s.messageId}:text:${s.textCounter}`;
        out.push({ type: 'TEXT_MESSAGE_START', messageId: id, role: 'assistant' });
        s = { ...s, text: id, textCounter: s.textCounter + 1 };
      }
      out.push({ type: 'TEXT_MESSAGE_CONTENT', messageId: s.text as string, delta: event.delta });
      break;
    case 'reasoning_delta':
      if (event.delta === '') break;
      if (s.text !== undefined) s = closeMessages(s, out);
      if (s.reasoning === undefined) {
        // Reasoning is its own message, on an id distinct from the text's.
        const id = `${s.messageId}:reasoning:${s.reasoningCounter}`;
        out.push({ type: 'REASONING_START', messageId: id });
        out.push({ type: 'REASONING_MESSAGE_START', messageId: id, role: 'reasoning' });
        s = { ...s, reasoning: id, lastReasoning: id, reasoningCounter: s.reasoningCounter + 1 };
      }
      out.push({ type: 'REASONING_MESSAGE_CONTENT', messageId: s.reasoning as string, delta: event.delta });
      break;
    case 'reasoning_encrypted_value':
      out.push({
        type: 'REASONING_ENCRYPTED_VALUE',
        subtype: 'message',
        entityId: s.reasoning ?? s.lastReasoning ?? s.messageId,
        encryptedValue: event.encrypted_value,
      });
      break;
    case 'tool_call_start':
      s = closeMessages(s, out);
      if (s.toolCalls[event.id] !== undefined) break;
      out.push({ type: 'TOOL_CALL_START', toolCallId: event.id, toolCallName: event.name, parentMessageId: s.messageId });
      s = { ...s, toolCalls: { ...s.toolCalls, [event.id]: { name: event.name, args: '', open: true } } };
      break;
    case 'tool_call_delta': {
      const call = s.toolCalls[event.id];
      if (call === undefined || !call.open || event.args_delta === '') break;
      out.push({ type: 'TOOL_CALL_ARGS', toolCallId: event.id, delta: event.args_delta });
      s = { ...s, toolCalls: { ...s.toolCalls, [event.id]: { ...call, args: call.args + event.args_delta } } };
      break;
    }
    case 'tool_call_ready': {
      s = closeMessages(s, out);
      const call = s.toolCalls[event.id];
      if (call !== undefined && !call.open) break;
      if (call === undefined) out.push({ type: 'TOOL_CALL_START', toolCallId: event.id, toolCallName: event.name, parentMessageId: s.messageId });
      // Arguments that were not streamed are sent whole, so the client's tool call carries them.
      if ((call?.args ?? '') === '') out.push({ type: 'TOOL_CALL_ARGS', toolCallId: event.id, delta: JSON.stringify(event.arguments) });
      out.push({ type: 'TOOL_CALL_END', toolCallId: event.id });
      s = { ...s, toolCalls: { ...s.toolCalls, [event.id]: { name: event.name, args: call?.args || JSON.stringify(event.arguments), open: false } } };
      break;
    }
    case 'tool_call_stream_delta': {
      s = closeMessages(s, out);
      const before = s.streamed[event.id];
      const text = (before ?? '') + event.delta;
      const messageId = `activity:${event.id}`;
      if (before === undefined) {
        out.push({
          type: 'ACTIVITY_SNAPSHOT',
          messageId,
          activityType: TOOL_STREAM_ACTIVITY,
          content: { toolCallId: event.id, toolName: event.name, output: text },
        });
      } else {
        out.push({ type: 'ACTIVITY_DELTA', messageId, activityType: TOOL_STREAM_ACTIVITY, patch: [{ op: 'replace', path: '/output', value: text }] });
      }
      s = { ...s, streamed: { ...s.streamed, [event.id]: text } };
      break;
    }
    case 'tool_call_done': {
      s = closeMessages(s, out);
      const r = event.result;
      if (event.outcome === 'suspended' && dispositionOf(r) === 'pending_client') {
        // The client runs it after RUN_FINISHED (its own tool, announced by TOOL_CALL_START…END): no result, no interrupt.
        s = withoutInterrupt(ensureToolCall(s, event.id, r.tool_name, out), event.id);
        s = { ...s, clientCalls: [...s.clientCalls, interruptOf(event.id, r)] };
        break;
      }
      if (event.outcome === 'suspended') {
        const rest = withoutInterrupt(ensureToolCall(s, event.id, r.tool_name, out), event.id);
        s = { ...rest, interrupts: [...rest.interrupts, interruptOf(event.id, r)] };
        break;
      }
      s = withoutInterrupt(ensureToolCall(s, event.id, r.tool_name, out), event.id);
      out.push({
        type: 'TOOL_CALL_RESULT',
        // One id per call: the event's `message_id` is its assistant message's, which every call of a
        // batch shares, and a client keeps messages by id.
        messageId: `result:${event.id}`,
        toolCallId: event.id,
        content: event.outcome === 'failed' ? (r.message ?? 'tool execution error') : contentOf(r),
        role: 'tool',
      });
      break;
    }
    case 'tool_call_resumed': {
      s = closeMessages(s, out);
      s = withoutInterrupt(ensureToolCall(s, event.target_id, s.toolCalls[event.target_id]?.name ?? 'tool', out), event.target_id);
      const own = s.clientCalls.some((c) => c.toolCallId === event.target_id);
      s = { ...s, clientCalls: s.clientCalls.filter((c) => c.toolCallId !== event.target_id) };
      // The result of the client's own call that it sent as a `tool` message is among its messages
      // already (an approval answered so still gets the result its tool made).
      if (own && s.held.includes(event.target_id)) break;
      out.push({
        type: 'TOOL_CALL_RESULT',
        messageId: `result:${event.target_id}`,
        toolCallId: event.target_id,
        content: JSON.stringify(event.result),
        role: 'tool',
      });
      break;
    }
    case 'messages_snapshot': {
      const messages: JsonValue[] = [];
      event.messages.forEach((m, i) => {
        const converted = agUiMessage(m, i);
        if (converted !== undefined) messages.push(converted);
      });
      out.push({ type: 'MESSAGES_SNAPSHOT', messages });
      break;
    }
    case 'activity_snapshot':
      out.push({
        type: 'ACTIVITY_SNAPSHOT',
        // A call's A2UI surface under the id `@ag-ui/a2ui-middleware` gives it (one message per call, not two).
        messageId: event.activity_type === A2UI_SURFACE_ACTIVITY ? a2uiSurfaceMessageId(event.message_id) : event.message_id,
        activityType: event.activity_type,
        content: isObject(event.content) ? event.content : { value: event.content },
        ...(event.replace !== undefined ? { replace: event.replace } : {}),
      });
      break;
    case 'activity_delta':
      out.push({ type: 'ACTIVITY_DELTA', messageId: event.message_id, activityType: event.activity_type, patch: event.patch });
      break;
    case 'inference_complete':
      if (event.usage !== undefined) s = { ...s, usage: [...s.usage, tokenUsage(event.model, event.usage)] };
      break;
    case 'state_snapshot': {
      // One root for the snapshot and every delta after it (the client patches what it was sent).
      const snapshot = event.snapshot;
      const doc = isStateDocument(snapshot);
      s = { ...s, stateRoot: doc ? 'extensions' : 'document' };
      out.push({ type: 'STATE_SNAPSHOT', snapshot: doc ? sharedOf(snapshot.extensions, s.shared) : snapshot });
      break;
    }
    case 'state_delta': {
      const delta = s.stateRoot === 'extensions' ? sharedDelta(rebaseDelta(event.delta), s.shared) : event.delta;
      if (delta.length > 0) out.push({ type: 'STATE_DELTA', delta });
      break;
    }
    case 'run_finish': {
      s = closeAll(s, out);
      const t = event.termination;
      if (t.type === 'error') out.push(runError(s, t.value, undefined));
      else if (t.type === 'cancelled') out.push(runFinished(s, { type: 'cancelled' }, event.result));
      else if (t.type === 'suspended' && s.interrupts.length === 0 && s.clientCalls.length > 0) out.push(runFinished(s, { type: 'success' }, event.result));
      else if (t.type === 'suspended') {
        // The outcome needs at least one interrupt; a suspension without a ticket is the run's own.
        const interrupts = s.interrupts.length > 0 ? [...s.interrupts, ...s.clientCalls] : [{ id: event.run_id, reason: 'suspended' }];
        out.push(runFinished(s, { type: 'interrupt', interrupts }, event.result));
      } else out.push(runFinished(s, { type: 'success' }, event.result));
      s = { ...s, finished: true };
      break;
    }
    case 'error':
      s = closeAll(s, out);
      out.push(runError(s, event.message, event.code));
      s = { ...s, finished: true };
      break;
    default:
      // An event type this version does not know (a newer instance's frame) is not shown.
      passOver(event);
  }
  return [s, out];
}

/** The events that end a stream cut short: close what is open, then one `RUN_ERROR`. */
export function finishAgUi(state: AgUiState): AgUiEvent[] {
  if (state.finished || !state.started) return [];
  const out: AgUiEvent[] = [];
  const s = closeAll(state, out);
  out.push(runError(s, 'the event stream ended before the run finished', 'incomplete_stream'));
  return out;
}

/** Encodes a whole event stream. */
export function encodeAgUi(events: readonly AgentEvent[]): AgUiEvent[] {
  return runMealy(initialAgUiState(), transcodeAgUi, finishAgUi, events);
}

/** The response headers of an AG-UI event stream. */
export const AG_UI_STREAM_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
} as const;

/** SSE framing: `data: <json>\n\n` per event, LF only (the official client does not split on CRLF). */
export function frameAgUi(events: readonly AgUiEvent[]): string {
  let out = '';
  for (const e of events) out += `data: ${JSON.stringify(e)}\n\n`;
  return out;
}
