import { z } from 'zod';

/**
 * The 8 phases of the book (Run 生命周期与 Phases), in execution order. 0.6 adds a `tool_gate`
 * enum value that never runs as a phase; it is not part of this contract (docs/parity.md).
 */
export const PHASES = [
  'run_start',
  'step_start',
  'before_inference',
  'after_inference',
  'before_tool_execute',
  'after_tool_execute',
  'step_end',
  'run_end',
] as const;

export const PhaseSchema = z.enum(PHASES);
export type Phase = z.infer<typeof PhaseSchema>;

export const isRunLevelPhase = (phase: Phase): boolean => phase === 'run_start' || phase === 'run_end';
