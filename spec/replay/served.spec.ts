import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { transcriptFileName, transcriptIdsOf } from '../../src/replay/served.ts';

/**
 * The name a served run's transcript is written under (`DIR/<thread>--<run>.jsonl`): one per thread
 * and run, distinct even where a file system ignores case, a plain name in the directory whatever
 * the ids hold, short enough for any file system, and — while the ids fit — read back to them. The
 * name is for people reading the directory; the inspector reads a transcript's thread and owner
 * from its header.
 */
const id = fc.oneof(fc.string({ minLength: 1, maxLength: 40 }), fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }), fc.constantFrom('user:42', 'team:alpha', 'team_alpha', 'x--secret', '..%2F..%2Fetc', '..', '.', 'A', 'a', 'Ä', 'ä', '--', '~', '~7e'));
const anyLength = fc.oneof(id, fc.string({ minLength: 100, maxLength: 400 }), fc.constant('t'.repeat(300)));
const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

describe('transcriptFileName', () => {
  it('property: a plain file name of at most 200 bytes, ending .jsonl, whatever the ids', () => {
    fc.assert(
      fc.property(anyLength, anyLength, (thread, run) => {
        const name = transcriptFileName(thread, run);
        expect(name).toMatch(/^[a-z0-9_~-]+\.jsonl$/);
        expect(name.startsWith('.')).toBe(false);
        expect(bytes(name)).toBeLessThanOrEqual(200);
      }),
      { numRuns: 500 },
    );
  });

  it('property: reversible while the ids fit (ids of up to 13 UTF-16 units always do; a shortened name is marked `~~`)', () => {
    fc.assert(
      fc.property(id, id, (thread, run) => {
        const name = transcriptFileName(thread, run);
        if (thread.length <= 13 && run.length <= 13) expect(name).not.toContain('~~');
        fc.pre(!name.includes('~~'));
        expect(transcriptIdsOf(name)).toEqual({ threadId: thread, runId: run });
      }),
      { numRuns: 500 },
    );
  });

  it('property: distinct ids give names that differ even case-insensitively, however long', () => {
    fc.assert(
      fc.property(anyLength, anyLength, id, (a, b, run) => {
        fc.pre(a !== b);
        expect(transcriptFileName(a, run).toLowerCase()).not.toBe(transcriptFileName(b, run).toLowerCase());
      }),
      { numRuns: 500 },
    );
  });

  it('examples: `:`, `-`, `.` and upper case are written as escapes (`~` and the UTF-16 code unit in hex), so `team:alpha`, `team_alpha`, `Team` and `team` are four names', () => {
    expect(transcriptFileName('team:alpha', 'r1')).toBe('team~3aalpha--r1.jsonl');
    expect(transcriptFileName('team_alpha', 'r1')).toBe('team_alpha--r1.jsonl');
    expect(transcriptFileName('Team', 'r1')).toBe('~54eam--r1.jsonl');
    expect(transcriptFileName('x--secret', 'r1')).toBe('x~2d~2dsecret--r1.jsonl');
    expect(transcriptFileName('..%2F..%2Fetc', 'r1')).toBe('~2e~2e~252~46~2e~2e~252~46etc--r1.jsonl');
    // Too long to be written whole: its start, then a digest of all of it (not read back; the header has it).
    const long = transcriptFileName('t'.repeat(300), 'r1');
    expect(long).toMatch(/^t+~~[0-9a-f]{32}--r1\.jsonl$/);
    expect(transcriptIdsOf(long)).toBeUndefined();
    expect(transcriptIdsOf('team_alpha--r1.jsonl')).toEqual({ threadId: 'team_alpha', runId: 'r1' });
    expect(transcriptIdsOf('x--secret--r1.jsonl')).toBeUndefined();
  });
});
