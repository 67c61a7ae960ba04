import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/contract/json.ts';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults, type ToolResult } from '../../src/contract/tool.ts';
import { compileReminderRules, ReminderConfigSchema, reminderPlugin, type ReminderRuleEntry } from '../../src/plugins/reminder.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { ToolInterceptAction } from '../../src/runtime/builtin-plugins.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';
import { fuzzPlugin } from '../../src/testing/fuzz-plugin.ts';
import { approvalTool, echoTool, failTool, harness, waitFor } from '../support/runtime.ts';

const rule = (entry: Partial<ReminderRuleEntry> & { tool: string }) =>
  compileReminderRules(ReminderConfigSchema.parse({ rules: [{ message: { target: 'system', content: 'x' }, ...entry }] }))[0]!;
const fires = (entry: Partial<ReminderRuleEntry> & { tool: string }, tool: string, args: JsonValue, result: ToolResult): boolean => {
  const r = rule(entry);
  return r.matches(tool, args) !== undefined && r.output(result);
};

describe('rules (vectors of awaken-ext-reminder tests/reminder_tests.rs)', () => {
  it('the tool pattern: exact, glob, field conditions', () => {
    const ok = ToolResults.success('t', 'ok');
    expect(fires({ tool: 'Bash' }, 'Bash', {}, ok)).toBe(true);
    expect(fires({ tool: 'Bash' }, 'Edit', {}, ok)).toBe(false);
    expect(fires({ tool: 'mcp__github__*' }, 'mcp__github__create', {}, ok)).toBe(true);
    expect(fires({ tool: 'Bash(command ~ "rm *")' }, 'Bash', { command: 'rm -rf /' }, ok)).toBe(true);
    expect(fires({ tool: 'Bash(command ~ "rm *")' }, 'Bash', { command: 'ls' }, ok)).toBe(false);
  });

  it('the output: status, text glob, data fields (null data never matches fields)', () => {
    const success = ToolResults.success('t', 'ok');
    const error = ToolResults.error('t', 'err');
    const pending = ToolResults.suspended('t', 'wait', {
      suspension: { id: 's', action: 'a' },
      pending: { id: 'c', name: 't', arguments: {} },
      resume_mode: 'replay_tool_call',
    });
    expect([
      fires({ tool: '*', output: { status: 'success' } }, 't', {}, success),
      fires({ tool: '*', output: { status: 'success' } }, 't', {}, error),
    ]).toEqual([true, false]);
    expect([fires({ tool: '*', output: { status: 'error' } }, 't', {}, error), fires({ tool: '*', output: { status: 'error' } }, 't', {}, success)]).toEqual([
      true,
      false,
    ]);
    expect([
      fires({ tool: '*', output: { status: 'pending' } }, 't', {}, pending),
      fires({ tool: '*', output: { status: 'pending' } }, 't', {}, success),
    ]).toEqual([true, false]);
    expect(fires({ tool: '*', output: { content: '*error*' } }, 't', {}, ToolResults.success('t', 'some error occurred'))).toBe(true);
    expect(fires({ tool: '*', output: { content: '*error*' } }, 't', {}, ToolResults.success('t', 'all good'))).toBe(false);
    const code = { tool: '*', output: { content: { fields: [{ path: 'code', op: 'exact' as const, value: '200' }] } } };
    expect(fires(code, 't', {}, ToolResults.success('t', { code: 200 }))).toBe(true);
    expect(fires(code, 't', {}, ToolResults.success('t', { code: 500 }))).toBe(false);
    expect(fires(code, 't', {}, error)).toBe(false);
    expect(
      fires({ tool: '*', output: { content: { fields: [{ path: 'error.code', value: '4*' }] } } }, 't', {}, ToolResults.success('t', { error: { code: 403 } })),
    ).toBe(true);
    expect(
      fires(
        { tool: '*', output: { content: { fields: [{ path: 'msg', op: 'regex', value: '(?i)^warning' }] } } },
        't',
        {},
        ToolResults.success('t', { msg: 'WARNING: disk' }),
      ),
    ).toBe(true);
    expect(
      fires(
        { tool: 'Bash(command ~ "rm *")', output: { status: 'success', content: 'deleted' } },
        'Bash',
        { command: 'rm -rf /tmp/t' },
        ToolResults.success('Bash', 'deleted'),
      ),
    ).toBe(true);
    expect(fires({ tool: 'Bash', output: { status: 'error' } }, 'Bash', {}, ToolResults.success('Bash', 'ok'))).toBe(false);
  });

  it('an error result is matched by its message too (0.6 sees only the data, null for an error)', () => {
    expect(fires({ tool: '*', output: { status: 'error', content: '*permission denied*' } }, 't', {}, ToolResults.error('t', 'open: permission denied'))).toBe(
      true,
    );
    expect(fires({ tool: '*', output: { status: 'error', content: '*permission denied*' } }, 't', {}, ToolResults.error('t', 'not found'))).toBe(false);
  });

  it('names default to rule-<index>-<tool>; the message is keyed reminder.<name>, with its target and cooldown', () => {
    const rules = compileReminderRules(
      ReminderConfigSchema.parse({
        rules: [
          { tool: '*', message: { target: 'system', content: 'a' } },
          { name: 'deletion-warning', tool: 'Bash(command ~ "rm *")', message: { target: 'suffix_system', content: 'Just deleted', cooldown_turns: 2 } },
        ],
      }),
    );
    expect(rules.map((r) => r.name)).toEqual(['rule-0-*', 'deletion-warning']);
    expect(rules[1]?.message).toEqual({
      key: 'reminder.deletion-warning',
      role: 'system',
      content: 'Just deleted',
      target: 'suffix_system',
      cooldown_turns: 2,
      priority: 0,
      persistent: false,
    });
  });

  it('a bad rule is refused, naming the field: pattern, output, target, op, regex', () => {
    const issue = (rules: unknown) => {
      const r = ReminderConfigSchema.safeParse({ rules });
      return r.success ? 'ok' : `${r.error.issues[0]?.path.join('.')}: ${r.error.issues[0]?.message}`;
    };
    expect(issue([{ tool: 'Bash(', message: { target: 'system', content: 'x' } }])).toBe('rules.0.tool: "Bash(": parse error at 5: empty primary pattern');
    expect(issue([{ tool: 'Bash', output: 'some', message: { target: 'system', content: 'x' } }])).toMatch(/^rules\.0\.output: /);
    expect(issue([{ tool: 'Bash', message: { target: 'nowhere', content: 'x' } }])).toMatch(/^rules\.0\.message\.target: /);
    expect(
      issue([{ tool: 'Bash', output: { content: { fields: [{ path: 'a', op: 'like', value: 'x' }] } }, message: { target: 'system', content: 'x' } }]),
    ).toMatch(/^rules\.0\.output\.content\.fields\.0\.op: /);
    expect(
      issue([{ tool: 'Bash', output: { content: { fields: [{ path: 'a', op: 'regex', value: '(' }] } }, message: { target: 'system', content: 'x' } }]),
    ).toMatch(/^rules\.0\.output\.content\.fields\.0\.value: invalid regex/);
    expect(issue([{ tool: 'Bash', output: { content: { fields: [{ path: 'a[0]', value: 'x' }] } }, message: { target: 'system', content: 'x' } }])).toMatch(
      /^rules\.0\.output\.content\.fields\.0\.path: /,
    );
  });
});

