import { z } from 'zod';
import { PhaseRuntime } from '../src/runtime/phase-runtime.ts';
import type { Plugin } from '../src/core/phase/plugin.ts';
import { MutationBatch } from '../src/core/state/mutation-batch.ts';
import { defineAction, mergeAllCommands, StateCommand } from '../src/core/state/state-command.ts';
import { defineStateKey, type StateKey } from '../src/core/state/state-key.ts';
import { StateStore } from '../src/runtime/state-store.ts';
import type { Suite } from './harness.ts';

const counter = (key: string): StateKey<number, number> =>
  defineStateKey({ key, merge: 'commutative', init: () => 0, apply: (v: number, u: number) => v + u, codec: z.number() });

const KEYS = Array.from({ length: 100 }, (_, i) => counter(`k${i}`));
const keyPlugin: Plugin = {
  name: 'keys',
  register: (r) => {
    for (const k of KEYS) r.registerKey(k);
  },
};

/** A runtime whose store already holds all 100 keys, like the baselines' plain objects. */
function runtime(plugins: Plugin[]): PhaseRuntime {
  const r = PhaseRuntime.create([keyPlugin, ...plugins]);
  if (!r.ok) throw new Error(JSON.stringify(r.error));
  const fill = new MutationBatch();
  for (const k of KEYS) fill.update(k, 0);
  r.value.store.commit(fill);
  return r.value;
}

type Plain = Record<string, number>;
const plainState = (): Plain => Object.fromEntries(KEYS.map((k) => [k.key, 0]));

/** GATHER: 10 hooks, each reading and writing one key of a 100-key state, one commit. */
function gatherSuite(): Suite {
  const hooks = Array.from({ length: 10 }, (_, i) => ({
    name: `h${i}`,
    register: (r: Parameters<Plugin['register']>[0]) =>
      r.registerPhaseHook('step_start', (ctx) => StateCommand.empty().update(KEYS[i * 10]!, (ctx.snapshot.get(KEYS[i]!) ?? 0) + 1)),
  }));
  const rt = runtime(hooks);
  let state = plainState();
  const plainHooks = Array.from({ length: 10 }, (_, i) => (s: Plain): [string, number] => [`k${i * 10}`, (s[`k${i}`] ?? 0) + 1]);
  return {
    name: 'gather-10-hooks',
    description: 'GATHER of 10 hooks on one frozen snapshot of a 100-key state, merged into one commit',
    cases: [
      { name: 'awaken runPhase', role: 'subject', fn: () => rt.runPhase('step_start') },
      {
        name: 'baseline spread+loop',
        role: 'baseline',
        fn: () => {
          const frozen = state;
          const writes = plainHooks.map((h) => h(frozen));
          const next = { ...frozen };
          for (const [k, v] of writes) next[k] = (next[k] ?? 0) + v;
          state = next;
        },
      },
    ],
  };
}

/** One commit of a 100-op batch on a 100-key state. */
function commitSuite(): Suite {
  const store = new StateStore();
  store.registerKeys(KEYS.map((key) => ({ key })));
  let state = plainState();
  return {
    name: 'commit-100-ops',
    description: 'commit of a 100-op batch (one update per key) on a 100-key state',
    cases: [
      {
        name: 'awaken commit',
        role: 'subject',
        fn: () => {
          const batch = new MutationBatch(store.revision);
          for (const k of KEYS) batch.update(k, 1);
          return store.commit(batch);
        },
      },
      {
        name: 'baseline spread+loop',
        role: 'baseline',
        fn: () => {
          const next = { ...state };
          for (const k of KEYS) next[k.key] = (next[k.key] ?? 0) + 1;
          state = next;
        },
      },
    ],
  };
}

/** mergeParallel of 1,000 single-op commands on commutative keys. */
function mergeSuite(): Suite {
  const strategyOf = (): 'commutative' => 'commutative';
  const commands = Array.from({ length: 1000 }, (_, i) => StateCommand.empty().update(KEYS[i % 100]!, 1));
  const plain = Array.from({ length: 1000 }, (_, i) => ({ ops: [{ key: `k${i % 100}`, update: 1 }] }));
  return {
    name: 'merge-parallel-1000',
    description: 'mergeAllCommands over 1,000 one-op commands (conflict check + concatenation)',
    cases: [
      { name: 'awaken mergeAllCommands', role: 'subject', fn: () => mergeAllCommands(commands, strategyOf) },
      {
        name: 'baseline loop',
        role: 'baseline',
        fn: () => {
          const ops: { key: string; update: number }[] = [];
          for (const c of plain) for (const op of c.ops) ops.push(op);
          return ops;
        },
      },
    ],
  };
}

const Step = defineAction('bench.step', 'step_end', z.number());

/** An EXECUTE cascade of 16 rounds: each handler writes a key and schedules the next action. */
function cascadeSuite(): Suite {
  const rt = runtime([
    {
      name: 'cascade',
      register: (r) =>
        r.registerScheduledAction(Step, (_ctx, n) => {
          const cmd = StateCommand.empty().update(KEYS[n]!, 1);
          return n + 1 < 16 ? cmd.scheduleAction(Step, n + 1) : cmd;
        }),
    },
  ]);
  let state = plainState();
  return {
    name: 'execute-cascade-16',
    description: 'EXECUTE of a 16-round scheduled-action cascade (one commit per action)',
    cases: [
      {
        name: 'awaken executeActions',
        role: 'subject',
        fn: async () => {
          await rt.submitCommand(StateCommand.empty().scheduleAction(Step, 0));
          const r = await rt.executeActions('step_end');
          if (!r.ok || r.value.rounds !== 16) throw new Error('cascade did not run 16 rounds');
        },
      },
      {
        name: 'baseline spread+loop',
        role: 'baseline',
        fn: () => {
          let queue = [0];
          while (queue.length > 0) {
            const next: number[] = [];
            for (const n of queue) {
              state = { ...state, [`k${n}`]: (state[`k${n}`] ?? 0) + 1 };
              if (n + 1 < 16) next.push(n + 1);
            }
            queue = next;
          }
        },
      },
    ],
  };
}

/** Engine overhead of one phase run: nothing to do, and one synchronous hook writing one key. */
function phaseOverheadSuite(): Suite {
  const idle = runtime([]);
  const one = runtime([{ name: 'one', register: (r) => r.registerPhaseHook('step_start', () => StateCommand.empty().update(KEYS[0]!, 1)) }]);
  let state = plainState();
  return {
    name: 'phase-overhead',
    description: 'one phase run with no hooks and with one synchronous hook (one commit), vs one spread write',
    cases: [
      { name: 'awaken runPhase, no hooks', role: 'subject', fn: () => idle.runPhase('step_start') },
      { name: 'awaken runPhase, 1 hook', role: 'subject', fn: () => one.runPhase('step_start') },
      {
        name: 'baseline spread write',
        role: 'baseline',
        fn: () => {
          state = { ...state, k0: (state['k0'] ?? 0) + 1 };
        },
      },
    ],
  };
}

export const coreSuites = (): Suite[] => [gatherSuite(), commitSuite(), mergeSuite(), cascadeSuite(), phaseOverheadSuite()];
