import { progressText, toolProgressOf } from '../../contract/progress.ts';
import type { AgentEvent } from '../../contract/event.ts';
import type { JsonValue } from '../../contract/json.ts';
import type { TerminationReason } from '../../contract/lifecycle.ts';
import { scheduleOf, type ToolResult } from '../../contract/tool.ts';
import { runMealy } from '../../core/mealy.ts';
import { passOver, unreachable } from '../../contract/never.ts';
import { runResumedOf, runResumedText } from '../resumed.ts';

/**
 * ACP v1: one `session/prompt` turn. While the run streams the agent sends `session/update`
 * notifications; a suspended tool call becomes a `session/request_permission` request; the turn
 * ends with the prompt's response, `{stopReason}` (docs/protocols/acp.md).
 */
export type AcpMessage =
  | { readonly kind: 'update'; readonly update: { readonly [key: string]: JsonValue } }
  | { readonly kind: 'permission'; readonly id: string; readonly params: { readonly [key: string]: JsonValue } }
  | { readonly kind: 'response'; readonly result: { readonly stopReason: AcpStopReason } }
  | { readonly kind: 'error'; readonly error: { readonly code: number; readonly message: string } };

export type AcpStopReason = 'end_turn' | 'max_tokens' | 'max_turn_requests' | 'refusal' | 'cancelled';

export interface AcpState {
  /** Tool calls the client was told of (`tool_call`), id → title. */
  readonly toolCalls: Readonly<Record<string, string>>;
  readonly streamed: Readonly<Record<string, string>>;
  /** Calls whose title shows their progress now (it is set back when they end). */
  readonly progressing: Readonly<Record<string, true>>;
  readonly permissions: number;
  /** The last run ended suspended: a resumed run continues the same turn. */
  readonly suspended: boolean;
  readonly finished: boolean;
}

export const initialAcpState = (): AcpState => ({
  toolCalls: {},
  streamed: {},
  progressing: {},
  permissions: 0,
  suspended: false,
  finished: false,
});

/** The stop reason of a termination; `undefined` for an error (the prompt answers with an error). */
export function stopReasonOf(t: TerminationReason): AcpStopReason | undefined {
  switch (t.type) {
    case 'natural_end':
    case 'behavior_requested':
    case 'suspended':
      return 'end_turn';
    case 'cancelled':
      return 'cancelled';
    case 'blocked':
      return 'refusal';
    case 'error':
      return undefined;
    case 'stopped':
      return t.value.code === 'max_rounds' ? 'max_turn_requests' : t.value.code === 'token_budget' ? 'max_tokens' : 'end_turn';
    default:
      return unreachable(t);
  }
}

const text = (t: string): JsonValue => [{ type: 'content', content: { type: 'text', text: t } }];

const outputText = (r: ToolResult): string =>
  JSON.stringify(r.metadata !== undefined && Object.keys(r.metadata).length > 0 ? { data: r.data, metadata: r.metadata } : r.data);

/** Internal error: the code JSON-RPC gives a request that failed inside the server. */
export const ACP_INTERNAL_ERROR = -32603;

function announce(s: AcpState, id: string, title: string, out: AcpMessage[], rawInput?: JsonValue): AcpState {
  if (Object.hasOwn(s.toolCalls, id)) return s;
  out.push({
    kind: 'update',
    update: { sessionUpdate: 'tool_call', toolCallId: id, title, kind: 'other', status: 'pending', ...(rawInput !== undefined ? { rawInput } : {}) },
  });
  return { ...s, toolCalls: { ...s.toolCalls, [id]: title } };
}

/**
 * One `AgentEvent` → the ACP messages it becomes (a pure Mealy step). A suspended run does not end
 * the turn: its resumed run (a new `run_start`) continues it. Any other terminal ends it, and after
 * that nothing is sent.
 */
