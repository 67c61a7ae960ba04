import type { Phase } from '../../src/contract/phase.ts';
import type { Plugin, PluginRegistrar, PhaseHook } from '../../src/core/phase/plugin.ts';
import type { AnyStateKey } from '../../src/core/state/state-key.ts';
import type { StateKeyOptions } from '../../src/core/state/state-key.ts';

/** A plugin made of inline registrations, for tests. */
export function plugin(name: string, register: (r: PluginRegistrar) => void): Plugin {
  return { name, register };
}

export function keysPlugin(name: string, keys: { key: AnyStateKey; options?: Partial<StateKeyOptions> }[]): Plugin {
  return plugin(name, (r) => {
    for (const { key, options } of keys) r.registerKey(key, options);
  });
}

export function hookPlugin<P extends Phase>(name: string, phase: P, hook: PhaseHook<P>): Plugin {
  return plugin(name, (r) => r.registerPhaseHook(phase, hook));
}
