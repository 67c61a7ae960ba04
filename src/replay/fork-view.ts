import type { JsonValue } from '../contract/json.ts';
import { stepsAfter } from '../core/steps-after.ts';
import { stepsBefore } from './fork.ts';
import { transcriptRecords } from './timeline.ts';

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

/** How a run ended, as its `end` record says: its steps over the whole run, its termination and answer. */
export interface ForkEnd {
  readonly steps: number;
  readonly termination: JsonValue | null;
  readonly response: string;
}

/**
 * A parent and its fork side by side from the fork point: a row per step after it, the first step
 * where they part (`parted_at`; absent when every step is the same), whether they ended alike, and
 * how each ended.
 */
export interface ForkView {
  readonly at_step: number;
  readonly parted_at?: number;
  readonly same_end: boolean;
  readonly rows: readonly ForkRow[];
  readonly parent: ForkEnd;
  readonly fork: ForkEnd;
}

/** The records a view reads, as far as it reads them. */
interface TranscriptRecord {
  readonly type?: string;
  readonly request?: { readonly run_state?: { readonly extensions?: { readonly [key: string]: unknown } } };
  readonly event?: Record<string, unknown>;
  readonly result?: Record<string, unknown>;
}

interface Call {
  readonly name: string;
  arguments: JsonValue | null;
  result: JsonValue | null;
}

/**
 * Each step of a transcript by its number over the whole run — counted as the run counts them, at
 * `step_start` (`stepsAfter`), from the steps before it (`from`, else its header's: a segment goes on
 * from them) — with what the model said in it and each call with what it gave; and how the run ended.
 */
function stepsOf(text: string, from?: number): { readonly steps: Map<number, { text: string; calls: Call[] }>; readonly end: ForkEnd } {
  const steps = new Map<number, { text: string; calls: Call[] }>();
  const calls = new Map<string, Call>();
  let at = from ?? 0;
  let end: ForkEnd | undefined;
  for (const record of transcriptRecords(text) as TranscriptRecord[]) {
    if (record.type === 'header') {
      at = from ?? stepsBefore(record.request?.run_state);
      continue;
    }
    if (record.type === 'end' && record.result !== undefined) {
      const r = record.result;
      end = {
        steps: typeof r['steps'] === 'number' ? r['steps'] : at,
        termination: (r['termination'] as JsonValue | undefined) ?? null,
        response: String(r['response'] ?? ''),
      };
      continue;
    }
    const e = record.event;
    if (record.type !== 'event' || e === undefined) continue;
    at = stepsAfter(at, e);
    if (e['event_type'] === 'step_start') steps.set(at, { text: '', calls: [] });
    const step = steps.get(at);
    switch (e['event_type']) {
      case 'text_delta':
        if (step !== undefined) step.text += String(e['delta']);
        break;
      case 'tool_call_start': {
        const call: Call = { name: String(e['name']), arguments: null, result: null };
        calls.set(String(e['id']), call);
        step?.calls.push(call);
        break;
      }
      case 'tool_call_ready': {
        const call = calls.get(String(e['id']));
        if (call !== undefined) call.arguments = (e['arguments'] as JsonValue | undefined) ?? null;
        break;
      }
      case 'tool_call_done':
      case 'tool_call_resumed': {
        // A call resumed after its step ended is shown in the step that asked for it.
        const call = calls.get(String(e['event_type'] === 'tool_call_done' ? e['id'] : e['target_id']));
        if (call !== undefined) call.result = (e['result'] as JsonValue | undefined) ?? null;
        break;
      }
      default:
        break;
    }
  }
  return { steps, end: end ?? { steps: at, termination: null, response: '' } };
}

const viewOf = (step: { text: string; calls: Call[] }): ForkStepView => ({ text: step.text, calls: step.calls.map((c) => ({ ...c })) });

/** The parent's steps after `atStep` beside the child's, matched by their number over the run. */
export function forkView(parent: string, child: string, atStep: number): ForkView {
  const p = stepsOf(parent);
  const c = stepsOf(child, atStep);
  const last = Math.max(atStep, ...p.steps.keys(), ...c.steps.keys());
  const rows: ForkRow[] = [];
  let parted: number | undefined;
  for (let n = atStep + 1; n <= last; n++) {
    const before = p.steps.get(n);
    const after = c.steps.get(n);
    if (before === undefined && after === undefined) continue;
    const parentStep = before === undefined ? undefined : viewOf(before);
    const forkStep = after === undefined ? undefined : viewOf(after);
    const same = parentStep !== undefined && forkStep !== undefined && JSON.stringify(parentStep) === JSON.stringify(forkStep);
    if (!same) parted ??= n;
    rows.push({ step: n, ...(parentStep !== undefined ? { parent: parentStep } : {}), ...(forkStep !== undefined ? { fork: forkStep } : {}), same });
  }
  const sameEnd = JSON.stringify(p.end) === JSON.stringify(c.end);
  return { at_step: atStep, ...(parted !== undefined ? { parted_at: parted } : {}), same_end: sameEnd, rows, parent: p.end, fork: c.end };
}
