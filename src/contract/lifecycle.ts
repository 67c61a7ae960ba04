import { z } from 'zod';
import { unreachable } from './never.ts';

export const StoppedReasonSchema = z.object({ code: z.string(), detail: z.string().optional() });
export type StoppedReason = z.infer<typeof StoppedReasonSchema>;

const TerminationUnion = z.discriminatedUnion('type', [
  z.object({ type: z.literal('natural_end') }),
  z.object({ type: z.literal('behavior_requested') }),
  z.object({ type: z.literal('stopped'), value: StoppedReasonSchema }),
  z.object({ type: z.literal('cancelled') }),
  z.object({ type: z.literal('blocked'), value: z.string() }),
  z.object({ type: z.literal('suspended') }),
  z.object({ type: z.literal('error'), value: z.string() }),
]);

/**
 * Why a run ended. Adjacently tagged: unit variants have no `value` key
 * (`{"type":"natural_end"}`); `plugin_requested` is read as `behavior_requested`.
 */
export const TerminationReasonSchema = z.preprocess(
  (v) => (typeof v === 'object' && v !== null && (v as { type?: unknown }).type === 'plugin_requested' ? { ...v, type: 'behavior_requested' } : v),
  TerminationUnion,
);
export type TerminationReason = z.infer<typeof TerminationUnion>;

export const TerminationReasons = {
  naturalEnd: (): TerminationReason => ({ type: 'natural_end' }),
  behaviorRequested: (): TerminationReason => ({ type: 'behavior_requested' }),
  stopped: (code: string, detail?: string): TerminationReason => ({
    type: 'stopped',
    value: detail === undefined ? { code } : { code, detail },
  }),
  cancelled: (): TerminationReason => ({ type: 'cancelled' }),
  blocked: (reason: string): TerminationReason => ({ type: 'blocked', value: reason }),
  suspended: (): TerminationReason => ({ type: 'suspended' }),
  error: (message: string): TerminationReason => ({ type: 'error', value: message }),
} as const;

/** Durable run status. `created` comes from 0.6; the book lists running/waiting/done. */
export const RunStatusSchema = z.enum(['created', 'running', 'waiting', 'done']);
export type RunStatus = z.infer<typeof RunStatusSchema>;

const RUN_TRANSITIONS: Readonly<Record<RunStatus, readonly RunStatus[]>> = {
  created: ['running', 'done'],
  running: ['waiting', 'done'],
  waiting: ['running', 'done'],
  done: [],
};

/** Any status may stay as it is; otherwise only the arrows of the book's RunStatus diagram. */
export function canTransitionRun(from: RunStatus, to: RunStatus): boolean {
  return from === to || RUN_TRANSITIONS[from].includes(to);
}

export const isTerminalRunStatus = (status: RunStatus): boolean => status === 'done';

/**
 * Status and durable done-reason of a termination. Unlike 0.6, the error message and the stop
 * detail are kept (`error:<msg>`, `stopped:<code>:<detail>` is not used; detail goes to `detail`).
 */
export function toRunStatus(reason: TerminationReason): { status: RunStatus; doneReason?: string } {
  switch (reason.type) {
    case 'suspended':
      return { status: 'waiting' };
    case 'natural_end':
      return { status: 'done', doneReason: 'natural' };
    case 'behavior_requested':
      return { status: 'done', doneReason: 'behavior_requested' };
    case 'cancelled':
      return { status: 'done', doneReason: 'cancelled' };
    case 'blocked':
      return { status: 'done', doneReason: `blocked:${reason.value}` };
    case 'error':
      return { status: 'done', doneReason: `error:${reason.value}` };
    case 'stopped':
      return { status: 'done', doneReason: `stopped:${reason.value.code}` };
    default:
      return unreachable(reason);
  }
}

/** Inverse of `toRunStatus` for done reasons; anything unrecognised is an `error` carrying the text. */
export function fromDoneReason(doneReason: string): TerminationReason {
  switch (doneReason) {
    case 'natural':
      return TerminationReasons.naturalEnd();
    case 'behavior_requested':
      return TerminationReasons.behaviorRequested();
    case 'cancelled':
      return TerminationReasons.cancelled();
  }
  const colon = doneReason.indexOf(':');
  if (colon > 0) {
    const head = doneReason.slice(0, colon);
    const tail = doneReason.slice(colon + 1);
    if (head === 'blocked') return TerminationReasons.blocked(tail);
    if (head === 'stopped') return TerminationReasons.stopped(tail);
    if (head === 'error') return TerminationReasons.error(tail);
  }
  return TerminationReasons.error(doneReason);
}

/**
 * A tool call's status. `indeterminate` (seed 003's crash recovery) ends a call that was dispatched
 * before its process died and may not run again: whether its effect happened is unknown.
 */
export const ToolCallStatusSchema = z.enum(['new', 'running', 'suspended', 'resuming', 'succeeded', 'failed', 'cancelled', 'indeterminate']);
export type ToolCallStatus = z.infer<typeof ToolCallStatusSchema>;

const TERMINAL_CALL: readonly ToolCallStatus[] = ['succeeded', 'failed', 'cancelled', 'indeterminate'];
const CALL_TRANSITIONS: Readonly<Record<ToolCallStatus, readonly ToolCallStatus[]>> = {
  // Not `indeterminate`: a call that never left cannot have an unknown outcome.
  new: ['running', 'suspended', 'resuming', 'succeeded', 'failed', 'cancelled'],
  running: ['suspended', 'succeeded', 'failed', 'cancelled', 'indeterminate'],
  suspended: ['resuming', 'cancelled'],
  resuming: ['running', 'suspended', 'succeeded', 'failed', 'cancelled'],
  succeeded: [],
  failed: [],
  cancelled: [],
  indeterminate: [],
};

export const isTerminalToolCallStatus = (status: ToolCallStatus): boolean => TERMINAL_CALL.includes(status);

/**
 * Legal tool-call transitions (core-spec §4.5): self always; New → anything but Indeterminate (only a
 * dispatched, Running call can end so); terminal → nothing.
 */
export function canTransitionToolCall(from: ToolCallStatus, to: ToolCallStatus): boolean {
  return from === to || CALL_TRANSITIONS[from].includes(to);
}

/**
 * The run status as a projection of its tool calls (book: 从 ToolCall 状态推导 RunStatus): any call
 * running or resuming → running; else any suspended → waiting; else done (an indeterminate call is
 * terminal, and counts as done).
 */
export function deriveRunStatus(statuses: Iterable<ToolCallStatus>): RunStatus {
  let suspended = false;
  for (const status of statuses) {
    if (status === 'running' || status === 'resuming') return 'running';
    if (status === 'suspended') suspended = true;
  }
  return suspended ? 'waiting' : 'done';
}

/** Declarative stop conditions (core-spec §7); `0` or `""` disables a condition. */
export const StopConditionSpecSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('max_rounds'), rounds: z.number().int().nonnegative() }).strict(),
  z.object({ type: z.literal('timeout'), seconds: z.number().int().nonnegative() }).strict(),
  z.object({ type: z.literal('token_budget'), max_total: z.number().int().nonnegative() }).strict(),
  z.object({ type: z.literal('consecutive_errors'), max: z.number().int().nonnegative() }).strict(),
  z.object({ type: z.literal('stop_on_tool'), tool_name: z.string() }).strict(),
  z.object({ type: z.literal('content_match'), pattern: z.string() }).strict(),
  z.object({ type: z.literal('loop_detection'), window: z.number().int().nonnegative() }).strict(),
]);
export type StopConditionSpec = z.infer<typeof StopConditionSpecSchema>;
