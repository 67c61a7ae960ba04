import { describeStateError, type StateError } from '../../contract/errors.ts';
import type { Phase } from '../../contract/phase.ts';

/** Why a phase run failed: a state error, or a hook that threw. */
export type PhaseError = StateError | { readonly code: 'hook_failed'; readonly phase: Phase; readonly pluginId: string; readonly message: string };

/**
 * Thrown by a hook or handler to fail with a specific `StateError` (the TS form of a Rust hook
 * returning `Err(StateError)`). Anything else thrown becomes `hook_failed` or a dead letter.
 */
export class StateFailure extends Error {
  readonly error: StateError;
  constructor(error: StateError) {
    super(describeStateError(error));
    this.name = 'StateFailure';
    this.error = error;
  }
}

export function describePhaseError(e: PhaseError): string {
  return e.code === 'hook_failed' ? `hook of plugin ${e.pluginId} failed in ${e.phase}: ${e.message}` : describeStateError(e);
}

export function errorText(e: unknown): string {
  if (e instanceof StateFailure) return describeStateError(e.error);
  if (e instanceof Error) return e.message;
  return String(e);
}
