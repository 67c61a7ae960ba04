import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import fastJsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { INITIAL_STATE, timelineOf, transcriptRecords } from '../../src/replay/timeline.ts';

/** The timeline fold (docs/inspector.md) that `awaken inspect` and the inspector page show. */

const dir = resolve(import.meta.dirname, '../../fixtures/runs');
const read = (file: string) => transcriptRecords(readFileSync(join(dir, file), 'utf8'));
const corpus = readdirSync(dir)
  .filter((f) => f.endsWith('.jsonl'))
  .sort();

describe('timelineOf', () => {
  it('a run with two tool calls: steps, the inference’s request and answer, tools with arguments, results, progress, output and times, the state diff, totals', () => {
    const t = timelineOf(read('46-observability-spans.jsonl'));
    expect(t).toMatchObject({
      thread_id: 'thread-1',
      run_id: 'run-1',
      agent_id: 'corpus',
      termination: { type: 'natural_end' },
      response: 'One worked, one failed.',
      usage: { input: 85, output: 20, total: 105 },
      finished: true,
    });
    expect(t.steps).toHaveLength(2);
    const [first, second] = t.steps;
    expect(first?.inference).toMatchObject({
      model: 'scripted-main',
      text: 'Checking two things.',
      usage: { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 },
    });
    expect(first?.inference.requests[0]?.messages.map((m) => (m as { role: string }).role)).toEqual(['system', 'user']);
    expect(first?.inference.requests[0]?.tools).toContain('report');
    // The second request is rebuilt whole: the first one's messages, then the assistant turn and both results.
    expect(second?.inference.requests[0]?.messages.map((m) => (m as { role: string }).role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool']);
    expect(first?.tools.map((c) => [c.call_id, c.name, c.arguments, c.outcome, (c.result as { status: string }).status])).toEqual([
      ['c1', 'report', { steps: 2 }, 'succeeded', 'success'],
      ['c2', 'fail', {}, 'failed', 'error'],
    ]);
    const report = first?.tools[0];
    expect(report?.progress).toEqual([
      { status: 'running', message: 'step 1', progress: 0.5 },
      { status: 'running', message: 'step 2', progress: 1 },
    ]);
    expect(report?.stream).toBe('chunk 1\nchunk 2\n');
    expect(report?.activity.map((a) => a.type)).toEqual(['log', 'log']);
    // The clock ticks 5 ms a reading: the call took time between its start and its result.
    expect((report?.ended_at ?? 0) - (report?.started_at ?? Infinity)).toBeGreaterThan(0);
    expect(first?.inference.duration_ms).toBeGreaterThan(0);
    expect(first?.state?.patch.length).toBeGreaterThan(0);
    // The run's own last snapshot (after the last step) is on no step.
    expect(t.states.map((s) => s.step)).toEqual([1, 2, 2]);
    expect(second?.state).toBe(t.states[1]);
  });

  it('a suspension and its decision, on the call that suspended; the resumed call', () => {
    const t = timelineOf(read('11-suspension-resumed-replay-tool-call.jsonl'));
    const calls = t.steps.flatMap((s) => s.tools);
    const c1 = calls.find((c) => c.call_id === 'c1');
    expect(c1?.suspension).toBeDefined();
    expect(c1?.decision).toMatchObject({ action: 'resume', result: { approved: true } });
    expect(c1?.resumed).toBe(true);
    expect(c1?.resumed_result).toBeDefined();
    expect(t.decisions).toHaveLength(1);
  });

  it('every corpus run: one step per step_start, every call that finished is on the timeline, and the patches rebuild each state from the one before', () => {
    for (const file of corpus) {
      const records = read(file);
      const events = records.filter((r) => (r as { type: string }).type === 'event').map((r) => (r as { event: { event_type: string; id?: string } }).event);
      const t = timelineOf(records);
      expect(t.steps.filter((s) => s.message_id !== '').length, file).toBe(events.filter((e) => e.event_type === 'step_start').length);
      const done = new Set(events.filter((e) => e.event_type === 'tool_call_done').map((e) => e.id));
      const shown = new Set(t.steps.flatMap((s) => s.tools.filter((c) => c.outcome !== undefined).map((c) => c.call_id)));
      expect(shown, file).toEqual(done);
      let state: unknown = INITIAL_STATE;
      for (const s of t.states) {
        state = fastJsonPatch.applyPatch(structuredClone(state), structuredClone(s.patch) as never).newDocument;
        expect(state, `${file} event ${s.event}`).toEqual(s.state);
      }
      expect(t.events, file).toBe(events.length);
    }
  });

  it('events alone (a run followed live) give the same steps, calls and states, without requests or times', () => {
    const records = read('46-observability-spans.jsonl');
    const full = timelineOf(records);
    const live = timelineOf(records.filter((r) => (r as { type: string }).type === 'event'));
    expect(live.steps.map((s) => [s.index, s.inference.text, s.tools.map((c) => [c.call_id, c.outcome])])).toEqual(
      full.steps.map((s) => [s.index, s.inference.text, s.tools.map((c) => [c.call_id, c.outcome])]),
    );
    expect(live.states.map((s) => s.patch)).toEqual(full.states.map((s) => s.patch));
    expect(live.steps.every((s) => s.inference.requests.length === 0 && s.started_at === undefined)).toBe(true);
  });

  it('every corpus run: each request is the one before it, kept as far as its record says, and its own messages — also after a later request keeps less (a compaction); message_count is its length', () => {
    const shrunk: string[] = [];
    for (const file of corpus) {
      const records = read(file);
      // The request as its record describes it, rebuilt from scratch: what the shared conversation must give.
      const expected: unknown[][] = [];
      let previous: unknown[] = [];
      for (const r of records as { type: string; request?: { kept?: number; messages?: unknown[] } }[]) {
        if (r.type !== 'llm' || r.request === undefined) continue;
        if ((r.request.kept ?? 0) < previous.length) shrunk.push(file);
        previous = [...previous.slice(0, r.request.kept ?? 0), ...(r.request.messages ?? [])];
        expected.push(previous);
      }
      const requests = timelineOf(records).steps.flatMap((s) => s.inference.requests);
      expect(
        requests.map((r) => r.messages),
        file,
      ).toEqual(expected);
      expect(
        requests.map((r) => r.message_count),
        file,
      ).toEqual(expected.map((m) => m.length));
    }
    // Some keep less than the request before them had (a retry, a compaction): their requests start a conversation of their own.
    expect(shrunk.length).toBeGreaterThan(0);
  });

  it('a timeline as data (awaken inspect --json): every request’s messages and every state’s patch are in it', () => {
    const t = timelineOf(read('46-observability-spans.jsonl'));
    const data = JSON.parse(JSON.stringify(t)) as {
      steps: { inference: { requests: { messages: unknown[]; message_count: number }[] } }[];
      states: { patch: unknown[] }[];
    };
    expect(data.steps[1]?.inference.requests[0]?.messages).toHaveLength(5);
    expect(data.steps[1]?.inference.requests[0]?.message_count).toBe(5);
    expect(data.states.map((s) => s.patch)).toEqual(t.states.map((s) => s.patch));
    expect(data.states[0]?.patch.length).toBeGreaterThan(0);
  });

  it('a transcript with a line that is not JSON is still shown (the rest of it)', () => {
    const text = readFileSync(join(dir, '03-one-tool.jsonl'), 'utf8').split('\n');
    text[5] = '{not json';
    const t = timelineOf(transcriptRecords(text.join('\n')));
    expect(t.finished).toBe(true);
    expect(t.steps.length).toBeGreaterThan(0);
  });
});
