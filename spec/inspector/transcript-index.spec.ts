import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { metaOf, TranscriptIndex } from '../../src/inspector/transcript-index.ts';
import { repo } from '../support/serve-process.ts';

/**
 * The record directory as the inspector sees it (`TranscriptIndex`): each transcript by what its own
 * lines say — thread, run, owner — and each file's lines read once, again only when its size or
 * modification time changes, so a listing costs a directory read and a `stat` per file.
 */
const RUN46 = readFileSync(join(repo, 'fixtures/runs/46-observability-spans.jsonl'), 'utf8');

function recordedAs(thread: string, run: string, owner?: string, format = 'awaken-transcript/5'): string {
  const [first, ...rest] = RUN46.split('\n');
  const header = JSON.parse(first as string) as { format: string; request: Record<string, unknown> };
  header.format = format;
  header.request = { thread_id: thread, run_id: run, ...(owner !== undefined ? { owner } : {}), ...header.request };
  return [JSON.stringify(header), ...rest].join('\n');
}

const listOf = (index: TranscriptIndex) =>
  index
    .list()
    .map((t) => [t.name, t.thread_id, t.run_id, t.owner ?? null])
    .sort();

describe('TranscriptIndex', () => {
  it('lists the .jsonl files whose first line is a header, by what their lines say; nothing else', () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-index-'));
    writeFileSync(join(dir, 'x--secret--r9.jsonl'), recordedAs('team:alpha', 'r1', 'alice'));
    writeFileSync(join(dir, 'plain.jsonl'), RUN46);
    writeFileSync(join(dir, 'notes.txt'), recordedAs('t', 'r', 'alice'));
    writeFileSync(join(dir, 'garbage.jsonl'), 'not json\n');
    writeFileSync(join(dir, 'half.jsonl.partial'), recordedAs('t', 'r', 'alice'));
    mkdirSync(join(dir, 'sub.jsonl'));
    symlinkSync(join(dir, 'plain.jsonl'), join(dir, 'link.jsonl'));
    expect(listOf(new TranscriptIndex(dir))).toEqual([
      // A run recorded without a server: its thread and run from its run_start event.
      ['plain.jsonl', 'thread-1', 'run-1', null],
      ['x--secret--r9.jsonl', 'team:alpha', 'r1', 'alice'],
    ]);
  });

  it('an owner counts only from format 5 on: an older header is nobody’s', () => {
    expect(metaOf(recordedAs('t', 'r', 'alice', 'awaken-transcript/4').split('\n'))).toEqual({ thread_id: 't', run_id: 'r', segment: 1 });
    for (const format of [
      'awaken-transcript/5',
      'awaken-transcript/6',
      'awaken-transcript/7',
      'awaken-transcript/8',
      'awaken-transcript/9',
      'awaken-transcript/10',
      'awaken-transcript/11',
      'awaken-transcript/12',
    ]) {
      expect(metaOf(recordedAs('t', 'r', 'alice', format).split('\n'))).toEqual({ thread_id: 't', run_id: 'r', owner: 'alice', segment: 1 });
    }
    // A format newer than this version's is not read as owned (what its header means is not known here).
    expect(metaOf(recordedAs('t', 'r', 'alice', 'awaken-transcript/13').split('\n'))).toEqual({ thread_id: 't', run_id: 'r', segment: 1 });
    expect(metaOf(['{"type":"env","draw":"now","value":1}'])).toBeUndefined();
    expect(metaOf([])).toBeUndefined();
  });

  it('a later segment of a run is the one its header names (the name decides nothing); a segment that is not an integer from 2 is the first', () => {
    const segment = (value: unknown): string => {
      const [first, ...rest] = recordedAs('t', 'r', 'alice', 'awaken-transcript/7').split('\n');
      return [JSON.stringify({ ...(JSON.parse(first as string) as object), segment: value }), ...rest].join('\n');
    };
    expect(metaOf(segment(3).split('\n'))).toEqual({ thread_id: 't', run_id: 'r', owner: 'alice', segment: 3 });
    for (const odd of [1, 0, 2.5, '2', null]) expect(metaOf(segment(odd).split('\n'))?.segment).toBe(1);
  });

  it('reads a file’s lines once: a file that keeps its size and time is not read again; one that changes either is', () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-index-'));
    const file = join(dir, 'a.jsonl');
    // A whole second: a time the file system keeps exactly when it is set again.
    const mtime = new Date('2026-01-01T00:00:00Z');
    writeFileSync(file, recordedAs('t1', 'r1', 'alice'));
    utimesSync(file, mtime, mtime);
    const index = new TranscriptIndex(dir);
    expect(listOf(index)).toEqual([['a.jsonl', 't1', 'r1', 'alice']]);
    // The same length and modification time, other content: the index does not read it again.
    writeFileSync(file, recordedAs('t2', 'r1', 'alice'));
    utimesSync(file, mtime, mtime);
    expect(listOf(index)).toEqual([['a.jsonl', 't1', 'r1', 'alice']]);
    // A new modification time: read again.
    utimesSync(file, mtime, new Date(mtime.getTime() + 5_000));
    expect(listOf(index)).toEqual([['a.jsonl', 't2', 'r1', 'alice']]);
    // Another size: read again.
    writeFileSync(file, recordedAs('t3', 'r1', 'bob'));
    utimesSync(file, mtime, new Date(mtime.getTime() + 5_000));
    expect(listOf(index)).toEqual([['a.jsonl', 't3', 'r1', 'bob']]);
    rmSync(file);
    expect(listOf(index)).toEqual([]);
  });

  it('reads a header longer than a read chunk whole (a long thread history)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-index-'));
    const [first, ...rest] = recordedAs('long-history', 'r1', 'alice').split('\n');
    const header = JSON.parse(first as string) as { request: { history?: unknown[] } };
    header.request.history = Array.from({ length: 2_000 }, (_, i) => ({ id: `m${i}`, role: 'user', content: [{ type: 'text', text: 'é'.repeat(60) }] }));
    writeFileSync(join(dir, 'long.jsonl'), [JSON.stringify(header), ...rest].join('\n'));
    expect(statSync(join(dir, 'long.jsonl')).size).toBeGreaterThan(200_000);
    expect(listOf(new TranscriptIndex(dir))).toEqual([['long.jsonl', 'long-history', 'r1', 'alice']]);
  });
});
