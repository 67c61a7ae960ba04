import fc from 'fast-check';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import {
  effectiveRuleset,
  evaluatePermission,
  PermissionActionSchema,
  PermissionConfigSchema,
  PermissionOverrides,
  PermissionPolicy,
  permissionPlugin,
  unconditionallyDenied,
  type PermissionAction,
  type PermissionConfigInput,
  type PermissionPolicyValue,
  type PermissionRules,
} from '../../src/plugins/permission.ts';
import { fuzzPlugin } from '../../src/testing/fuzz-plugin.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { echoTool, harness, waitFor } from '../support/runtime.ts';

const config = (c: PermissionConfigInput = {}) => PermissionConfigSchema.parse(c);
const act = (json: unknown): PermissionAction => PermissionActionSchema.parse(json);
const policyOf = (...actions: unknown[]): PermissionPolicyValue => actions.map(act).reduce((v, a) => PermissionPolicy.apply(v, a), PermissionPolicy.init());
const overridesOf = (...actions: unknown[]): PermissionRules => actions.map(act).reduce((v, a) => PermissionOverrides.apply(v, a), PermissionOverrides.init());
const behaviorOf = (rules: PermissionConfigInput['rules'], tool: string, args: unknown, defaultBehavior?: 'allow' | 'ask' | 'deny') =>
  evaluatePermission(
    effectiveRuleset(config({ rules, ...(defaultBehavior ? { default_behavior: defaultBehavior } : {}) }), undefined, undefined),
    tool,
    args as never,
  ).behavior;

