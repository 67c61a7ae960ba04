import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ToolResults } from '../../src/contract/tool.ts';
import { compileReminderRules, ReminderConfigSchema, reminderPlugin } from '../../src/plugins/reminder.ts';
import { harness } from '../support/runtime.ts';

const doc = readFileSync(resolve(import.meta.dirname, '../../docs/plugins/reminder.md'), 'utf8');

describe('docs/plugins/reminder.md', () => {
  it('its YAML agent builds with the plugin, and each rule fires where the page says', () => {
    const yaml = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1] as string;
    const agent = (parseYaml(yaml) as { agents: { plugin_ids: string[]; sections: { reminder: unknown } }[] }).agents[0];
    expect(agent?.plugin_ids).toEqual(['reminder']);
    expect(() => harness([], { plugins: [reminderPlugin()], spec: { sections: agent?.sections as never } })).not.toThrow();
    const rules = compileReminderRules(ReminderConfigSchema.parse(agent?.sections.reminder));
    const fired = (tool: string, args: unknown, result: ReturnType<typeof ToolResults.success>) =>
      rules.filter((r) => r.matches(tool, args as never) !== undefined && r.output(result)).map((r) => r.message.key);
    expect(fired('Bash', { command: 'rm -rf build' }, ToolResults.success('Bash', ''))).toEqual(['reminder.deletion-warning']);
    expect(fired('Read', { path: '/root' }, ToolResults.error('Read', 'EACCES: permission denied'))).toEqual(['reminder.rule-1-*']);
    expect(fired('http_get', { url: 'x' }, ToolResults.success('http_get', { status: 429 }))).toEqual(['reminder.rule-2-http_get']);
    expect(fired('http_get', { url: 'x' }, ToolResults.success('http_get', { status: 200 }))).toEqual([]);
    expect(rules[0]?.message).toMatchObject({ target: 'suffix_system', cooldown_turns: 3 });
  });

  it('the field it names in an error is the field a bad target is reported at', () => {
    const r = ReminderConfigSchema.safeParse({ rules: [{ tool: 'x', message: { target: 'up', content: 'x' } }] });
    expect(r.error?.issues[0]?.path.join('.')).toBe(/`(rules\.0\.message\.target)`/.exec(doc)?.[1]);
  });
});
