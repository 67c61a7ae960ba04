import { toolProgressOf } from '../../contract/progress.ts';
import type { AgentEvent } from '../../contract/event.ts';
import type { JsonValue } from '../../contract/json.ts';
import type { TerminationReason } from '../../contract/lifecycle.ts';
import { dispositionOf, scheduleOf, type Schedule, type ToolDisposition } from '../../contract/tool.ts';
import { runMealy } from '../../core/mealy.ts';
import { passOver, unreachable } from '../../contract/never.ts';
import { runResumedOf, runResumedText } from '../resumed.ts';

const data = (value: JsonValue): JsonValue => ({ data: value, mediaType: 'application/json' });

/**
 * A2A 1.0, `message:stream` (HTTP+JSON binding): one `StreamResponse` per SSE frame. Task id = run
 * id, context id = thread id. The text streams as chunks of one `response` artifact; tool calls and
 * results are agent messages with a data part on `WORKING` status updates, and so are a tool's
 * progress and where a run taken up again went on; the stream ends with the task's terminal or
 * interrupted state (docs/protocols/a2a.md). Every frame is canonical proto3 JSON: default values
 * (`false`, `""`, `[]`) are left out, as the SDK's `toJSON` does.
 */
export type StreamResponse = { readonly [key: string]: JsonValue };

export type TaskState =
  | 'TASK_STATE_SUBMITTED'
  | 'TASK_STATE_WORKING'
  | 'TASK_STATE_INPUT_REQUIRED'
  | 'TASK_STATE_COMPLETED'
  | 'TASK_STATE_CANCELED'
  | 'TASK_STATE_FAILED'
  | 'TASK_STATE_REJECTED';

/** A tool call the task waits on: what an input-required status tells the client to answer. */
export interface PendingInput {
  readonly toolCallId: string;
  readonly name: string;
  readonly arguments: JsonValue;
  /**
   * Who the call waits on (seed 003 `ToolDisposition`, `dispositionOf`): its client, which runs it
   * (`pending_client`), or the server's side — an approval, a schedule (`pending_builtin`). A2A 1.0
   * has no field of its own for it, so the entry carries it beside the suspension's action.
   */
  readonly disposition: Exclude<ToolDisposition, 'executed'>;
  readonly suspensionId?: string;
  readonly action?: string;
  readonly message?: string;
  /** A scheduled call (`ToolResults.scheduled`): it waits for its time or trigger, not for the client. */
  readonly schedule?: Schedule;
}

export interface A2aState {
  readonly taskId: string;
  readonly contextId: string;
  /** Text chunks sent on the `response` artifact. */
  readonly chunks: number;
  /** Suspended calls not yet settled, in order. */
  readonly pending: readonly PendingInput[];
  /** Tool progress reports sent (each message's id is unique). */
  readonly progressReports: number;
  readonly started: boolean;
  /** The run waits on scheduled calls only: the task is still working, and its stream goes on. */
  readonly scheduled: boolean;
  readonly finished: boolean;
}

export const initialA2aState = (): A2aState => ({
  taskId: '',
  contextId: '',
  chunks: 0,
  pending: [],
  progressReports: 0,
  started: false,
  scheduled: false,
  finished: false,
});

/** The words for a call that waits on its schedule: its own message, else when it wakes. */
const scheduledText = (p: PendingInput): string =>
  `The tool call ${p.name} is scheduled (${p.message ?? 'it waits'}): it goes on by itself, nothing needs an answer.`;

/**
 * The disposition of a call the task waits on (`dispositionOf` of a pending call): its suspension's
 * action says whether its client runs it.
 */
export const waitingDisposition = (suspension: { readonly action: string } | undefined): PendingInput['disposition'] =>
  dispositionOf({ status: 'pending', ...(suspension !== undefined ? { suspension: { suspension } } : {}) }) === 'pending_client'
    ? 'pending_client'
    : 'pending_builtin';

const pendingCall = (p: PendingInput): JsonValue => ({
  toolCallId: p.toolCallId,
  name: p.name,
  arguments: p.arguments,
  disposition: p.disposition,
  ...(p.suspensionId !== undefined ? { suspensionId: p.suspensionId } : {}),
  ...(p.action !== undefined ? { action: p.action } : {}),
  ...(p.message !== undefined ? { message: p.message } : {}),
  ...(p.schedule !== undefined ? { schedule: p.schedule as JsonValue } : {}),
});

/**
 * The agent message of a `WORKING` status while every call the task waits on is scheduled (in the
 * stream and in a task snapshot alike): when each goes on, and the calls as a data part.
 */
export function scheduledMessage(taskId: string, contextId: string, pending: readonly PendingInput[]): JsonValue {
  return {
    messageId: `${taskId}:scheduled`,
    contextId,
    taskId,
    role: 'ROLE_AGENT',
    parts: [{ text: pending.map(scheduledText).join('\n') }, data({ scheduledToolCalls: pending.map(pendingCall) })],
  };
}

