import { describe, expect, it } from 'vitest';
import { StoreFailure } from '../../../src/runtime/store.ts';
import { ClusterRelay } from '../../../src/server/cluster-relay.ts';
import { silentLogger } from '../../../src/server/log.ts';
import { asPrincipal } from '../../../src/server/principal.ts';
import { LiveRuns } from '../../../src/server/registry/live-runs.ts';
import { Subscriptions } from '../../../src/server/registry/subscribe.ts';
import type { LogItem } from '../../../src/server/thread-log.ts';
import { MemoryStore } from '../../../src/stores/memory.ts';
import { finishEvent, liveRun, memoryBus, seen, stored, testLogs, textEvent, tick } from '../../support/registry-fakes.ts';

/** Following a thread: the buffer replayed, then live frames; a resync for a follower the ring left behind. */
function setup(options: { readonly capacity?: number; readonly bus?: ReturnType<typeof memoryBus> } = {}) {
  const store = new MemoryStore();
  const runs = new LiveRuns(() => false);
  const relay = options.bus === undefined ? undefined : new ClusterRelay(options.bus, silentLogger);
  const logs = testLogs(store, runs, relay, options.capacity ?? 64);
  const following = new Subscriptions({ store, relay, logs, runs });
  const publish = (n: string): unknown => logs.publish({ runId: 'r1', threadId: 't1' }, textEvent('t1', 'r1', n));
  return { store, runs, logs, following, publish };
}

describe('Subscriptions', () => {
  it('replays the buffer after `since`, follows live frames, and stops at the unsubscribe', async () => {
    const { logs, following, publish } = setup();
    await logs.open('t1');
    for (const n of ['a', 'b', 'c']) publish(n);
    const items: LogItem[] = [];
    const off = await following.subscribe('t1', 1, (i) => items.push(i));
    expect(seen(items)).toEqual(['2:text_delta:b', '3:text_delta:c']);
    publish('d');
    expect(seen(items).at(-1)).toBe('4:text_delta:d');
    off();
    publish('e');
    expect(items).toHaveLength(3);
    expect(await following.lastSeq('t1')).toBe(5);
  });

  it('resyncs a follower the ring left behind with the stored messages and the input of the run not yet committed', async () => {
    const { store, runs, logs, following, publish } = setup({ capacity: 2 });
    await stored(store, 'r0', 't1', 'done', [{ id: 'm1', role: 'user', content: [{ type: 'text', text: 'old' }] } as never]);
    runs.add(liveRun('r1', 't1', { input: [{ id: 'm2', role: 'user', content: [{ type: 'text', text: 'new' }] } as never] }));
    await logs.open('t1');
    for (const n of ['a', 'b', 'c', 'd']) publish(n);
    const items: LogItem[] = [];
    await following.subscribe('t1', 0, (i) => items.push(i));
    expect(items[0]).toMatchObject({ kind: 'resync', seq: 4 });
    const resync = items[0];
    expect(resync?.kind === 'resync' ? resync.messages.map((m) => m.id) : []).toEqual(['m1', 'm2']);
  });

  it("resolves a run's segment end with its terminal frame's termination, and at once for a run not here", async () => {
    const { runs, logs, following } = setup();
    runs.add(liveRun('r1', 't1'));
    const from = await logs.open('t1');
    const end = following.segmentEnd('r1', from);
    await tick();
    logs.publish({ runId: 'r1', threadId: 't1' }, textEvent('t1', 'r1', 'x'));
    logs.publish({ runId: 'r1', threadId: 't1' }, finishEvent('t1', 'r1', { type: 'suspended' }));
    expect(await end).toEqual({ type: 'suspended' });
    expect(logs.log('t1').subscribers).toBe(0);
    expect(await following.segmentEnd('nope', 0)).toBeUndefined();
  });

  it('refuses a thread the acting principal may not read, unless its run here is theirs', async () => {
    const { store, runs, following } = setup();
    await store.claimThread('t1', 'alice');
    await expect(asPrincipal('bob', () => following.subscribe('t1', undefined, () => undefined))).rejects.toBeInstanceOf(StoreFailure);
    runs.add(liveRun('r2', 't2', { owner: 'bob' }));
    const off = await asPrincipal('bob', () => following.subscribe('t2', undefined, () => undefined));
    off();
  });

  it('with a bus, a thread stream follows the shared log; a stream of one run here reads the local ring', async () => {
    const bus = memoryBus();
    const { runs, logs, following } = setup({ bus });
    await bus.appendNext('t1', { runId: 'rX', data: JSON.stringify(textEvent('t1', 'rX', 'elsewhere')) });
    const shared: LogItem[] = [];
    const off = await following.subscribe('t1', 0, (i) => shared.push(i));
    await tick(5);
    expect(seen(shared)).toEqual(['1:text_delta:elsewhere']);
    off();
    expect(await following.lastSeq('t1')).toBe(1);
    runs.add(liveRun('r1', 't1'));
    await logs.open('t1');
    const local: LogItem[] = [];
    await following.subscribe('t1', undefined, (i) => local.push(i), { scope: 'run' });
    logs.publish({ runId: 'r1', threadId: 't1' }, textEvent('t1', 'r1', 'here'));
    // Delivered here once it is in the shared log.
    await tick(5);
    expect(seen(local)).toEqual(['2:text_delta:here']);
  });
});
