import type { AgentEvent } from '../contract/event.ts';
import type { JsonValue } from '../contract/json.ts';
import type { RunStatus } from '../contract/lifecycle.ts';
import type { Message } from '../contract/message.ts';
import { scheduleOf, type Schedule } from '../contract/tool.ts';
import type { PersistedState } from '../core/state/state-ops.ts';
import type { RunHandle, SuspendedCall } from '../runtime/agent-runtime.ts';
import { ToolCallStates } from '../runtime/loop-keys.ts';
import { ToolBatchKey } from '../runtime/tool-batch.ts';
import type { Logger } from './log.ts';
import { passOver } from '../contract/never.ts';

// A run as the registry holds it while it is in flight or parked on this instance, and what it learns
// of the run from the run's own events (`trackEvent`) or, for a run parked elsewhere, from the store.

/**
 * A tool call a parked run waits on, as the run announced it: the protocols re-use its name, its
 * arguments and the assistant message that made it when they stream the resumed run.
 */
export interface WaitingCall {
  readonly callId: string;
  readonly name: string;
  readonly arguments: JsonValue;
  /** The assistant message (the step's `message_id`, else the run id) that made the call. */
  readonly messageId: string;
  readonly suspension?: { readonly id: string; readonly action: string; readonly message?: string };
  /** When a scheduled call wakes (`ToolResults.scheduled`): the server decides it then. */
  readonly schedule?: Schedule;
}

/** A run in flight or parked on this instance. */
export interface LiveRun {
  readonly runId: string;
  readonly threadId: string;
  readonly agentId: string;
  readonly handle: RunHandle;
  readonly createdAt: number;
  /** The run's input (not in the store before its first checkpoint). */
  readonly input: readonly Message[];
  /** The thread log's sequence number before the run's first frame. */
  readonly fromSeq: number;
  status: RunStatus;
  /** The stop intent belongs to the run: a superseded or stopped run ends `cancelled`. */
  stopRequested: boolean;
  /** Tool calls waiting for a decision (from the run's own events), by call id. */
  readonly waiting: Map<string, WaitingCall>;
  /** Calls made in the current step (name, arguments), until they settle or suspend. */
  readonly calls: Map<string, { readonly name: string; readonly arguments: JsonValue; readonly messageId: string }>;
  /** The assistant message of the current step. */
  stepMessageId: string;
  terminalSeen: boolean;
  /** Set when the run ended: its lease being released. */
  released: Promise<void> | undefined;
  /** The principal the run's thread belongs to (access control), if any. */
  readonly owner: string | undefined;
}

/**
 * What the registry follows of a run's own events: its status, the calls of the current step and the
 * calls it waits on; its start, end and errors are logged.
 */
export function trackEvent(run: LiveRun, event: AgentEvent, logger: Logger): void {
  switch (event.event_type) {
    case 'run_start':
      run.status = 'running';
      run.terminalSeen = false;
      logger.info('run started', { run: run.runId, thread: run.threadId, agent: run.agentId });
      break;
    case 'run_finish': {
      run.terminalSeen = true;
      run.status = event.termination.type === 'suspended' ? 'waiting' : 'done';
      const t = event.termination;
      const fields = {
        run: run.runId,
        thread: run.threadId,
        agent: run.agentId,
        termination: t.type,
        ...('value' in t ? { reason: typeof t.value === 'string' ? t.value : t.value.code } : {}),
      };
      if (t.type === 'error') logger.error('run failed', fields);
      else logger.info('run finished', fields);
      break;
    }
    case 'error':
      logger.warn('run error', { run: run.runId, thread: run.threadId, error: event.message, ...(event.code !== undefined ? { code: event.code } : {}) });
      break;
    case 'step_start':
      run.calls.clear();
      if (event.message_id !== '') run.stepMessageId = event.message_id;
      break;
    case 'tool_call_ready':
      run.calls.set(event.id, { name: event.name, arguments: event.arguments, messageId: run.stepMessageId });
      break;
    case 'tool_call_done': {
      const call = run.calls.get(event.id);
      run.calls.delete(event.id);
      if (event.outcome !== 'suspended') break;
      const ticket = event.result.suspension;
      run.waiting.set(
        event.id,
        waitingCallOf({
          call: {
            id: event.id,
            name: call?.name ?? ticket?.pending.name ?? event.result.tool_name,
            arguments: call?.arguments ?? ticket?.pending.arguments ?? {},
          },
          messageId: call?.messageId ?? run.stepMessageId,
          ticket,
        }),
      );
      break;
    }
    case 'tool_call_resumed':
      run.waiting.delete(event.target_id);
      break;
    case 'text_delta':
    case 'reasoning_delta':
    case 'tool_call_start':
    case 'tool_call_delta':
    case 'tool_call_stream_delta':
    case 'reasoning_encrypted_value':
    case 'messages_snapshot':
    case 'activity_snapshot':
    case 'activity_delta':
    case 'step_end':
    case 'inference_complete':
    case 'state_snapshot':
    case 'state_delta':
      break;
    default:
      // An event type this version does not know (a newer instance's frame) is not shown.
      passOver(event);
  }
}

/** A suspended call as the registry lists it. */
export function waitingCallOf(c: SuspendedCall): WaitingCall {
  const su = c.ticket?.suspension;
  const schedule = scheduleOf(su);
  return {
    callId: c.call.id,
    name: c.call.name,
    arguments: c.call.arguments,
    messageId: c.messageId,
    ...(su !== undefined ? { suspension: { id: su.id, action: su.action, ...(su.message !== undefined ? { message: su.message } : {}) } } : {}),
    ...(schedule !== undefined ? { schedule } : {}),
  };
}

/** The calls the batch in a stored thread state waits on (its suspended calls, in model order). */
export function parkedCallsOf(state: PersistedState | undefined): WaitingCall[] {
  if (state === undefined) return [];
  const record = ToolBatchKey.codec.safeParse(state.extensions[ToolBatchKey.key]);
  const states = ToolCallStates.codec.safeParse(state.extensions[ToolCallStates.key]);
  if (!record.success || record.data === null || !states.success) return [];
  const batch = record.data;
  return batch.calls
    .filter((c) => Object.hasOwn(states.data, c.id) && states.data[c.id]?.status === 'suspended')
    .map((call) =>
      waitingCallOf({ call, messageId: batch.message_id, ticket: Object.hasOwn(batch.results, call.id) ? batch.results[call.id]?.suspension : undefined }),
    );
}
