import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { workspaceTools } from '../../src/cli/demo.ts';
import {
  compileConfig,
  instanceKey,
  NORMALIZERS,
  parseStateMachineConfig,
  stateMachinePlugin,
  StateMachineConfigSchema,
  type StateMachineConfig,
  type StateMachineConfigInput,
} from '../../src/plugins/state-machine/index.ts';
import { permissionPlugin } from '../../src/plugins/permission.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { harness, waitFor } from '../support/runtime.ts';

/** Seed 004, step 1: READ_BEFORE_WRITE, as written there. */
const READ_BEFORE_WRITE = `
machines:
  - name: read-before-write
    key: "{file_path}"
    key_normalizer: path
    initial: unread
    terminal: [written]
    transitions:
      - on: 'Read(file_path ~ "*")'
        from: [unread, read, written]
        to: read
      - on: 'Write(file_path ~ "*")'
        from: read
        to: written
        when: { status: success }
        emit: { target: system, content: "Wrote {file_path}", cooldown_turns: 2 }
        on_violation: { action: deny, reason: "Read {file_path} before writing." }
continuation:
  max_continuations: 25
`;

const config = (text = READ_BEFORE_WRITE): StateMachineConfig => {
  const r = parseStateMachineConfig(text);
  if (!r.ok) throw new Error(r.error);
  return r.value;
};
const call = (id: string, name: string, args: object) => ({ tool_calls: [{ id, name, arguments: args }] });
const doneOf = (events: readonly AgentEvent[]) =>
  events.filter((e) => e.event_type === 'tool_call_done') as Extract<AgentEvent, { event_type: 'tool_call_done' }>[];
const run = (
  script: Parameters<typeof harness>[0],
  base: StateMachineConfigInput = config(),
  extra: { plugins?: ReturnType<typeof stateMachinePlugin>[]; sections?: object; max_rounds?: number } = {},
) =>
  harness(script, {
    tools: workspaceTools(),
    plugins: extra.plugins ?? [stateMachinePlugin(base)],
    spec: { ...(extra.sections ? { sections: extra.sections as never } : {}), ...(extra.max_rounds ? { max_rounds: extra.max_rounds } : {}) },
  });

