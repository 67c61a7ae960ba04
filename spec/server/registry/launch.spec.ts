import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../../src/contract/event.ts';
import { deterministicEnv } from '../../../src/runtime/env.ts';
import type { LiveRun } from '../../../src/server/live-run.ts';
import { silentLogger } from '../../../src/server/log.ts';
import { RunLauncher } from '../../../src/server/registry/launch.ts';
import { LiveRuns } from '../../../src/server/registry/live-runs.ts';
import { ThreadLogs } from '../../../src/server/registry/thread-logs.ts';
import type { LogItem } from '../../../src/server/thread-log.ts';
import { MemoryStore } from '../../../src/stores/memory.ts';
import { fakeHandle, finishEvent, seen, textEvent, tick } from '../../support/registry-fakes.ts';

/** A run's life here: registered once begun, its frames followed and published, its end freeing the thread. */
function setup() {
  const env = deterministicEnv();
  const runs = new LiveRuns(() => false);
  const logs = new ThreadLogs({
    store: new MemoryStore(),
    logger: silentLogger,
    relay: undefined,
    capacity: 64,
    ringBytes: 1 << 20,
    maxThreadLogs: 100,
    maxReplayBytes: 1 << 20,
    seqBlock: 1024,
    isBusy: (t) => runs.current(t) !== undefined,
  });
  const released: string[] = [];
  const noted: string[] = [];
  let quiet = 0;
  const launcher = new RunLauncher({
    env,
    logger: silentLogger,
    logs,
    runs,
    releaseLease: async (threadId, runId) => void released.push(`${threadId}/${runId}`),
    noted: (_run: LiveRun, event: AgentEvent) => void noted.push(event.event_type),
    quiet: () => void quiet++,
  });
  const items: LogItem[] = [];
  logs.log('t1').subscribe(
    undefined,
    (i) => items.push(i),
    () => ({ kind: 'resync', seq: 0, messages: [] }),
  );
  return { env, runs, logs, launcher, released, noted, items, quiet: () => quiet };
}

describe('RunLauncher', () => {
  it("registers the begun run as the thread's, records frames emitted before the handle is known, and frees the thread at its end", async () => {
    const { runs, launcher, released, noted, items, quiet } = setup();
    const handle = fakeHandle('r1', 't1');
    const watched: string[] = [];
    const off = launcher.watch((run, event) => void watched.push(`${run.runId}:${event.event_type}`));
    const launched = await launcher.launch('t1', 'r1', 'agent', undefined, [], 'running', async (sink) => {
      handle.sink = sink;
      void sink.emit({ event_type: 'run_start', thread_id: 't1', run_id: 'r1' });
      return { ok: true, value: handle };
    });
    if (!launched.ok) throw new Error(launched.error.message);
    expect(runs.current('t1')).toBe(launched.value.run);
    expect(launched.value.run.fromSeq).toBe(0);
    await handle.sink?.emit(textEvent('t1', 'r1', 'hi'));
    await handle.sink?.emit(finishEvent('t1', 'r1'));
    off();
    handle.end();
    expect(await launched.value.done).toMatchObject({ runId: 'r1' });
    expect(seen(items)).toEqual(['1:run_start', '2:text_delta:hi', '3:run_finish']);
    expect(watched).toEqual(['r1:run_start', 'r1:text_delta', 'r1:run_finish']);
    expect(noted).toEqual(['run_start', 'text_delta', 'run_finish']);
    expect(launched.value.run.status).toBe('done');
    expect(runs.current('t1')).toBeUndefined();
    expect(runs.has('r1')).toBe(false);
    await launched.value.run.released;
    expect(released).toEqual(['t1/r1']);
    expect(quiet()).toBe(1);
  });

  it('gives a run that crashed without a terminal frame one (cancelled when it was asked to stop, else the error)', async () => {
    const { launcher, items } = setup();
    const crashed = fakeHandle('r1', 't1');
    const one = await launcher.launch('t1', 'r1', 'agent', undefined, [], 'running', async () => ({ ok: true, value: crashed }));
    if (!one.ok) throw new Error('not launched');
    crashed.crash(new Error('boom'));
    expect(await one.value.done).toBeUndefined();
    const stopped = fakeHandle('r2', 't1');
    const two = await launcher.launch('t1', 'r2', 'agent', undefined, [], 'running', async () => ({ ok: true, value: stopped }));
    if (!two.ok) throw new Error('not launched');
    two.value.run.stopRequested = true;
    stopped.crash(new Error('gone'));
    await two.value.done;
    await tick();
    const finishes = items.flatMap((i) => (i.kind === 'frame' && i.event.event_type === 'run_finish' ? [i.event.termination] : []));
    expect(finishes).toEqual([{ type: 'error', value: 'boom' }, { type: 'cancelled' }]);
  });

  it('a revived run starts waiting with the calls its handle waits on, its suspended segment already ended', async () => {
    const { launcher } = setup();
    const call = { call: { id: 'c1', name: 'approve', arguments: {} }, messageId: 'm1', ticket: undefined } as never;
    const handle = fakeHandle('r1', 't1', { waitingOn: [call] });
    const launched = await launcher.launch('t1', 'r1', 'agent', undefined, [], 'waiting', async () => ({ ok: true, value: handle }));
    if (!launched.ok) throw new Error('not launched');
    expect(launched.value.run.status).toBe('waiting');
    expect(launched.value.run.terminalSeen).toBe(true);
    expect([...launched.value.run.waiting.keys()]).toEqual(['c1']);
  });

  it('releases the lease and says why when the run does not start', async () => {
    const { runs, launcher, released } = setup();
    const launched = await launcher.launch('t1', 'r1', 'agent', undefined, [], 'running', async () => ({
      ok: false,
      error: { code: 'agent_not_found', message: 'no agent x' } as { code: string },
    }));
    expect(launched).toEqual({ ok: false, error: { code: 'start_failed', message: 'no agent x' } });
    expect(released).toEqual(['t1/r1']);
    expect(runs.size).toBe(0);
  });
});
