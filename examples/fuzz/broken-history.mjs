// The same idea done wrong, to see what `awaken fuzz` prints: a list that remembers the order of
// the calls, declared commutative — but two tool calls published in one round land in whichever
// order the engine merges their hooks, so the list differs from one run to the next.
//   npx awaken fuzz --plugin examples/fuzz/broken-history.mjs --seed 42
import fc from 'fast-check';
import { z } from 'zod';
import { defineStateKey, StateCommand } from 'awaken-ts';

export const History = defineStateKey({
  key: 'history.calls',
  merge: 'commutative',
  init: () => [],
  apply: (calls, name) => [...calls, name],
  codec: z.array(z.string()),
});

export const plugin = () => ({
  name: 'history',
  register: (r) => {
    r.registerKey(History);
    r.registerPhaseHook('after_tool_execute', (ctx) => StateCommand.empty().update(History, ctx.input.toolCall.name));
  },
});

export const fuzz = { updates: { 'history.calls': fc.constantFrom('search', 'read') } };
