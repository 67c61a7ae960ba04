import type { AgentEvent } from './event.ts';

/** The activity type of a tool's progress reports (book: 上报 Tool 进度). */
export const TOOL_CALL_PROGRESS = 'tool-call-progress';

/** What a `tool-call-progress` activity holds (`ToolCallProgressState`, schema `tool-call-progress.v1`). */
export interface ToolCallProgress {
  readonly call_id: string;
  readonly tool_name: string;
  readonly status: string;
  /** 0…1, when the tool knows how far it is. */
  readonly progress?: number;
  readonly message?: string;
}

/** The progress an event reports, when it is a `tool-call-progress` snapshot; `undefined` otherwise. */
export function toolProgressOf(event: AgentEvent): ToolCallProgress | undefined {
  if (event.event_type !== 'activity_snapshot' || event.activity_type !== TOOL_CALL_PROGRESS) return undefined;
  const c = event.content as { call_id?: unknown; tool_name?: unknown; status?: unknown; progress?: unknown; message?: unknown } | null;
  if (c === null || typeof c !== 'object') return undefined;
  return {
    call_id: typeof c.call_id === 'string' ? c.call_id : event.message_id,
    tool_name: typeof c.tool_name === 'string' ? c.tool_name : '',
    status: typeof c.status === 'string' ? c.status : 'running',
    ...(typeof c.progress === 'number' ? { progress: c.progress } : {}),
    ...(typeof c.message === 'string' ? { message: c.message } : {}),
  };
}

/** One line for a person: `step 1 of 2 (50%)`, or the status when there is no message. */
export const progressText = (p: ToolCallProgress): string => `${p.message ?? p.status}${p.progress !== undefined ? ` (${Math.round(p.progress * 100)}%)` : ''}`;
