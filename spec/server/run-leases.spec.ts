import { describe, expect, it } from 'vitest';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { RunLeases } from '../../src/server/run-leases.ts';
import { MemoryStore } from '../../src/stores/memory.ts';

describe('RunLeases', () => {
  it('takes a thread for a run under its owner, refuses a second while it runs, renews what it holds, and lets it expire on the Env clock', async () => {
    const env = deterministicEnv();
    const store = new MemoryStore();
    const a = new RunLeases(store, env, { owner: 'A', ttlMs: 100 });
    const b = new RunLeases(store, env, { owner: 'B', ttlMs: 100 });
    expect(await a.take('t', 'r1')).toEqual({ ok: true });
    const refused = await b.take('t', 'r2');
    expect(refused.ok).toBe(false);
    env.advance(90);
    expect((await a.renew()).map((l) => [l.thread_id, l.run_id, l.owner])).toEqual([['t', 'r1', 'A']]);
    env.advance(90);
    expect(await b.expired()).toEqual([]);
    env.advance(20);
    const [lease] = await b.expired();
    expect(lease).toMatchObject({ thread_id: 't', run_id: 'r1', owner: 'A' });
    expect(b.isExpired(lease as NonNullable<typeof lease>)).toBe(true);
    // Exactly one instance takes an expired lease over.
    expect(await b.takeOver(lease as NonNullable<typeof lease>)).toBe(true);
    expect(await a.takeOver(lease as NonNullable<typeof lease>)).toBe(false);
    expect((await b.get('t'))?.owner).toBe('B');
    // The run's old owner finds it gone at its next renewal.
    expect(await a.renew()).toEqual([]);
    await b.release('t', 'r1');
    expect(await b.get('t')).toBeUndefined();
  });

  it("carries a cancel request on a lease to its holder's next renewal; bounds its timings", async () => {
    const env = deterministicEnv();
    const store = new MemoryStore();
    const a = new RunLeases(store, env, { owner: 'A', ttlMs: 1, sweepMs: 1 });
    expect([a.ttlMs, a.sweepMs]).toEqual([30, 10]);
    expect(await a.take('t', 'r1')).toEqual({ ok: true });
    expect(await a.requestCancel('r1')).toBe(true);
    expect((await a.renew())[0]?.cancel_requested).toBe(true);
    expect(new RunLeases(store, env).owner).toBe('instance-1');
  });
});
