import { describe, expect, it } from 'vitest';
import { AgentSpecSchema, ContextWindowPolicySchema, newAgentSpec } from '../../src/contract/agent-spec.ts';

describe('AgentSpec', () => {
  it('fills the defaults of AgentSpec::new', () => {
    expect(newAgentSpec('a')).toEqual({
      id: 'a',
      model: '',
      system_prompt: '',
      max_rounds: 16,
      max_continuation_retries: 2,
      plugin_ids: [],
      active_hook_filter: [],
      delegates: [],
      sections: {},
    });
  });

  it('keeps active_hook_filter as a sorted set', () => {
    expect(newAgentSpec('a', { active_hook_filter: ['b', 'a', 'b'] }).active_hook_filter).toEqual(['a', 'b']);
  });

  it('rejects an empty id and wrong types, naming the field', () => {
    const r = AgentSpecSchema.safeParse({ id: '', max_rounds: 'x' });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.path.join('.')).sort()).toEqual(['id', 'max_rounds']);
  });

  it('fills ContextWindowPolicy defaults (core-spec §5.1)', () => {
    expect(ContextWindowPolicySchema.parse({})).toEqual({
      max_context_tokens: 200_000,
      max_output_tokens: 16_384,
      min_recent_messages: 10,
      enable_prompt_cache: true,
      compaction_mode: 'keep_recent_raw_suffix',
      compaction_raw_suffix_messages: 2,
    });
  });

  it('parses a remote endpoint with defaults', () => {
    const spec = newAgentSpec('r', { endpoint: { backend: 'a2a', base_url: 'http://x' } });
    expect(spec.endpoint).toEqual({ backend: 'a2a', base_url: 'http://x', timeout_ms: 300_000, options: {} });
  });
});
