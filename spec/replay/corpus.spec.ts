import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AGENT_EVENT_TYPES, deserialiseEvent } from '../../src/contract/event.ts';
import { TerminationReasonSchema } from '../../src/contract/lifecycle.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { recordScenario, SCENARIOS } from '../../replay/corpus.ts';
import { readTranscript } from '../../src/replay/transcript.ts';

const dir = resolve(import.meta.dirname, '../../fixtures/runs');
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.jsonl'))
  .sort();
const eventsOf = (file: string) =>
  readTranscript(readFileSync(join(dir, file), 'utf8')).flatMap((l) =>
    l.ok && l.record.type === 'event' ? [deserialiseEvent(JSON.stringify(l.record.event))] : [],
  );

/** Variants the runtime never emits itself (0.6 neither): they exist for protocol pass-through. (`error` it emits for a failed inference that ends the run: ADR 0036.) */
const NOT_EMITTED_BY_THE_RUNTIME = ['messages_snapshot', 'state_delta'];

describe('the recorded runs corpus (fixtures/runs/)', () => {
  it('has at least 20 runs, each named for what it covers', () => {
    expect(files.length).toBeGreaterThanOrEqual(20);
    for (const f of files) expect(f).toMatch(/^\d{2}-[a-z0-9-]+\.jsonl$/);
  });

  it('covers every TerminationReason', () => {
    const seen = new Set(files.flatMap((f) => eventsOf(f).flatMap((e) => (e.event_type === 'run_finish' ? [e.termination.type] : []))));
    const all = TerminationReasonSchema.def.out.options.map((o) => o.shape.type.value);
    expect([...seen].sort()).toEqual([...all].sort());
  });

  it('covers every AgentEvent variant the runtime can emit', () => {
    const seen = new Set(files.flatMap((f) => eventsOf(f).map((e) => e.event_type)));
    const emittable = AGENT_EVENT_TYPES.filter((t) => !NOT_EMITTED_BY_THE_RUNTIME.includes(t));
    expect(emittable.filter((t) => !seen.has(t))).toEqual([]);
  });

  it('recording its scenarios again gives the committed transcripts byte for byte (the recorder writes what the migration wrote)', async () => {
    const differ: string[] = [];
    for (const [i, scenario] of SCENARIOS.entries()) {
      const file = `${String(i + 1).padStart(2, '0')}-${scenario.name}.jsonl`;
      const { transcript } = await recordScenario(scenario);
      if (transcript !== readFileSync(join(dir, file), 'utf8')) differ.push(file);
    }
    expect(SCENARIOS).toHaveLength(files.length);
    expect(differ).toEqual([]);
  });

  it.each(files)('%s replays byte for byte', async (file) => {
    const report = await replayTranscript(readFileSync(join(dir, file), 'utf8'));
    expect(report.divergence).toBeUndefined();
    expect(report.firstDifference).toBeUndefined();
    expect(report.identical).toBe(true);
  });
});
