import { describe, expect, it } from 'vitest';
import { AgentSpecSchema, type AgentSpec } from '../../src/contract/agent-spec.ts';
import type { ModelEntry } from '../../src/runtime/resolve.ts';
import { agentDigest, agentDigestOf } from '../../src/server/agent-digest.ts';

/** What a run records of its agent when it starts, and what a take-up compares it with. */
const spec = (fields: Partial<AgentSpec> = {}): AgentSpec => AgentSpecSchema.parse({ id: 'writer', model: 'small', system_prompt: 'Write drafts.', ...fields });
const registries = (agent: AgentSpec, model: ModelEntry = { provider: 'p', model_name: 'm1' }) => ({
  agents: new Map([[agent.id, agent]]),
  models: new Map([['small', model]]),
});

describe('agentDigest', () => {
  it('is the same for the same agent, whatever the order of its fields, and says nothing of an agent not served', () => {
    const a = agentDigest(registries(spec()), 'writer');
    const reordered = Object.fromEntries(Object.entries(spec()).reverse()) as AgentSpec;
    expect(a).toMatch(/^writer@sha256:[0-9a-f]{16}$/);
    expect(agentDigest(registries(reordered), 'writer')).toBe(a);
    expect(agentDigest(registries(spec()), 'payments')).toBeUndefined();
  });

  it('changes with the agent’s spec, the model entry it names, and the version of the app’s code', () => {
    const base = agentDigest(registries(spec()), 'writer');
    const changed = [
      agentDigest(registries(spec({ system_prompt: 'Write shorter drafts.' })), 'writer'),
      agentDigest(registries(spec(), { provider: 'p', model_name: 'm2' }), 'writer'),
      agentDigest(registries(spec()), 'writer', 'sha256:aaaaaaaaaaaa'),
    ];
    expect(new Set([base, ...changed]).size).toBe(4);
    expect(agentDigest(registries(spec()), 'writer', 'sha256:aaaaaaaaaaaa')).toBe(changed[2]);
  });

  it('is computed once per published registries and code version (agentDigestOf)', () => {
    const r = registries(spec());
    expect(agentDigestOf(r, 'writer')).toBe(agentDigest(r, 'writer'));
    // The cache is the registries object's: a mutated map is not read again (registries are replaced, never mutated).
    (r.agents as Map<string, AgentSpec>).set('writer', spec({ system_prompt: 'other' }));
    expect(agentDigestOf(r, 'writer')).toBe(agentDigest(registries(spec()), 'writer'));
    expect(agentDigestOf(r, 'writer', 'v2')).toBe(agentDigest(r, 'writer', 'v2'));
  });
});