describe('the reminder plugin in a run', () => {
  const requestText = (h: ReturnType<typeof harness>, i: number): string => JSON.stringify(h.llm.requests[i]?.messages ?? []);

  it('fires after the tool, injects at the next inference only, and respects the cooldown in steps', async () => {
    const script = [1, 2, 3, 4].map((n) => ({ tool_calls: [{ id: `c${n}`, name: 'echo', arguments: { text: `t${n}` } }] }));
    const h = harness([...script, { text: 'done' }], {
      tools: [echoTool],
      plugins: [reminderPlugin()],
      spec: {
        sections: {
          reminder: {
            rules: [
              { name: 'echoed', tool: 'echo', output: { status: 'success' }, message: { target: 'system', content: 'REMIND: echo ran', cooldown_turns: 2 } },
            ],
          },
        },
      },
    });
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    // Requests 0..4: echo runs in steps 1..4; the reminder shows in the request after it fired, every other step.
    expect([0, 1, 2, 3, 4].map((i) => requestText(h, i).includes('REMIND: echo ran'))).toEqual([false, true, false, true, false]);
  });

  it('several rules fire in order; an error is matched by its message; a rule whose output does not match stays silent', async () => {
    const h = harness([{ tool_calls: [{ id: 'c1', name: 'fail', arguments: {} }] }, { text: 'done' }], {
      tools: [failTool],
      plugins: [reminderPlugin([{ tool: 'fail', message: { target: 'system', content: 'FROM CODE' } }])],
      spec: {
        sections: {
          reminder: {
            rules: [
              { tool: 'fail', output: { status: 'error', content: '*failed*' }, message: { target: 'suffix_system', content: 'BY MESSAGE' } },
              { tool: 'fail', output: { status: 'success' }, message: { target: 'system', content: 'NEVER' } },
            ],
          },
        },
      },
    });
    await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    const text = requestText(h, 1);
    expect(text).toContain('FROM CODE');
    expect(text).toContain('BY MESSAGE');
    expect(text).not.toContain('NEVER');
    expect(text.indexOf('FROM CODE')).toBeLessThan(text.indexOf('BY MESSAGE'));
  });

  it('a rule on output {status: pending} fires when the tool itself answers that it waits; its message reaches the inference after the resume', async () => {
    const h = harness([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'deploy' } }] }, { text: 'done' }], {
      tools: [approvalTool],
      plugins: [reminderPlugin()],
      spec: {
        sections: {
          reminder: {
            rules: [
              { name: 'waiting', tool: 'approve', output: { status: 'pending' }, message: { target: 'system', content: 'REMIND: a person was asked' } },
              { name: 'approved', tool: 'approve', output: { status: 'success' }, message: { target: 'system', content: 'REMIND: approved' } },
            ],
          },
        },
      },
    });
    const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error(JSON.stringify(started.error));
    await waitFor(() => h.runtime.isWaiting('thread-1'));
    // The pending result fired its rule when the call suspended: the run waits with the reminder queued.
    const parked = JSON.stringify(h.store.checkpoints.at(-1)?.runState ?? null);
    expect([parked.includes('REMIND: a person was asked'), parked.includes('REMIND: approved')]).toEqual([true, false]);
    expect(started.value.decide([{ targetId: 'c1', decision: { decision_id: 'd1', action: 'resume', updated_at: 0 } }]).ok).toBe(true);
    const result = await started.value.done;
    expect(result.termination).toEqual({ type: 'natural_end' });
    // The success fired its own rule at publication; both reach the next inference, and only it.
    const text = requestText(h, 1);
    expect([text.includes('REMIND: a person was asked'), text.includes('REMIND: approved')]).toEqual([true, true]);
    expect(requestText(h, 0)).not.toContain('REMIND');
  });

  it('a call its gate suspends never ran: no rule sees a result for it until it is decided (0.6 runs no AfterToolExecute for it either)', async () => {
    const asked: RuntimePlugin = {
      name: 'asker',
      register: (r) =>
        r.registerPhaseHook('before_tool_execute', (ctx) =>
          StateCommand.empty().scheduleAction(ToolInterceptAction, {
            call_id: ctx.input.toolCall.id,
            intercept: {
              type: 'suspend',
              ticket: {
                suspension: { id: 'ask-c1', action: 'confirm' },
                pending: { id: 'ask-c1', name: 'echo', arguments: {} },
                resume_mode: 'replay_tool_call',
              },
            },
          }),
        ),
    };
    const h = harness([{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'hi' } }] }, { text: 'done' }], {
      tools: [echoTool],
      plugins: [reminderPlugin([{ tool: 'echo', output: { status: 'pending' }, message: { target: 'system', content: 'REMIND: pending' } }]), asked],
    });
    const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error(JSON.stringify(started.error));
    await waitFor(() => h.runtime.isWaiting('thread-1'));
    expect(started.value.decide([{ targetId: 'c1', decision: { decision_id: 'd1', action: 'resume', updated_at: 0 } }]).ok).toBe(true);
    expect((await started.value.done).termination).toEqual({ type: 'natural_end' });
    expect(requestText(h, 1)).not.toContain('REMIND: pending');
  });

  it('a bad rule keeps the agent from being built, naming the entry', () => {
    expect(() =>
      harness([], { plugins: [reminderPlugin()], spec: { sections: { reminder: { rules: [{ tool: 'x', message: { target: 'up', content: 'x' } }] } } } }),
    ).toThrow(/invalid config section 'reminder' of plugin 'reminder'.*message.*target/s);
  });
});

describe('fuzzPlugin', () => {
  it('passes: deterministic, writes only its keys, converges', async () => {
    const report = await fuzzPlugin(reminderPlugin([{ tool: '*', message: { target: 'system', content: 'always' } }]), { numRuns: 40, seed: 3 });
    expect(report.failures).toEqual([]);
    expect(report.phases).toEqual(['after_tool_execute']);
  });
});