export function transcodeAcp(state: AcpState, event: AgentEvent): [AcpState, AcpMessage[]] {
  const out: AcpMessage[] = [];
  let s = state;
  if (s.finished) return [s, out];
  switch (event.event_type) {
    case 'run_start':
      s = { ...s, suspended: false };
      break;
    case 'text_delta':
      if (event.delta !== '') out.push({ kind: 'update', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: event.delta } } });
      break;
    case 'reasoning_delta':
      if (event.delta !== '') out.push({ kind: 'update', update: { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: event.delta } } });
      break;
    case 'tool_call_start':
      s = announce(s, event.id, event.name, out);
      break;
    case 'tool_call_ready':
      if (Object.hasOwn(s.toolCalls, event.id))
        out.push({ kind: 'update', update: { sessionUpdate: 'tool_call_update', toolCallId: event.id, rawInput: event.arguments } });
      else s = announce(s, event.id, event.name, out, event.arguments);
      break;
    case 'tool_call_stream_delta': {
      s = announce(s, event.id, event.name, out);
      const all = (s.streamed[event.id] ?? '') + event.delta;
      s = { ...s, streamed: { ...s.streamed, [event.id]: all } };
      out.push({ kind: 'update', update: { sessionUpdate: 'tool_call_update', toolCallId: event.id, status: 'in_progress', content: text(all) } });
      break;
    }
    case 'activity_snapshot': {
      // A run taken up again after its process stopped: ACP has no update for a run's own news that
      // every client takes (a notice needs a capability this encoder does not know the client has),
      // so the agent says it as a thought, a paragraph of its own ahead of the reasoning that follows.
      const r = runResumedOf(event);
      if (r !== undefined) {
        out.push({ kind: 'update', update: { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: `${runResumedText(r)}\n\n` } } });
        break;
      }
      // A tool's progress (book: 上报 Tool 进度): the call's title says how far it is while it runs.
      const p = toolProgressOf(event);
      if (p === undefined) break;
      s = announce(s, p.call_id, p.tool_name, out);
      out.push({
        kind: 'update',
        update: {
          sessionUpdate: 'tool_call_update',
          toolCallId: p.call_id,
          status: 'in_progress',
          title: `${s.toolCalls[p.call_id] ?? p.tool_name}: ${progressText(p)}`,
        },
      });
      s = { ...s, progressing: { ...s.progressing, [p.call_id]: true } };
      break;
    }
    case 'tool_call_done': {
      const r = event.result;
      s = announce(s, event.id, r.tool_name, out);
      // The title back to the call's own, when progress had changed it.
      const title = Object.hasOwn(s.progressing, event.id) && event.outcome !== 'suspended' ? { title: s.toolCalls[event.id] ?? r.tool_name } : {};
      const schedule = event.outcome === 'suspended' ? scheduleOf(r.suspension?.suspension) : undefined;
      if (schedule !== undefined) {
        // A scheduled call asks nothing: it shows as pending, saying until when, and the turn goes on when it wakes.
        out.push({
          kind: 'update',
          update: { sessionUpdate: 'tool_call_update', toolCallId: event.id, status: 'pending', content: text(r.message ?? 'scheduled') },
        });
      } else if (event.outcome === 'suspended') {
        const su = r.suspension?.suspension;
        const id = `permission-${s.permissions}`;
        out.push({
          kind: 'permission',
          id,
          params: {
            toolCall: {
              toolCallId: event.id,
              title: su?.message ?? s.toolCalls[event.id] ?? r.tool_name,
              status: 'pending',
              ...(r.suspension !== undefined ? { rawInput: r.suspension.pending.arguments } : {}),
            },
            options: [
              { optionId: 'approve', name: 'Allow', kind: 'allow_once' },
              { optionId: 'deny', name: 'Reject', kind: 'reject_once' },
            ],
          },
        });
        s = { ...s, permissions: s.permissions + 1 };
      } else if (event.outcome === 'failed') {
        out.push({
          kind: 'update',
          update: { sessionUpdate: 'tool_call_update', toolCallId: event.id, status: 'failed', ...title, content: text(r.message ?? 'tool execution error') },
        });
      } else {
        out.push({
          kind: 'update',
          update: { sessionUpdate: 'tool_call_update', toolCallId: event.id, status: 'completed', ...title, rawOutput: r.data, content: text(outputText(r)) },
        });
      }
      break;
    }
    case 'tool_call_resumed': {
      const r = event.result;
      const obj = typeof r === 'object' && r !== null && !Array.isArray(r) ? r : undefined;
      const failed = (obj !== undefined && typeof obj['error'] === 'string') || obj?.['approved'] === false;
      out.push({
        kind: 'update',
        update: {
          sessionUpdate: 'tool_call_update',
          toolCallId: event.target_id,
          status: failed ? 'failed' : 'completed',
          rawOutput: r,
          content: text(JSON.stringify(r)),
        },
      });
      break;
    }
    case 'run_finish': {
      if (event.termination.type === 'suspended') {
        // The turn goes on when the run resumes on the same stream.
        s = { ...s, suspended: true };
        break;
      }
      const stopReason = stopReasonOf(event.termination);
      if (stopReason === undefined)
        out.push({
          kind: 'error',
          error: { code: ACP_INTERNAL_ERROR, message: event.termination.type === 'error' ? event.termination.value : 'agent run failed' },
        });
      else out.push({ kind: 'response', result: { stopReason } });
      s = { ...s, finished: true };
      break;
    }
    case 'error':
      out.push({ kind: 'error', error: { code: ACP_INTERNAL_ERROR, message: event.message } });
      s = { ...s, finished: true };
      break;
    case 'tool_call_delta':
    case 'reasoning_encrypted_value':
    case 'messages_snapshot':
    case 'activity_delta':
    case 'step_start':
    case 'step_end':
    case 'inference_complete':
    case 'state_snapshot':
    case 'state_delta':
      break;
    default:
      // An event type this version does not know (a newer instance's frame) is not shown.
      passOver(event);
  }
  return [s, out];
}

/**
 * The end of a turn whose events stopped: a run left suspended ends the turn (`end_turn`); a run
 * cut short is an internal error.
 */
export function finishAcp(state: AcpState): AcpMessage[] {
  if (state.finished) return [];
  if (state.suspended) return [{ kind: 'response', result: { stopReason: 'end_turn' } }];
  return [{ kind: 'error', error: { code: ACP_INTERNAL_ERROR, message: 'the event stream ended before the run finished' } }];
}

export function encodeAcp(events: readonly AgentEvent[]): AcpMessage[] {
  return runMealy(initialAcpState(), transcodeAcp, finishAcp, events);
}

/** NDJSON of the JSON-RPC messages the agent sends for one `session/prompt` with the given request id. */
export function frameAcp(messages: readonly AcpMessage[], sessionId = 'session-1', requestId: number | string = 1): string {
  let out = '';
  for (const m of messages) {
    switch (m.kind) {
      case 'update':
        out += `${JSON.stringify({ jsonrpc: '2.0', method: 'session/update', params: { sessionId, update: m.update } })}\n`;
        break;
      case 'permission':
        out += `${JSON.stringify({ jsonrpc: '2.0', id: m.id, method: 'session/request_permission', params: { sessionId, ...m.params } })}\n`;
        break;
      case 'response':
        out += `${JSON.stringify({ jsonrpc: '2.0', id: requestId, result: m.result })}\n`;
        break;
      case 'error':
        out += `${JSON.stringify({ jsonrpc: '2.0', id: requestId, error: m.error })}\n`;
        break;
      default:
        unreachable(m);
    }
  }
  return out;
}