/**
 * The agent message of an `INPUT_REQUIRED` status, in the stream and in a task snapshot alike: what
 * each waiting call asks (its suspension message), how to answer, and the calls as a data part.
 */
export function inputRequiredMessage(taskId: string, contextId: string, pending: readonly PendingInput[]): JsonValue {
  const asks = pending.map((p) => (p.schedule !== undefined ? scheduledText(p) : (p.message ?? `The tool call ${p.name} waits for a decision.`)));
  const text = [...asks, 'Answer with a message on this task: text, or a data part with the result ({"approved": false} declines).'].join('\n');
  return {
    messageId: `${taskId}:input-required`,
    contextId,
    taskId,
    role: 'ROLE_AGENT',
    parts: [{ text }, data({ pendingToolCalls: pending.map(pendingCall) })],
  };
}

export const RESPONSE_ARTIFACT = 'response';

/** The task state a termination leaves the task in. */
export function taskStateOf(t: TerminationReason): TaskState {
  switch (t.type) {
    case 'natural_end':
    case 'behavior_requested':
    case 'stopped':
      return 'TASK_STATE_COMPLETED';
    case 'suspended':
      return 'TASK_STATE_INPUT_REQUIRED';
    case 'cancelled':
      return 'TASK_STATE_CANCELED';
    case 'error':
      return 'TASK_STATE_FAILED';
    case 'blocked':
      return 'TASK_STATE_REJECTED';
    default:
      return unreachable(t);
  }
}

function agentMessage(s: A2aState, messageId: string, parts: JsonValue[]): JsonValue {
  return { messageId, contextId: s.contextId, taskId: s.taskId, role: 'ROLE_AGENT', parts };
}

function status(s: A2aState, state: TaskState, message?: JsonValue): StreamResponse {
  return { statusUpdate: { taskId: s.taskId, contextId: s.contextId, status: { state, ...(message !== undefined ? { message } : {}) } } };
}

/** The last artifact chunk (when text was streamed), then the final status (with its message). */
function end(s: A2aState, state: TaskState, message: JsonValue | undefined, out: StreamResponse[]): A2aState {
  if (s.chunks > 0) {
    out.push({
      artifactUpdate: {
        taskId: s.taskId,
        contextId: s.contextId,
        artifact: { artifactId: RESPONSE_ARTIFACT, name: RESPONSE_ARTIFACT, parts: [{ text: '' }] },
        append: true,
        lastChunk: true,
      },
    });
  }
  out.push(status(s, state, message));
  return { ...s, finished: true };
}

const because = (s: A2aState, why: string): JsonValue => agentMessage(s, `${s.taskId}:status`, [{ text: why }]);

/**
 * One `AgentEvent` → the `StreamResponse` frames it becomes (a pure Mealy step). The stream ends with
 * the task's final state for this stream (terminal, or `INPUT_REQUIRED` for a suspension — the
 * answer is a new `message:send` on the task); nothing is sent after it. A suspension on scheduled
 * calls only is not final: the task is `WORKING` and the stream goes on when they wake.
 */
