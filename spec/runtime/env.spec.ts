import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deterministicEnv, realEnv, uuidV7, uuidV7Generator } from '../../src/runtime/env.ts';

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

  const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  const msOf = (id: string): number => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);

  it('real ids are strictly increasing within a millisecond, across a clock step back and across entropy refills (RFC 9562 §6.2)', () => {
    let now = 1_700_000_000_000;
    let fills = 0;
    const next = uuidV7Generator(
      () => now,
      (buffer) => {
        fills++;
        for (let i = 0; i < buffer.length; i++) buffer[i] = (i * 131 + fills * 17) & 0xff;
      },
    );
    const ids: string[] = [];
    // A new millisecond for each of the first 1,000 (fresh entropy each: the pool is refilled), then
    // 4,000 within one millisecond (counted on).
    for (let i = 0; i < 5_000; i++) {
      if (i < 1_000) now++;
      ids.push(next());
    }
    now -= 5_000; // the wall clock steps back
    for (let i = 0; i < 100; i++) ids.push(next());
    now += 10_000;
    ids.push(next());
    expect(fills).toBeGreaterThan(1);
    for (const id of ids) expect(id).toMatch(UUID_V7);
    for (let i = 1; i < ids.length; i++) expect((ids[i - 1] as string) < (ids[i] as string), `${i}`).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    // The timestamp never goes back; after the step back it stays on the last time seen.
    expect(msOf(ids[5_050] as string)).toBe(1_700_000_001_000);
    expect(msOf(ids.at(-1) as string)).toBe(now);
  });

  it('property: for any clock readings, ids are valid v7, strictly increasing, and carry the latest time read (or later, on a counter overflow)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -3, max: 3 }), { minLength: 1, maxLength: 300 }),
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        (moves, seed) => {
          let now = 1_700_000_000_000;
          let k = 0;
          const next = uuidV7Generator(
            () => now,
            (buffer) => {
              for (let i = 0; i < buffer.length; i++) buffer[i] = (seed[(i + k) % 16] as number) ^ (i & 0xff);
              k++;
            },
          );
          let latest = 0;
          let previous = '';
          for (const move of moves) {
            now += move;
            latest = Math.max(latest, now);
            const id = next();
            expect(id).toMatch(UUID_V7);
            expect(id > previous).toBe(true);
            expect(msOf(id)).toBeGreaterThanOrEqual(latest);
            previous = id;
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('the bits of an id, pinned: 48 bits of time, then rand_a, the variant and rand_b from the pool, counting on within a millisecond', () => {
    const fill = (b: Uint8Array): void => {
      for (let i = 0; i < b.length; i++) b[i] = (i * 197 + 89) & 0xff;
    };
    const at = (ms: number, n: number): string[] => {
      const next = uuidV7Generator(() => ms, fill);
      return Array.from({ length: n }, () => next());
    };
    expect(at(1_700_000_000_123, 3)).toEqual([
      '018bcfe5-687b-791e-a3a8-6d32f7bc8146',
      '018bcfe5-687b-791e-a3a8-6d32f7bc8147',
      '018bcfe5-687b-791e-a3a8-6d32f7bc8148',
    ]);
    expect(at(0xffffffffffff, 1)).toEqual(['ffffffff-ffff-791e-a3a8-6d32f7bc8146']);
    expect(at(5, 1)).toEqual(['00000000-0005-791e-a3a8-6d32f7bc8146']);
  });

  it('within a millisecond only the counter moves, and its carry into rand_b rewrites the digits before it', () => {
    // rand_a 0x111, rand_b's high part 0x11111111, and the counter two short of its top.
    const fill = (b: Uint8Array): void => {
      for (let i = 0; i < b.length; i++) b[i] = i % 10 < 6 ? 0x11 : i % 10 < 9 ? 0xff : 0xfe;
    };
    const next = uuidV7Generator(() => 5, fill);
    expect(Array.from({ length: 4 }, () => next())).toEqual([
      '00000000-0005-7111-9111-1111fffffffe',
      '00000000-0005-7111-9111-1111ffffffff',
      '00000000-0005-7111-9111-111200000000',
      '00000000-0005-7111-9111-111200000001',
    ]);
  });

  it('a clock read before the epoch gives whole ids too: time 0 and the counter from 0, until a reading after it', () => {
    const readings = [-1, -5, Number.NEGATIVE_INFINITY, 7];
    const next = uuidV7Generator(
      () => readings.shift() as number,
      (b) => b.fill(0xff),
    );
    expect(Array.from({ length: 4 }, () => next())).toEqual([
      '00000000-0000-7000-8000-000000000001',
      '00000000-0000-7000-8000-000000000002',
      '00000000-0000-7000-8000-000000000003',
      '00000000-0007-7fff-bfff-ffffffffffff',
    ]);
  });

  it('real ids from the default Env: valid, unique and increasing over a burst', () => {
    const env = realEnv();
    const ids = Array.from({ length: 20_000 }, () => env.ids.next('message'));
    for (const id of ids.slice(0, 100)) expect(id).toMatch(UUID_V7);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });
});
