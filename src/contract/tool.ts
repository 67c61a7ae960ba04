import { z } from 'zod';
import { JsonObjectSchema, JsonValueSchema, type JsonValue } from './json.ts';
import { unreachable } from './never.ts';

/** Tool identity and schema exposed to the model (book: Tool Trait → ToolDescriptor). */
export const ToolDescriptorSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  parameters: JsonValueSchema,
  category: z.string().optional(),
});
export type ToolDescriptor = z.infer<typeof ToolDescriptorSchema>;

export const ToolDescriptors = {
  new: (id: string, name: string, description: string): ToolDescriptor => ({
    id,
    name,
    description,
    parameters: { type: 'object', properties: {} },
  }),
  withParameters: (d: ToolDescriptor, parameters: JsonValue): ToolDescriptor => ({ ...d, parameters }),
  withCategory: (d: ToolDescriptor, category: string): ToolDescriptor => ({ ...d, category }),
} as const;

export const ToolStatusSchema = z.enum(['success', 'pending', 'error']);
export type ToolStatus = z.infer<typeof ToolStatusSchema>;

export const ToolCallResumeModeSchema = z.enum(['replay_tool_call', 'use_decision_as_tool_result', 'pass_decision_to_tool']);
export type ToolCallResumeMode = z.infer<typeof ToolCallResumeModeSchema>;

/** `message` is omitted when empty, `parameters` when null (protocol-spec §1.3). */
export const SuspensionSchema = z
  .object({
    id: z.string(),
    action: z.string(),
    message: z.string().optional(),
    parameters: JsonValueSchema.optional(),
    response_schema: JsonValueSchema.optional(),
  })
  .transform(
    (s): Suspension => ({
      id: s.id,
      action: s.action,
      ...(s.message !== undefined && s.message !== '' ? { message: s.message } : {}),
      ...(s.parameters !== undefined && s.parameters !== null ? { parameters: s.parameters } : {}),
      ...(s.response_schema !== undefined ? { response_schema: s.response_schema } : {}),
    }),
  );
export type Suspension = {
  id: string;
  action: string;
  message?: string;
  parameters?: JsonValue;
  response_schema?: JsonValue;
};

export const PendingToolCallSchema = z.object({ id: z.string(), name: z.string(), arguments: JsonValueSchema });
export type PendingToolCall = z.infer<typeof PendingToolCallSchema>;

export const SuspendTicketSchema = z.object({
  suspension: SuspensionSchema,
  pending: PendingToolCallSchema,
  resume_mode: ToolCallResumeModeSchema.default('replay_tool_call'),
});
export type SuspendTicket = { suspension: Suspension; pending: PendingToolCall; resume_mode: ToolCallResumeMode };

/**
 * Result of one tool call. `message` is always present on the wire (`null` when absent);
 * `suspension` and `metadata` are omitted when absent or empty (book: 事件 → ToolResult).
 */
export const ToolResultSchema = z
  .object({
    tool_name: z.string(),
    status: ToolStatusSchema,
    data: JsonValueSchema,
    message: z.string().nullable().default(null),
    suspension: SuspendTicketSchema.optional(),
    metadata: JsonObjectSchema.optional(),
  })
  .transform((r): ToolResult => {
    if (r.metadata === undefined || Object.keys(r.metadata).length > 0) return r as ToolResult;
    const { metadata: _empty, ...rest } = r;
    return rest as ToolResult;
  });
export type ToolResult = {
  tool_name: string;
  status: ToolStatus;
  data: JsonValue;
  message: string | null;
  suspension?: SuspendTicket;
  metadata?: { [key: string]: JsonValue };
};

export const ToolResults = {
  success: (toolName: string, data: JsonValue): ToolResult => ({ tool_name: toolName, status: 'success', data, message: null }),
  successWithMessage: (toolName: string, data: JsonValue, message: string): ToolResult => ({
    tool_name: toolName,
    status: 'success',
    data,
    message,
  }),
  error: (toolName: string, message: string): ToolResult => ({ tool_name: toolName, status: 'error', data: null, message }),
  errorWithCode: (toolName: string, code: string, message: string): ToolResult => ({
    tool_name: toolName,
    status: 'error',
    data: { error: { code, message } },
    message: `[${code}] ${message}`,
  }),
  suspended: (toolName: string, message: string, ticket: SuspendTicket): ToolResult => ({
    tool_name: toolName,
    status: 'pending',
    data: null,
    message,
    suspension: ticket,
  }),
  /**
   * A call parked until a time (`not_before`, ms since the epoch), until a trigger
   * (`POST /v1/runs/:id/triggers/:call_id`), or until whichever comes first (book: gate outcome
   * `Schedule`); the server wakes it, and the call runs again with `ctx.resume`. Its ticket, as a
   * tool's `askBefore` returns one, is the result's `suspension`.
   */
  scheduled: (call: PendingToolCall, when: Schedule, message?: string): ToolResult & { suspension: SuspendTicket } => {
    const waits = [
      ...(when.not_before !== undefined ? [`until ${new Date(when.not_before).toISOString()}`] : []),
      ...(when.trigger === true ? ['for a trigger'] : []),
    ].join(' or ');
    const said = message ?? `scheduled: waits ${waits}`;
    return {
      tool_name: call.name,
      status: 'pending',
      data: null,
      message: said,
      suspension: {
        suspension: { id: `schedule-${call.id}`, action: SCHEDULE_ACTION, message: said, parameters: when as JsonValue },
        pending: call,
        resume_mode: 'replay_tool_call',
      },
    };
  },
} as const;