describe('rules and precedence (vectors of awaken-ext-permission rules.rs and tests/permission_tests.rs)', () => {
  it('deny beats allow beats ask, whatever their specificity', () => {
    expect(
      behaviorOf(
        [
          { tool: 'Bash', behavior: 'allow' },
          { tool: 'Bash(rm *)', behavior: 'deny' },
        ],
        'Bash',
        { command: 'rm -rf /' },
      ),
    ).toBe('deny');
    expect(behaviorOf([{ tool: 'Bash', behavior: 'allow' }], 'Bash', { command: 'ls' })).toBe('allow');
    expect(behaviorOf([], 'Bash', {})).toBe('ask');
    expect(behaviorOf([], 'Bash', {}, 'deny')).toBe('deny');
    expect(
      behaviorOf(
        [
          { tool: 'Bash(command ~ "npm *")', behavior: 'ask' },
          { tool: 'Bash', behavior: 'allow' },
        ],
        'Bash',
        { command: 'npm i' },
      ),
    ).toBe('allow');
  });

  it('dangerous commands, MCP globs and field conditions', () => {
    const rules = [
      { tool: 'Bash(command ~ "rm *")', behavior: 'deny' as const },
      { tool: 'Bash(command =~ "(?i)eval|exec")', behavior: 'deny' as const },
      { tool: 'Bash', behavior: 'allow' as const },
    ];
    expect(behaviorOf(rules, 'Bash', { command: 'rm -rf /' })).toBe('deny');
    expect(behaviorOf(rules, 'Bash', { command: 'eval malicious' })).toBe('deny');
    expect(behaviorOf(rules, 'Bash', { command: 'ls -la' })).toBe('allow');
    expect(behaviorOf([{ tool: 'mcp__dangerous__*', behavior: 'deny' }], 'mcp__dangerous__execute', {})).toBe('deny');
    expect(behaviorOf([{ tool: 'mcp__dangerous__*', behavior: 'deny' }], 'mcp__safe__read', {})).toBe('ask');
    expect(behaviorOf([{ tool: 'Edit(file_path ~ "/etc/*")', behavior: 'deny' }], 'Edit', { file_path: '/etc/passwd' })).toBe('deny');
    expect(behaviorOf([{ tool: 'Edit(file_path ~ "/etc/*")', behavior: 'deny' }], 'Edit', { file_path: 'src/main.rs' })).toBe('ask');
    expect(behaviorOf([{ tool: 'mcp_?_read', behavior: 'allow' }], 'mcp_x_read', {})).toBe('allow');
    expect(behaviorOf([{ tool: 'mcp_?_read', behavior: 'allow' }], 'mcp_xy_read', {})).toBe('ask');
  });

  it('within a tier the more specific rule decides; an exact tie goes to the smaller key, whatever the insertion order', () => {
    const rs = effectiveRuleset(
      config({
        rules: [
          { tool: 'Bash', behavior: 'allow' },
          { tool: 'Bash(npm *)', behavior: 'allow' },
        ],
      }),
      undefined,
      undefined,
    );
    expect(evaluatePermission(rs, 'Bash', { command: 'npm install' }).matched?.key).toBe('pattern:Bash(npm *)');
    const tie = (order: string[]) =>
      evaluatePermission(effectiveRuleset(config(), policyOf(...order.map((t) => ({ type: 'set_rule', pattern: t, behavior: 'deny' }))), undefined), 'T', {
        a: 'x',
        b: 'y',
      }).matched?.key;
    expect(tie(['T(a = "x")', 'T(b = "y")'])).toBe('pattern:T(a = "x")');
    expect(tie(['T(b = "y")', 'T(a = "x")'])).toBe('pattern:T(a = "x")');
  });

  it('the policy, then the run overrides, replace a rule of the same key; overrides carry no default', () => {
    const rs = effectiveRuleset(
      config(),
      policyOf({ type: 'deny_tool', tool_id: 'Bash' }, { type: 'set_default', behavior: 'deny' }),
      overridesOf({ type: 'allow_tool', tool_id: 'Bash' }),
    );
    expect(rs.rules['tool:Bash']).toMatchObject({ behavior: 'allow', source: 'skill' });
    expect(rs.default_behavior).toBe('deny');
    const pattern = effectiveRuleset(
      config(),
      policyOf({ type: 'set_rule', pattern: 'Edit(file_path ~ "src/**")', behavior: 'ask' }),
      overridesOf({ type: 'set_rule', pattern: 'Edit(file_path~"src/**")', behavior: 'allow' }),
    );
    expect(evaluatePermission(pattern, 'Edit', { file_path: 'src/main.rs' }).behavior).toBe('allow');
    const cleared = effectiveRuleset(
      config(),
      policyOf({ type: 'deny_tool', tool_id: 'rm' }),
      overridesOf({ type: 'allow_tool', tool_id: 'rm' }, { type: 'clear_tools' }),
    );
    expect(cleared.rules['tool:rm']?.behavior).toBe('deny');
    expect(effectiveRuleset(config({ default_behavior: 'allow' }), policyOf(), overridesOf()).default_behavior).toBe('allow');
  });

  it('actions: set_default, set_tool, set_rule, remove_tool, remove_rule (by printed form), clear_tools, allow_tool, deny_tool', () => {
    expect(policyOf({ type: 'set_default', behavior: 'deny' })).toEqual({ rules: {}, default_behavior: 'deny' });
    expect(Object.keys(policyOf({ type: 'set_tool', tool_id: 'Bash', behavior: 'allow' }).rules)).toEqual(['tool:Bash']);
    expect(policyOf({ type: 'set_tool', tool_id: 'Bash', behavior: 'allow' }, { type: 'remove_tool', tool_id: 'Bash' }).rules).toEqual({});
    expect(policyOf({ type: 'set_rule', pattern: 'Bash( npm * )', behavior: 'allow' }, { type: 'remove_rule', pattern: 'Bash(npm *)' }).rules).toEqual({});
    expect(policyOf({ type: 'allow_tool', tool_id: 'a' }, { type: 'deny_tool', tool_id: 'b' }, { type: 'clear_tools' }).rules).toEqual({});
    expect(policyOf({ type: 'deny_tool', tool_id: 'b' }).rules['tool:b']).toEqual({
      subject: { kind: 'tool', tool_id: 'b' },
      behavior: 'deny',
      scope: 'thread',
      source: 'runtime',
    });
  });

  it('a pattern that does not parse is refused where it enters, naming it: in an action and in the config', () => {
    const bad = PermissionActionSchema.safeParse({ type: 'set_rule', pattern: 'Bash(npm *', behavior: 'allow' });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]).toMatchObject({ path: ['pattern'], message: `"Bash(npm *": parse error at 10: expected ')', found end of input` });
    const cfg = PermissionConfigSchema.safeParse({
      rules: [
        { tool: 'Bash', behavior: 'allow' },
        { tool: 'T(f =~ "[")', behavior: 'deny' },
      ],
    });
    expect(cfg.error?.issues[0]?.path).toEqual(['rules', 1, 'tool']);
    expect(cfg.error?.issues[0]?.message).toMatch(/invalid regex/);
  });

  it('unconditionally denied tools: exact, and glob or regex patterns without argument conditions, expanded over the agent tools', () => {
    const rs = effectiveRuleset(
      config({
        rules: [
          { tool: 'Bash', behavior: 'deny' },
          { tool: 'mcp__db__*', behavior: 'deny' },
          { tool: '/mcp__(gh|gl)__.*/', behavior: 'deny' },
          { tool: 'Edit(/etc/*)', behavior: 'deny' },
          { tool: 'Read', behavior: 'allow' },
        ],
      }),
      policyOf({ type: 'deny_tool', tool_id: 'rm' }),
      undefined,
    );
    const tools = ['Bash', 'Edit', 'Read', 'mcp__db__query', 'mcp__db__write', 'mcp__gh__list_repos', 'mcp__gl__list', 'mcp__github__list_issues', 'rm'];
    expect(unconditionallyDenied(rs, tools)).toEqual(['Bash', 'mcp__db__query', 'mcp__db__write', 'mcp__gh__list_repos', 'mcp__gl__list', 'rm']);
  });
});

