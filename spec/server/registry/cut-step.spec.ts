import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../../src/contract/event.ts';
import { deterministicEnv } from '../../../src/runtime/env.ts';
import { ClusterRelay } from '../../../src/server/cluster-relay.ts';
import { silentLogger } from '../../../src/server/log.ts';
import { RunAdoption } from '../../../src/server/registry/adopt.ts';
import { CUT_WHILE_WRITING } from '../../../src/server/registry/closers.ts';
import { LiveRuns } from '../../../src/server/registry/live-runs.ts';
import { RunLeases } from '../../../src/server/run-leases.ts';
import type { LogItem } from '../../../src/server/thread-log.ts';
import { ThreadLocks } from '../../../src/server/thread-locks.ts';
import { MemoryStore } from '../../../src/stores/memory.ts';
import { fakeRuntime, finishEvent, memoryBus, stored, testLauncher, testLogs, tick } from '../../support/registry-fakes.ts';

/**
 * A run left running by a process that died mid-inference, taken up again: the step its followers
 * saw start, with text and a call the model was still writing, is closed in the thread's log before
 * the segment taken up begins — read from the shared log with a cluster bus, else from this
 * instance's ring.
 */

const cutStep: AgentEvent[] = [
  { event_type: 'run_start', thread_id: 't1', run_id: 'r1' },
  { event_type: 'step_start', message_id: 'm1' },
  { event_type: 'text_delta', delta: 'Let me look' },
  { event_type: 'tool_call_start', id: 'c1', name: 'search' },
  { event_type: 'tool_call_delta', id: 'c1', args_delta: '{"q":' },
];

/** What the runtime emits first for a run taken up mid-inference: the run again, where it went on, the step again. */
const resumedSegment: AgentEvent[] = [
  { event_type: 'run_start', thread_id: 't1', run_id: 'r1' },
  { event_type: 'activity_snapshot', message_id: 'a1', activity_type: 'run_resumed', content: { from: 'inference', step: 1 }, replace: true },
  { event_type: 'step_start', message_id: 'm2' },
];

const closing: AgentEvent[] = [
  {
    event_type: 'tool_call_done',
    id: 'c1',
    message_id: '',
    result: { tool_name: 'search', status: 'error', data: null, message: CUT_WHILE_WRITING },
    outcome: 'failed',
  },
  { event_type: 'step_end' },
];

/** The surviving instance's parts a take-up uses, with a bus shared with the dead one or without. */
function setup(options: { readonly bus: boolean; readonly capacity?: number }) {
  const env = deterministicEnv();
  const store = new MemoryStore();
  const { runtime, recovered } = fakeRuntime(env);
  const bus = options.bus ? memoryBus() : undefined;
  const relay = bus === undefined ? undefined : new ClusterRelay(bus, silentLogger);
  const leases = new RunLeases(store, env, { owner: 'A', ttlMs: 100 });
  const dead = new RunLeases(store, env, { owner: 'B', ttlMs: 100 });
  const runs = new LiveRuns(() => false);
  const logs = testLogs(store, runs, relay, options.capacity ?? 64);
  const launcher = testLauncher(env, logs, runs, leases);
  const adoption = new RunAdoption({
    runtime,
    store,
    logger: silentLogger,
    leases,
    locks: new ThreadLocks(),
    runs,
    launcher,
    observer: undefined,
    logs,
    closing: () => false,
  });
  /** The run's process took its lease and streamed `events`, then died: its lease runs out. */
  const died = async (events: readonly AgentEvent[]): Promise<void> => {
    await stored(store, 'r1', 't1', 'running');
    expect((await dead.take('t1', 'r1')).ok).toBe(true);
    if (bus !== undefined)
      await bus.append(
        't1',
        events.map((e, i) => ({ seq: i + 1, runId: 'r1', data: JSON.stringify(e) })),
      );
    else {
      await logs.open('t1');
      for (const e of events) await logs.publish({ runId: 'r1', threadId: 't1' }, e);
    }
    env.advance(200);
  };
  /** A follower of the thread from where it stands now: what it sees, as (seq, event). */
  const follow = async (): Promise<LogItem[]> => {
    const items: LogItem[] = [];
    const onItem = (item: LogItem): void => void items.push(item);
    if (relay !== undefined) await relay.follow('t1', await relay.bus.lastSeq('t1'), onItem);
    else {
      const log = logs.log('t1');
      log.subscribe(log.publishedSeq, onItem, () => {
        throw new Error('no resync expected');
      });
    }
    return items;
  };
  /** The segment taken up emits its first frames; every frame reaches the followers. */
  const resume = async (): Promise<void> => {
    const handle = recovered[0];
    if (handle?.sink === undefined) throw new Error('the run was not taken up');
    for (const e of resumedSegment) await handle.sink.emit(e);
    await relay?.settle();
    await tick();
  };
  return { store, bus, logs, adoption, recovered, died, follow, resume };
}

const numbered = (from: number, events: readonly AgentEvent[]): { seq: number; event: AgentEvent | 'resync' }[] =>
  events.map((event, i) => ({ seq: from + i, event }));

const framesOf = (items: readonly LogItem[]): { seq: number; event: AgentEvent | 'resync' }[] =>
  items.map((i) => ({ seq: i.seq, event: i.kind === 'frame' ? i.event : 'resync' }));

