import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deterministicEnv, realEnv, uuidV7 } from '../../src/runtime/env.ts';

describe('Env', () => {
  it('deterministic: ids numbered per kind, a simulated clock moved by sleep, a seeded random stream', async () => {
    const env = deterministicEnv({ start: 1000, seed: 7 });
    expect([env.ids.next('run'), env.ids.next('message'), env.ids.next('run')]).toEqual(['run-1', 'message-1', 'run-2']);
    expect(env.clock.now()).toBe(1000);
    await env.sleep(250);
    expect(env.clock.now()).toBe(1250);
    env.advance(50);
    expect(env.clock.now()).toBe(1300);
    const a = deterministicEnv({ seed: 7 });
    const b = deterministicEnv({ seed: 7 });
    const xs = Array.from({ length: 5 }, () => a.random());
    expect(Array.from({ length: 5 }, () => b.random())).toEqual(xs);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(deterministicEnv({ seed: 8 }).random()).not.toBe(xs[0]);
    const ticking = deterministicEnv({ start: 0, tick: 3 });
    expect([ticking.clock.now(), ticking.clock.now()]).toEqual([0, 3]);
  });

  it('sleep rejects at once on an aborted signal', async () => {
    const c = new AbortController();
    c.abort();
    await expect(deterministicEnv().sleep(10, c.signal)).rejects.toThrow();
    await expect(realEnv().sleep(10, c.signal)).rejects.toThrow();
  });

  it('real sleep waits, and stops early when aborted', async () => {
    const env = realEnv();
    await env.sleep(1);
    const c = new AbortController();
    const p = env.sleep(10_000, c.signal);
    c.abort(new Error('stop'));
    await expect(p).rejects.toThrow('stop');
    expect(typeof env.random()).toBe('number');
    expect(env.clock.now()).toBeGreaterThan(1_600_000_000_000);
  });

  it('real ids are UUID v7 and sort by time', () => {
    expect(realEnv().ids.next('run')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 47 }), fc.integer({ min: 0, max: 2 ** 47 }), (t1, t2) => {
        const a = uuidV7(t1);
        const b = uuidV7(t2);
        if (t1 < t2) expect(a < b).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});