describe('the DSL (seed 004: DSL 的形状)', () => {
  it('the seed’s YAML and the same machine in JSON load to one config', () => {
    const json = JSON.stringify({
      machines: [
        {
          name: 'read-before-write',
          key: '{file_path}',
          key_normalizer: 'path',
          initial: 'unread',
          terminal: ['written'],
          transitions: [
            { on: 'Read(file_path ~ "*")', from: ['unread', 'read', 'written'], to: 'read' },
            {
              on: 'Write(file_path ~ "*")',
              from: 'read',
              to: 'written',
              when: { status: 'success' },
              emit: { target: 'system', content: 'Wrote {file_path}', cooldown_turns: 2 },
              on_violation: { action: 'deny', reason: 'Read {file_path} before writing.' },
            },
          ],
        },
      ],
      continuation: { max_continuations: 25 },
    });
    const fromJson = parseStateMachineConfig(json, 'json');
    expect(fromJson).toEqual({ ok: true, value: config() });
    expect(config().machines[0]).toMatchObject({ scope: 'thread', strict: false, on_unmatched: null, key_normalizer: 'path' });
    expect(config().continuation).toEqual({ max_continuations: 25, message: 'Finish the protocol work: {summary}' });
  });

  it('the full shape of the seed’s DSL section loads (every field)', () => {
    const full = `
machines:
  - name: read-before-write     # unique machine name
    scope: thread               # thread (persists across runs) | run (resets each run)
    key: "{file_path}"          # instance key template, extracted from tool args
    key_normalizer: path        # none | trim | lowercase | path | url
    initial: unread             # starting state for a fresh instance
    strict: false               # true => a keyed call matching no transition is a violation
    on_unmatched: null          # fallback target when a call is allowed but no \`when\` matched
    terminal: [written]         # states that count as "done" for the run-end guard
    transitions:
      - on: 'Read(file_path ~ "*")'   # tool-call pattern
        from: [unread, read, written] # one state or a list
        to: read
      - on: 'Write(file_path ~ "*")'
        from: read
        to: written
        when: { status: success }     # advance only on a successful result
        emit:
          target: system              # system | suffix_system | session | conversation
          content: "Wrote {file_path}"
          cooldown_turns: 2
        on_violation:
          action: deny                # deny | ask | warn
          reason: "Read {file_path} before writing."
continuation:
  max_continuations: 25         # 0 disables the run-end guard
  message: "Finish the protocol work: {summary}"
`;
    expect(config(full)).toEqual(config());
  });

  it.each([
    [
      'a pattern that does not parse',
      READ_BEFORE_WRITE.replace(`'Write(file_path ~ "*")'`, `'Write(file_path ~ "*"'`),
      /^machines\.0\.transitions\.1\.on: machine 'read-before-write', transition 1 \(on\): "Write\(file_path ~ \\"\*\\"": parse error at 21: expected '\)', found end of input$/,
    ],
    [
      'a template hole that is not a path',
      READ_BEFORE_WRITE.replace('"Wrote {file_path}"', '"Wrote {file path}"'),
      /^machines\.0\.transitions\.1\.emit\.content: machine 'read-before-write', transition 1 \(emit\): \{file path\} is not a path/,
    ],
    [
      'a key hole that is not a path',
      READ_BEFORE_WRITE.replace('key: "{file_path}"', 'key: "{a..b}"'),
      /^machines\.0\.key: machine 'read-before-write': \{a\.\.b\} is not a path/,
    ],
    [
      'a terminal state no transition names',
      READ_BEFORE_WRITE.replace('terminal: [written]', 'terminal: [writen]'),
      /^machines\.0\.terminal\.0: machine 'read-before-write': 'writen' is not a state of the machine \(unread, read, written\)$/,
    ],
    ['an unknown violation action', READ_BEFORE_WRITE.replace('action: deny', 'action: block'), /^machines\.0\.transitions\.1\.on_violation\.action: /],
    ['an unknown field', READ_BEFORE_WRITE.replace('initial: unread', 'initial: unread\n    inital: unread'), /^machines\.0\.inital: unknown field$/],
    [
      'a role on a non-positional target',
      READ_BEFORE_WRITE.replace('cooldown_turns: 2 }', 'cooldown_turns: 2, role: user }'),
      /^machines\.0\.transitions\.1\.emit\.role: machine 'read-before-write', transition 1 \(emit\): a role applies to the session and conversation targets only/,
    ],
    [
      'two machines of one name',
      `${READ_BEFORE_WRITE.split('continuation:')[0]}${READ_BEFORE_WRITE.split('machines:')[1]?.split('continuation:')[0]}`,
      /^machines\.1\.name: machine 'read-before-write': the name is used by another machine$/,
    ],
    [
      'a continuation hole other than {summary}',
      READ_BEFORE_WRITE.replace('max_continuations: 25', 'max_continuations: 25\n  message: "Finish {file_path}"'),
      /^continuation\.message: continuation: only \{summary\} is filled in, not \{file_path\}$/,
    ],
  ])('%s is an error naming the machine, the transition and the field', (_what, text, message) => {
    const r = parseStateMachineConfig(text);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toMatch(message);
  });

  it('the error docs/plugins/state-machine.md quotes for its section with a bad pattern is the error, whole', () => {
    const doc = readFileSync(join(import.meta.dirname, '../../docs/plugins/state-machine.md'), 'utf8');
    const section = (/```yaml\n[\s\S]*? {6}state_machine:\n([\s\S]*?)```/.exec(doc)![1] as string).replace(/^ {8}/gm, '');
    const quoted = /its error for that\nsection is `([^`]+)`/.exec(doc)?.[1];
    expect(parseStateMachineConfig(section.replace(`'Write(file_path ~ "*")'`, `'Write(file_path ~ "*"'`))).toEqual({ ok: false, error: quoted });
  });

  it('key templates: a field, a nested path, an array index, and empty (one global instance); normalizers', () => {
    const m = (key: string, normalizer = 'none') =>
      compileConfig(
        StateMachineConfigSchema.parse({
          machines: [{ name: 'm', key, key_normalizer: normalizer, initial: 'a', transitions: [{ on: '*', from: 'a', to: 'b' }] }],
        }),
      ).machines[0]!;
    expect(instanceKey(m('{file_path}'), { file_path: 'src/a.rs' })).toBe('src/a.rs');
    expect(instanceKey(m('{target.path}'), { target: { path: 'x/y' } })).toBe('x/y');
    expect(instanceKey(m('{items[0].name}'), { items: [{ name: 'first' }, { name: 'second' }] })).toBe('first');
    expect(instanceKey(m('repo:{repo}/{file_path}'), { repo: 'r', file_path: 'f' })).toBe('repo:r/f');
    expect(instanceKey(m(''), { anything: 1 })).toBe('');
    expect(instanceKey(m('{file_path}'), { other: 1 })).toBeUndefined();
    expect(NORMALIZERS.path('./src//a/../b.rs')).toBe('src/b.rs');
    expect(NORMALIZERS.path('/x/../../y\\z')).toBe('/y/z');
    expect(NORMALIZERS.path('../a/./b/')).toBe('../a/b');
    expect(NORMALIZERS.url('HTTPS://Example.COM/Path?q=1#frag')).toBe('https://example.com/Path?q=1');
    expect(NORMALIZERS.lowercase('ReadMe.MD')).toBe('readme.md');
    expect(NORMALIZERS.trim('  a ')).toBe('a');
    expect(instanceKey(m('{file_path}', 'path'), { file_path: './src/a.rs' })).toBe('src/a.rs');
  });
});

describe('read-before-write (seed 004: 先读后写状态机的行为, and 验证)', () => {
  it('Write first is refused with the reason and the run goes on; Read; Write again succeeds; the state and metrics are as the seed says', async () => {
    const h = run([
      call('w1', 'Write', { file_path: 'src/a.rs', content: 'x' }),
      call('r1', 'Read', { file_path: 'src/a.rs' }),
      call('w2', 'Write', { file_path: './src/a.rs', content: 'x' }),
      { text: 'done' },
    ]);
    const r = await h.runtime.run({ threadId: 't', messages: [Messages.user('edit src/a.rs')] }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    const done = doneOf(h.sink.events);
    expect(done.map((d) => [d.id, d.result.status])).toEqual([
      ['w1', 'error'],
      ['r1', 'success'],
      ['w2', 'success'],
    ]);
    expect(done[0]?.result.message).toBe('Read src/a.rs before writing.');
    expect(done[0]?.result.metadata).toMatchObject({ rejected: true, state_machine: { machine: 'read-before-write', key: 'src/a.rs', state: 'unread' } });
    // The model read the refusal as the call's result.
    expect(JSON.stringify(h.llm.requests[1]?.messages)).toContain('Read src/a.rs before writing.');
    // The reminder is injected into the request after the successful write (its hole filled from the call).
    expect(JSON.stringify(h.llm.requests[3]?.messages)).toContain('Wrote ./src/a.rs');
    expect(JSON.stringify(h.llm.requests[2]?.messages)).not.toContain('Wrote');
    const state = h.store.checkpoints.at(-1)?.threadState.extensions;
    expect(state?.['tool_fsm_thread_state']).toEqual({ 'read-before-write': { 'src/a.rs': 'written' } });
    const runState = h.store.checkpoints.at(-1)?.runState?.extensions ?? {};
    expect(runState['tool_fsm_metrics']).toMatchObject({ denials: 1, transitions: 2 });
    expect(runState['tool_fsm_violation_log']).toEqual([
      {
        call_id: 'w1',
        tool: 'Write',
        machine: 'read-before-write',
        key: 'src/a.rs',
        state: 'unread',
        action: 'deny',
        reason: 'Read src/a.rs before writing.',
        transition: 1,
      },
    ]);
    expect(checkRunInvariants(h.sink.events)).toEqual([]);
  });

  it('warn lets the write through and injects the warning after it; the instance does not move', async () => {
    const h = run(
      [call('w1', 'Write', { file_path: 'a', content: 'x' }), { text: 'done' }],
      config(READ_BEFORE_WRITE.replace('action: deny', 'action: warn').replace('max_continuations: 25', 'max_continuations: 0')),
    );
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    expect(doneOf(h.sink.events)[0]?.result.status).toBe('success');
    expect(JSON.stringify(h.llm.requests[1]?.messages)).toContain('Read a before writing.');
    expect(h.store.checkpoints.at(-1)?.threadState.extensions['tool_fsm_thread_state']).toBeUndefined();
  });

  it('ask suspends the write with a ticket; approving it runs the write', async () => {
    const h = run(
      [call('w1', 'Write', { file_path: 'a', content: 'x' }), { text: 'done' }],
      config(READ_BEFORE_WRITE.replace('action: deny', 'action: ask').replace('max_continuations: 25', 'max_continuations: 0')),
    );
    const started = await h.runtime.start({ threadId: 't', messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error('start');
    await waitFor(() => h.runtime.isWaiting('t'));
    expect(doneOf(h.sink.events)[0]?.result).toMatchObject({
      status: 'pending',
      suspension: {
        suspension: { id: 'fsm_w1', action: 'tool:StateMachineConfirm', message: 'Read a before writing.' },
        pending: { id: 'w1', name: 'state_machine_confirm' },
      },
    });
    h.runtime.decide('t', [{ targetId: 'w1', decision: { decision_id: 'd', action: 'resume', updated_at: 0 } }]);
    const result = await started.value.done;
    expect(result.termination).toEqual({ type: 'natural_end' });
    expect(h.sink.events.find((e) => e.event_type === 'tool_call_resumed')).toMatchObject({ result: { file_path: 'a', bytes: 1 } });
  });

  it('the run-end guard sends the model back while an instance is unfinished, with the message and {summary}, at most max_continuations times', async () => {
    const guard = READ_BEFORE_WRITE.replace('max_continuations: 25', 'max_continuations: 2\n  message: "Finish the protocol work: {summary}"');
    const h = run(
      [call('r1', 'Read', { file_path: 'src/a.rs' }), { text: 'I read it.' }, { text: 'Still reading.' }, { text: 'Giving up.' }, { text: 'never' }],
      config(guard),
    );
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(r.ok && r.value).toMatchObject({ termination: { type: 'natural_end' }, response: 'Giving up.' });
    expect(h.llm.requests).toHaveLength(4);
    expect(JSON.stringify(h.llm.requests[2]?.messages)).toContain('Finish the protocol work: read-before-write src/a.rs: read');
    expect(h.store.checkpoints.at(-1)?.runState?.extensions['tool_fsm_metrics']).toMatchObject({ continuations: 2 });
  });

  it('a finished protocol ends the run at the first answer', async () => {
    const h = run([call('r1', 'Read', { file_path: 'a' }), call('w1', 'Write', { file_path: 'a', content: '' }), { text: 'done' }, { text: 'never' }]);
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(r.ok && r.value).toMatchObject({ termination: { type: 'natural_end' }, response: 'done' });
  });

  it('thread-scope instances survive a second run; run-scope instances do not', async () => {
    for (const scope of ['thread', 'run'] as const) {
      const cfg = config(
        READ_BEFORE_WRITE.replace('key_normalizer: path', `key_normalizer: path\n    scope: ${scope}`).replace('max_continuations: 25', 'max_continuations: 0'),
      );
      const h = run([call('r1', 'Read', { file_path: 'a' }), { text: 'read' }, call('w1', 'Write', { file_path: 'a', content: '' }), { text: 'second' }], cfg);
      await h.runtime.run({ threadId: 't', messages: [Messages.user('read a')] }, h.sink);
      const second = new VecEventSink();
      await h.runtime.run({ threadId: 't', messages: [Messages.user('write a')] }, second);
      expect([scope, doneOf(second.events)[0]?.result.status]).toEqual([scope, scope === 'thread' ? 'success' : 'error']);
    }
  });

  it('from the state_machine section, on top of the plugin’s own machines; a name in both keeps the agent from being built', async () => {
    const h = run(
      [call('w1', 'Write', { file_path: 'a', content: '' }), { text: 'done' }],
      {},
      { plugins: [stateMachinePlugin()], sections: { state_machine: config() } },
    );
    await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(doneOf(h.sink.events)[0]?.result.message).toBe('Read a before writing.');
    expect(() => run([], config(), { sections: { state_machine: config() } })).toThrow(
      /machine 'read-before-write' is declared by the plugin and by the state_machine section/,
    );
  });

  it('it never grants: with permission denying Read, the machine’s allowance does not run it; with permission asking, its refusal wins', async () => {
    const denyRead = { permission: { default_behavior: 'allow', rules: [{ tool: 'Read', behavior: 'deny' }] } };
    const h = harness([call('r1', 'Read', { file_path: 'a' }), { text: 'x' }], {
      tools: workspaceTools(),
      plugins: [stateMachinePlugin(config()), permissionPlugin],
      spec: { sections: denyRead as never },
    });
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'blocked', value: "Tool 'Read' denied by permission rules" });
    const askAll = { permission: { default_behavior: 'ask' } };
    const h2 = harness([call('w1', 'Write', { file_path: 'a', content: '' }), { text: 'x' }], {
      tools: workspaceTools(),
      plugins: [stateMachinePlugin(config(READ_BEFORE_WRITE.replace('max_continuations: 25', 'max_continuations: 0'))), permissionPlugin],
      spec: { sections: askAll as never },
    });
    const r2 = await h2.runtime.run({ messages: [Messages.user('go')] }, h2.sink);
    expect(r2.ok && r2.value.termination).toEqual({ type: 'natural_end' });
    expect(doneOf(h2.sink.events)[0]?.result).toMatchObject({ status: 'error', message: 'Read a before writing.' });
  });

  it('strict: a keyed call that matches no transition is a violation; a call without the key is not', async () => {
    const strict = config(
      READ_BEFORE_WRITE.replace('initial: unread', 'initial: unread\n    strict: true').replace('max_continuations: 25', 'max_continuations: 0'),
    );
    const tools = [...workspaceTools()];
    const h = harness(
      [
        { tool_calls: [{ id: 'd1', name: 'echo', arguments: { text: 'x', file_path: 'a' } }] },
        { tool_calls: [{ id: 'e1', name: 'echo', arguments: { text: 'y' } }] },
        { text: 'done' },
      ],
      {
        tools: [...tools, (await import('../support/runtime.ts')).echoTool],
        plugins: [stateMachinePlugin(strict)],
      },
    );
    await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(doneOf(h.sink.events).map((d) => [d.id, d.result.status, d.result.message])).toEqual([
      ['d1', 'error', "'echo' is not a step of 'read-before-write' (a is unread)"],
      ['e1', 'success', null],
    ]);
  });

  it('emit on a positional target speaks in the configured role', async () => {
    const cfg = config(
      READ_BEFORE_WRITE.replace(
        '        to: read\n',
        "        to: read\n        emit: { target: conversation, role: assistant, content: 'I have read {file_path}.' }\n",
      ).replace('max_continuations: 25', 'max_continuations: 0'),
    );
    const h = run([call('r1', 'Read', { file_path: 'a' }), { text: 'done' }], cfg);
    await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    const said = h.llm.requests[1]?.messages.find((m) => JSON.stringify(m.content).includes('I have read a.'));
    expect(said?.role).toBe('assistant');
  });

  it('when {status, content}: the glob sees an error result’s message', async () => {
    const cfg = config(
      READ_BEFORE_WRITE.replace('when: { status: success }', 'when: { status: error, content: "*disk*" }').replace(
        'max_continuations: 25',
        'max_continuations: 0',
      ),
    );
    const failing = { ...workspaceTools()[1]!, execute: () => ({ tool_name: 'Write', status: 'error' as const, data: null, message: 'disk full' }) };
    const h = harness([call('r1', 'Read', { file_path: 'a' }), call('w1', 'Write', { file_path: 'a', content: '' }), { text: 'done' }], {
      tools: [workspaceTools()[0]!, failing as never],
      plugins: [stateMachinePlugin(cfg)],
    });
    await h.runtime.run({ threadId: 't', messages: [Messages.user('go')] }, h.sink);
    expect(h.store.checkpoints.at(-1)?.threadState.extensions['tool_fsm_thread_state']).toEqual({ 'read-before-write': { a: 'written' } });
  });

  it('on_unmatched: a call allowed whose result the `when` does not match moves to the fallback', async () => {
    const cfg = config(
      READ_BEFORE_WRITE.replace('terminal: [written]', 'terminal: [written]\n    on_unmatched: unread').replace(
        'max_continuations: 25',
        'max_continuations: 0',
      ),
    );
    const failing = { ...workspaceTools()[1]!, execute: () => ({ tool_name: 'Write', status: 'error' as const, data: null, message: 'disk full' }) };
    const h = harness([call('r1', 'Read', { file_path: 'a' }), call('w1', 'Write', { file_path: 'a', content: '' }), { text: 'done' }], {
      tools: [workspaceTools()[0]!, failing as never],
      plugins: [stateMachinePlugin(cfg)],
    });
    await h.runtime.run({ threadId: 't', messages: [Messages.user('go')] }, h.sink);
    expect(h.store.checkpoints.at(-1)?.threadState.extensions['tool_fsm_thread_state']).toEqual({ 'read-before-write': { a: 'unread' } });
  });
});
