import type { Phase } from '../../contract/phase.ts';

export interface EffectFailure {
  readonly key: string;
  readonly message: string;
}

export interface EffectReport {
  readonly attempted: number;
  readonly dispatched: number;
  readonly failed: number;
  readonly failures: readonly EffectFailure[];
}

/** What one phase run did (core-spec §2.2). `rounds` counts EXECUTE rounds that did work. */
export interface PhaseRunReport {
  readonly phase: Phase;
  readonly hooksRun: number;
  readonly deferredHooks: number;
  readonly commits: number;
  readonly rounds: number;
  readonly processedActions: number;
  readonly skippedActions: number;
  readonly failedActions: number;
  readonly effects: EffectReport;
}

export const emptyEffectReport = (): EffectReport => ({ attempted: 0, dispatched: 0, failed: 0, failures: [] });

export function addEffectReports(a: EffectReport, b: EffectReport): EffectReport {
  return {
    attempted: a.attempted + b.attempted,
    dispatched: a.dispatched + b.dispatched,
    failed: a.failed + b.failed,
    failures: [...a.failures, ...b.failures],
  };
}