/**
 * A client tool's `suspension.action`: the call waits for the client that declared the tool to run
 * it and send its result back (AG-UI `RunAgentInput.tools`, an AI SDK `tool()` without `execute`).
 */
export const CLIENT_TOOL_ACTION = 'client_tool';

/**
 * The call a client runs, suspended until its result comes back: the ticket's id is the call's id
 * (what a client answers by), and the decision is the result (`use_decision_as_tool_result`).
 */
export function pendingClientResult(call: PendingToolCall): ToolResult & { suspension: SuspendTicket } {
  const message = `Tool '${call.name}' runs on the client: awaiting its result`;
  return {
    tool_name: call.name,
    status: 'pending',
    data: null,
    message,
    suspension: {
      suspension: { id: call.id, action: CLIENT_TOOL_ACTION, message, ...(call.arguments !== null ? { parameters: call.arguments } : {}) },
      pending: call,
      resume_mode: 'use_decision_as_tool_result',
    },
  };
}

/**
 * The result of a call resumed in `use_decision_as_tool_result` mode: what the decision carries.
 * `{error: "…"}` alone (an AI SDK `output-error`, an AG-UI tool message with `error`) is the call
 * failing with that text; anything else is its output.
 */
export function decisionResult(toolName: string, sent: JsonValue | undefined): ToolResult {
  if (typeof sent === 'object' && sent !== null && !Array.isArray(sent)) {
    const error = sent['error'];
    if (typeof error === 'string' && Object.keys(sent).length === 1) return ToolResults.error(toolName, error);
  }
  return ToolResults.success(toolName, sent ?? null);
}

/**
 * How a protocol consumer sees a committed call (seed 003 `ToolDisposition`): done (`executed`,
 * whatever its outcome), waiting for the client that runs it (`pending_client`), or waiting on the
 * server's side — an approval, a schedule (`pending_builtin`). A projection, never where a call runs.
 */
export type ToolDisposition = 'executed' | 'pending_client' | 'pending_builtin';

export function dispositionOf(result: {
  readonly status: ToolStatus;
  readonly suspension?: { readonly suspension: { readonly action: string } };
}): ToolDisposition {
  if (result.status !== 'pending') return 'executed';
  return result.suspension?.suspension.action === CLIENT_TOOL_ACTION ? 'pending_client' : 'pending_builtin';
}

/** A scheduled call's `suspension.action`. */
export const SCHEDULE_ACTION = 'schedule';

/** When a scheduled call wakes: at a time, on a trigger, or at whichever comes first. */
export interface Schedule {
  readonly not_before?: number;
  readonly trigger?: boolean;
}

/** The schedule a suspension says its call waits on, if it is one (`ToolResults.scheduled`). */
export function scheduleOf(suspension: { readonly action: string; readonly parameters?: unknown } | undefined): Schedule | undefined {
  if (suspension?.action !== SCHEDULE_ACTION) return undefined;
  const p = suspension.parameters;
  if (typeof p !== 'object' || p === null) return undefined;
  const { not_before, trigger } = p as Record<string, unknown>;
  return {
    ...(typeof not_before === 'number' && Number.isFinite(not_before) ? { not_before } : {}),
    ...(trigger === true ? { trigger: true } : {}),
  };
}

export const ToolCallOutcomeSchema = z.enum(['succeeded', 'failed', 'suspended']);
export type ToolCallOutcome = z.infer<typeof ToolCallOutcomeSchema>;

/** pending → suspended, error → failed, success → succeeded. */
export function outcomeOf(result: ToolResult): ToolCallOutcome {
  switch (result.status) {
    case 'success':
      return 'succeeded';
    case 'error':
      return 'failed';
    case 'pending':
      return 'suspended';
    default:
      return unreachable(result.status);
  }
}

export const ResumeDecisionActionSchema = z.enum(['resume', 'cancel']);
export type ResumeDecisionAction = z.infer<typeof ResumeDecisionActionSchema>;

/** A decision for a suspended call. `result` is omitted when null. */
export const ToolCallResumeSchema = z
  .object({
    decision_id: z.string().default(''),
    action: ResumeDecisionActionSchema,
    result: JsonValueSchema.optional(),
    reason: z.string().optional(),
    updated_at: z.number().int().nonnegative(),
  })
  .transform((r): ToolCallResume => {
    if (r.result !== null) return r as ToolCallResume;
    const { result: _null, ...rest } = r;
    return rest as ToolCallResume;
  });
export type ToolCallResume = {
  decision_id: string;
  action: ResumeDecisionAction;
  result?: JsonValue;
  reason?: string;
  updated_at: number;
};
