import { randomBytes, randomFillSync } from 'node:crypto';

/** What an id is for; deterministic environments number each kind separately. */
export type IdKind = 'run' | 'thread' | 'message' | 'tool_call' | 'decision' | (string & {});

export interface Clock {
  /** Milliseconds since the Unix epoch; never less than an earlier reading. */
  now(): number;
}

export interface IdGenerator {
  next(kind: IdKind): string;
}

/**
 * Every source of nondeterminism the runtime may use (ARCHITECTURE.md → Determinism). Nothing in
 * the loop reads time, draws ids or randomness, or waits, any other way.
 */
export interface Env {
  readonly clock: Clock;
  readonly ids: IdGenerator;
  random(): number;
  /** Resolves after `ms`, or rejects with an `AbortError` when `signal` aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : Object.assign(new Error('aborted'), { name: 'AbortError' });
}

/** UUID v7: 48 bits of milliseconds, then random bits (RFC 9562). */
export function uuidV7(ms: number, random: Uint8Array = randomBytes(10)): string {
  const hex = ms.toString(16).padStart(12, '0').slice(-12);
  const r = Buffer.from(random).toString('hex').padEnd(20, '0');
  const variant = ((parseInt(r.slice(3, 4), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7${r.slice(0, 3)}-${variant}${r.slice(4, 7)}-${r.slice(7, 19)}`;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const hex32 = (n: number): string => (HEX[n >>> 24] as string) + HEX[(n >>> 16) & 255] + HEX[(n >>> 8) & 255] + HEX[n & 255];
const hex16 = (n: number): string => (HEX[(n >>> 8) & 255] as string) + HEX[n & 255];
/** Bytes of entropy drawn at once (256 ids' worth). */
const POOL_BYTES = 2560;

/**
 * A UUID v7 source (RFC 9562): 48 bits of milliseconds from `now`, then 74 bits that are random at the
 * first id of a millisecond and one more for each further id in it (§6.2, monotonic random), so the
 * ids of one source sort strictly by creation — within a millisecond, and when the clock steps back
 * (the time then stays on the latest reading; a full counter moves it on by 1 ms). Entropy is drawn
 * from a pool that `fill` refills 256 ids at a time (default: the system's CSPRNG), not per id.
 */
export function uuidV7Generator(now: () => number = Date.now, fill: (buffer: Uint8Array) => void = randomFillSync): () => string {
  const pool = new Uint8Array(POOL_BYTES);
  let at = POOL_BYTES;
  let lastMs = -1;
  // The 74 random bits: a (12, rand_a), b (30) and c (32): rand_b is b then c.
  let a = 0;
  let b = 0;
  let c = 0;
  const reseed = (): void => {
    if (at + 10 > POOL_BYTES) {
      fill(pool);
      at = 0;
    }
    const p = pool;
    a = (((p[at] as number) << 8) | (p[at + 1] as number)) & 0xfff;
    b = (((p[at + 2] as number) << 24) | ((p[at + 3] as number) << 16) | ((p[at + 4] as number) << 8) | (p[at + 5] as number)) & 0x3fffffff;
    c = (((p[at + 6] as number) << 24) | ((p[at + 7] as number) << 16) | ((p[at + 8] as number) << 8) | (p[at + 9] as number)) >>> 0;
    at += 10;
  };
  return () => {
    const ms = now();
    if (ms > lastMs) {
      lastMs = ms;
      reseed();
    } else if (c !== 0xffffffff) c++;
    else {
      c = 0;
      if (b !== 0x3fffffff) b++;
      else if (a !== 0xfff) (b = 0), a++;
      else {
        lastMs++;
        reseed();
      }
    }
    const hi = Math.floor(lastMs / 0x100000000) & 0xffff;
    const lo = lastMs >>> 0;
    return `${hex16(hi)}${hex16(lo >>> 16)}-${hex16(lo)}-7${HEX[a >>> 8]?.[1] ?? '0'}${HEX[a & 255]}-${(0x8 | (b >>> 28)).toString(16)}${(HEX[(b >>> 24) & 0xf] as string)[1]}${HEX[(b >>> 16) & 255]}-${hex16(b & 0xffff)}${hex32(c)}`;
  };
}

/**
 * The real environment: wall clock, UUID v7 ids, `Math.random`, timers. The clock never goes
 * backwards (a wall-clock step back reads as no time passing), as every `Env` clock must.
 */
export function realEnv(): Env {
  let last = 0;
  const nextId = uuidV7Generator();
  return {
    clock: {
      now: () => {
        last = Math.max(last, Date.now());
        return last;
      },
    },
    ids: { next: () => nextId() },
    random: () => Math.random(),
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        if (signal?.aborted === true) return reject(abortError(signal));
        const timer = setTimeout(() => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        }, ms);
        const onAbort = (): void => {
          clearTimeout(timer);
          reject(abortError(signal as AbortSignal));
        };
        signal?.addEventListener('abort', onAbort, { once: true });
      }),
  };
}

export interface DeterministicEnvOptions {
  /** Initial clock reading, ms since the epoch. */
  readonly start?: number;
  /** Seed of the random stream. */
  readonly seed?: number;
  /** Milliseconds the clock advances on every read (0: time moves only through `sleep`). */
  readonly tick?: number;
}

/**
 * A reproducible environment: a simulated clock that moves only by `sleep` (and `tick`), ids
 * `<kind>-<n>` numbered per kind, and a seeded PRNG (mulberry32). `sleep` never waits for real.
 */
export interface DeterministicEnv extends Env {
  /** Moves the simulated clock forward. */
  advance(ms: number): void;
}

export function deterministicEnv(options: DeterministicEnvOptions = {}): DeterministicEnv {
  let now = options.start ?? 1_700_000_000_000;
  const tick = options.tick ?? 0;
  const counters = new Map<string, number>();
  let state = (options.seed ?? 42) >>> 0;
  return {
    clock: {
      now: () => {
        const t = now;
        now += tick;
        return t;
      },
    },
    ids: {
      next: (kind) => {
        const n = (counters.get(kind) ?? 0) + 1;
        counters.set(kind, n);
        return `${kind}-${n}`;
      },
    },
    random: () => {
      state = (state + 0x6d2b79f5) >>> 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    },
    sleep: (ms, signal) => {
      if (signal?.aborted === true) return Promise.reject(abortError(signal));
      now += Math.max(0, ms);
      return Promise.resolve();
    },
    advance: (ms) => {
      now += ms;
    },
  };
}
