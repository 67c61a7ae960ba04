import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { definePluginConfigKey } from '../../src/contract/agent-spec.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { Messages } from '../../src/contract/message.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { parseAgentSpec } from '../../src/runtime/agent-spec-file.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { echoTool } from '../support/runtime.ts';

const base = () =>
  new AgentRuntimeBuilder().withEnv(deterministicEnv()).withProvider('p', new ScriptedLlm([])).withModel('m', { provider: 'p', model_name: 'real-m' });

const toolPlugin = (name: string, toolId: string): RuntimePlugin => ({
  name,
  register: (r) => r.registerTool(defineTool({ id: toolId, description: 'from plugin', args: z.object({}), execute: () => ToolResults.success(toolId, null) })),
});

describe('AgentRuntimeBuilder (book: 智能体解析 → AgentRuntimeBuilder)', () => {
  it.each([
    [
      'agent',
      (b: AgentRuntimeBuilder) => b.withAgentSpec({ id: 'a', model: 'm' }).withAgentSpec({ id: 'a', model: 'm' }),
      { code: 'agent_registry_conflict', id: 'a' },
    ],
    ['tool', (b: AgentRuntimeBuilder) => b.withTool(echoTool).withTool(echoTool), { code: 'tool_registry_conflict', id: 'echo' }],
    ['provider', (b: AgentRuntimeBuilder) => b.withProvider('p', new ScriptedLlm([])), { code: 'provider_registry_conflict', id: 'p' }],
    ['model', (b: AgentRuntimeBuilder) => b.withModel('m', { provider: 'p', model_name: 'x' }), { code: 'model_registry_conflict', id: 'm' }],
    [
      'plugin',
      (b: AgentRuntimeBuilder) => b.withPlugin('x', toolPlugin('x', 't')).withPlugin('x', toolPlugin('x', 't')),
      { code: 'plugin_registry_conflict', id: 'x' },
    ],
  ])('collects a duplicate %s id and reports it at build()', (_what, add, error) => {
    expect(add(base()).build()).toEqual({ ok: false, error });
    expect(add(base()).buildUnchecked()).toEqual({ ok: false, error });
  });

  it('build() dry-run resolves every agent and lists each failure; buildUnchecked() does not', () => {
    const b = () =>
      base()
        .withAgentSpec({ id: 'ok', model: 'm' })
        .withAgentSpec({ id: 'no-model', model: 'ghost' })
        .withAgentSpec({ id: 'no-plugin', model: 'm', plugin_ids: ['missing'] });
    const built = b().build();
    expect(built.ok).toBe(false);
    if (built.ok) return;
    expect(built.error).toEqual({
      code: 'validation_failed',
      message: "agent 'no-model': model 'ghost' not found; agent 'no-plugin': plugin 'missing' not found",
    });
    expect(b().buildUnchecked().ok).toBe(true);
  });

  it('an invalid spec is a validation failure naming the field', () => {
    const built = base().withAgentSpec({ id: '', model: 'm' }).build();
    expect(built).toEqual({ ok: false, error: { code: 'validation_failed', message: expect.stringContaining('id:') } });
  });

  it('an invalid circuit breaker is a validation failure naming the field, not a throw', () => {
    const built = base().withCircuitBreaker({ half_open_max: 0 }).buildUnchecked();
    expect(built).toEqual({ ok: false, error: { code: 'validation_failed', message: expect.stringContaining('circuit breaker: half_open_max:') } });
  });
});

