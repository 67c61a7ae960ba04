import { progressText, toolProgressOf } from '../../contract/progress.ts';
import type { AgentEvent } from '../../contract/event.ts';
import type { JsonValue } from '../../contract/json.ts';
import type { TerminationReason } from '../../contract/lifecycle.ts';
import { dispositionOf, scheduleOf } from '../../contract/tool.ts';
import { unreachable } from '../../contract/never.ts';
import { runResumedOf, runResumedText } from '../resumed.ts';

/**
 * MCP (protocol 2025-11-25): an agent is a tool taking `{message}`. While its run streams, the server
 * sends `notifications/progress` for the call's progress token; the run ends in one `tools/call`
 * result: the final text, `structuredContent` with the termination and ids, and `isError` when the
 * run did not complete (docs/protocols/mcp.md).
 */
export interface McpProgress {
  readonly progress: number;
  readonly message: string;
}

/** A `CallToolResult`. */
export interface McpToolResult {
  readonly [key: string]: JsonValue;
  readonly content: { readonly type: 'text'; readonly text: string }[];
  readonly structuredContent: { readonly [key: string]: JsonValue };
  readonly isError: boolean;
}

export interface McpState {
  readonly threadId: string;
  readonly runId: string;
  readonly progress: number;
  readonly text: string;
  readonly steps: number;
  readonly started: boolean;
  /**
   * The calls suspended so far: the tool, what each says, whether the server wakes it (scheduled),
   * and whether its client runs it (`dispositionOf`: `pending_client`).
   */
  readonly suspended: readonly { readonly name: string; readonly scheduled: boolean; readonly client: boolean; readonly message: string }[];
  /** The host wakes scheduled calls (`awaken serve`'s mailbox): a run waiting on them only goes on there. */
  readonly serverWakes: boolean;
  readonly finished: boolean;
}

/** `serverWakes`: the host wakes scheduled calls (`/v1/mcp` on `awaken serve`); not over stdio. */
export const initialMcpState = (options: { readonly serverWakes?: boolean } = {}): McpState => ({
  threadId: '',
  runId: '',
  progress: 0,
  text: '',
  steps: 0,
  started: false,
  suspended: [],
  serverWakes: options.serverWakes === true,
  finished: false,
});

/** Whether a run that ended suspended waits on scheduled calls only (nobody need answer: the server wakes them). */
export const waitsOnSchedule = (s: McpState): boolean => s.suspended.length > 0 && s.suspended.every((c) => c.scheduled);

/** What one step of the transcoder produces: progress messages, and the result once the run ends. */
export interface McpOutput {
  readonly progress: readonly McpProgress[];
  readonly result: McpToolResult | undefined;
}

/** A run's result: its text, then what kept it from completing (`failure`, an error unless `isError` says otherwise). */
function resultOf(s: McpState, termination: JsonValue, failure: string | undefined, isError = failure !== undefined): McpToolResult {
  const content: { type: 'text'; text: string }[] = [];
  if (s.text !== '' || failure === undefined) content.push({ type: 'text', text: s.text !== '' ? s.text : '(no response)' });
  if (failure !== undefined) content.push({ type: 'text', text: failure });
  return { content, structuredContent: { termination, runId: s.runId, threadId: s.threadId }, isError };
}

/** Why a run that did not complete failed, in words; `undefined` when it completed. */
export function failureOf(t: TerminationReason): string | undefined {
  switch (t.type) {
    case 'error':
      return `agent run failed: ${t.value}`;
    case 'cancelled':
      return 'agent run cancelled';
    case 'blocked':
      return `agent run blocked: ${t.value}`;
    case 'suspended':
      return 'agent run suspended: it waits for a decision this protocol cannot carry';
    case 'natural_end':
    case 'behavior_requested':
    case 'stopped':
      return undefined;
    default:
      return unreachable(t);
  }
}

/**
 * One `AgentEvent` → the progress it reports and, at the terminal event, the tool result (a pure
 * Mealy step). One `tools/call` has one result: after it nothing is emitted, not even for a new run.
 */
