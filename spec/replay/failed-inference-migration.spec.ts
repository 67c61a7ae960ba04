import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrateFailedInferences } from '../../src/replay/failed-inference-migration.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';

const fixtures = resolve(import.meta.dirname, '../../fixtures');
const corpus = readdirSync(join(fixtures, 'runs'))
  .filter((f) => f.endsWith('.jsonl'))
  .sort();
/** A corpus run as the corpus holds it now (already rewritten). */
const text = (file: string): string => readFileSync(join(fixtures, 'runs', file), 'utf8');
/** A corpus run as format 4 recorded it, before the rewrite (fixtures/runs-format-4 keeps those it changes). */
const v4 = (file: string): string => readFileSync(join(fixtures, 'runs-format-4', file), 'utf8');
/** The run before the rewrite: its format-4 recording when the rewrite changes it, else the corpus run. */
const recordedBefore = (file: string): string => (CHANGED.includes(file) ? v4(file) : text(file));
const eventLines = (t: string): string[] => t.split('\n').filter((l) => l.startsWith('{"type":"event",'));
const eventTypes = (t: string): string[] => eventLines(t).map((l) => /"event_type":"([a-z_]+)"/.exec(l)?.[1] ?? '');

/** The corpus runs whose provider failed: one stopped by a policy, two answered by a fallback after retries, one failed. */
const FAILING = [
  '21-stop-consecutive-errors.jsonl',
  '25-retry-with-fallback-model.jsonl',
  '26-circuit-breaker-open.jsonl',
  '27-inference-error.jsonl',
] as const;
const CHANGED: readonly string[] = ['21-stop-consecutive-errors.jsonl', '27-inference-error.jsonl'];

describe('migrateFailedInferences: a format-4 transcript as the runtime now runs a failed inference', () => {
  it.each(FAILING)('%s, rewritten, replays identical under the runtime, with the events the corpus now holds', async (file) => {
    const rewritten = migrateFailedInferences(recordedBefore(file));
    const report = await replayTranscript(rewritten);
    expect(report.divergence).toBeUndefined();
    expect(report.firstDifference).toBeUndefined();
    expect(report.identical).toBe(true);
    expect(eventLines(rewritten)).toEqual(eventLines(text(file)));
  });

  it('21 (a consecutive_errors stop): the three failed inferences lose their inference_complete, no error event; seqs count again from 0', () => {
    const recorded = v4('21-stop-consecutive-errors.jsonl');
    const after = migrateFailedInferences(recorded);
    expect(eventTypes(recorded).filter((t) => t === 'inference_complete')).toHaveLength(3);
    expect(eventTypes(after)).toEqual(eventTypes(recorded).filter((t) => t !== 'inference_complete'));
    expect(eventLines(after).map((l) => Number(/"seq":(\d+)/.exec(l)?.[1]))).toEqual(eventLines(after).map((_, i) => i));
    // Only event lines change: every other line is kept byte for byte.
    const others = (t: string): string[] => t.split('\n').filter((l) => !l.startsWith('{"type":"event",'));
    expect(others(after)).toEqual(others(recorded));
  });

  it('27 (the failure ends the run): an error event takes the place of inference_complete, before the step closes', () => {
    const after = migrateFailedInferences(v4('27-inference-error.jsonl'));
    expect(eventTypes(after)).toEqual(['run_start', 'step_start', 'error', 'state_snapshot', 'step_end', 'state_snapshot', 'run_finish']);
    expect(eventLines(after)[2]).toBe('{"type":"event","seq":2,"event":{"event_type":"error","message":"timeout: no answer in time","code":"timeout"}}');
  });

  it('25 and 26 (the retry absorbed the failures, the fallback answered): unchanged', () => {
    for (const file of ['25-retry-with-fallback-model.jsonl', '26-circuit-breaker-open.jsonl']) expect(migrateFailedInferences(text(file))).toBe(text(file));
  });

  it.each(FAILING)('%s: rewriting it again changes nothing (the rewrite may run twice)', (file) => {
    const once = migrateFailedInferences(recordedBefore(file));
    expect(migrateFailedInferences(once)).toBe(once);
  });

  it('every other corpus run comes back byte for byte (and so do the rewritten ones)', () => {
    for (const file of corpus) expect(migrateFailedInferences(text(file)), file).toBe(text(file));
  });

  it('a decision or cancel after a dropped event counts the events the run emits by then', () => {
    const lines = [
      '{"type":"header","format":"awaken-transcript/4"}',
      '{"type":"event","seq":0,"event":{"event_type":"run_start","thread_id":"t","run_id":"r"}}',
      '{"type":"event","seq":1,"event":{"event_type":"step_start","message_id":"m1"}}',
      '{"type":"llm","seq":1,"digest":"d1","request":{},"parts":[],"error":{"code":"provider","message":"down"}}',
      '{"type":"event","seq":2,"event":{"event_type":"inference_complete","model":"m","duration_ms":0}}',
      '{"type":"event","seq":3,"event":{"event_type":"step_end"}}',
      '{"type":"event","seq":4,"event":{"event_type":"step_start","message_id":"m2"}}',
      '{"type":"llm","seq":2,"digest":"d2","request":{},"parts":[]}',
      '{"type":"event","seq":5,"event":{"event_type":"inference_complete","model":"m","duration_ms":0}}',
      '{"type":"event","seq":6,"event":{"event_type":"run_finish","thread_id":"t","run_id":"r","termination":{"type":"suspended"}}}',
      '{"type":"decision","after_event":7,"decisions":[]}',
      '{"type":"cancel","after_event":2}',
      '',
    ];
    const after = migrateFailedInferences(lines.join('\n')).split('\n');
    expect(after.filter((l) => l.startsWith('{"type":"decision"') || l.startsWith('{"type":"cancel"'))).toEqual([
      '{"type":"decision","after_event":6,"decisions":[]}',
      '{"type":"cancel","after_event":2}',
    ]);
    expect(eventTypes(after.join('\n'))).toEqual(['run_start', 'step_start', 'step_end', 'step_start', 'inference_complete', 'run_finish']);
    expect(after.at(-1)).toBe('');
  });
});
