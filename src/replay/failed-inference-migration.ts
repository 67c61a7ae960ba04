import type { InferenceExecutionError } from '../contract/errors.ts';
import { serialiseEvent } from '../contract/event.ts';
import { describeInferenceError } from '../runtime/errors.ts';
import { jsonObjectOf, type JsonObject } from './lines.ts';

/**
 * Rewrites the lines of a format-4 transcript recorded while a failed inference still emitted
 * `inference_complete`, as the runtime now runs it (docs/adr/0036-a-failed-inference.md):
 *
 * - the `inference_complete` of an inference whose provider failed (its last `llm` record holds an
 *   `error` other than `cancelled`, the stream was not cut by a cancel) is dropped;
 * - when that failure ended the run — the step's next `run_finish`, before any `step_start`, ends
 *   `error` with the failure's text — an `error` event `{message, code}` takes the place the loop
 *   now emits it in: once the after-inference phase has read the clock (the first `now` draw after
 *   the dropped `inference_complete`), before the step's end reads it again (StepCompleted) — so
 *   after the calls the failed stream opened are closed, and before the step's `state_snapshot`;
 * - every event's `seq` is renumbered, and each `decision` and `cancel` record's `after_event` counts
 *   the events the run has emitted by then.
 *
 * Nothing else changes: env draws, inference and tool records, the header and the `end` record are
 * the same (the loop still reads the clock around a failed inference, for the tap), and every line
 * that needs no change is kept byte for byte — a transcript without a failed inference comes back
 * as it was. Pure: text in, text out; it runs nothing. A line that is not JSON is kept as it is
 * (reading it is the replayer's business).
 */
export function migrateFailedInferences(text: string): string {
  const lines = text.split('\n');
  const records = lines.map(parsed);
  // Per line: what the new transcript writes for it.
  const drop = new Set<number>();
  const errorBefore = new Map<number, string>();
  let last: { readonly llm: Json; readonly afterCancel: boolean } | undefined;
  let cancelled = false;
  for (let i = 0; i < records.length; i++) {
    const r = records[i];
    if (r === undefined) continue;
    if (r['type'] === 'cancel') cancelled = true;
    else if (r['type'] === 'llm') last = { llm: r, afterCancel: cancelled };
    else if (r['type'] === 'event' && eventTypeOf(r) === 'inference_complete') {
      const failure = last === undefined || last.afterCancel ? undefined : failureOf(last.llm);
      last = undefined;
      if (failure === undefined) continue;
      drop.add(i);
      const error = endingError(records, i, failure);
      if (error !== undefined) errorBefore.set(error.before, serialiseEvent({ event_type: 'error', message: error.message, code: failure.code }));
    }
  }
  if (drop.size === 0) return text;

  // Events in order: the old ones kept, the new ones inserted; `emitted[n]` is how many new events
  // stand for the first n old ones.
  const out: string[] = [];
  const emitted: number[] = [0];
  let seq = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const r = records[i];
    const isEvent = r?.['type'] === 'event';
    const inserted = errorBefore.get(i);
    if (inserted !== undefined) out.push(`{"type":"event","seq":${seq++},"event":${inserted}}`);
    if (isEvent) {
      if (!drop.has(i)) out.push(withSeq(line, seq++));
      emitted.push(seq);
      continue;
    }
    if (r !== undefined && (r['type'] === 'decision' || r['type'] === 'cancel') && typeof r['after_event'] === 'number') {
      const after = emitted[r['after_event']] ?? seq;
      out.push(after === r['after_event'] ? line : JSON.stringify({ ...r, after_event: after }));
      continue;
    }
    out.push(line);
  }
  return out.join('\n');
}

type Json = JsonObject;

const parsed = (line: string): Json | undefined => (line === '' ? undefined : jsonObjectOf(line));

const eventTypeOf = (r: Json): unknown => (r['event'] as { event_type?: unknown } | null | undefined)?.event_type;

/**
 * The failure of an inference, from its last `llm` record: none when it answered, or was cut short
 * or cancelled (a cancelled inference still completes; so does one that failed after the run was
 * cancelled, which the caller checks: its record follows a `cancel` record).
 */
function failureOf(llm: Json): InferenceExecutionError | undefined {
  if (llm['interrupted'] === true) return undefined;
  const error = llm['error'] as InferenceExecutionError | undefined;
  return error === undefined || error.code === 'cancelled' ? undefined : error;
}

/**
 * Whether the failure whose `inference_complete` is on line `at` ended the run: the first
 * `run_finish` after it, with no `step_start` between, ends `error` with the failure's text. Then
 * the line its `error` event goes before: the one after the after-inference phase's clock reading
 * (the first `now` draw after it), which comes before the step's `state_snapshot`.
 */
function endingError(
  records: readonly (Json | undefined)[],
  at: number,
  failure: InferenceExecutionError,
): { readonly before: number; readonly message: string } | undefined {
  const message = describeInferenceError(failure);
  let before: number | undefined;
  let read = false;
  for (let j = at + 1; j < records.length; j++) {
    const r = records[j];
    if (!read && r?.['type'] === 'env' && r['draw'] === 'now') {
      read = true;
      before = j + 1;
      continue;
    }
    if (r?.['type'] !== 'event') continue;
    const type = eventTypeOf(r);
    if (type === 'step_start' || type === 'run_start') return undefined;
    if (type === 'state_snapshot' && !read) return undefined;
    if (type === 'run_finish') {
      const termination = (r['event'] as { termination?: { type?: unknown; value?: unknown } }).termination;
      return termination?.type === 'error' && termination.value === message && before !== undefined ? { before, message } : undefined;
    }
  }
  return undefined;
}

/** An event line with its `seq` replaced, its payload kept byte for byte. */
function withSeq(line: string, seq: number): string {
  return line.replace(/^\{"type":"event","seq":\d+,/, `{"type":"event","seq":${seq},`);
}
