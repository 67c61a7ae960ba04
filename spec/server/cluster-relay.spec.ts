import { describe, expect, it } from 'vitest';
import type { BusStatus, ClusterBus, ControlCommand, SharedFrame } from '../../src/runtime/cluster-bus.ts';
import { ClusterRelay } from '../../src/server/cluster-relay.ts';
import { createLogger } from '../../src/server/log.ts';
import type { LogItem } from '../../src/server/thread-log.ts';

/** An in-memory bus that can fail appends and reads, and drop and restore its listening connection. */
function fakeBus() {
  const log = new Map<string, SharedFrame[]>();
  let onAppend: (threadId: string) => void = () => undefined;
  let onStatus: (s: BusStatus, cause?: unknown) => void = () => undefined;
  const bus = {
    status: 'down' as BusStatus,
    failAppends: 0,
    failReads: 0,
    deaf: false,
    async append(threadId: string, frames: readonly SharedFrame[]) {
      if (bus.failAppends > 0) {
        bus.failAppends--;
        throw new Error('connection terminated');
      }
      const list = log.get(threadId) ?? [];
      for (const f of frames) if (!list.some((x) => x.seq === f.seq)) list.push(f);
      log.set(threadId, list);
      if (!bus.deaf) onAppend(threadId);
    },
    async appendNext(threadId: string, f: Omit<SharedFrame, 'seq'>) {
      const seq = Math.max(0, ...(log.get(threadId) ?? []).map((x) => x.seq)) + 1;
      await bus.append(threadId, [{ seq, ...f }]);
      return seq;
    },
    async read(threadId: string, after: number, limit: number) {
      if (bus.failReads > 0) {
        bus.failReads--;
        throw new Error('read failed');
      }
      return (log.get(threadId) ?? []).filter((f) => f.seq > after).slice(0, limit);
    },
    async lastSeq(threadId: string) {
      return Math.max(0, ...(log.get(threadId) ?? []).map((f) => f.seq));
    },
    async forget(threadId: string) {
      log.delete(threadId);
    },
    async send(_c: ControlCommand) {},
    async listen(a: (t: string) => void, _c: (c: ControlCommand) => void, s?: (st: BusStatus, cause?: unknown) => void) {
      onAppend = a;
      onStatus = s ?? (() => undefined);
      bus.status = 'listening';
      onStatus('listening');
    },
    async close() {},
    drop() {
      bus.status = 'down';
      bus.deaf = true;
      onStatus('down', new Error('terminated'));
    },
    restore() {
      bus.status = 'listening';
      bus.deaf = false;
      onStatus('listening');
    },
  };
  return bus satisfies ClusterBus & Record<string, unknown>;
}

const frame = (seq: number): SharedFrame => ({ seq, runId: 'r', data: JSON.stringify({ event_type: 'text_delta', delta: `d${seq}` }) });
const seqs = (items: LogItem[]) => items.map((i) => i.seq);
const settle = () => new Promise((r) => setTimeout(r, 20));

describe('the cluster relay', () => {
  it('shares frames in order and retries a failed append (logged), so followers elsewhere get every frame', async () => {
    const bus = fakeBus();
    const lines: string[] = [];
    const relay = new ClusterRelay(bus, createLogger({ level: 'warn', format: 'json', now: () => 0, write: (l) => lines.push(l) }));
    await relay.attach(() => undefined);
    bus.failAppends = 2;
    const done = [relay.share('t', frame(1)), relay.share('t', frame(2)), relay.share('t', frame(3))];
    expect(relay.isSharing('t')).toBe(true);
    await Promise.all(done);
    expect((await bus.read('t', 0, 10)).map((f) => f.seq)).toEqual([1, 2, 3]);
    expect(lines.filter((l) => l.includes('bus append failed: retrying'))).toHaveLength(2);
    expect(relay.isSharing('t')).toBe(false);
  });

  it('a follower gets the frames after its cursor, then each append; a failed read is retried; after the bus reconnects it catches up with what it missed', async () => {
    const bus = fakeBus();
    const relay = new ClusterRelay(bus, createLogger({ level: 'silent', now: () => 0, write: () => undefined }));
    await relay.attach(() => undefined);
    await bus.append('t', [frame(1), frame(2), frame(3)]);
    const got: LogItem[] = [];
    const off = await relay.follow('t', 1, (i) => got.push(i));
    await settle();
    expect(seqs(got)).toEqual([2, 3]);
    bus.failReads = 1;
    await bus.append('t', [frame(4)]);
    await new Promise((r) => setTimeout(r, 300));
    expect(seqs(got)).toEqual([2, 3, 4]);
    bus.drop();
    await bus.append('t', [frame(5), frame(6)]);
    await settle();
    expect(seqs(got)).toEqual([2, 3, 4]);
    bus.restore();
    await settle();
    expect(seqs(got)).toEqual([2, 3, 4, 5, 6]);
    off();
    await bus.append('t', [frame(7)]);
    await settle();
    expect(seqs(got)).toEqual([2, 3, 4, 5, 6]);
  });

  it("a follower whose reader may no longer read the thread (its id now names another principal's) stops for good", async () => {
    const bus = fakeBus();
    const relay = new ClusterRelay(bus, createLogger({ level: 'silent', now: () => 0, write: () => undefined }));
    await relay.attach(() => undefined);
    let allowed = true;
    const got: LogItem[] = [];
    await relay.follow(
      't',
      0,
      (i) => got.push(i),
      () => Promise.resolve(allowed),
    );
    await bus.append('t', [frame(1)]);
    await settle();
    expect(seqs(got)).toEqual([1]);
    allowed = false;
    await bus.forget('t');
    await bus.append('t', [frame(1), frame(2)]);
    await settle();
    allowed = true;
    await bus.append('t', [frame(3)]);
    await relay.settle();
    expect(seqs(got)).toEqual([1]);
  });

  it('settle: every follower is brought up to date even when no notification came', async () => {
    const bus = fakeBus();
    const relay = new ClusterRelay(bus, createLogger({ level: 'silent', now: () => 0, write: () => undefined }));
    await relay.attach(() => undefined);
    const got: LogItem[] = [];
    await relay.follow('t', 0, (i) => got.push(i));
    bus.deaf = true;
    await bus.append('t', [frame(1), frame(2)]);
    expect(seqs(got)).toEqual([]);
    await relay.settle();
    expect(seqs(got)).toEqual([1, 2]);
  });
});
