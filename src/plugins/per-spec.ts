import type { AgentSpec } from '../contract/agent-spec.ts';

/**
 * What a plugin derives from an agent spec (its parsed section, its compiled rules), computed once
 * per spec object and kept while the spec lives: hooks read it at every step.
 */
export function perAgentSpec<T>(compute: (spec: AgentSpec) => T): (spec: AgentSpec) => T {
  const cache = new WeakMap<AgentSpec, { readonly value: T }>();
  return (spec) => {
    let hit = cache.get(spec);
    if (hit === undefined) {
      hit = { value: compute(spec) };
      cache.set(spec, hit);
    }
    return hit.value;
  };
}