export function transcodeMcp(state: McpState, event: AgentEvent): [McpState, McpOutput] {
  if (state.finished) return [state, { progress: [], result: undefined }];
  switch (event.event_type) {
    case 'text_delta':
      return [{ ...state, text: state.text + event.delta }, NOTHING];
    case 'run_start':
      return report({ ...state, threadId: event.thread_id, runId: event.run_id, started: true }, 'starting agent run');
    case 'step_start':
      return report({ ...state, steps: state.steps + 1 }, `step ${state.steps + 1}`);
    case 'tool_call_ready':
      return report(state, `calling tool: ${event.name}`);
    case 'tool_call_done': {
      if (event.outcome !== 'suspended') return report(state, `tool ${event.result.tool_name} ${event.outcome}`);
      const scheduled = scheduleOf(event.result.suspension?.suspension) !== undefined;
      const message = event.result.message ?? event.outcome;
      const client = dispositionOf(event.result) === 'pending_client';
      const name = event.result.suspension?.pending.name ?? event.result.tool_name;
      const next = { ...state, suspended: [...state.suspended, { name, scheduled, client, message }] };
      return report(next, scheduled ? `tool ${event.result.tool_name} ${message}` : `tool ${event.result.tool_name} ${event.outcome}`);
    }
    case 'inference_complete':
      return report(state, `inference complete: model=${event.model} duration=${event.duration_ms}ms`);
    case 'activity_snapshot': {
      // A run taken up again after its process stopped says where it went on; the steps count on
      // from there (the step it goes on in, or asks the model again in, is the next `step_start`).
      const r = runResumedOf(event);
      if (r !== undefined) {
        const goesOn = r.from === 'tool_batch' || r.from === 'inference';
        return report(goesOn ? { ...state, steps: Math.max(0, r.step - 1) } : state, runResumedText(r));
      }
      const p = toolProgressOf(event);
      return p === undefined ? [state, NOTHING] : report(state, `tool ${p.tool_name}: ${progressText(p)}`);
    }
    case 'run_finish':
      if (event.termination.type === 'suspended' && waitsOnSchedule(state)) {
        // Nothing to answer: where the host wakes them the run goes on there, and the call says so.
        const waits = state.suspended.map((c) => c.message).join('; ');
        const said = state.serverWakes
          ? `agent run waiting: its scheduled calls (${waits}) go on by themselves on the server (run ${state.runId})`
          : `agent run suspended: its scheduled calls wait (${waits}) and nothing here wakes them`;
        return [
          { ...state, finished: true },
          { progress: [], result: resultOf(state, { type: 'suspended' }, said, !state.serverWakes) },
        ];
      }
      if (event.termination.type === 'suspended') {
        // What the run waits for is a tool's result its client is to send, not a decision: say which tools.
        const clients = state.suspended.filter((c) => c.client).map((c) => c.name);
        if (clients.length > 0) {
          // A call waiting on a decision beside them (an approval) is named too: answering the client
          // alone would not let the run go on.
          const decision = state.suspended.some((c) => !c.client && !c.scheduled) ? ', and for a decision this protocol cannot carry' : '';
          const said = `agent run suspended: it waits for its client to run ${clients.join(', ')}, whose result a tools/call cannot carry${decision}`;
          return [
            { ...state, finished: true },
            { progress: [], result: resultOf(state, { type: 'suspended' }, said) },
          ];
        }
      }
      return [
        { ...state, finished: true },
        { progress: [], result: resultOf(state, event.termination as unknown as JsonValue, failureOf(event.termination)) },
      ];
    case 'error':
      return [
        { ...state, finished: true },
        { progress: [], result: resultOf(state, { type: 'error', value: event.message }, `agent run failed: ${event.message}`) },
      ];
    case 'reasoning_delta':
    case 'tool_call_start':
    case 'tool_call_delta':
    case 'tool_call_stream_delta':
    case 'reasoning_encrypted_value':
    case 'messages_snapshot':
    case 'activity_delta':
    case 'tool_call_resumed':
    case 'step_end':
    case 'state_snapshot':
    case 'state_delta':
      return [state, NOTHING];
    default: {
      // An event type this version does not know (a newer instance's frame) is not shown.
      const unknown: never = event;
      void unknown;
      return [state, NOTHING];
    }
  }
}

const NOTHING: McpOutput = Object.freeze({ progress: Object.freeze([]), result: undefined });

function report(s: McpState, message: string): [McpState, McpOutput] {
  const progress = s.progress + 1;
  return [
    { ...s, progress },
    { progress: [{ progress, message }], result: undefined },
  ];
}

/** The result of a run whose events stopped before its end. */
export function finishMcp(state: McpState): McpToolResult | undefined {
  if (state.finished) return undefined;
  return resultOf(state, null, 'agent run ended without terminal status');
}

/** A whole run: its progress in order, then its one result. */
export function encodeMcp(events: readonly AgentEvent[], options: { readonly serverWakes?: boolean } = {}): { progress: McpProgress[]; result: McpToolResult } {
  let s = initialMcpState(options);
  const progress: McpProgress[] = [];
  let result: McpToolResult | undefined;
  for (const e of events) {
    const [next, out] = transcodeMcp(s, e);
    s = next;
    for (const p of out.progress) progress.push(p);
    result ??= out.result;
  }
  return { progress, result: result ?? (finishMcp(s) as McpToolResult) };
}

/**
 * The JSON-RPC messages a server sends for one `tools/call` (request id and progress token given),
 * one per line: the progress notifications, then the response.
 */
export function frameMcp(
  run: { progress: readonly McpProgress[]; result: McpToolResult },
  requestId: number | string = 1,
  progressToken: number | string = requestId,
): string {
  let out = '';
  for (const p of run.progress) {
    out += `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken, progress: p.progress, message: p.message } })}\n`;
  }
  return `${out}${JSON.stringify({ jsonrpc: '2.0', id: requestId, result: run.result })}\n`;
}
