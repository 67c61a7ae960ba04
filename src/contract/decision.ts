import type { JsonValue } from './json.ts';
import type { ToolCallResume } from './tool.ts';

/** A decision for a suspended call, addressed by call id or suspension id. */
export interface Decision {
  readonly targetId: string;
  readonly decision: ToolCallResume;
}

/** A decision, made at `now`; `result` and `reason` only when given. */
export function decisionFor(
  targetId: string,
  action: ToolCallResume['action'],
  now: number,
  fields: { readonly result?: JsonValue; readonly reason?: string; readonly decisionId?: string } = {},
): Decision {
  return {
    targetId,
    decision: {
      decision_id: fields.decisionId ?? '',
      action,
      ...(fields.result !== undefined ? { result: fields.result } : {}),
      ...(fields.reason !== undefined ? { reason: fields.reason } : {}),
      updated_at: now,
    },
  };
}
