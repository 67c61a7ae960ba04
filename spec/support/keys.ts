import { z } from 'zod';
import { defineStateKey, type StateKey } from '../../src/core/state/state-key.ts';

/** Commutative counter: `apply` adds. */
export const counterKey = (key: string): StateKey<number, number> =>
  defineStateKey({ key, merge: 'commutative', init: () => 0, apply: (v: number, u: number) => v + u, codec: z.number() });

/** Commutative set of strings (kept sorted, so the value is order-independent). */
export const setKey = (key: string): StateKey<readonly string[], string> =>
  defineStateKey({
    key,
    merge: 'commutative',
    init: () => [] as readonly string[],
    apply: (v: readonly string[], u: string) => (v.includes(u) ? v : [...v, u].sort()),
    codec: z.array(z.string()) as z.ZodType<readonly string[]>,
  });

/** Exclusive register: `apply` replaces. */
export const registerKey = (key: string): StateKey<string, string> =>
  defineStateKey({ key, init: () => '', apply: (_v: string, u: string) => u, codec: z.string() });

/** Exclusive append-only log: shows the order in which updates were applied. */
export const logKey = (key: string): StateKey<readonly string[], string> =>
  defineStateKey({
    key,
    init: () => [] as readonly string[],
    apply: (v: readonly string[], u: string) => [...v, u],
    codec: z.array(z.string()) as z.ZodType<readonly string[]>,
  });
