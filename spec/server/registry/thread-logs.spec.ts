import { describe, expect, it } from 'vitest';
import type { LogItem } from '../../../src/server/thread-log.ts';
import { ClusterRelay } from '../../../src/server/cluster-relay.ts';
import { silentLogger } from '../../../src/server/log.ts';
import { ThreadLogs, threadLogLimits, type ThreadLogsHost } from '../../../src/server/registry/thread-logs.ts';
import { MemoryStore } from '../../../src/stores/memory.ts';
import { finishEvent, memoryBus, seen, textEvent } from '../../support/registry-fakes.ts';

/** The replay buffers: frames published in order, `seq` kept durable and never going back, idle logs evicted. */
function setup(host: Partial<ThreadLogsHost> = {}) {
  const store = new MemoryStore();
  const busy = new Set<string>();
  const logs = new ThreadLogs({
    store,
    logger: silentLogger,
    relay: undefined,
    capacity: 16,
    ringBytes: 1 << 20,
    maxThreadLogs: 10,
    maxReplayBytes: 1 << 20,
    seqBlock: 4,
    isBusy: (t) => busy.has(t),
    ...host,
  });
  return { store, busy, logs };
}

describe('ThreadLogs without a bus', () => {
  it("publishes a run's frames in order, raising the stored mark a block ahead before a frame above it goes out", async () => {
    const { store, logs } = setup();
    const items: LogItem[] = [];
    const from = await logs.open('t1');
    expect(from).toBe(0);
    expect(await store.loadThreadSeq('t1')).toBe(4);
    logs.log('t1').subscribe(
      undefined,
      (i) => items.push(i),
      () => ({ kind: 'resync', seq: 0, messages: [] }),
    );
    const run = { runId: 'r1', threadId: 't1' };
    const outs = [1, 2, 3, 4, 5, 6].map((n) => logs.publish(run, textEvent('t1', 'r1', String(n))));
    // Frames 1..3 are below the mark and go out at once; 4 waits for the mark (a crash leaves it above every frame out), 5 and 6 wait behind it.
    expect(seen(items)).toEqual(['1:text_delta:1', '2:text_delta:2', '3:text_delta:3']);
    await Promise.all(outs);
    expect(seen(items).slice(3)).toEqual(['4:text_delta:4', '5:text_delta:5', '6:text_delta:6']);
    expect(await store.loadThreadSeq('t1')).toBe(8);
    // A clean end brings the mark down to the last frame.
    logs.ended('t1');
    await logs.flush();
    expect(await store.loadThreadSeq('t1')).toBe(6);
  });

  it("raises a log to its stored mark once, so a restarted process's seq goes on above every frame handed out", async () => {
    const { store, logs } = setup();
    await store.saveThreadSeq('t1', 7);
    const log = logs.log('t1');
    await logs.loadMark('t1', log);
    expect(log.lastSeq).toBe(7);
    expect(await logs.open('t1')).toBe(7);
    expect(await store.loadThreadSeq('t1')).toBe(11);
  });

  it('appends a terminal frame for a run that ended elsewhere, for its followers', async () => {
    const { store, logs } = setup();
    const items: LogItem[] = [];
    const log = logs.log('t1');
    await logs.loadMark('t1', log);
    log.subscribe(
      undefined,
      (i) => items.push(i),
      () => ({ kind: 'resync', seq: 0, messages: [] }),
    );
    await logs.appendTerminal('t1', 'r9', { type: 'cancelled' });
    expect(seen(items)).toEqual(['1:run_finish']);
    expect(await store.loadThreadSeq('t1')).toBe(1);
  });

  it("evicts the oldest idle logs past the limit, never a busy one, and an evicted thread's seq goes on where it stopped", async () => {
    const { logs, busy } = setup({ maxThreadLogs: 1 });
    await logs.open('t1');
    logs.publish({ runId: 'r1', threadId: 't1' }, textEvent('t1', 'r1', 'a'));
    busy.add('t2');
    await logs.open('t2');
    logs.evictIdle();
    expect(logs.size).toBe(1);
    // t2 has a run: kept; t1 went, and its log comes back at its last seq.
    busy.delete('t2');
    expect(logs.log('t1').lastSeq).toBe(1);
  });

  it("forget ends the thread's open streams and drops its ring (not its seq); a thread with a run is kept", async () => {
    const { logs, busy } = setup();
    await logs.open('t1');
    logs.publish({ runId: 'r1', threadId: 't1' }, textEvent('t1', 'r1', 'a'));
    let ended = 0;
    const off = logs.onForgotten('t1', () => ended++);
    busy.add('t1');
    await logs.forget('t1');
    expect(ended).toBe(0);
    busy.delete('t1');
    await logs.forget('t1');
    expect(ended).toBe(1);
    off();
    const log = logs.log('t1');
    expect(log.lastSeq).toBe(1);
    expect(log.isBehind(0)).toBe(true);
  });
});

describe('ThreadLogs with a bus', () => {
  it("goes on from the shared log's seq, shares every frame, and delivers each here once it is in the shared log (the run waits only for its terminal frame)", async () => {
    const bus = memoryBus();
    await bus.appendNext('t1', { runId: 'r0', data: '{}' });
    const relay = new ClusterRelay(bus, silentLogger);
    const { logs } = setup({ relay });
    expect(await logs.open('t1')).toBe(1);
    const items: LogItem[] = [];
    logs.log('t1').subscribe(
      undefined,
      (i) => items.push(i),
      () => ({ kind: 'resync', seq: 0, messages: [] }),
    );
    expect(logs.publish({ runId: 'r1', threadId: 't1' }, textEvent('t1', 'r1', 'a'))).toBeUndefined();
    const last = logs.publish({ runId: 'r1', threadId: 't1' }, finishEvent('t1', 'r1'));
    // Nothing yet: should this instance die before the append, no client here holds an id the shared log gives another frame.
    expect(seen(items)).toEqual([]);
    await last;
    expect(seen(items)).toEqual(['2:text_delta:a', '3:run_finish']);
    expect(bus.frames.get('t1')?.map((f) => f.seq)).toEqual([1, 2, 3]);
    await logs.appendTerminal('t1', 'r2', { type: 'cancelled' });
    expect(bus.frames.get('t1')?.map((f) => f.seq)).toEqual([1, 2, 3, 4]);
    await logs.forget('t1');
    expect(bus.frames.has('t1')).toBe(false);
  });
});

describe('threadLogLimits', () => {
  it("takes the registry's options, and defaults for those not given", () => {
    expect(threadLogLimits({})).toEqual({ capacity: 1024, ringBytes: 1024 * 1024, maxThreadLogs: 10_000, maxReplayBytes: 32 * 1024 * 1024, seqBlock: 1024 });
    expect(threadLogLimits({ replayBufferCapacity: 8, replayBufferBytes: 100, maxThreadLogs: 2, maxReplayBytes: 300, seqBlock: 16 })).toEqual({
      capacity: 8,
      ringBytes: 100,
      maxThreadLogs: 2,
      maxReplayBytes: 300,
      seqBlock: 16,
    });
  });
});
