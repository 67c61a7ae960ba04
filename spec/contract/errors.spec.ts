import { describe, expect, it } from 'vitest';
import { describeStateError, StateErrorSchema, type StateError } from '../../src/contract/errors.ts';

const all: StateError[] = [
  { code: 'revision_conflict', expected: 1, actual: 2 },
  { code: 'mutation_base_revision_mismatch', left: 1, right: 2 },
  { code: 'plugin_already_installed', name: 'p' },
  { code: 'plugin_not_installed', name: 'p' },
  { code: 'key_already_registered', key: 'k' },
  { code: 'unknown_key', key: 'k' },
  { code: 'key_decode', key: 'k', message: 'm' },
  { code: 'key_encode', key: 'k', message: 'm' },
  { code: 'handler_already_registered', key: 'k' },
  { code: 'effect_handler_already_registered', key: 'k' },
  { code: 'phase_run_loop_exceeded', phase: 'step_end', maxRounds: 16 },
  { code: 'unknown_scheduled_action_handler', key: 'k' },
  { code: 'unknown_effect_handler', key: 'k' },
  { code: 'parallel_merge_conflict', key: 'k' },
  { code: 'tool_already_registered', toolId: 't' },
  { code: 'cancelled' },
  { code: 'plugin_register_failed', name: 'p', message: 'm' },
];

describe('StateError', () => {
  it('covers every variant of the book (错误 → StateError) with a distinct description', () => {
    expect(new Set(all.map((e) => e.code)).size).toBe(StateErrorSchema.options.length);
    const texts = all.map(describeStateError);
    expect(new Set(texts).size).toBe(all.length);
    for (const e of all) expect(StateErrorSchema.parse(e)).toEqual(e);
  });

  it('keeps the 0.6 display strings', () => {
    expect(describeStateError({ code: 'revision_conflict', expected: 1, actual: 2 })).toBe('revision conflict: expected 1, actual 2');
    expect(describeStateError({ code: 'parallel_merge_conflict', key: 'k' })).toBe('parallel merge conflict on exclusive key: k');
    expect(describeStateError({ code: 'phase_run_loop_exceeded', phase: 'run_start', maxRounds: 16 })).toBe('phase run_start did not converge after 16 rounds');
  });
});
