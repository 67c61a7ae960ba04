import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { TRANSCRIPT_FORMAT } from '../../src/replay/transcript.ts';

const dir = resolve(import.meta.dirname, '../../fixtures/runs');
const corpus = readdirSync(dir)
  .filter((f) => f.endsWith('.jsonl'))
  .sort()
  .map((file) => ({ file, lines: readFileSync(join(dir, file), 'utf8').trimEnd().split('\n') }));

type Path = readonly (string | number)[];
type Leaf = { readonly path: Path; readonly value: unknown };

/** Every leaf of a record (an empty array or object counts as one), with its path. */
function leaves(value: unknown, path: Path = []): Leaf[] {
  if (Array.isArray(value)) return value.length === 0 ? [{ path, value }] : value.flatMap((v, i) => leaves(v, [...path, i]));
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    return keys.length === 0 ? [{ path, value }] : keys.flatMap((k) => leaves((value as Record<string, unknown>)[k], [...path, k]));
  }
  return [{ path, value }];
}

type Edit = { readonly kind: 'char' | 'number' | 'flip' | 'remove'; readonly at: number; readonly code: number };

/** Applies one edit to the leaf at `path` of a (copied) record; undefined when the edit does not apply to that leaf. */
function applied(record: unknown, path: Path, edit: Edit): unknown {
  const copy = structuredClone(record) as Record<string | number, unknown>;
  let parent: Record<string | number, unknown> = copy;
  for (const k of path.slice(0, -1)) parent = parent[k] as Record<string | number, unknown>;
  const key = path.at(-1);
  if (key === undefined) return undefined;
  const v = parent[key];
  switch (edit.kind) {
    case 'char': {
      if (typeof v !== 'string') return undefined;
      const i = v.length === 0 ? 0 : edit.at % v.length;
      const c = String.fromCharCode(32 + (edit.code % 95));
      parent[key] = v.slice(0, i) + c + v.slice(i + 1);
      break;
    }
    case 'number':
      if (typeof v !== 'number') return undefined;
      parent[key] = edit.code % 2 === 0 ? v + 1 : v - 1;
      break;
    case 'flip':
      if (typeof v !== 'boolean') return undefined;
      parent[key] = !v;
      break;
    case 'remove':
      if (!Array.isArray(parent) || typeof key !== 'number') return undefined;
      parent.splice(key, 1);
      break;
  }
  return copy;
}

const edits = fc.record({
  run: fc.nat({ max: corpus.length - 1 }),
  line: fc.nat(),
  leaf: fc.nat(),
  edit: fc.record({ kind: fc.constantFrom<Edit['kind']>('char', 'number', 'flip', 'remove'), at: fc.nat(), code: fc.nat() }),
});