/** echo, and a second tool to hide. */
const runWith = (script: Parameters<typeof harness>[0], permission: PermissionConfigInput | undefined, plugins = [permissionPlugin]) =>
  harness(script, { tools: [echoTool], plugins, spec: { sections: permission === undefined ? {} : { permission: permission as never } } });

const doneOf = (events: readonly AgentEvent[]) =>
  events.filter((e) => e.event_type === 'tool_call_done') as Extract<AgentEvent, { event_type: 'tool_call_done' }>[];

describe('the permission plugin in a run', () => {
  const call = [{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'hi' } }] }, { text: 'done' }];

  it('allow: the call runs', async () => {
    const h = runWith(call, { rules: [{ tool: 'echo', behavior: 'allow' }] });
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    expect(doneOf(h.sink.events)[0]?.result).toMatchObject({ status: 'success', data: { echoed: 'hi' } });
    expect(checkRunInvariants(h.sink.events)).toEqual([]);
  });

  it('deny: the call does not run; it fails with the reason and the run ends blocked', async () => {
    const h = runWith(call, { rules: [{ tool: 'echo(text ~ "h*")', behavior: 'deny' }], default_behavior: 'allow' });
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'blocked', value: "Tool 'echo' denied by permission rules" });
    expect(doneOf(h.sink.events)[0]?.result).toMatchObject({ status: 'error', message: "Tool 'echo' denied by permission rules" });
    expect(checkRunInvariants(h.sink.events)).toEqual([]);
  });

  it('ask (the default): suspended with a permission_confirm ticket; approving replays the call, cancelling refuses it', async () => {
    for (const action of ['resume', 'cancel'] as const) {
      const h = runWith(call, {});
      const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
      if (!started.ok) throw new Error('start');
      await waitFor(() => h.runtime.isWaiting(started.value.threadId));
      const suspended = doneOf(h.sink.events)[0]?.result;
      expect(suspended).toMatchObject({
        status: 'pending',
        suspension: {
          suspension: { id: 'perm_c1', action: 'tool:PermissionConfirm', message: "Permission required for tool 'echo'", parameters: { text: 'hi' } },
          pending: { id: 'c1', name: 'permission_confirm', arguments: { text: 'hi' } },
          resume_mode: 'replay_tool_call',
        },
      });
      expect(h.runtime.decide(started.value.threadId, [{ targetId: 'c1', decision: { decision_id: 'd', action, updated_at: 0 } }]).ok).toBe(true);
      const result = await started.value.done;
      expect(result.termination).toEqual({ type: 'natural_end' });
      const resumed = h.sink.events.find((e) => e.event_type === 'tool_call_resumed') as Extract<AgentEvent, { event_type: 'tool_call_resumed' }>;
      expect(resumed.result).toEqual(action === 'resume' ? { echoed: 'hi' } : { approved: false });
      expect(checkRunInvariants(h.sink.events)).toEqual([]);
    }
  });

  it('a tool every call of which is denied is not offered to the model (glob denies too)', async () => {
    const h = runWith([{ text: 'ok' }], { rules: [{ tool: 'ech*', behavior: 'deny' }] });
    await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(h.llm.requests[0]?.tools.map((t) => t.id)).toEqual([]);
    const h2 = runWith([{ text: 'ok' }], { rules: [{ tool: 'echo(text ~ "x*")', behavior: 'deny' }] });
    await h2.runtime.run({ messages: [Messages.user('go')] }, h2.sink);
    expect(h2.llm.requests[0]?.tools.map((t) => t.id)).toEqual(['echo']);
  });

  it('the policy persists on the thread; run overrides last one run', async () => {
    // A tool that grants echo, for the thread (policy) or for this run (overrides).
    const grant = defineTool({
      id: 'grant',
      description: 'grant echo',
      args: z.object({ scope: z.enum(['thread', 'run']) }),
      execute: ({ scope }) => ({
        result: ToolResults.success('grant', null),
        command: StateCommand.empty().update(scope === 'thread' ? PermissionPolicy : PermissionOverrides, act({ type: 'allow_tool', tool_id: 'echo' })),
      }),
    });
    for (const scope of ['thread', 'run'] as const) {
      const script = [
        { tool_calls: [{ id: 'g', name: 'grant', arguments: { scope } }] },
        { tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'a' } }] },
        { text: 'first' },
        { tool_calls: [{ id: 'c2', name: 'echo', arguments: { text: 'b' } }] },
        { text: 'second' },
      ];
      const h = harness(script, {
        tools: [echoTool, grant],
        plugins: [permissionPlugin],
        spec: { sections: { permission: { rules: [{ tool: 'grant', behavior: 'allow' }] } } },
      });
      const first = await h.runtime.run({ threadId: 't', messages: [Messages.user('go')] }, h.sink);
      expect(first.ok && first.value.termination).toEqual({ type: 'natural_end' });
      const second = await h.runtime.run({ threadId: 't', messages: [Messages.user('again')] }, new VecEventSink(), { waitForDecisions: false });
      expect([scope, second.ok && second.value.termination.type]).toEqual([scope, scope === 'thread' ? 'natural_end' : 'suspended']);
      const kept = h.store.checkpoints.at(-1)?.threadState.extensions ?? {};
      expect(Object.keys(kept).filter((k) => k.startsWith('permission'))).toEqual(scope === 'thread' ? ['permission_policy'] : []);
    }
  });

  it('an entry that does not parse keeps the agent from being built, naming the section and the entry', () => {
    // The build error, whole: one line naming the agent, the section, the entry and the parse error.
    expect(() => runWith([{ text: 'x' }], { rules: [{ tool: 'Bash(', behavior: 'allow' }] })).toThrow(
      new Error(
        JSON.stringify({
          code: 'validation_failed',
          message: `agent 'agent': invalid config section 'permission' of plugin 'permission': rules.0.tool: "Bash(": parse error at 5: empty primary pattern`,
        }),
      ),
    );
  });

  it('an agent without the plugin behaves as before: the call runs', async () => {
    const h = runWith(call, undefined, []);
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    expect(doneOf(h.sink.events)[0]?.result.status).toBe('success');
  });
});

describe('fuzzPlugin', () => {
  it('passes: deterministic, writes only its keys, converges; the laws of both keys hold', async () => {
    const action = fc
      .oneof(
        fc.record({ type: fc.constant('set_default'), behavior: fc.constantFrom('allow', 'ask', 'deny') }),
        fc.record({ type: fc.constantFrom('allow_tool', 'deny_tool', 'remove_tool'), tool_id: fc.constantFrom('echo', 'Bash', 'x') }),
        fc.record({
          type: fc.constant('set_rule'),
          pattern: fc.constantFrom('Bash(npm *)', 'mcp__*', 'echo(text ~ "h*")'),
          behavior: fc.constantFrom('allow', 'ask', 'deny'),
        }),
        fc.constant({ type: 'clear_tools' }),
      )
      .map((a) => act(a));
    const report = await fuzzPlugin(permissionPlugin, { updates: { permission_policy: action, permission_overrides: action }, numRuns: 40, seed: 7 });
    expect(report.failures).toEqual([]);
    expect(report.phases).toEqual(['before_inference', 'before_tool_execute']);
    expect(report.keys.map((k) => [k.key, k.passed])).toEqual([
      ['permission_policy', true],
      ['permission_overrides', true],
    ]);
  });
});
