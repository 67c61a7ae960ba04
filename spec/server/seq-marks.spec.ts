import { describe, expect, it } from 'vitest';
import { SeqMarks } from '../../src/server/seq-marks.ts';
import { silentLogger } from '../../src/server/log.ts';
import { ThreadLog } from '../../src/server/thread-log.ts';
import { MemoryStore } from '../../src/stores/memory.ts';

describe('SeqMarks', () => {
  it('raises a new log to its stored mark, raises the mark a block ahead before a frame above it, and settles it at a clean end', async () => {
    const store = new MemoryStore();
    await store.saveThreadSeq('t', 40);
    const marks = new SeqMarks(store, silentLogger, 10);
    const log = new ThreadLog(100, 1 << 20);
    await marks.load('t', log);
    expect(log.lastSeq).toBe(40);
    expect(marks.cover('t', 40)).toBeUndefined();
    await marks.cover('t', 41);
    expect(await store.loadThreadSeq('t')).toBe(50);
    expect(marks.cover('t', 50)).toBeUndefined();
    await marks.cover('t', 51);
    expect(await store.loadThreadSeq('t')).toBe(60);
    await marks.settle('t', 52);
    expect(await store.loadThreadSeq('t')).toBe(52);
  });

  it("writes a thread's marks in order, and a failed write is logged, not thrown", async () => {
    const store = new MemoryStore();
    const written: number[] = [];
    const errors: string[] = [];
    let failNext = true;
    const flaky = Object.assign(Object.create(store) as MemoryStore, {
      saveThreadSeq: async (threadId: string, seq: number) => {
        await new Promise((r) => setTimeout(r, seq % 3));
        if (failNext) {
          failNext = false;
          throw new Error('store down');
        }
        written.push(seq);
        return store.saveThreadSeq(threadId, seq);
      },
    });
    const marks = new SeqMarks(flaky, { ...silentLogger, error: (m: string) => void errors.push(m) }, 1);
    const writes = [marks.cover('t', 1), marks.cover('t', 2), marks.cover('t', 3), marks.settle('t', 3)];
    await Promise.all(writes);
    await marks.flush();
    expect(errors).toEqual(['thread sequence mark not saved']);
    expect(written).toEqual([2, 3, 3]);
    expect(await store.loadThreadSeq('t')).toBe(3);
  });
});