describe('a replay that catches every edit', () => {
  it('property: one edited leaf of any record of any corpus run is reported, naming the transcript line and record where the replay left it', async () => {
    let tried = 0;
    await fc.assert(
      fc.asyncProperty(edits, async ({ run, line, leaf, edit }) => {
        const { lines } = corpus[run] as (typeof corpus)[number];
        const i = line % lines.length;
        const record = JSON.parse(lines[i] as string) as unknown;
        const all = leaves(record);
        const target = all[leaf % all.length] as Leaf;
        const edited = applied(record, target.path, edit);
        // The edit must apply to the leaf and change the line (kept compact, as records are written).
        fc.pre(edited !== undefined && JSON.stringify(edited) !== lines[i]);
        tried++;
        const text = `${lines.map((l, j) => (j === i ? JSON.stringify(edited) : l)).join('\n')}\n`;
        const report = await replayTranscript(text);
        const where = `${corpus[run]?.file}:${i + 1} ${target.path.join('.')} (${edit.kind})`;
        if (report.identical && i === 0 && target.path.join('.') === 'format') {
          // The header now names an older format, which is read by migrating it: the report says so.
          expect(report.migratedFrom, where).toBe((edited as { format: string }).format);
          expect(report.migratedFrom, where).not.toBe(TRANSCRIPT_FORMAT);
          return;
        }
        expect(report.identical, where).toBe(false);
        expect(report.at?.line).toBeGreaterThanOrEqual(1);
        expect(report.at?.line).toBeLessThanOrEqual(lines.length);
        expect(report.at?.record).toMatch(/^(header|env|llm|tool|decision|cancel|event|end|unknown)$/);
      }),
      { numRuns: 3000 },
    );
    expect(tried).toBeGreaterThan(2000);
  }, 120_000);

  it('a header edited to name an older format is read as that format: its replay says it migrated it, and an edit of the body is still reported', async () => {
    const { lines } = corpus[0] as (typeof corpus)[number];
    const asEleven = [lines[0]?.replace(TRANSCRIPT_FORMAT, 'awaken-transcript/11'), ...lines.slice(1)];
    expect(await replayTranscript(`${asEleven.join('\n')}\n`)).toMatchObject({ identical: true, migratedFrom: 'awaken-transcript/11' });
    const plain = await replayTranscript(`${lines.join('\n')}\n`);
    expect(plain.identical).toBe(true);
    expect(plain).not.toHaveProperty('migratedFrom');
    const last = asEleven.length - 1;
    const editedEnd = asEleven.map((l, j) => (j === last ? l?.replace('"type":"end"', '"type":"end","extra":1') : l));
    expect(await replayTranscript(`${editedEnd.join('\n')}\n`)).toMatchObject({ identical: false, migratedFrom: 'awaken-transcript/11' });
  });

  it('every leaf of every decision record is verified: each edit of one is reported at its line', async () => {
    let edited = 0;
    for (const { file, lines } of corpus) {
      for (const [i, line] of lines.entries()) {
        const record = JSON.parse(line) as { type: string };
        if (record.type !== 'decision') continue;
        for (const { path, value } of leaves(record)) {
          const changed = applied(record, path, {
            kind: typeof value === 'number' ? 'number' : typeof value === 'boolean' ? 'flip' : 'char',
            at: 0,
            code: 88 - 32,
          });
          if (changed === undefined) continue;
          edited++;
          const report = await replayTranscript(`${lines.map((l, j) => (j === i ? JSON.stringify(changed) : l)).join('\n')}\n`);
          expect(report.identical, `${file}:${i + 1} ${path.join('.')}`).toBe(false);
          expect(report.at?.line, `${file}:${i + 1} ${path.join('.')}`).toBeLessThanOrEqual(lines.length);
        }
      }
    }
    expect(edited).toBeGreaterThan(20);
  });

  it('an activity call’s arguments have a fixed length: a progress report without its trailing null is reported at its line', async () => {
    let edited = 0;
    for (const { file, lines } of corpus) {
      for (const [i, line] of lines.entries()) {
        const record = JSON.parse(line) as { type: string; activity?: { method: string; args: unknown[] }[] };
        const at = record.activity?.findIndex((a) => a.method === 'progress' && a.args.at(-1) === null) ?? -1;
        if (at < 0) continue;
        (record.activity as { args: unknown[] }[])[at]?.args.pop();
        edited++;
        const report = await replayTranscript(`${lines.map((l, j) => (j === i ? JSON.stringify(record) : l)).join('\n')}\n`);
        expect({ identical: report.identical, line: report.at?.line }, file).toEqual({ identical: false, line: i + 1 });
      }
    }
    expect(edited).toBeGreaterThan(3);
  });

  it('a decision whose result becomes the tool result is written without its id and time; one that has them, or a decision a call keeps without them, is reported at its line', async () => {
    const { lines } = corpus.find((c) => c.file.startsWith('12-')) as (typeof corpus)[number];
    const i = lines.findIndex((l) => l.startsWith('{"type":"decision"'));
    const record = JSON.parse(lines[i] as string) as { decisions: { target_id: string; decision: Record<string, unknown> }[] };
    expect(record.decisions[0]?.decision).toEqual({ action: 'resume', result: { answer: 'from the user' } });
    const withFields = structuredClone(record);
    (withFields.decisions[0] as { decision: Record<string, unknown> }).decision = {
      decision_id: 'd-c1',
      action: 'resume',
      result: { answer: 'from the user' },
      updated_at: 1700000000000,
    };
    const report = await replayTranscript(`${lines.map((l, j) => (j === i ? JSON.stringify(withFields) : l)).join('\n')}\n`);
    expect(report).toMatchObject({ identical: false, divergence: { port: 'decision', line: i + 1 }, at: { line: i + 1, record: 'decision' } });
    expect(report.divergence?.message).toBe(
      "the decision for c1 writes decision_id, updated_at: the call resumes in use_decision_as_tool_result mode and keeps only the decision's result, so a transcript does not write them",
    );

    // A call resumed as a replayed tool call keeps the whole decision: it is written whole.
    const replayed = corpus.find((c) => c.file.startsWith('11-')) as (typeof corpus)[number];
    const k = replayed.lines.findIndex((l) => l.startsWith('{"type":"decision"'));
    const kept = JSON.parse(replayed.lines[k] as string) as { decisions: { target_id: string; decision: Record<string, unknown> }[] };
    const decision = (kept.decisions[0] as { decision: Record<string, unknown> }).decision;
    expect(Object.keys(decision)).toContain('updated_at');
    delete decision['updated_at'];
    const missing = await replayTranscript(`${replayed.lines.map((l, j) => (j === k ? JSON.stringify(kept) : l)).join('\n')}\n`);
    expect(missing).toMatchObject({ identical: false, divergence: { port: 'decision', line: k + 1 }, at: { line: k + 1, record: 'decision' } });
    expect(missing.divergence?.message).toMatch(/^the decision for c1 lacks updated_at: the call keeps the decision/);
  });

  it('request text no inference sees (a run cancelled first, messages truncated away) is checked against the thread the run leaves', async () => {
    for (const [prefix, message] of [
      ['17-', 0],
      ['31-', 3],
    ] as const) {
      const { lines } = corpus.find((c) => c.file.startsWith(prefix)) as (typeof corpus)[number];
      const header = JSON.parse(lines[0] as string) as { request: { messages: { content: { text: string }[] }[] } };
      const part = header.request.messages[message]?.content[0] as { text: string };
      part.text = `${part.text.slice(0, -1)}?`;
      const report = await replayTranscript(`${[JSON.stringify(header), ...lines.slice(1)].join('\n')}\n`);
      expect(report.identical).toBe(false);
      expect(report.firstDifference).toBeUndefined();
      expect(report.divergence).toMatchObject({
        port: 'end',
        message: `the run ended with another message #${message} (${message === 3 ? 'assistant' : 'user'}) than recorded`,
        line: lines.length,
      });
      expect(report.at).toEqual({ line: lines.length, record: 'end' });
    }
  });

  it('an edited text_delta is reported at that event, naming only its text', async () => {
    const { lines } = corpus.find((c) => c.file.startsWith('01-')) as (typeof corpus)[number];
    const i = lines.findIndex((l) => l.includes('"event_type":"text_delta"'));
    const record = JSON.parse(lines[i] as string) as { seq: number; event: { delta: string } };
    record.event.delta = `${record.event.delta}!`;
    const report = await replayTranscript(`${lines.map((l, j) => (j === i ? JSON.stringify(record) : l)).join('\n')}\n`);
    expect(report.firstDifference?.index).toBe(record.seq);
    expect(report.firstDifference?.diff).toEqual([
      `- delta: ${JSON.stringify(record.event.delta)}`,
      `+ delta: ${JSON.stringify(record.event.delta.slice(0, -1))}`,
    ]);
    expect(report.at).toEqual({ line: i + 1, record: 'event' });
  });
});
