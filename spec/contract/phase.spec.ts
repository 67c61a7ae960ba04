import { describe, expect, it } from 'vitest';
import { isRunLevelPhase, PHASES, PhaseSchema } from '../../src/contract/phase.ts';

describe('Phase', () => {
  it('has the 8 phases of the book, in execution order', () => {
    expect(PHASES).toEqual([
      'run_start',
      'step_start',
      'before_inference',
      'after_inference',
      'before_tool_execute',
      'after_tool_execute',
      'step_end',
      'run_end',
    ]);
    expect(PhaseSchema.safeParse('tool_gate').success).toBe(false);
  });

  it('marks run_start and run_end as run-level', () => {
    expect(PHASES.filter(isRunLevelPhase)).toEqual(['run_start', 'run_end']);
  });
});
