import { TerminationReasons, type TerminationReason } from '../../contract/lifecycle.ts';
import type { LoopInput } from '../../core/loop/step.ts';

// What the interpreter answers the step machine most often is made once: a step asks a dozen times.

/** A `next` that went through with nothing to report. */
export const RAN: LoopInput = Object.freeze({ type: 'ran', stop: undefined });
export const RAN_CANCELLED: LoopInput = Object.freeze({ type: 'ran', stop: TerminationReasons.cancelled() });
export const UNCONTROLLED: LoopInput = Object.freeze({ type: 'controlled', present: false, stop: undefined });
export const CHECKED: LoopInput = Object.freeze({ type: 'checked', stop: undefined });

export const ranOf = (stop: TerminationReason | undefined): LoopInput => (stop === undefined ? RAN : { type: 'ran', stop });
export const threwOf = (e: unknown): LoopInput => ({ type: 'threw', message: e instanceof Error ? e.message : String(e) });
