import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { workspaceTools } from '../../src/cli/demo.ts';
import { Messages } from '../../src/contract/message.ts';
import { parseStateMachineConfig, stateMachinePlugin } from '../../src/plugins/state-machine/index.ts';
import { harness } from '../support/runtime.ts';
import { repo } from './sessions.ts';

/**
 * docs/plugins/state-machine.md → What it does, the emit's cooldown: the page's example (its
 * write-log machine, writes in four steps in a row, the reminders each next request carries), what
 * it says of "Try it"'s machine (that YAML, as the page has it), and two writes in one step.
 */
const page = readFileSync(join(repo, 'docs/plugins/state-machine.md'), 'utf8');
const flat = page.replace(/\s+/g, ' ');
const machine = (): ReturnType<typeof stateMachinePlugin> => {
  const yaml = /```yaml\n([\s\S]*?)```/.exec(page)?.[1] ?? '';
  const section = (parseYaml(yaml) as { agents: { sections: { state_machine: unknown } }[] }).agents[0]?.sections.state_machine;
  const parsed = parseStateMachineConfig(JSON.stringify(section), 'json');
  if (!parsed.ok) throw new Error(parsed.error);
  return stateMachinePlugin(parsed.value);
};
const call = (id: string, name: string, args: object) => ({ id, name, arguments: args });
/** The reminders of the machine in each request the model got, in order. */
const remindersOf = (requests: readonly { messages: readonly unknown[] }[]): string[][] =>
  requests.map((r) => [...JSON.stringify(r.messages).matchAll(/Wrote [\w./]+/g)].map((m) => m[0]));

describe('docs/plugins/state-machine.md: the emit cooldown is per transition and text', () => {
  it("the page's example: its write-log machine, writes in four steps in a row inject what it says", async () => {
    const example = /writes of (.*?) in four steps in a row inject (.*?): ```yaml (.*?)```/.exec(flat);
    expect(example).not.toBeNull();
    const files = [...(example![1] as string).matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);
    const injected = (example![2] as string).split(', ').map((t) => (t === 'nothing' ? [] : [/^`(.*)`$/.exec(t)?.[1] as string]));
    expect({ files, injected }).toEqual({
      files: ['src/a.rs', 'src/a.rs', 'src/b.rs', 'src/a.rs'],
      injected: [['Wrote src/a.rs'], [], ['Wrote src/b.rs'], ['Wrote src/a.rs']],
    });
    const yaml = /writes of [\s\S]*? in four steps in a row inject [\s\S]*?:\n\n {2}```yaml\n([\s\S]*?) {2}```/.exec(page)?.[1] ?? '';
    expect(yaml).toContain('name: write-log');
    const parsed = parseStateMachineConfig(yaml.replace(/^ {2}/gm, ''));
    if (!parsed.ok) throw new Error(parsed.error);
    const h = harness([...files.map((f, i) => ({ tool_calls: [call(`w${i}`, 'Write', { file_path: f, content: 'x' })] })), { text: 'done' }], {
      tools: workspaceTools(),
      plugins: [stateMachinePlugin(parsed.value)],
    });
    const r = await h.runtime.run({ threadId: 't', messages: [Messages.user('edit both')] }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    // Request k + 1 follows the write of step k.
    expect(remindersOf(h.llm.requests)).toEqual([[], ...injected]);
  });

  it("under Try it's read-before-write (cooldown 2), a read between two writes of one file lets both reminders in", async () => {
    expect(flat).toContain('a cooldown of 2 never holds one back there');
    const h = harness(
      [
        { tool_calls: [call('r1', 'Read', { file_path: 'src/a.rs' })] },
        { tool_calls: [call('w1', 'Write', { file_path: 'src/a.rs', content: 'x' })] },
        { tool_calls: [call('r2', 'Read', { file_path: 'src/a.rs' })] },
        { tool_calls: [call('w2', 'Write', { file_path: 'src/a.rs', content: 'y' })] },
        { text: 'done' },
      ],
      { tools: workspaceTools(), plugins: [machine()] },
    );
    const r = await h.runtime.run({ threadId: 't', messages: [Messages.user('edit twice')] }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    expect(remindersOf(h.llm.requests)).toEqual([[], [], ['Wrote src/a.rs'], [], ['Wrote src/a.rs']]);
  });

  it('two writes in one step leave the later one’s text', async () => {
    expect(flat).toContain("One text per key waits for the next inference: two writes in one step leave the later one's.");
    const h = harness(
      [
        { tool_calls: [call('r1', 'Read', { file_path: 'src/a.rs' }), call('r2', 'Read', { file_path: 'src/b.rs' })] },
        { tool_calls: [call('w1', 'Write', { file_path: 'src/a.rs', content: 'x' }), call('w2', 'Write', { file_path: 'src/b.rs', content: 'y' })] },
        { text: 'done' },
      ],
      { tools: workspaceTools(), plugins: [machine()] },
    );
    const r = await h.runtime.run({ threadId: 't', messages: [Messages.user('edit both')] }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    expect(remindersOf(h.llm.requests)).toEqual([[], [], ['Wrote src/b.rs']]);
  });
});
