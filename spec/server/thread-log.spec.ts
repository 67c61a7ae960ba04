import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { backlogOf, ThreadLog, type LogItem } from '../../src/server/thread-log.ts';

const text = (n: number): AgentEvent => ({ event_type: 'text_delta', delta: `d${n}` });
const resync = (seq: number) => ({ kind: 'resync' as const, seq, messages: [] });

/** Everything a subscriber from `since` gets at once (the backlog), as seq numbers or 'resync@seq'. */
function backlog(log: ThreadLog, since: number | undefined): (number | string)[] {
  const got: (number | string)[] = [];
  const off = log.subscribe(since, (i: LogItem) => got.push(i.kind === 'frame' ? i.seq : `resync@${i.seq}`), resync);
  off();
  return got;
}

describe('the thread log backlog', () => {
  it('a cursor one frame short of the ring (Last-Event-ID two below its oldest frame) gets a resync, not the frames after the hole', () => {
    const log = new ThreadLog(4);
    for (let i = 1; i <= 10; i++) log.append('r', text(i));
    expect(backlog(log, 6)).toEqual([7, 8, 9, 10]);
    expect(backlog(log, 5)).toEqual(['resync@10']);
  });

  it('a cursor ahead of the log (a seq it never handed out) gets a resync', () => {
    const log = new ThreadLog(8);
    for (let i = 1; i <= 3; i++) log.append('r', text(i));
    expect(backlog(log, 3)).toEqual([]);
    expect(backlog(log, 4)).toEqual(['resync@3']);
    expect(backlog(log, 1_000)).toEqual(['resync@3']);
  });

  it('frames another instance appended (the counter moved without them) are a hole: a resync', () => {
    const log = new ThreadLog(8);
    for (let i = 1; i <= 3; i++) log.append('r', text(i));
    log.ensureAtLeast(6);
    log.append('r', text(7));
    expect(backlog(log, 6)).toEqual([7]);
    expect(backlog(log, 2)).toEqual(['resync@7']);
  });

  it('a frame taken but not yet published does not make the published ones look lost', () => {
    const log = new ThreadLog(8);
    log.append('r', text(1));
    const pending = log.next('r', text(2));
    expect(log.lastSeq).toBe(2);
    expect(backlog(log, 0)).toEqual([1]);
    const live: number[] = [];
    log.subscribe(1, (i) => i.kind === 'frame' && live.push(i.seq), resync);
    log.publish(pending);
    expect(live).toEqual([2]);
  });

  /**
   * Seed 001 §4.5 as a property: over any history of appends, counter jumps (other writers) and
   * restarts (a new log from the stored mark: exact after a clean end, reserved-ahead after a crash),
   * for every `since` in [0, lastSeq + 3] and every ring size, the backlog is exactly the frames
   * `since+1 … lastSeq` with the data they were appended with, or a resync — and the log never
   * resyncs a cursor its ring can serve.
   */
  it('is exactly the missing frames or a resync, for ring sizes 1…12, before and after restarts', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('append' as const), n: fc.integer({ min: 1, max: 6 }) }),
      fc.record({ kind: fc.constant('jump' as const), n: fc.integer({ min: 1, max: 4 }) }),
      fc.record({ kind: fc.constant('restart' as const), n: fc.integer({ min: 0, max: 5 }) }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.array(op, { maxLength: 25 }), (capacity, ops) => {
        let log = new ThreadLog(capacity);
        const history = new Map<number, string>();
        let run: number[] = [];
        for (const o of ops) {
          if (o.kind === 'append') {
            for (let i = 0; i < o.n; i++) {
              const f = log.append('r', text(history.size + i + o.n * 100));
              expect(history.has(f.seq)).toBe(false);
              history.set(f.seq, f.data);
              run.push(f.seq);
            }
          } else if (o.kind === 'jump') {
            log.ensureAtLeast(log.lastSeq + o.n);
            run = [];
          } else {
            const mark = log.lastSeq + o.n;
            log = new ThreadLog(capacity);
            log.ensureAtLeast(mark);
            run = [];
          }
        }
        const last = log.lastSeq;
        const retained = run.slice(-capacity);
        const servable = retained.length > 0 ? (retained[0] as number) - 1 : last;
        for (let since = 0; since <= last + 3; since++) {
          const got: LogItem[] = [];
          log.subscribe(since, (i) => got.push(i), resync)();
          if (got[0]?.kind === 'resync') {
            expect(got).toHaveLength(1);
            expect(got[0].seq).toBe(last);
            expect(since >= servable && since <= last).toBe(false);
            continue;
          }
          const want = Array.from({ length: Math.max(0, last - since) }, (_, i) => since + 1 + i);
          expect(since <= last).toBe(true);
          expect(got.map((i) => (i.kind === 'frame' ? i.seq : -1))).toEqual(want);
          for (const i of got) if (i.kind === 'frame') expect(i.data).toBe(history.get(i.seq));
        }
        // The live tail after any backlog: each new frame once, in order.
        const tail: number[] = [];
        log.subscribe(last, (i) => i.kind === 'frame' && tail.push(i.seq), resync);
        log.append('r', text(-1));
        log.append('r', text(-2));
        expect(tail).toEqual([last + 1, last + 2]);
      }),
      { numRuns: 300 },
    );
  });

  it('keeps at most maxBytes of serialised events (the latest frame always), and a backlog parses them back to the events sent', () => {
    const log = new ThreadLog(1000, 100);
    const sent = Array.from({ length: 10 }, (_, i) => log.append('r', text(i)));
    const each = sent[0]?.data.length as number;
    const kept = Math.floor(100 / each);
    const got: LogItem[] = [];
    log.subscribe(10 - kept, (i) => got.push(i), resync)();
    expect(got.map((i) => i.seq)).toEqual(sent.slice(-kept).map((f) => f.seq));
    expect(got.map((i) => (i.kind === 'frame' ? i.event : undefined))).toEqual(sent.slice(-kept).map((f) => f.event));
    expect(backlog(log, 9 - kept)).toEqual(['resync@10']);
    const huge = new ThreadLog(10, 5);
    huge.append('r', text(1));
    expect(backlog(huge, 0)).toEqual([1]);
  });

  it('backlogOf: no cursor is live only; a negative cursor resyncs', () => {
    expect(backlogOf([], 5, undefined)).toEqual({ kind: 'frames', frames: [] });
    expect(backlogOf([], 0, -1)).toEqual({ kind: 'resync' });
    expect(backlogOf([], 0, 0)).toEqual({ kind: 'frames', frames: [] });
  });
});
