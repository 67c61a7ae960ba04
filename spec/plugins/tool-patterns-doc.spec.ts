import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolResults } from '../../src/contract/tool.ts';
import { compilePattern, parsePattern, describeParseError } from '../../src/core/pattern/index.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { parseAgentSpec } from '../../src/runtime/agent-spec-file.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';

const doc = readFileSync(resolve(import.meta.dirname, '../../docs/plugins/tool-patterns.md'), 'utf8');
const cell = (s: string): string => s.trim().replace(/^`|`$/g, '').replace(/\\\|/g, '|');

describe('docs/plugins/tool-patterns.md', () => {
  it('every example row holds', () => {
    const section = doc.slice(doc.indexOf('## Examples'), doc.indexOf('## `allowed_tools`'));
    const rows = section.split('\n').filter((l) => l.startsWith('| `'));
    expect(rows.length).toBeGreaterThanOrEqual(12);
    for (const row of rows) {
      const [pattern, tool, args, expected] = row
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map(cell) as [string, string, string, string];
      const parsed = parsePattern(pattern);
      if (!parsed.ok) throw new Error(`${pattern}: ${describeParseError(parsed.error)}`);
      expect([pattern, compilePattern(parsed.value)(tool, JSON.parse(args)) !== undefined]).toEqual([pattern, expected === 'yes']);
    }
  });

  it('the errors it shows are the errors the parser gives', () => {
    const block = doc.slice(doc.indexOf('A pattern that does not parse'));
    const lines = (/```text\n([\s\S]*?)```/.exec(block)?.[1] ?? '').trim().split('\n');
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      const [, text, message] = /^(\S.*?\S)\s{2,}(parse error .*)$/.exec(line) as RegExpExecArray;
      const r = parsePattern(text as string);
      expect(r.ok ? 'parsed' : describeParseError(r.error)).toBe(message);
    }
  });

  it('the YAML agent is offered exactly the tools the page says', () => {
    const yaml = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1] as string;
    const spec = parseAgentSpec(yaml, 'yaml');
    if (!spec.ok) throw new Error(JSON.stringify(spec.error));
    const tool = (id: string) => defineTool({ id, description: id, args: z.object({}), execute: () => ToolResults.success(id, null) });
    const b = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('scripted', new ScriptedLlm([]))
      .withModel('default', { provider: 'scripted', model_name: 'scripted' })
      .withAgentSpec(spec.value);
    for (const id of ['mcp__github__read_issue', 'mcp__github__delete_repo', 'mcp__github__merge_*', 'mcp__gitlab__issue', 'get_weather']) b.withTool(tool(id));
    const rt = b.build();
    if (!rt.ok) throw new Error(JSON.stringify(rt.error));
    const r = rt.value.resolve('triage');
    expect(r.ok && [...r.value.tools.keys()]).toEqual(['get_weather', 'mcp__github__read_issue']);
  });
});
