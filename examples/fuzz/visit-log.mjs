// A plugin that remembers which tools a thread has used, for `awaken fuzz`:
//   npx awaken fuzz --plugin examples/fuzz/visit-log.mjs
// `fuzz.updates` tells the fuzzer what a hook may write to each key, so that the key's laws are checked.
import fc from 'fast-check';
import { z } from 'zod';
import { defineStateKey, StateCommand } from 'awaken-ts';

/** The tools used in this thread, each once, sorted: a set, so parallel writers commute. */
export const ToolsUsed = defineStateKey({
  key: 'visit_log.tools',
  merge: 'commutative',
  init: () => [],
  apply: (tools, name) => (tools.includes(name) ? tools : [...tools, name].sort()),
  codec: z.array(z.string()),
});

export default {
  name: 'visit_log',
  register: (r) => {
    r.registerKey(ToolsUsed, { scope: 'thread' });
    r.registerPhaseHook('after_tool_execute', (ctx) => StateCommand.empty().update(ToolsUsed, ctx.input.toolCall.name));
  },
};

export const fuzz = { updates: { 'visit_log.tools': fc.constantFrom('search', 'read', 'write') } };
