import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AgentSpecs,
  AgentSpecSchema,
  ContextWindowPolicySchema,
  definePluginConfigKey,
  newAgentSpec,
  readPluginConfig,
  withPluginConfig,
} from '../../src/contract/agent-spec.ts';

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

describe('AgentSpec builders and typed plugin config (book: 配置)', () => {
  const RateLimit = definePluginConfigKey(
    'rate_limit',
    z.object({ max_calls_per_step: z.number().int().nonnegative(), cooldown_ms: z.number().int().nonnegative() }),
    () => ({ max_calls_per_step: 0, cooldown_ms: 0 }),
  );

  it('builds a spec with the book builder methods', () => {
    let spec = AgentSpecs.new('a');
    spec = AgentSpecs.withModel(spec, 'gpt');
    spec = AgentSpecs.withSystemPrompt(spec, 'be brief');
    spec = AgentSpecs.withMaxRounds(spec, 3);
    spec = AgentSpecs.withReasoningEffort(spec, { budget: 1024 });
    spec = AgentSpecs.withHookFilter(AgentSpecs.withHookFilter(spec, 'permission'), 'permission');
    spec = AgentSpecs.withDelegate(spec, 'helper');
    spec = AgentSpecs.withEndpoint(spec, { backend: 'a2a', base_url: 'http://h', timeout_ms: 5, options: {} });
    spec = AgentSpecs.withSection(spec, 'custom', { x: 1 });
    expect(AgentSpecSchema.parse(spec)).toEqual(spec);
    expect(spec).toMatchObject({ model: 'gpt', system_prompt: 'be brief', max_rounds: 3, active_hook_filter: ['permission'], delegates: ['helper'] });
  });

  it('reads a missing section as the defaults, a valid one typed, an invalid one as key_decode', () => {
    const spec = AgentSpecs.new('a');
    expect(readPluginConfig(spec, RateLimit)).toEqual({ ok: true, value: { max_calls_per_step: 0, cooldown_ms: 0 } });
    const set = withPluginConfig(spec, RateLimit, { max_calls_per_step: 3, cooldown_ms: 10 });
    expect(set.ok && set.value.sections).toEqual({ rate_limit: { max_calls_per_step: 3, cooldown_ms: 10 } });
    if (set.ok) expect(readPluginConfig(set.value, RateLimit)).toEqual({ ok: true, value: { max_calls_per_step: 3, cooldown_ms: 10 } });
    const bad = AgentSpecs.withSection(spec, 'rate_limit', { max_calls_per_step: -1 });
    const read = readPluginConfig(bad, RateLimit);
    expect(read.ok === false && read.error.code).toBe('key_decode');
  });

  it('refuses to store an invalid config (key_encode)', () => {
    const r = withPluginConfig(AgentSpecs.new('a'), RateLimit, { max_calls_per_step: 1.5, cooldown_ms: 0 });
    expect(r.ok === false && r.error.code).toBe('key_encode');
    const NotJson = definePluginConfigKey('odd', z.any(), () => 0);
    const odd = withPluginConfig(AgentSpecs.new('a'), NotJson, Number.NaN);
    expect(odd.ok === false && odd.error.code).toBe('key_encode');
  });
});
