import { describeStateError, type StateError } from '../contract/errors.ts';
import { TerminationReasons, type TerminationReason } from '../contract/lifecycle.ts';
import type { Result } from '../contract/result.ts';
import { describePhaseError, type PhaseError } from '../core/phase/phase-error.ts';
import { andThen } from './maybe-promise.ts';

/**
 * Why the loop stops a run before its natural end, by its own doing: the run was cancelled, or the
 * engine failed (a phase error, a refused commit, a state that cannot be exported). Every part of a
 * step returns it and the caller passes it on; nothing in the loop throws it (ADR 0024). Failures of
 * foreign code (a sink, a store, a provider) still arrive as exceptions and become a `Halt` where the
 * run catches them.
 */
export type Halt = Extract<TerminationReason, { readonly type: 'cancelled' } | { readonly type: 'error' }>;

/** What a part of a step gives back: nothing (go on) or a halt, now or later. */
export type Halting = Halt | undefined | Promise<Halt | undefined>;

export const cancelled = (): Halt => TerminationReasons.cancelled() as Halt;

export const failed = (message: string): Halt => TerminationReasons.error(message) as Halt;

/** Whether `value` — a halt, or some other value of a step that has a `type` — is a halt. */
export function isHalt(value: unknown): value is Halt {
  if (typeof value !== 'object' || value === null) return false;
  const type = (value as { readonly type?: unknown }).type;
  return type === 'cancelled' || type === 'error';
}

/** A refused commit as a halt, or `undefined` when it was committed. */
export function haltOfCommit(failure: StateError | undefined): Halt | undefined {
  return failure === undefined ? undefined : failed(describeStateError(failure));
}

/** A phase run's error as a halt (its cancellation as `cancelled`), or `undefined` when it ran. */
export function haltOfPhase(r: Result<unknown, PhaseError>): Halt | undefined {
  if (r.ok) return undefined;
  return r.error.code === 'cancelled' ? cancelled() : failed(describePhaseError(r.error));
}

/**
 * `next()` once `first` went on; `first`'s halt otherwise. A promise only when `first` or `next` is
 * one. (Callers on a hot path test `first === undefined` themselves, so as not to make `next`.)
 */
export function andThenUnlessHalted<T = Halt | undefined>(first: Halting, next: () => T | Promise<T>): T | Halt | Promise<T | Halt> {
  if (first === undefined) return next();
  return andThen(first, nextUnlessHalted<T>, next);
}

/** `next()` once a part went on, its halt otherwise (named once: a halt that is here costs no closure). */
function nextUnlessHalted<T>(h: Halt | undefined, next: () => T | Promise<T>): T | Halt | Promise<T | Halt> {
  return h === undefined ? next() : h;
}

/** A failure of foreign code (a sink, a store), caught where the run catches it, as the run's termination. */
export function thrown(e: unknown): TerminationReason {
  return TerminationReasons.error(e instanceof Error ? e.message : String(e));
}
