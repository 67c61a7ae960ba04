// A recorded tool call given back, as the replay's tool port and a fork's recorded answers both give
// it: each report it made while it ran, then its outcome.
import { unreachable } from '../contract/never.ts';
import { ToolResults, type ToolResult } from '../contract/tool.ts';
import { MutationBatch } from '../core/state/mutation-batch.ts';
import { StateCommand, type ScheduledAction, type TypedEffect } from '../core/state/state-command.ts';
import { ToolFailure, type ToolCallContext, type ToolOutput } from '../runtime/tool.ts';
import type { ToolRecord } from './transcript.ts';

/** One report a recorded call made while it ran, made again through the call's context. */
export function reportAgain(ctx: ToolCallContext, a: ToolRecord['activity'][number]): Promise<void> {
  switch (a.method) {
    case 'activity':
      return ctx.reportActivity(a.args[0], a.args[1]);
    case 'activity_delta':
      return ctx.reportActivityDelta(a.args[0], a.args[1]);
    case 'stream_output':
      return ctx.streamOutput(a.args[0]);
    case 'progress':
      return ctx.reportProgress(a.args[0], a.args[1] ?? undefined, a.args[2] ?? undefined);
    default:
      return unreachable(a, 'recorded report');
  }
}

/** A recorded call's outcome as its tool gave it: its error thrown, else its result with the state it staged. */
export function recordedOutcome(r: ToolRecord, toolId: string): ToolResult | ToolOutput {
  if (r.tool_error !== undefined) throw new ToolFailure(r.tool_error);
  if (r.thrown !== undefined) throw new Error(r.thrown);
  const result = r.result ?? ToolResults.error(toolId, 'replay: the recording has no result');
  if (r.command === undefined) return result;
  const patch = new MutationBatch(
    undefined,
    r.command.ops.map((op) => (op.kind === 'clear' ? { kind: 'clear' as const, key: op.key } : { kind: 'update' as const, key: op.key, update: op.update })),
  );
  return { result, command: new StateCommand(patch, r.command.actions as unknown as ScheduledAction[], r.command.effects as unknown as TypedEffect[]) };
}