export function transcodeA2a(state: A2aState, event: AgentEvent): [A2aState, StreamResponse[]] {
  const out: StreamResponse[] = [];
  let s = state;
  if (s.finished || (!s.started && event.event_type !== 'run_start')) return [s, out];
  switch (event.event_type) {
    case 'run_start':
      if (s.scheduled) {
        // A scheduled call woke: the same task works on, on the same stream.
        s = { ...s, scheduled: false };
        out.push(status(s, 'TASK_STATE_WORKING'));
        break;
      }
      s = { ...s, taskId: event.run_id, contextId: event.thread_id, started: true };
      out.push({ task: { id: s.taskId, contextId: s.contextId, status: { state: 'TASK_STATE_SUBMITTED' } } });
      out.push(status(s, 'TASK_STATE_WORKING'));
      break;
    case 'text_delta':
      if (event.delta === '') break;
      out.push({
        artifactUpdate: {
          taskId: s.taskId,
          contextId: s.contextId,
          artifact: { artifactId: RESPONSE_ARTIFACT, name: RESPONSE_ARTIFACT, parts: [{ text: event.delta }] },
          ...(s.chunks > 0 ? { append: true } : {}),
        },
      });
      s = { ...s, chunks: s.chunks + 1 };
      break;
    case 'tool_call_ready':
      out.push(
        status(
          s,
          'TASK_STATE_WORKING',
          agentMessage(s, `${s.taskId}:call:${event.id}`, [data({ toolCall: { id: event.id, name: event.name, arguments: event.arguments } })]),
        ),
      );
      break;
    case 'tool_call_done': {
      const r = event.result;
      const result: Record<string, JsonValue> = { id: event.id, name: r.tool_name, outcome: event.outcome, data: r.data };
      if (r.message != null) result['message'] = r.message;
      if (r.suspension !== undefined) result['suspension'] = r.suspension.suspension as unknown as JsonValue;
      out.push(status(s, 'TASK_STATE_WORKING', agentMessage(s, `${s.taskId}:result:${event.id}`, [data({ toolResult: result })])));
      const rest = s.pending.filter((p) => p.toolCallId !== event.id);
      if (event.outcome !== 'suspended') {
        s = rest.length === s.pending.length ? s : { ...s, pending: rest };
        break;
      }
      const su = r.suspension?.suspension;
      const schedule = scheduleOf(su);
      const input: PendingInput = {
        toolCallId: event.id,
        name: r.suspension?.pending.name ?? r.tool_name,
        arguments: r.suspension?.pending.arguments ?? null,
        disposition: waitingDisposition(su),
        ...(su !== undefined ? { suspensionId: su.id, action: su.action, ...(su.message !== undefined ? { message: su.message } : {}) } : {}),
        ...(schedule !== undefined ? { schedule } : {}),
      };
      s = { ...s, pending: [...rest, input] };
      break;
    }
    case 'activity_snapshot': {
      // A run taken up again after its process stopped: a WORKING update saying where it went on, in
      // words and as a data part. Its activity's message id is new each time, so it names the message.
      const r = runResumedOf(event);
      if (r !== undefined) {
        out.push(
          status(
            s,
            'TASK_STATE_WORKING',
            agentMessage(s, `${s.taskId}:run-resumed:${event.message_id}`, [{ text: runResumedText(r) }, data({ runResumed: { from: r.from, step: r.step } })]),
          ),
        );
        break;
      }
      // A tool's progress (book: 上报 Tool 进度): a WORKING update whose data part says how far the call is.
      const p = toolProgressOf(event);
      if (p === undefined) break;
      out.push(
        status(
          s,
          'TASK_STATE_WORKING',
          agentMessage(s, `${s.taskId}:progress:${p.call_id}:${s.progressReports}`, [
            data({
              toolProgress: {
                id: p.call_id,
                name: p.tool_name,
                status: p.status,
                ...(p.progress !== undefined ? { progress: p.progress } : {}),
                ...(p.message !== undefined ? { message: p.message } : {}),
              },
            }),
          ]),
        ),
      );
      s = { ...s, progressReports: s.progressReports + 1 };
      break;
    }
    case 'tool_call_resumed':
      out.push(
        status(
          s,
          'TASK_STATE_WORKING',
          agentMessage(s, `${s.taskId}:resumed:${event.target_id}`, [data({ toolResult: { id: event.target_id, outcome: 'resumed', data: event.result } })]),
        ),
      );
      s = { ...s, pending: s.pending.filter((p) => p.toolCallId !== event.target_id) };
      break;
    case 'run_finish': {
      const t = event.termination;
      if (t.type === 'suspended' && s.pending.length > 0 && s.pending.every((p) => p.schedule !== undefined)) {
        // Nothing to ask the client: the task keeps working until its calls wake, and so does its stream.
        out.push(status(s, 'TASK_STATE_WORKING', scheduledMessage(s.taskId, s.contextId, s.pending)));
        s = { ...s, scheduled: true };
        break;
      }
      const why = t.type === 'error' || t.type === 'blocked' ? t.value : t.type === 'stopped' ? (t.value.detail ?? t.value.code) : undefined;
      const message = t.type === 'suspended' ? inputRequiredMessage(s.taskId, s.contextId, s.pending) : why !== undefined ? because(s, why) : undefined;
      s = end(s, taskStateOf(t), message, out);
      break;
    }
    case 'error':
      s = end(s, 'TASK_STATE_FAILED', because(s, event.message), out);
      break;
    case 'reasoning_delta':
    case 'tool_call_start':
    case 'tool_call_delta':
    case 'tool_call_stream_delta':
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
 * The frames that end a stream cut short: the task failed — unless it waits on scheduled calls, when
 * it is still working (the stream stops; `SubscribeToTask` or `GetTask` follow it on).
 */
export function finishA2a(state: A2aState): StreamResponse[] {
  if (state.finished || !state.started || state.scheduled) return [];
  const out: StreamResponse[] = [];
  end(state, 'TASK_STATE_FAILED', because(state, 'the event stream ended before the run finished'), out);
  return out;
}

export function encodeA2a(events: readonly AgentEvent[]): StreamResponse[] {
  return runMealy(initialA2aState(), transcodeA2a, finishA2a, events);
}

/** SSE framing of `message:stream`: `data: <StreamResponse>\n\n` per frame; the stream's end is the end. */
export function frameA2a(frames: readonly StreamResponse[]): string {
  let out = '';
  for (const f of frames) out += `data: ${JSON.stringify(f)}\n\n`;
  return out;
}
