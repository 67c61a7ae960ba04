import { describe, expect, it } from 'vitest';
import { describeBuildError, RuntimeBuildError, type BuildError } from '../../src/contract/errors.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { AgentRuntime, AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { echoTool } from '../support/runtime.ts';

const named = (name: string) => ({ name, register: () => undefined });
const base = () => new AgentRuntimeBuilder().withProvider('p', new ScriptedLlm([])).withModel('m', { provider: 'p', model_name: 'm' });

function thrown(builder: AgentRuntimeBuilder): unknown {
  try {
    builder.buildOrThrow();
  } catch (e) {
    return e;
  }
  return undefined;
}

describe('AgentRuntimeBuilder.buildOrThrow', () => {
  it('returns the runtime build() would have returned', () => {
    const runtime = base().withTool(echoTool).withAgentSpec({ id: 'a', model: 'm' }).buildOrThrow();
    expect(runtime).toBeInstanceOf(AgentRuntime);
    expect(runtime.agentIds()).toEqual(['a']);
  });

  it('throws a RuntimeBuildError: its error is what build() answers, its message one line naming the code and the id', () => {
    const cases: [AgentRuntimeBuilder, string][] = [
      [base().withPlugin('audit', named('audit-log')), "plugin_id_mismatch: plugin 'audit-log' is registered under the id 'audit' (a plugin's id is its name)"],
      [base().withPlugin('p1', named('p1')).withPlugin('p1', named('p1')), "plugin_registry_conflict: plugin 'p1' is registered twice"],
      [base().withTool(echoTool).withTool(echoTool), "tool_registry_conflict: tool 'echo' is registered twice"],
      [base().withAgentSpec({ id: 'a', model: 'm' }).withAgentSpec({ id: 'a', model: 'm' }), "agent_registry_conflict: agent 'a' is registered twice"],
      [base().withModel('m', { provider: 'p', model_name: 'm' }), "model_registry_conflict: model 'm' is registered twice"],
      [base().withProvider('p', new ScriptedLlm([])), "provider_registry_conflict: provider 'p' is registered twice"],
      [base().withAgentSpec({ id: 'a', model: 'nope' }), "validation_failed: agent 'a': model 'nope' not found"],
    ];
    for (const [builder, message] of cases) {
      const answered = builder.build();
      const e = thrown(builder);
      expect(e).toBeInstanceOf(RuntimeBuildError);
      expect(e).toBeInstanceOf(Error);
      expect(answered.ok).toBe(false);
      expect((e as RuntimeBuildError).error).toEqual(answered.ok ? undefined : answered.error);
      expect(`${(e as Error).name}: ${(e as Error).message}`).toBe(`RuntimeBuildError: ${message}`);
    }
  });

  it('describes the build errors no builder call above makes, each on one line', () => {
    const more: [BuildError, string][] = [
      [
        { code: 'state', error: { code: 'plugin_register_failed', name: 'x', message: 'boom' } },
        "state (plugin_register_failed): plugin 'x' failed to register: boom",
      ],
      [{ code: 'discovery_failed', error: { source: 'mcp:files', message: 'no answer' } }, 'discovery_failed: mcp:files: no answer'],
    ];
    for (const [error, line] of more) expect(describeBuildError(error)).toBe(line);
    expect(new RuntimeBuildError(more[0]![0]).message.includes('\n')).toBe(false);
  });
});
