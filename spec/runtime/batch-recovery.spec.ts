import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolResults } from '../../src/contract/tool.ts';
import { batchCall, type BatchCall } from '../../src/core/tools/batch.ts';
import { recoveryPlan } from '../../src/runtime/loop/batch-recovery.ts';
import type { ToolCallState, ToolCallStateMap } from '../../src/runtime/loop-keys.ts';
import { defineTool } from '../../src/runtime/tool.ts';

/** What becomes of each stored call of a batch its run's process left behind. */

const tool = (id: string, recovery?: 'replay_safe') =>
  defineTool({
    id,
    description: id,
    args: z.object({}).loose(),
    ...(recovery !== undefined ? { recovery } : {}),
    execute: () => ToolResults.success(id, null),
  });
const tools = new Map([
  ['lookup', tool('lookup', 'replay_safe')],
  ['charge', tool('charge')],
]);
const call = (id: string, name: string, status: BatchCall['status']): BatchCall =>
  batchCall({ id, name, arguments: {} }, status, 'replay_tool_call', undefined, undefined, undefined, undefined, false);
const state = (id: string, name: string, status: ToolCallState['status'], extra: Partial<ToolCallState> = {}): ToolCallState => ({
  call_id: id,
  tool_name: name,
  arguments: {},
  status,
  updated_at: 0,
  resume_mode: 'replay_tool_call',
  ...extra,
});
const REPLAY_SAFE = { c2: { mode: 'replay_safe' as const, max_attempts: 3 }, c3: { mode: 'replay_safe' as const, max_attempts: 3 } };

describe('recoveryPlan', () => {
  it('dispatches a call that never left, replays one that left where tool and pinned policy allow, and keeps a settled one', () => {
    const calls = [call('c1', 'charge', 'new'), call('c2', 'lookup', 'running'), call('c3', 'lookup', 'succeeded')];
    const states: ToolCallStateMap = {
      c1: state('c1', 'charge', 'new'),
      c2: state('c2', 'lookup', 'running', { attempt: 2 }),
      c3: state('c3', 'lookup', 'succeeded'),
    };
    const planned = recoveryPlan(calls, states, tools, REPLAY_SAFE);
    if (typeof planned === 'string') throw new Error(planned);
    expect([...planned.plan]).toEqual([
      ['c1', { type: 'dispatch' }],
      ['c2', { type: 'replay' }],
    ]);
    expect([...planned.attempts]).toEqual([['c2', 3]]);
  });

  it('never replays a call that was running on a decision, whatever its recovery: a replay would run it without the decision', () => {
    const calls = [call('c2', 'lookup', 'running')];
    for (const extra of [{ suspension_id: 's-c2' }, { resume_input: { decision_id: 'd', action: 'resume' as const, updated_at: 0 } }]) {
      const planned = recoveryPlan(calls, { c2: state('c2', 'lookup', 'running', extra) }, tools, REPLAY_SAFE);
      if (typeof planned === 'string') throw new Error(planned);
      expect(planned.plan.get('c2')).toMatchObject({
        type: 'indeterminate',
        result: {
          status: 'error',
          message:
            'The outcome of tool call c2 (lookup) is unknown: it was dispatched before the run was interrupted and was not run again, because it was running on a decision, which running it again would not carry.',
        },
      });
    }
  });

  it('ends a call of a tool that says nothing of its recovery indeterminate, and refuses a batch with a call taking a decision', () => {
    const planned = recoveryPlan([call('c1', 'charge', 'running')], { c1: state('c1', 'charge', 'running') }, tools, undefined);
    if (typeof planned === 'string') throw new Error(planned);
    expect(planned.plan.get('c1')?.type).toBe('indeterminate');
    expect(recoveryPlan([call('c1', 'charge', 'resuming')], { c1: state('c1', 'charge', 'resuming') }, tools, undefined)).toBe(
      'call c1 was taking a decision when the run stopped',
    );
  });
});
