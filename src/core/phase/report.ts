import type { Phase } from '../../contract/phase.ts';

/**
 * One effect as it left the core: its key and payload, the revision of the commit that carried it
 * (the snapshot its handler saw) and, if the handler failed, why.
 */
export interface EffectRecord {
  readonly key: string;
  readonly payload: unknown;
  readonly revision: number;
  readonly error?: string;
}

export interface EffectReport {
  readonly attempted: number;
  readonly dispatched: number;
  readonly failed: number;
  /** Every effect, in dispatch order. */
  readonly records: readonly EffectRecord[];
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

export const emptyEffectReport = (): EffectReport => ({ attempted: 0, dispatched: 0, failed: 0, records: [] });

export function addEffectReports(a: EffectReport, b: EffectReport): EffectReport {
  return {
    attempted: a.attempted + b.attempted,
    dispatched: a.dispatched + b.dispatched,
    failed: a.failed + b.failed,
    records: [...a.records, ...b.records],
  };
}
