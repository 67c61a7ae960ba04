import type { JsonValue } from '../contract/json.ts';
import { timelineOf, transcriptRecords, type Timeline, type TimelineStep } from './timeline.ts';

/** A step as the side-by-side view shows it: what the model said, and each call with what it gave. */
export interface ForkStepView {
  readonly text: string;
  readonly calls: readonly { readonly name: string; readonly arguments: JsonValue | null; readonly result: JsonValue | null }[];
}

/** One step of the run after the fork point, in the parent and in the fork (absent where that run had ended). */
export interface ForkRow {
  readonly step: number;
  readonly parent?: ForkStepView;
  readonly fork?: ForkStepView;
  readonly same: boolean;
}

/** How a run ended, as the view says it: its steps over the whole run, fork point included. */
export interface ForkEnd {
  readonly steps: number;
  readonly termination: JsonValue | null;
  readonly response: string;
}

/**
 * A parent and its fork side by side from the fork point: a row per step after it, the first step
 * where they part (`parted_at`; absent when every step is the same), and how each ended.
 */
export interface ForkView {
  readonly at_step: number;
  readonly parted_at?: number;
  readonly rows: readonly ForkRow[];
  readonly parent: ForkEnd;
  readonly fork: ForkEnd;
}

const asJson = (x: unknown): JsonValue | null => (x === undefined ? null : (x as JsonValue));

function viewOf(step: TimelineStep): ForkStepView {
  return {
    text: step.inference.text,
    calls: step.tools.map((c) => ({ name: c.name, arguments: asJson(c.arguments), result: asJson(c.resumed_result ?? c.result ?? c.failure) })),
  };
}

/** A step that did something: an inference asked or a call made (a segment opens with an empty one before its first step). */
const acted = (step: TimelineStep): boolean => step.inference.requests.length > 0 || step.inference.text !== '' || step.tools.length > 0;

const endOf = (t: Timeline): ForkEnd => ({ steps: t.step_count, termination: asJson(t.termination), response: t.response ?? '' });

/**
 * The parent's steps after `atStep` beside the child's (a segment that goes on from there: its
 * steps, in order, are the parent's `atStep + 1` on).
 */
export function forkView(parent: string, child: string, atStep: number): ForkView {
  const p = timelineOf(transcriptRecords(parent));
  const c = timelineOf(transcriptRecords(child));
  const before = p.steps.filter((s) => s.index > atStep && acted(s)).map(viewOf);
  const after = c.steps.filter(acted).map(viewOf);
  const rows: ForkRow[] = [];
  let parted: number | undefined;
  for (let i = 0; i < Math.max(before.length, after.length); i++) {
    const parentStep = before[i];
    const forkStep = after[i];
    const same = parentStep !== undefined && forkStep !== undefined && JSON.stringify(parentStep) === JSON.stringify(forkStep);
    const step = atStep + 1 + i;
    if (!same) parted ??= step;
    rows.push({ step, ...(parentStep !== undefined ? { parent: parentStep } : {}), ...(forkStep !== undefined ? { fork: forkStep } : {}), same });
  }
  // The child is a segment: its steps count from the fork point on.
  const fork = endOf(c);
  return { at_step: atStep, ...(parted !== undefined ? { parted_at: parted } : {}), rows, parent: endOf(p), fork: { ...fork, steps: atStep + fork.steps } };
}
