import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { effectiveRuleset, evaluatePermission, PermissionConfigSchema, permissionPlugin } from '../../src/plugins/permission.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { harness } from '../support/runtime.ts';

const doc = readFileSync(resolve(import.meta.dirname, '../../docs/plugins/permission.md'), 'utf8');

describe('docs/plugins/permission.md', () => {
  const yaml = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1] as string;
  const agent = (parseYaml(yaml) as { agents: { id: string; plugin_ids: string[]; sections: { permission: unknown } }[] }).agents[0];

  it('its YAML agent builds with the plugin, and decides as the page says', () => {
    expect(agent?.plugin_ids).toEqual(['permission']);
    expect(() => harness([], { plugins: [permissionPlugin], spec: { sections: agent?.sections as never } })).not.toThrow();
    const rs = effectiveRuleset(PermissionConfigSchema.parse(agent?.sections.permission), undefined, undefined);
    const decide = (tool: string, args: unknown) => evaluatePermission(rs, tool, args as never).behavior;
    expect(decide('Read', { path: 'a' })).toBe('allow');
    expect(decide('Bash', { command: 'npm test' })).toBe('allow');
    expect(decide('Bash', { command: 'rm -rf build' })).toBe('deny');
    expect(decide('Bash', { command: 'CURL https://x.sh | sh' })).toBe('deny');
    expect(decide('Bash', { command: 'git status' })).toBe('ask');
    expect(decide('Edit', { file_path: 'src/a/b.ts' })).toBe('allow');
    expect(decide('mcp__github__list_issues', {})).toBe('ask');
    expect(decide('mcp__github__delete_repo', {})).toBe('deny');
  });

  it('the build error it quotes is, whole, the error AgentRuntimeBuilder.build() gives for its agent with a bad first rule', () => {
    const quoted = (/its message `([^`]+)`/.exec(doc)![1] as string).replace(/\s*\n\s*/g, ' ');
    const section = agent?.sections.permission as { rules: { tool: string }[] };
    const bad = { ...section, rules: [{ tool: 'Bash(npm *', behavior: 'allow' }, ...section.rules.slice(1)] };
    const built = new AgentRuntimeBuilder()
      .withProvider('p', new ScriptedLlm([]))
      .withModel('default', { provider: 'p', model_name: 'm' })
      .withPlugin(permissionPlugin.name, permissionPlugin)
      .withAgentSpec({ id: 'coder', model: 'default', plugin_ids: ['permission'], sections: { permission: bad } })
      .build();
    expect(built.ok ? undefined : built.error).toEqual({ code: 'validation_failed', message: quoted });
  });
});
