import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { StreamPart } from '../../../src/contract/stream.ts';
import { StreamAccumulator } from '../../../src/core/inference/accumulator.ts';

const run = (parts: StreamPart[], cancelled = false) => {
  const acc = new StreamAccumulator();
  for (const p of parts) acc.push(p);
  return acc.finish({ cancelled });
};

describe('StreamAccumulator (core-spec §3.11)', () => {
  it('joins text and reasoning deltas and keeps usage and the stop reason', () => {
    const r = run([
      { type: 'reasoning_delta', delta: 'thinking ' },
      { type: 'reasoning_delta', delta: 'hard' },
      { type: 'reasoning_encrypted', value: 'opaque' },
      { type: 'text_delta', delta: 'Hel' },
      { type: 'text_delta', delta: 'lo' },
      { type: 'usage', usage: { prompt_tokens: 3 } },
      { type: 'finish', stop_reason: 'EndTurn' },
    ]);
    expect(r).toEqual({
      content: [{ type: 'text', text: 'Hello' }],
      reasoning: 'thinking hard',
      usage: { prompt_tokens: 3 },
      toolCalls: [],
      stopReason: 'EndTurn',
      hasIncompleteToolCalls: false,
    });
  });

  it('assembles tool calls in start order from argument deltas; empty arguments read as {}', () => {
    const acc = new StreamAccumulator();
    acc.push({ type: 'tool_call_start', id: 'a', name: 'x' });
    acc.push({ type: 'tool_call_start', id: 'b', name: 'y' });
    acc.push({ type: 'tool_call_delta', id: 'a', args_delta: '{"k":' });
    acc.push({ type: 'tool_call_delta', id: 'a', args_delta: '1}' });
    acc.push({ type: 'tool_call_start', id: 'a', name: 'ignored-duplicate' });
    acc.push({ type: 'tool_call_delta', id: 'ghost', args_delta: '{}' });
    expect(acc.readyCalls()).toEqual([
      { id: 'a', name: 'x', arguments: { k: 1 } },
      { id: 'b', name: 'y', arguments: {} },
    ]);
    expect(acc.text).toBe('');
    expect(acc.finish().toolCalls).toHaveLength(2);
  });

  it('drops a call whose arguments never parse and flags it', () => {
    const r = run([
      { type: 'tool_call_start', id: 'a', name: 'x' },
      { type: 'tool_call_delta', id: 'a', args_delta: '{"k":' },
      { type: 'tool_call_start', id: 'b', name: 'y' },
      { type: 'finish', stop_reason: 'MaxTokens', has_incomplete_tool_calls: false },
    ]);
    expect(r.toolCalls).toEqual([{ id: 'b', name: 'y', arguments: {} }]);
    expect(r.hasIncompleteToolCalls).toBe(true);
    expect(run([{ type: 'finish', stop_reason: 'EndTurn', has_incomplete_tool_calls: true }]).hasIncompleteToolCalls).toBe(true);
  });

  it('takes explicit ready arguments over the delta text, also for a call never started', () => {
    const r = run([
      { type: 'tool_call_start', id: 'a', name: 'x' },
      { type: 'tool_call_delta', id: 'a', args_delta: 'garbage' },
      { type: 'tool_call_ready', id: 'a', name: 'x', arguments: { ok: true } },
      { type: 'tool_call_ready', id: 'b', name: 'y', arguments: [1] },
    ]);
    expect(r.toolCalls).toEqual([
      { id: 'a', name: 'x', arguments: { ok: true } },
      { id: 'b', name: 'y', arguments: [1] },
    ]);
    expect(r.hasIncompleteToolCalls).toBe(false);
  });

  it('a cancelled stream keeps its text but no tool calls and ends EndTurn', () => {
    const r = run(
      [
        { type: 'text_delta', delta: 'par' },
        { type: 'tool_call_start', id: 'a', name: 'x' },
      ],
      true,
    );
    expect(r).toEqual({ content: [{ type: 'text', text: 'par' }], reasoning: '', toolCalls: [], stopReason: 'EndTurn', hasIncompleteToolCalls: false });
  });

  it('property: splitting the argument text into any deltas gives the same call', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.array(fc.nat(), { maxLength: 5 }), (args, cuts) => {
        const text = JSON.stringify(args);
        const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
        const parts: StreamPart[] = [{ type: 'tool_call_start', id: 'a', name: 'x' }];
        let prev = 0;
        for (const p of [...points, text.length]) {
          parts.push({ type: 'tool_call_delta', id: 'a', args_delta: text.slice(prev, p) });
          prev = p;
        }
        expect(run(parts).toolCalls).toEqual([{ id: 'a', name: 'x', arguments: JSON.parse(text) }]);
      }),
      { numRuns: 200 },
    );
  });
});
