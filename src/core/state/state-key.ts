import type { z } from 'zod';
import type { JsonValue } from '../../contract/json.ts';

/** How parallel writes to one key combine (book: 状态键 → MergeStrategy). */
export type MergeStrategy = 'exclusive' | 'commutative';

/** Whether a key lives for one run or for the whole thread (book: 状态键 → KeyScope). */
export type KeyScope = 'run' | 'thread';

/**
 * A typed state slot: its name, merge strategy, reducer, default value and codec.
 * `apply` must be pure: it returns the next value and never mutates `value` (snapshots share values).
 */
export interface StateKey<V, U> {
  readonly key: string;
  readonly merge: MergeStrategy;
  init(): V;
  apply(value: V, update: U): V;
  /** Decodes a persisted value; `encode` (default: the value itself) must produce what `codec` accepts. */
  readonly codec: z.ZodType<V>;
  encode(value: V): JsonValue;
}

/** A key with its types erased, as the registry holds it (methods are bivariant, so any key fits). */
export type AnyStateKey = StateKey<unknown, unknown>;

export type ValueOf<K> = K extends StateKey<infer V, unknown> ? V : never;

export function defineStateKey<V, U>(def: {
  readonly key: string;
  readonly merge?: MergeStrategy;
  readonly init: () => V;
  readonly apply: (value: V, update: U) => V;
  readonly codec: z.ZodType<V>;
  readonly encode?: (value: V) => JsonValue;
}): StateKey<V, U> {
  return Object.freeze({
    key: def.key,
    merge: def.merge ?? 'exclusive',
    init: def.init,
    apply: def.apply,
    codec: def.codec,
    encode: def.encode ?? ((value: V) => value as unknown as JsonValue),
  });
}

/**
 * Registration options; the scope of a key comes from here only (core-spec §1.1: 0.6 ignores the
 * key's own declared scope, so this port has none to ignore).
 */
export interface StateKeyOptions {
  readonly persistent: boolean;
  readonly retainOnUninstall: boolean;
  readonly scope: KeyScope;
}

export const DEFAULT_KEY_OPTIONS: StateKeyOptions = Object.freeze({
  persistent: true,
  retainOnUninstall: false,
  scope: 'run',
});

/** The eight possible option sets, frozen once: index `persistent · 4 + retainOnUninstall · 2 + (scope thread) · 1`. */
const OPTION_SETS: readonly StateKeyOptions[] = Array.from({ length: 8 }, (_, i) =>
  Object.freeze({ persistent: (i & 4) !== 0, retainOnUninstall: (i & 2) !== 0, scope: (i & 1) !== 0 ? 'thread' : 'run' } as const),
);

/** The options a registration asks for, defaults filled in; one shared frozen object per combination (no copy per key). */
export const keyOptions = (options: Partial<StateKeyOptions> = DEFAULT_KEY_OPTIONS): StateKeyOptions => {
  const persistent = options.persistent ?? DEFAULT_KEY_OPTIONS.persistent;
  const retain = options.retainOnUninstall ?? DEFAULT_KEY_OPTIONS.retainOnUninstall;
  const thread = (options.scope ?? DEFAULT_KEY_OPTIONS.scope) === 'thread';
  return OPTION_SETS[(persistent ? 4 : 0) + (retain ? 2 : 0) + (thread ? 1 : 0)] as StateKeyOptions;
};