describe('resolve pipeline', () => {
  const runtime = (build: (b: AgentRuntimeBuilder) => AgentRuntimeBuilder) => {
    const r = build(base()).buildUnchecked();
    if (!r.ok) throw new Error(JSON.stringify(r.error));
    return r.value;
  };

  it('looks up agent, model and provider', () => {
    const rt = runtime((b) =>
      b.withAgentSpec({ id: 'a', model: 'm' }).withAgentSpec({ id: 'b', model: 'm2' }).withModel('m2', { provider: 'nope', model_name: 'x' }),
    );
    expect(rt.resolve('a')).toMatchObject({ ok: true, value: { modelId: 'm', modelName: 'real-m' } });
    expect(rt.resolve('zz')).toEqual({ ok: false, error: { code: 'agent_not_found', agentId: 'zz' } });
    expect(rt.resolve('b')).toEqual({ ok: false, error: { code: 'provider_not_found', providerId: 'nope' } });
  });

  it('refuses to run a remote agent directly', () => {
    const rt = runtime((b) => b.withAgentSpec({ id: 'r', model: 'm', endpoint: { backend: 'a2a', base_url: 'http://x' } }));
    expect(rt.resolve('r')).toEqual({ ok: false, error: { code: 'remote_agent_not_directly_runnable', agentId: 'r' } });
  });

  it('puts user plugins first, then the default plugins (loop state, loop actions, stop conditions)', () => {
    const rt = runtime((b) => b.withPlugin('mine', toolPlugin('mine', 'x')).withAgentSpec({ id: 'a', model: 'm', plugin_ids: ['mine'] }));
    const r = rt.resolve('a');
    expect(r.ok && r.value.plugins.map((p) => p.name)).toEqual(['mine', '__runtime.loop_state', '__runtime.loop_actions', 'stop-condition']);
  });

  it('validates claimed config sections, warns on unclaimed ones', () => {
    const Cfg = definePluginConfigKey('rate', z.object({ n: z.number() }), () => ({ n: 0 }));
    const plugin: RuntimePlugin = { name: 'rated', configKeys: [Cfg as never], register: () => {} };
    const rt = runtime((b) =>
      b
        .withPlugin('rated', plugin)
        .withAgentSpec({ id: 'good', model: 'm', plugin_ids: ['rated'], sections: { rate: { n: 1 }, typo: 1 } })
        .withAgentSpec({ id: 'bad', model: 'm', plugin_ids: ['rated'], sections: { rate: { n: 'x' } } })
        .withAgentSpec({ id: 'bad-retry', model: 'm', sections: { retry: { max_retries: -1 } } }),
    );
    const good = rt.resolve('good');
    expect(good.ok && good.value.warnings).toEqual(["config section 'typo' is not claimed by any plugin"]);
    expect(rt.resolve('bad')).toEqual({ ok: false, error: expect.objectContaining({ code: 'invalid_plugin_config', plugin: 'rated', key: 'rate' }) });
    expect(rt.resolve('bad-retry')).toEqual({ ok: false, error: expect.objectContaining({ code: 'invalid_plugin_config', plugin: 'runtime', key: 'retry' }) });
  });

  it('merges global and plugin tools; the same id twice is a tool_id_conflict', () => {
    const rt = runtime((b) =>
      b
        .withTool(echoTool)
        .withPlugin('extra', toolPlugin('extra', 'extra_tool'))
        .withPlugin('clash', toolPlugin('clash', 'echo'))
        .withAgentSpec({ id: 'a', model: 'm', plugin_ids: ['extra'] })
        .withAgentSpec({ id: 'b', model: 'm', plugin_ids: ['clash'] }),
    );
    const a = rt.resolve('a');
    expect(a.ok && [...a.value.tools.keys()]).toEqual(['echo', 'extra_tool']);
    expect(rt.resolve('b')).toEqual({ ok: false, error: { code: 'tool_id_conflict', toolId: 'echo', sourceA: 'global', sourceB: 'plugin:clash' } });
  });

  it('applies allowed_tools, then excluded_tools', () => {
    const t = (id: string) => defineTool({ id, description: id, args: z.object({}), execute: () => ToolResults.success(id, null) });
    const rt = runtime((b) =>
      b
        .withTool(t('a'))
        .withTool(t('b'))
        .withTool(t('c'))
        .withAgentSpec({ id: 'x', model: 'm', allowed_tools: ['a', 'b'], excluded_tools: ['b'] })
        .withAgentSpec({ id: 'y', model: 'm', excluded_tools: ['c'] }),
    );
    const x = rt.resolve('x');
    const y = rt.resolve('y');
    expect(x.ok && [...x.value.tools.keys()]).toEqual(['a']);
    expect(y.ok && [...y.value.tools.keys()]).toEqual(['a', 'b']);
  });

  it('allowed_tools and excluded_tools are tool-id patterns (anchored; only * is special, \\x is a literal x)', () => {
    const t = (id: string) => defineTool({ id, description: id, args: z.object({}), execute: () => ToolResults.success(id, null) });
    const rt = runtime((b) =>
      b
        .withTool(t('mcp__github__read_issue'))
        .withTool(t('mcp__github__delete_repo'))
        .withTool(t('mcp__gitlab__issue'))
        .withTool(t('star*tool'))
        .withTool(t('Bash'))
        .withAgentSpec({ id: 'gh', model: 'm', allowed_tools: ['mcp__github__*'], excluded_tools: ['*delete*'] })
        .withAgentSpec({ id: 'lit', model: 'm', allowed_tools: ['star\\*tool', 'Bas?', 'Bash(x)'] })
        .withAgentSpec({ id: 'all', model: 'm', excluded_tools: ['mcp__*'] }),
    );
    const ids = (id: string) => {
      const r = rt.resolve(id);
      return r.ok && [...r.value.tools.keys()];
    };
    expect(ids('gh')).toEqual(['mcp__github__read_issue']);
    expect(ids('lit')).toEqual(['star*tool']);
    expect(ids('all')).toEqual(['Bash', 'star*tool']);
  });

  it('a malformed tool-id pattern is refused with the field named', () => {
    const r = parseAgentSpec('{"id":"a","excluded_tools":["ok","bad\\\\"]}');
    expect(r.ok).toBe(false);
    expect(JSON.stringify(r)).toContain('excluded_tools');
    expect(JSON.stringify(r)).toContain('dangling escape');
    expect(JSON.stringify(parseAgentSpec('{"id":"a","allowed_tools":[""]}'))).toContain('pattern is empty');
  });

  it('run() reports an unknown agent and a busy thread as typed errors', async () => {
    const rt = runtime((b) => b.withAgentSpec({ id: 'a', model: 'm' }).withTool(echoTool));
    expect(await rt.run({ agentId: 'zz', messages: [] }, new VecEventSink())).toEqual({ ok: false, error: { code: 'agent_not_found', agentId: 'zz' } });
    const first = await rt.start({ threadId: 't', messages: [Messages.user('x')] }, new VecEventSink());
    expect(await rt.run({ threadId: 't', messages: [Messages.user('y')] }, new VecEventSink())).toEqual({
      ok: false,
      error: { code: 'thread_already_running', threadId: 't' },
    });
    if (first.ok) await first.value.done;
  });
});

