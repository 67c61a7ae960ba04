import { randomBytes } from 'node:crypto';

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

/**
 * The real environment: wall clock, UUID v7 ids, `Math.random`, timers. The clock never goes
 * backwards (a wall-clock step back reads as no time passing), as every `Env` clock must.
 */
export function realEnv(): Env {
  let last = 0;
  return {
    clock: {
      now: () => {
        last = Math.max(last, Date.now());
        return last;
      },
    },
    ids: { next: () => uuidV7(Date.now()) },
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
