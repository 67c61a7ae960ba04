import { afterAll, describe, expect, it } from 'vitest';
import { PostgresBus } from '../../src/stores/postgres-bus.ts';
import { PostgresStore } from '../../src/stores/postgres.ts';
import { PG_URL } from '../support/postgres.ts';

/** Instances of a cluster starting at the same moment on an empty database. */
const prefix = `pb${process.pid}`;
const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const o of opened) await o.close().catch(() => undefined);
  const bus = new PostgresBus(PG_URL, { prefix });
  await bus.dropSchema();
  await bus.close();
  const store = PostgresStore.withPrefix(PG_URL, prefix);
  await store.dropSchema();
  await store.close();
});

describe('eight instances starting together', () => {
  it('create the events table and the store tables once, none failing on the race', async () => {
    const buses = Array.from({ length: 8 }, () => new PostgresBus(PG_URL, { prefix }));
    const stores = Array.from({ length: 8 }, () => PostgresStore.withPrefix(PG_URL, prefix));
    opened.push(...buses, ...stores);
    const results = await Promise.allSettled([...buses.map((b) => b.lastSeq('t')), ...stores.map((s) => s.ensureSchema())]);
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
  });
});

describe('frames of a run that has ended', () => {
  const finish = (threadId: string, runId: string, type: string) =>
    JSON.stringify({ event_type: 'run_finish', thread_id: threadId, run_id: runId, termination: { type } });
  const delta = (runId: string, text: string) => JSON.stringify({ event_type: 'text_delta', run_id: runId, delta: text });

  it('are dropped once its final terminal frame is in the log; a suspension is not final; another run goes on', async () => {
    const a = new PostgresBus(PG_URL, { prefix });
    const b = new PostgresBus(PG_URL, { prefix });
    opened.push(a, b);
    await a.append('e1', [
      { seq: 1, runId: 'r1', data: delta('r1', 'x') },
      { seq: 2, runId: 'r1', data: finish('e1', 'r1', 'suspended') },
    ]);
    await a.append('e1', [{ seq: 3, runId: 'r1', data: delta('r1', 'resumed') }]);
    // Another instance ends r1 (a sweep); the first one's late frames of r1 are dropped, in a batch with another run's too.
    await b.append('e1', [{ seq: 4, runId: 'r1', data: finish('e1', 'r1', 'error') }]);
    await a.append('e1', [
      { seq: 5, runId: 'r1', data: delta('r1', 'late') },
      { seq: 6, runId: 'r1', data: finish('e1', 'r1', 'natural_end') },
    ]);
    await a.append('e1', [{ seq: 5, runId: 'r2', data: delta('r2', 'next run') }]);
    expect((await b.read('e1', 0, 100)).map((f) => [f.seq, f.runId])).toEqual([
      [1, 'r1'],
      [2, 'r1'],
      [3, 'r1'],
      [4, 'r1'],
      [5, 'r2'],
    ]);
  });

  it('two instances racing, one ending the run (after the last frame) and one appending to it: one terminal frame, nothing of the run after it', async () => {
    for (let round = 0; round < 20; round++) {
      const a = new PostgresBus(PG_URL, { prefix });
      const b = new PostgresBus(PG_URL, { prefix });
      opened.push(a, b);
      const thread = `race-${round}`;
      const run = `run-${round}`;
      const [ended] = await Promise.all([
        (async () => {
          await new Promise((r) => setTimeout(r, round % 5));
          return b.appendNext(thread, { runId: run, data: finish(thread, run, 'error') });
        })(),
        (async () => {
          for (let seq = 1; seq < 8; seq++) await a.append(thread, [{ seq, runId: run, data: delta(run, String(seq)) }]);
        })(),
      ]);
      const frames = await a.read(thread, 0, 100);
      const terminals = frames.filter((f) => f.data.startsWith('{"event_type":"run_finish"'));
      expect(terminals.map((f) => f.seq)).toEqual([ended]);
      expect(frames.at(-1)?.seq).toBe(ended);
      expect(frames.map((f) => f.seq)).toEqual(frames.map((_, i) => i + 1));
    }
  });
});