describe('AgentSpec from JSON and YAML', () => {
  it('loads the same spec from both', () => {
    const json = parseAgentSpec('{"id":"a","model":"m","max_rounds":3,"stop_conditions":[{"type":"timeout","seconds":5}]}');
    const yaml = parseAgentSpec('id: a\nmodel: m\nmax_rounds: 3\nstop_conditions:\n  - type: timeout\n    seconds: 5\n', 'yaml');
    expect(json.ok).toBe(true);
    expect(yaml).toEqual(json);
  });

  it('names the bad field, and reports unparsable text', () => {
    const r = parseAgentSpec('id: a\nmax_rounds: lots\n', 'yaml');
    expect(r.ok === false && r.error.code === 'invalid_value' && r.error.issues.map((i) => i.path)).toEqual(['max_rounds']);
    expect(parseAgentSpec('id: [', 'yaml')).toMatchObject({ ok: false, error: { code: 'invalid_json' } });
    expect(parseAgentSpec('{', 'json')).toMatchObject({ ok: false, error: { code: 'invalid_json' } });
  });
});

describe('a run without an agent id', () => {
  it('runs the first agent by id, whatever the order they were added in', async () => {
    const llm = new ScriptedLlm([{ text: 'hi' }]);
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('p', llm)
      .withModel('m', { provider: 'p', model_name: 'real-m' })
      .withAgentSpec({ id: 'zeta', model: 'm', system_prompt: 'z' })
      .withAgentSpec({ id: 'beta', model: 'm', system_prompt: 'b' })
      .withAgentSpec({ id: 'gamma', model: 'm', system_prompt: 'g' })
      .build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    const run = await built.value.run({ messages: [Messages.user('go')] }, new VecEventSink());
    expect(run.ok).toBe(true);
    expect(built.value.agentIds()).toEqual(['beta', 'gamma', 'zeta']);
    expect(llm.requests[0]?.messages[0]).toMatchObject({ role: 'system', content: [{ type: 'text', text: 'b' }] });
  });
});

describe('a plugin has one identity: the id it is registered under is its name (ADR 0005)', () => {
  /** A plugin that notes each of its hook runs and each event its tap is told of. */
  const watched = (name: string) => {
    const hooks: string[] = [];
    const tapped: string[] = [];
    const plugin: RuntimePlugin = {
      name,
      register: (r) =>
        r.registerPhaseHook('after_inference', () => {
          hooks.push('after_inference');
          return StateCommand.empty();
        }),
      tap: () => ({ event: (e) => void tapped.push(e.event_type) }),
    };
    return { plugin, hooks, tapped };
  };
  const withAgent = (id: string, plugin: RuntimePlugin) =>
    new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('p', new ScriptedLlm([{ text: 'one' }, { text: 'two' }]))
      .withModel('m', { provider: 'p', model_name: 'real-m' })
      .withPlugin(id, plugin)
      .withAgentSpec({ id: 'a', model: 'm', plugin_ids: [id], active_hook_filter: [id] });

  it('an agent that names the id a user gave, in plugin_ids and in its hook filter, runs the hooks and the tap', async () => {
    const audit = watched('audit');
    const built = withAgent('audit', audit.plugin).build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    expect((await built.value.run({ messages: [Messages.user('go')] }, new VecEventSink())).ok).toBe(true);
    expect(audit.hooks).toEqual(['after_inference']);
    expect(audit.tapped.at(-1)).toBe('run_finish');
  });

  it("an id that is not the plugin's name is refused at build, naming both (its hooks would never run under a filter by that id)", () => {
    const audit = watched('audit-log');
    const error = { code: 'plugin_id_mismatch', id: 'audit', name: 'audit-log' };
    expect(withAgent('audit', audit.plugin).build()).toEqual({ ok: false, error });
    expect(withAgent('audit', audit.plugin).buildUnchecked()).toEqual({ ok: false, error });
  });
});