describe('a run taken up from running, its process cut off mid-inference', () => {
  for (const bus of [true, false]) {
    const where = bus ? 'the shared log (cluster bus)' : "this instance's ring";
    it(`closes the step it was cut off in, in ${where}, before the segment taken up starts: the half-written call failed, then the step's end`, async () => {
      const { adoption, died, follow, resume } = setup({ bus });
      await died(cutStep);
      const seen = await follow();
      expect(await adoption.recover('r1')).toBe(true);
      await resume();
      expect(framesOf(seen)).toEqual(numbered(6, [...closing, ...resumedSegment]));
    });

    it(`closes nothing in ${where} when the run's last segment has no open step`, async () => {
      const { adoption, died, follow, resume } = setup({ bus });
      await died([
        ...cutStep,
        { event_type: 'step_end' },
        finishEvent('t1', 'r1', { type: 'suspended' }),
        { event_type: 'run_start', thread_id: 't1', run_id: 'r1' },
      ]);
      const seen = await follow();
      expect(await adoption.recover('r1')).toBe(true);
      await resume();
      expect(framesOf(seen)).toEqual(numbered(9, resumedSegment));
    });
  }

  it('leaves the calls of the batch the store holds to the segment taken up (it tells their outcome): only the step is closed', async () => {
    const { adoption, died, follow, resume, store } = setup({ bus: true });
    const written: AgentEvent[] = [...cutStep, { event_type: 'tool_call_ready', id: 'c1', name: 'search', arguments: { q: 1 } }];
    await died(written);
    // The dead process had stored the batch (seed 003: before any gate or tool).
    const batch = { message_id: 'm1', text: 'Let me look', calls: [{ id: 'c1', name: 'search', arguments: { q: 1 } }], results: {} };
    await store.checkpoint({
      threadId: 't1',
      runId: 'r1',
      agentId: 'agent',
      messages: [],
      status: 'running',
      steps: 1,
      threadState: { revision: 2, extensions: { '__runtime.tool_batch': batch } },
      runState: { revision: 2, extensions: {} },
      updatedAt: 0,
    });
    const seen = await follow();
    expect(await adoption.recover('r1')).toBe(true);
    await resume();
    expect(framesOf(seen)).toEqual(numbered(7, [{ event_type: 'step_end' }, ...resumedSegment]));
  });

  it('closes the step in the shared log as frames of the run, in order after what the dead process appended', async () => {
    const { adoption, bus, died, resume } = setup({ bus: true });
    await died(cutStep);
    expect(await adoption.recover('r1')).toBe(true);
    await resume();
    const frames = (bus?.frames.get('t1') ?? []).map((f) => ({ seq: f.seq, runId: f.runId, event: JSON.parse(f.data) as AgentEvent }));
    expect(frames).toEqual([...cutStep, ...closing, ...resumedSegment].map((event, i) => ({ seq: i + 1, runId: 'r1', event })));
  });

  it('closes nothing after a restart without a bus: the ring of the new process is empty, and a client that comes back is resynced', async () => {
    const before = setup({ bus: false });
    await before.died(cutStep);
    // The process that held the ring is gone; the new one shares only the store's run with it.
    const after = setup({ bus: false });
    await stored(after.store, 'r1', 't1', 'running');
    expect(await after.adoption.recover('r1')).toBe(true);
    await after.resume();
    expect(await after.logs.runTail('t1', 'r1')).toEqual(resumedSegment);
    expect(await before.logs.runTail('t1', 'r1')).toEqual(cutStep);
  });

  it("reads the shared log back from its end only as far as the run's last run_start, across pages", async () => {
    const { bus, logs } = setup({ bus: true });
    if (bus === undefined) throw new Error('a bus was asked for');
    const earlier = Array.from({ length: 1_200 }, (_, i) => ({ seq: i + 1, runId: 'r0', data: JSON.stringify({ event_type: 'text_delta', delta: `${i}` }) }));
    const run = [...cutStep, ...Array.from({ length: 600 }, (): AgentEvent => ({ event_type: 'text_delta', delta: '.' }))];
    await bus.append('t1', [...earlier, ...run.map((e, i) => ({ seq: 1_201 + i, runId: 'r1', data: JSON.stringify(e) }))]);
    const reads: number[] = [];
    const read = bus.read.bind(bus);
    bus.read = (t, after, limit) => (reads.push(after), read(t, after, limit));
    expect(await logs.runTail('t1', 'r1')).toEqual(run);
    // 1,805 frames: the pages after 1,305 and after 805; the run began at 1,201.
    expect(reads).toEqual([1_305, 805]);
  });

  it('reads what the ring still holds of a run whose start it has let go', async () => {
    const { logs, died } = setup({ bus: false, capacity: 3 });
    await died(cutStep);
    expect(await logs.runTail('t1', 'r1')).toEqual(cutStep.slice(2));
  });

  it('takes the run up all the same when the shared log cannot be read, its step left as it was', async () => {
    const { adoption, bus, died, resume } = setup({ bus: true });
    if (bus === undefined) throw new Error('a bus was asked for');
    await died(cutStep);
    bus.read = async () => {
      throw new Error('connection reset');
    };
    expect(await adoption.recover('r1')).toBe(true);
    await resume();
    expect((bus.frames.get('t1') ?? []).map((f) => JSON.parse(f.data) as AgentEvent)).toEqual([...cutStep, ...resumedSegment]);
  });
});
