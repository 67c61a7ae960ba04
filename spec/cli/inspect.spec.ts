import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.ts';
import { changeRows, lineRows } from '../../src/replay/side-by-side.ts';

/** `awaken inspect FILE` and `awaken replay --format pretty` (docs/inspector.md → In a terminal). */

const repo = resolve(import.meta.dirname, '../..');
const run46 = join(repo, 'fixtures/runs/46-observability-spans.jsonl');

describe('awaken inspect', () => {
  it('prints the run’s timeline: steps, the inference, each tool with arguments, progress, output, result and duration, the state changes', async () => {
    const r = await cli('inspect', run46);
    expect(r).toMatchObject({ code: 0, err: '' });
    const lines = r.out.split('\n');
    expect(lines[0]).toBe('run run-1 · thread thread-1 · agent corpus');
    expect(lines[1]).toBe('  {"type":"natural_end"} · 2 steps · 105 ms · tokens 85 in, 20 out, 105 total');
    expect(r.out).toContain('  inference  scripted-main  5 ms  tokens 30 → 12  (request: 2 messages, 5 tools)\n    text       "Checking two things."');
    expect(r.out).toContain('  tool  report [c1]  30 ms  succeeded\n    arguments  {"steps":2}\n    progress   running step 1 50% · running step 2 100%');
    expect(r.out).toContain('    output     "chunk 1\\nchunk 2\\n"');
    expect(r.out).toContain('  tool  fail [c2]  10 ms  failed\n    arguments  {}\n    result     error: the tool reported a failure');
    expect(r.out).toMatch(/ {2}state {2}revision 9: \d+ changes/);
  });

  it('--state lists every change; --json prints the timeline; a file that is no transcript is refused', async () => {
    const state = await cli('inspect', '--state', run46);
    expect(state.out).toMatch(/\n {4}\+ \/extensions\/__runtime\.run_lifecycle {2}\{"run_id":"run-1","status":"running"/);
    const asJson = JSON.parse((await cli('inspect', '--json', run46)).out) as { steps: unknown[]; usage: unknown };
    expect(asJson.steps).toHaveLength(2);
    expect(asJson.usage).toEqual({ input: 85, output: 20, total: 105 });
    const dir = mkdtempSync(join(tmpdir(), 'awaken-inspect-'));
    writeFileSync(join(dir, 'x.jsonl'), '{"hello":1}\n');
    expect(await cli('inspect', join(dir, 'x.jsonl'))).toMatchObject({ code: 65, err: expect.stringContaining('no events: not a transcript') });
    expect(await cli('inspect', join(dir, 'missing.jsonl'))).toMatchObject({ code: 66 });
  });

  it('counts where a decision or a cancel came as replay does: after event #n, counting from 0', async () => {
    const said = async (run: string): Promise<string[]> =>
      (await cli('inspect', join(repo, 'fixtures/runs', run))).out.split('\n').filter((l) => /^ *(decision|cancelled) (after|before)/.test(l));
    // 11 events out before the decision (#0 … #10); one before the cancel of run 17 (its run_start), three before that of run 16.
    expect(await said('11-suspension-resumed-replay-tool-call.jsonl')).toEqual([
      expect.stringMatching(/^decision after event #10: \[\{"target_id":"c1",/) as unknown as string,
    ]);
    expect(await said('17-cancellation-before-first-step.jsonl')).toEqual(['  cancelled after event #0']);
    expect(await said('16-cancellation-mid-stream.jsonl')).toEqual(['  cancelled after event #2']);
  });
});

describe('awaken replay --format pretty', () => {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-pretty-'));

  it('an edited event: the recorded and the replayed event side by side, the changed line marked', async () => {
    const bad = join(dir, 'text.jsonl');
    writeFileSync(bad, readFileSync(run46, 'utf8').replace('"delta":"Checking two things."', '"delta":"Checking 2 things."'));
    const r = await cli('replay', '--format', 'pretty', bad);
    expect(r.code).toBe(1);
    expect(r.out).toContain(`DIFFERS    ${bad}:`);
    const row = r.out.split('\n').find((l) => l.includes('"delta": "Checking 2 things."'));
    expect(row).toMatch(/"delta": "Checking 2 things\."\s+\| {3}"delta": "Checking two things\."/);
    expect(r.out).toContain('0 identical, 1 differ');
  });

  it('a changed request: the llm port’s diff path by path, recorded beside now', async () => {
    const bad = join(dir, 'request.jsonl');
    // The run's input changed (the header's request), so the run now asks the model something else.
    const [header, ...rest] = readFileSync(run46, 'utf8').split('\n');
    writeFileSync(bad, [(header as string).replace('"text":"scenario: observability-spans"', '"text":"scenario: something else"'), ...rest].join('\n'));
    const r = await cli('replay', '--format', 'pretty', bad);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/the llm port left the recording after event #\d+: request #1 no longer matches the recording/);
    expect(r.out).toMatch(/text: "scenario: observability-spans"\s+\| .*text: "scenario: something else"/);
  });

  it('identical runs are one line each; --json and --format pretty together are refused', async () => {
    const r = await cli('replay', '--format', 'pretty', run46);
    expect(r).toMatchObject({ code: 0, out: `identical  ${run46}  (27 events, natural_end)\n1 identical, 0 differ\n` });
    expect(await cli('replay', '--format', 'pretty', '--json', run46)).toMatchObject({ code: 64 });
  });

  it('the rows: common lines kept, the rest paired where both sides changed', () => {
    expect(lineRows(['a', 'b', 'c'], ['a', 'x', 'c', 'd'])).toEqual([
      { op: 'same', left: 'a', right: 'a' },
      { op: 'changed', left: 'b', right: 'x' },
      { op: 'same', left: 'c', right: 'c' },
      { op: 'right', right: 'd' },
    ]);
    expect(changeRows(['- a.b: 1', '+ a.b: 2', '- c: 3', '+ d: 4'])).toEqual([
      { op: 'changed', left: 'a.b: 1', right: 'a.b: 2' },
      { op: 'left', left: 'c: 3' },
      { op: 'right', right: 'd: 4' },
    ]);
  });
});
