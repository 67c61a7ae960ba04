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

const HEX_DIGITS = [48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 97, 98, 99, 100, 101, 102] as const;

/** Writes the low `digits` hex digits of `n` (lower case) into `out` at `at`. */
function hexAt(out: Uint8Array, at: number, n: number, digits: number): void {
  for (let i = digits - 1; i >= 0; i--) {
    out[at + i] = HEX_DIGITS[n & 0xf] as number;
    n >>>= 4;
  }
}
/** The eight hex digits of a 32-bit `n` (lower case), as one string of its own. */
const hex8 = (n: number): string =>
  String.fromCharCode(
    HEX_DIGITS[n >>> 28] as number,
    HEX_DIGITS[(n >>> 24) & 0xf] as number,
    HEX_DIGITS[(n >>> 20) & 0xf] as number,
    HEX_DIGITS[(n >>> 16) & 0xf] as number,
    HEX_DIGITS[(n >>> 12) & 0xf] as number,
    HEX_DIGITS[(n >>> 8) & 0xf] as number,
    HEX_DIGITS[(n >>> 4) & 0xf] as number,
    HEX_DIGITS[n & 0xf] as number,
  );

/** Where a UUID v7 source keeps its latest time and its counter c. */
const LAST_MS = 0;
const C = 1;

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
  // The latest time (`LAST_MS`) and c, in a typed array: neither is a small integer, and variables
  // holding them would box every new value (c changes with every id).
  const held = new Float64Array(2);
  held[LAST_MS] = -1;
  // The 74 random bits: a (12, rand_a), b (30) and c (32, `held[C]`): rand_b is b then c.
  let a = 0;
  let b = 0;
  // The id's text up to c, dashes and version digit in place: 8-4-4-4-4 and the first four of the
  // last twelve (c is the other eight); `head` is it as a string once written.
  const text = Buffer.from('00000000-0000-7000-8000-0000', 'latin1') as Buffer & { latin1Slice(start: number, end: number): string };
  // Before any full write (a clock read before the epoch never makes one), the buffer's own text.
  let head = '00000000-0000-7000-8000-0000';
  const reseed = (): void => {
    if (at + 10 > POOL_BYTES) {
      fill(pool);
      at = 0;
    }
    const p = pool;
    a = (((p[at] as number) << 8) | (p[at + 1] as number)) & 0xfff;
    b = (((p[at + 2] as number) << 24) | ((p[at + 3] as number) << 16) | ((p[at + 4] as number) << 8) | (p[at + 5] as number)) & 0x3fffffff;
    held[C] = (((p[at + 6] as number) << 24) | ((p[at + 7] as number) << 16) | ((p[at + 8] as number) << 8) | (p[at + 9] as number)) >>> 0;
    at += 10;
  };
  return () => {
    const ms = now();
    const c = held[C] as number;
    // The common case, a further id in the same millisecond, changes only c: the time, a and b are
    // the text of the last full write (`head`), and c's eight digits are made as one short string
    // (a call into the buffer's binding cost an id three times as much).
    if (ms <= (held[LAST_MS] as number) && c !== 0xffffffff) {
      held[C] = c + 1;
      return head + hex8(c + 1);
    }
    if (ms > (held[LAST_MS] as number)) {
      held[LAST_MS] = ms;
      reseed();
    } else {
      held[C] = 0;
      if (b !== 0x3fffffff) b++;
      else if (a !== 0xfff) (b = 0), a++;
      else {
        held[LAST_MS] = (held[LAST_MS] as number) + 1;
        reseed();
      }
    }
    const lastMs = held[LAST_MS] as number;
    const hi = Math.floor(lastMs / 0x100000000) & 0xffff;
    const lo = lastMs >>> 0;
    // Written as ASCII into one buffer and read back as one flat string (a template of twenty
    // pieces would allocate a rope and then flatten it); an id is that and c's digits, two pieces.
    hexAt(text, 0, hi, 4);
    hexAt(text, 4, lo >>> 16, 4);
    hexAt(text, 9, lo & 0xffff, 4);
    hexAt(text, 15, a, 3);
    hexAt(text, 19, 0x8 | (b >>> 28), 1);
    hexAt(text, 20, (b >>> 16) & 0xfff, 3);
    hexAt(text, 24, b & 0xffff, 4);
    head = text.latin1Slice(0, 28);
    return head + hex8(held[C] as number);
  };
}

/**
 * The real environment: wall clock, UUID v7 ids, `Math.random`, timers. The clock never goes
 * backwards (a wall-clock step back reads as no time passing), as every `Env` clock must.
 */
export function realEnv(): Env {
  // The latest reading, in a typed array: a time in ms is no small integer, and a variable holding
  // it would box every new reading (the loop reads the clock several times a step).
  const last = new Float64Array(1);
  const nextId = uuidV7Generator();
  return {
    clock: {
      now: () => {
        const t = Date.now();
        if (t > (last[0] as number)) last[0] = t;
        return last[0] as number;
      },
    },
    // The generator itself (it takes no kind): no wrapper call per id.
    ids: { next: nextId },
    random: () => Math.random(),
    sleep: sleepFor,
  };
}

/** A real wait of `ms` (a timer), rejected once `signal` aborts: `realEnv`'s `sleep`. */
export function sleepFor(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
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
  });
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

/** The environment with every id it hands out prefixed (sub-runs drawing from an environment of their own, apart from the run's). */
export function withIdPrefix<E extends Env>(env: E, prefix: string): E {
  return { ...env, ids: { next: (kind: IdKind) => `${prefix}${env.ids.next(kind)}` } };
}
