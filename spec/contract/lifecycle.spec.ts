import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canTransitionRun,
  canTransitionToolCall,
  deriveRunStatus,
  fromDoneReason,
  isTerminalRunStatus,
  isTerminalToolCallStatus,
  RunStatusSchema,
  TerminationReasonSchema,
  TerminationReasons,
  toRunStatus,
  ToolCallStatusSchema,
  type RunStatus,
  type ToolCallStatus,
} from '../../src/contract/lifecycle.ts';
import * as arb from '../../src/testing/arbitraries.ts';

describe('TerminationReason', () => {
  it('writes unit variants without a value key and payload variants with one', () => {
    expect(JSON.stringify(TerminationReasonSchema.parse(TerminationReasons.naturalEnd()))).toBe('{"type":"natural_end"}');
    expect(JSON.stringify(TerminationReasonSchema.parse(TerminationReasons.stopped('c', 'd')))).toBe('{"type":"stopped","value":{"code":"c","detail":"d"}}');
    expect(JSON.stringify(TerminationReasonSchema.parse(TerminationReasons.blocked('no')))).toBe('{"type":"blocked","value":"no"}');
  });

  it('reads plugin_requested as behavior_requested', () => {
    expect(TerminationReasonSchema.parse({ type: 'plugin_requested' })).toEqual({ type: 'behavior_requested' });
  });

  it('maps only suspended to waiting', () => {
    fc.assert(
      fc.property(arb.terminationReason(), (reason) => {
        expect(toRunStatus(reason).status).toBe(reason.type === 'suspended' ? 'waiting' : 'done');
      }),
      { numRuns: 200 },
    );
  });

  it('round-trips every done termination through its done reason (stop detail aside)', () => {
    fc.assert(
      fc.property(arb.terminationReason(), (reason) => {
        const { doneReason } = toRunStatus(reason);
        if (doneReason === undefined) return;
        const back = fromDoneReason(doneReason);
        const expected = reason.type === 'stopped' ? TerminationReasons.stopped(reason.value.code) : reason;
        expect(back).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  });

  it('reads unknown done reasons as errors carrying the text', () => {
    expect(fromDoneReason('')).toEqual(TerminationReasons.error(''));
    expect(fromDoneReason('weird')).toEqual(TerminationReasons.error('weird'));
    expect(fromDoneReason('blocked:a:b')).toEqual(TerminationReasons.blocked('a:b'));
    expect(fromDoneReason('other:x')).toEqual(TerminationReasons.error('other:x'));
  });
});

describe('RunStatus transitions (book: Run 生命周期与 Phases)', () => {
  const legal: [RunStatus, RunStatus][] = [
    ['created', 'running'],
    ['created', 'done'],
    ['running', 'waiting'],
    ['running', 'done'],
    ['waiting', 'running'],
    ['waiting', 'done'],
  ];
  it('allows exactly the diagram arrows plus self-loops', () => {
    for (const from of RunStatusSchema.options) {
      for (const to of RunStatusSchema.options) {
        const expected = from === to || legal.some(([a, b]) => a === from && b === to);
        expect(canTransitionRun(from, to), `${from}→${to}`).toBe(expected);
      }
    }
    expect(isTerminalRunStatus('done')).toBe(true);
    expect(isTerminalRunStatus('waiting')).toBe(false);
  });
});

describe('ToolCallStatus transitions (core-spec §4.5)', () => {
  const table: Record<ToolCallStatus, ToolCallStatus[]> = {
    new: ['running', 'suspended', 'resuming', 'succeeded', 'failed', 'cancelled'],
    running: ['suspended', 'succeeded', 'failed', 'cancelled', 'indeterminate'],
    suspended: ['resuming', 'cancelled'],
    resuming: ['running', 'suspended', 'succeeded', 'failed', 'cancelled'],
    succeeded: [],
    failed: [],
    cancelled: [],
    indeterminate: [],
  };
  it('matches the transition table, self always allowed, terminal states closed', () => {
    for (const from of ToolCallStatusSchema.options) {
      for (const to of ToolCallStatusSchema.options) {
        expect(canTransitionToolCall(from, to), `${from}→${to}`).toBe(from === to || table[from].includes(to));
      }
    }
    expect(ToolCallStatusSchema.options.filter(isTerminalToolCallStatus)).toEqual(['succeeded', 'failed', 'cancelled', 'indeterminate']);
  });

  it('indeterminate: reached from running alone (a call that never left has a known outcome), and closed', () => {
    expect(ToolCallStatusSchema.options.filter((from) => from !== 'indeterminate' && canTransitionToolCall(from, 'indeterminate'))).toEqual(['running']);
    expect(canTransitionToolCall('new', 'indeterminate')).toBe(false);
    expect(ToolCallStatusSchema.options.filter((to) => canTransitionToolCall('indeterminate', to))).toEqual(['indeterminate']);
    expect(deriveRunStatus(['indeterminate', 'succeeded'])).toBe('done');
    expect(deriveRunStatus(['indeterminate', 'suspended'])).toBe('waiting');
  });
});
