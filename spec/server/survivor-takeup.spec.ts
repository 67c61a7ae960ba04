import { afterAll, describe, expect, it } from 'vitest';
import type { DeterministicEnv } from '../../src/runtime/env.ts';
import { PostgresBus } from '../../src/stores/postgres-bus.ts';
import { PostgresStore } from '../../src/stores/postgres.ts';
import { dropPrefix, PG_URL } from '../support/postgres.ts';
import { namedEnv } from '../support/runtime.ts';
import { gatedTool, json, parseSse, testServer } from '../support/server.ts';

/**
 * Two instances on PostgreSQL; one stops renewing its leases in the middle of a tool call (as a
 * dead or frozen process does). The other, sweeping, takes the run up under the same run id and
 * thread log — the call past its dispatch boundary ends indeterminate, never run twice — and the run
 * ends there. When the first comes back, its store refuses what it writes of the run (fenced): none
 * of it reaches the store or the shared log, and the lease it held is the survivor's, not its to release.
 */
const TTL = 10_000;
const prefix = `sv${process.pid}`;
const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const o of opened.reverse()) await o.close().catch(() => undefined);
  await dropPrefix(prefix);
});

async function instance(name: string, script: Parameters<typeof testServer>[0], tool: ReturnType<typeof gatedTool>['tool']) {
  const store = PostgresStore.withPrefix(PG_URL, prefix);
  const bus = new PostgresBus(PG_URL, { prefix });
  opened.push(store, bus);
  const s = testServer(script, { store, env: namedEnv(name), tools: [tool], registry: { bus, leases: { owner: name, ttlMs: TTL }, recovery: 'resume' } });
  await s.registry.attachBus();
  return { ...s, bus };
}

interface Seen {
  readonly event_type: string;
  readonly id?: string;
  readonly outcome?: string;
  readonly termination?: unknown;
  readonly activity_type?: string;
  readonly content?: unknown;
}

const until = async (what: () => Promise<boolean> | boolean): Promise<void> => {
  for (let i = 0; i < 2500 && !(await what()); i++) await new Promise((r) => setTimeout(r, 4));
  expect(await what()).toBe(true);
};

describe('a surviving instance takes up the run of an expired lease', () => {
  it('goes on with it where it was stored; the instance that lost it writes and publishes nothing more of it', async () => {
    const onA = gatedTool();
    const onB = gatedTool();
    const a = await instance('a', [{ text: 'charging', tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: 'a' } }] }, { text: 'never said' }], onA.tool);
    const b = await instance(
      'b',
      [{ text: 'checking', tool_calls: [{ id: 'd', name: 'slow', arguments: { tag: 'b' } }] }, { text: 'The charge may or may not have gone through.' }],
      onB.tool,
    );
    const started = await a.app.request('/v1/runs', json({ threadId: 'survive', messages: [{ role: 'user', content: 'charge me' }] }));
    const runId = started.headers.get('x-awaken-run-id') as string;
    const aStream = started.text();
    await until(() => onA.started.length === 1);

    // A stops renewing: its lease expires, and B's sweep takes the run up rather than ending it.
    (b.runtime.env as DeterministicEnv).advance(TTL + 1);
    expect(await b.registry.sweepLeases()).toEqual([]);
    await until(() => onB.started.length === 1);

    // A comes back while the run goes on on B: its tool returns, and what its run would write next is refused.
    onA.open();
    await until(() => a.registry.currentRun('survive') === undefined);
    // A's own client is let go (the run goes on elsewhere): its stream ends, with no end of the run A would have told.
    const told = parseSse(await aStream).map((f) => (JSON.parse(f.data) as Seen).event_type);
    expect(told.filter((t) => t === 'run_finish' || t === 'tool_call_done')).toEqual([]);
    expect(await b.store.getRun(runId)).toMatchObject({ status: 'running', steps: 2 });
    onB.open();
    await until(async () => (await b.store.getRun(runId))?.status === 'done');
    const ended = await b.store.getRun(runId);
    expect(ended?.termination).toEqual({ type: 'natural_end' });
    await a.registry.shutdown();
    await b.registry.shutdown();

    // The call ran once, on A; B never ran it again (it had crossed its dispatch boundary on A).
    expect([onA.effects, onB.started]).toEqual([['a'], ['b']]);
    expect(await b.store.getRun(runId)).toEqual(ended);
    const messages = (await b.store.loadThread('survive'))?.messages ?? [];
    expect(messages.map((m) => [m.role, m.content.map((p) => ('text' in p ? p.text : '')).join('')])).toEqual([
      ['user', 'charge me'],
      ['assistant', 'charging'],
      [
        'tool',
        'The outcome of tool call c (slow) is unknown: it was dispatched before the run was interrupted and was not run again, because the pinned recovery mode is never_replay.',
      ],
      ['assistant', 'checking'],
      ['tool', '{"tag":"b"}'],
      ['assistant', 'The charge may or may not have gone through.'],
    ]);
    expect(await b.store.getLease('survive')).toBeUndefined();

    // One stream in the shared log: A's segment, its cut step closed, B's segment to the one end.
    const frames = await b.bus.read('survive', 0, 10_000);
    expect(frames.map((f) => f.seq)).toEqual(frames.map((_, i) => i + 1));
    const events = frames.map((f) => JSON.parse(f.data) as Seen);
    const shape = (e: Seen): string =>
      e.event_type === 'tool_call_done'
        ? `tool_call_done ${e.id} ${e.outcome}`
        : e.event_type === 'run_finish'
          ? `run_finish ${JSON.stringify(e.termination)}`
          : e.event_type === 'activity_snapshot'
            ? `${e.activity_type} ${JSON.stringify(e.content)}`
            : e.event_type;
    const second = events.findIndex((e, i) => i > 0 && e.event_type === 'run_start');
    expect(
      events
        .slice(0, second)
        .map(shape)
        .filter((s) => !s.startsWith('text_delta') && !s.startsWith('tool_call_delta')),
    ).toEqual([
      'run_start',
      'step_start',
      'tool_call_start',
      'tool_call_ready',
      'inference_complete',
      // The closer of the step A was cut off in (its call is the stored batch's: B tells its outcome).
      'step_end',
    ]);
    const rest = events.slice(second).map(shape);
    expect(rest.slice(0, 4)).toEqual(['run_start', 'run_resumed {"from":"tool_batch","step":1}', 'step_start', 'tool_call_done c failed']);
    expect(rest.filter((s) => s.startsWith('tool_call_done'))).toEqual(['tool_call_done c failed', 'tool_call_done d succeeded']);
    expect(rest.filter((s) => s.startsWith('run_finish'))).toEqual(['run_finish {"type":"natural_end"}']);
    expect(rest.at(-1)).toBe('run_finish {"type":"natural_end"}');
  });
});
