import { getEventListeners } from 'node:events';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { preRegistered } from '../../src/core/phase/plugin.ts';
import { defineStateKey } from '../../src/core/state/state-key.ts';
import { AddContextMessage, ExcludeTool, IncludeOnlyTools, SetInferenceOverride, ToolInterceptAction } from '../../src/runtime/builtin-plugins.ts';
import type { RunCheckpoint } from '../../src/runtime/thread-run-store.ts';
import { InterceptConflicts, ToolCallStates, IllegalTransition, keysOf, RunLifecycle, withEntry } from '../../src/runtime/loop-keys.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';
import { defineTool, type Tool } from '../../src/runtime/tool.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { echoTool, harness } from '../support/runtime.ts';
import { NOT_EXECUTED } from '../../src/runtime/run-loop.ts';
import type { StreamPart } from '../../src/contract/stream.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import type { InferenceRequest, LlmExecutor } from '../../src/runtime/llm.ts';

const go = [Messages.user('go')];
const finishOf = (events: readonly AgentEvent[]) =>
  events.filter((e) => e.event_type === 'run_finish').at(-1) as Extract<AgentEvent, { event_type: 'run_finish' }>;

describe('stop policies in the loop', () => {
  it('max_rounds stops after the n-th inference, keeps its text, runs none of its tools; the detail is kept', async () => {
    const h = harness(
      [
        { tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'a' } }] },
        { text: 'second answer', tool_calls: [{ id: 'c2', name: 'echo', arguments: { text: 'b' } }] },
      ],
      { spec: { max_rounds: 2 } },
    );
    const r = await h.runtime.run({ messages: go }, h.sink);
    expect(r.ok && r.value).toMatchObject({
      steps: 2,
      response: 'second answer',
      termination: { type: 'stopped', value: { code: 'max_rounds', detail: 'reached 2 rounds' } },
    });
    const dones = h.sink.events.filter((e) => e.event_type === 'tool_call_done') as Extract<AgentEvent, { event_type: 'tool_call_done' }>[];
    expect(dones.map((d) => [d.id, d.outcome, d.result.message])).toEqual([
      ['c1', 'succeeded', null],
      ['c2', 'failed', NOT_EXECUTED],
    ]);
    expect(finishOf(h.sink.events).result).toMatchObject({ status: 'done', status_reason: 'stopped:max_rounds' });
    expect(checkRunInvariants(h.sink.events)).toEqual([]);
  });

  it('consecutive_errors can fire: inference errors are retried as steps until the limit', async () => {
    const h = harness([{ error: 'overloaded' }, { error: 'overloaded' }, { error: 'overloaded' }, { text: 'never' }], {
      spec: { stop_conditions: [{ type: 'consecutive_errors', max: 3 }] },
    });
    const r = await h.runtime.run({ messages: go }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'stopped', value: { code: 'consecutive_errors', detail: '3 consecutive inference errors (limit 3)' } });
    expect(h.llm.requests).toHaveLength(3);
    expect(checkRunInvariants(h.sink.events)).toEqual([]);
  });

  it('without an errors policy an inference error ends the run with error{message}, and still one run_finish', async () => {
    const h = harness([{ error: { code: 'rate_limited', message: 'slow down' } }]);
    const r = await h.runtime.run({ messages: go }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'error', value: 'rate limited: slow down' });
    expect(finishOf(h.sink.events).result).toMatchObject({ status_reason: 'error:rate limited: slow down' });
    expect(checkRunInvariants(h.sink.events)).toEqual([]);
  });

  it('an error after a success resets the count', async () => {
    const h = harness([{ error: 'x' }, { tool_calls: [{ id: 'c', name: 'echo', arguments: { text: 't' } }] }, { error: 'x' }, { text: 'ok' }], {
      spec: { stop_conditions: [{ type: 'consecutive_errors', max: 2 }] },
    });
    const r = await h.runtime.run({ messages: go }, h.sink);
    expect(r.ok && r.value).toMatchObject({ response: 'ok', termination: { type: 'natural_end' } });
  });

  it('stop_on_tool stops before the tool runs; token_budget and content_match stop on usage and text', async () => {
    const a = harness([{ tool_calls: [{ id: 'c', name: 'echo', arguments: { text: 't' } }] }], {
      spec: { stop_conditions: [{ type: 'stop_on_tool', tool_name: 'echo' }] },
    });
    const ra = await a.runtime.run({ messages: go }, a.sink);
    expect(ra.ok && ra.value.termination).toMatchObject({ type: 'stopped', value: { code: 'stop_on_tool' } });
    expect(a.sink.events.find((e) => e.event_type === 'tool_call_done')).toMatchObject({ outcome: 'failed', result: { message: NOT_EXECUTED } });
    const b = harness([{ text: 'x', usage: { prompt_tokens: 8, completion_tokens: 5 }, tool_calls: [{ id: 'c', name: 'echo', arguments: { text: 't' } }] }], {
      spec: { stop_conditions: [{ type: 'token_budget', max_total: 10 }] },
    });
    const rb = await b.runtime.run({ messages: go }, b.sink);
    expect(rb.ok && rb.value).toMatchObject({
      termination: { value: { code: 'token_budget' } },
      usage: { prompt_tokens: 8, completion_tokens: 5, total_tokens: 13 },
    });
    const c = harness([{ text: 'FINAL ANSWER', tool_calls: [{ id: 'c', name: 'echo', arguments: { text: 't' } }] }], {
      spec: { stop_conditions: [{ type: 'content_match', pattern: 'FINAL' }] },
    });
    const rc = await c.runtime.run({ messages: go }, c.sink);
    expect(rc.ok && rc.value.termination).toMatchObject({ value: { code: 'content_match' } });
  });

  it('timeout uses the injected clock', async () => {
    const slow = defineTool({
      id: 'slow',
      description: 'takes time',
      args: z.object({}),
      execute: async (_a, ctx) => {
        void ctx;
        await h.env.sleep(5_000);
        return ToolResults.success('slow', null);
      },
    });
    const h = harness(
      [{ tool_calls: [{ id: 'c', name: 'slow', arguments: {} }] }, { tool_calls: [{ id: 'd', name: 'slow', arguments: {} }] }, { text: 'late' }],
      { tools: [slow], spec: { stop_conditions: [{ type: 'timeout', seconds: 4 }] } },
    );
    const r = await h.runtime.run({ messages: go }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'stopped', value: { code: 'timeout', detail: 'elapsed 5000ms exceeds limit 4000ms' } });
  });

  it('loop_detection stops a model that repeats itself', async () => {
    const same = { text: 'again', tool_calls: [{ id: 'c', name: 'echo', arguments: { text: 't' } }] };
    const h = harness([same, { ...same, tool_calls: [{ id: 'd', name: 'echo', arguments: { text: 't' } }] }, { text: 'x' }], {
      spec: { stop_conditions: [{ type: 'loop_detection', window: 2 }] },
    });
    const r = await h.runtime.run({ messages: go }, h.sink);
    expect(r.ok && r.value.termination).toMatchObject({ value: { code: 'loop_detection' } });
  });
});

describe('built-in scheduled actions (book: Scheduled Actions → 核心 Actions)', () => {
  const t = (id: string): Tool => defineTool({ id, description: id, args: z.object({}), execute: () => ToolResults.success(id, null) });
  const actions = (f: () => StateCommand): RuntimePlugin => ({ name: 'acts', register: (r) => r.registerPhaseHook('before_inference', () => f()) });

  it('ExcludeTool and IncludeOnlyTools filter the tools of this step only', async () => {
    const h = harness([{ text: 'a', tool_calls: [{ id: 'x', name: 'a', arguments: {} }] }, { text: 'b' }], {
      tools: [t('a'), t('b'), t('c')],
      plugins: [actions(() => StateCommand.empty().scheduleAction(IncludeOnlyTools, ['a', 'b']).scheduleAction(ExcludeTool, 'b'))],
    });
    await h.runtime.run({ messages: go }, h.sink);
    expect(h.llm.requests.map((r) => r.tools.map((d) => d.id))).toEqual([['a'], ['a']]);
  });

  it('SetInferenceOverride merges per field, last writer wins, over the run overrides and the spec', async () => {
    const h = harness([{ text: 'a' }], {
      spec: { reasoning_effort: 'low' },
      plugins: [
        actions(() =>
          StateCommand.empty()
            .scheduleAction(SetInferenceOverride, { temperature: 0.1, max_tokens: 10 })
            .scheduleAction(SetInferenceOverride, { temperature: 0.7, model: 'other-model' }),
        ),
      ],
    });
    await h.runtime.run({ messages: go, overrides: { top_p: 0.5, temperature: 0.3 } }, h.sink);
    expect(h.llm.requests[0]).toMatchObject({ model: 'other-model', overrides: { reasoning_effort: 'low', top_p: 0.5, temperature: 0.7, max_tokens: 10 } });
  });

  it('AddContextMessage places messages by target; non-persistent ones are used once; cooldown throttles', async () => {
    const h = harness([{ tool_calls: [{ id: 'c', name: 'echo', arguments: { text: 'x' } }] }, { text: 'b' }], {
      plugins: [
        actions(() =>
          StateCommand.empty()
            .scheduleAction(AddContextMessage, { key: 'sys', content: 'SYS', target: 'system' })
            .scheduleAction(AddContextMessage, { key: 'tail', content: 'TAIL', target: 'suffix_system' })
            .scheduleAction(AddContextMessage, { key: 'conv', role: 'user', content: 'CONV', target: 'conversation', cooldown_turns: 5 }),
        ),
      ],
    });
    await h.runtime.run({ messages: go }, h.sink);
    const texts = h.llm.requests.map((r) => r.messages.map((m) => (m.content[0]?.type === 'text' ? m.content[0].text : '')));
    expect(texts[0]).toEqual(['be brief', 'SYS', 'CONV', 'go', 'TAIL']);
    expect(texts[1]).toEqual(['be brief', 'SYS', 'go', '', '{"echoed":"x"}', 'TAIL']);
    expect(h.llm.requests[0]?.messages[1]?.visibility).toBe('internal');
  });

  it('ToolInterceptAction: Block beats Suspend beats SetResult; a same-priority duplicate is recorded as a conflict', async () => {
    let conflicts: unknown;
    const gate: RuntimePlugin = {
      name: 'gate',
      register: (r) => {
        r.registerPhaseHook('before_tool_execute', (ctx) => {
          const id = (ctx.input['toolCall'] as { id: string }).id;
          return StateCommand.empty()
            .scheduleAction(ToolInterceptAction, { call_id: id, intercept: { type: 'set_result', result: ToolResults.success('echo', 'preset') } })
            .scheduleAction(ToolInterceptAction, { call_id: id, intercept: { type: 'set_result', result: ToolResults.success('echo', 'second') } });
        });
        r.registerPhaseHook('run_end', (ctx) => ((conflicts = ctx.snapshot.get(InterceptConflicts)), StateCommand.empty()));
      },
    };
    const h = harness([{ tool_calls: [{ id: 'c', name: 'echo', arguments: { text: 'x' } }] }, { text: 'b' }], { plugins: [gate] });
    await h.runtime.run({ messages: go }, h.sink);
    const done = h.sink.events.find((e) => e.event_type === 'tool_call_done');
    expect(done).toMatchObject({ result: { data: 'preset' }, outcome: 'succeeded' });
    expect(conflicts).toEqual([{ call_id: 'c', intercept: { type: 'set_result', result: ToolResults.success('echo', 'second') } }]);
  });
});

describe('tool state, snapshots and execution modes (book: 工具执行模式)', () => {
  const Counter = defineStateKey({ key: 'test.counter', merge: 'exclusive', init: () => 0, apply: (_v: number, u: number) => u, codec: z.number() });
  const counterPlugin: RuntimePlugin = { name: 'counter', register: (r) => r.registerKey(Counter) };
  const seen: Record<string, number[]> = {};
  const bump = defineTool({
    id: 'bump',
    description: 'reads and writes the counter',
    args: z.object({ tag: z.string() }),
    execute: ({ tag }, ctx) => {
      const v = ctx.state(Counter) ?? 0;
      (seen[tag] ??= []).push(v);
      return { result: ToolResults.success('bump', v), command: StateCommand.empty().update(Counter, v + 1) };
    },
  });
  const script = (tag: string) => [
    {
      tool_calls: [
        { id: 'a', name: 'bump', arguments: { tag } },
        { id: 'b', name: 'bump', arguments: { tag } },
      ],
    },
    { text: 'done' },
  ];

  it('Sequential: each call sees the staged writes of the calls before it; state is published in model order', async () => {
    const h = harness(script('seq'), { tools: [bump], plugins: [counterPlugin] });
    await h.runtime.run({ messages: go }, h.sink);
    expect(seen['seq']).toEqual([0, 1]);
    expect(h.store.checkpoints.at(-1)?.runState.extensions['test.counter']).toBe(2);
  });

  it('ParallelStreaming: every call sees one frozen snapshot; writes are published one by one in model order', async () => {
    const h = harness(script('ps'), { tools: [bump], plugins: [counterPlugin], spec: { sections: { tool_execution: { mode: 'parallel_streaming' } } } });
    await h.runtime.run({ messages: go }, h.sink);
    expect(seen['ps']).toEqual([0, 0]);
    expect(h.store.checkpoints.at(-1)?.runState.extensions['test.counter']).toBe(1);
  });

  it('ParallelBatchApproval: conflicting exclusive writes fail the later call', async () => {
    const h = harness(script('pb'), { tools: [bump], plugins: [counterPlugin], spec: { sections: { tool_execution: { mode: 'parallel_batch_approval' } } } });
    await h.runtime.run({ messages: go }, h.sink);
    const dones = h.sink.events.filter((e) => e.event_type === 'tool_call_done') as Extract<AgentEvent, { event_type: 'tool_call_done' }>[];
    expect(dones.map((d) => [d.id, d.outcome, d.result.message])).toEqual([
      ['a', 'succeeded', null],
      ['b', 'failed', 'parallel merge conflict on exclusive key: test.counter'],
    ]);
  });

  it('tools report activity and progress as events carrying the call id', async () => {
    const reporter = defineTool({
      id: 'rep',
      description: 'reports',
      args: z.object({}),
      execute: async (_a, ctx) => {
        await ctx.reportActivity('log', 'started');
        await ctx.reportActivityDelta('log', { op: 'add', path: '/x', value: 1 });
        await ctx.reportProgress('running', 'half', 0.5);
        return ToolResults.success('rep', null);
      },
    });
    const h = harness([{ tool_calls: [{ id: 'c9', name: 'rep', arguments: {} }] }, { text: 'ok' }], { tools: [reporter] });
    await h.runtime.run({ messages: go }, h.sink);
    const acts = h.sink.events.filter((e) => e.event_type.startsWith('activity'));
    expect(acts).toEqual([
      { event_type: 'activity_snapshot', message_id: 'c9', activity_type: 'log', content: 'started', replace: true },
      { event_type: 'activity_delta', message_id: 'c9', activity_type: 'log', patch: [{ op: 'add', path: '/x', value: 1 }] },
      {
        event_type: 'activity_snapshot',
        message_id: 'c9',
        activity_type: 'tool-call-progress',
        content: {
          schema: 'tool-call-progress.v1',
          node_id: 'tool_call:c9',
          call_id: 'c9',
          tool_name: 'rep',
          status: 'running',
          progress: 0.5,
          message: 'half',
          run_id: 'run-1',
          thread_id: 'thread-1',
        },
        replace: true,
      },
    ]);
    expect(checkRunInvariants(h.sink.events)).toEqual([]);
  });

  it('an unexpected exception in a tool fails the call as an internal error', async () => {
    const broken = defineTool({
      id: 'broken',
      description: 'x',
      args: z.object({}),
      execute: () => {
        throw new TypeError('oops');
      },
    });
    const h = harness([{ tool_calls: [{ id: 'c', name: 'broken', arguments: {} }] }, { text: 'ok' }], { tools: [broken] });
    await h.runtime.run({ messages: go }, h.sink);
    expect(h.sink.events.find((e) => e.event_type === 'tool_call_done')).toMatchObject({ outcome: 'failed', result: { message: 'Internal error: oops' } });
  });
});

describe('state machines are enforced', () => {
  it('an illegal tool-call transition is an error, never silently skipped', () => {
    const done = { call_id: 'c', tool_name: 't', arguments: {}, status: 'succeeded' as const, updated_at: 0, resume_mode: 'replay_tool_call' as const };
    const map = ToolCallStates.apply({}, { op: 'put', state: done });
    expect(() => ToolCallStates.apply(map, { op: 'put', state: { ...done, status: 'running' } })).toThrow(IllegalTransition);
    expect(() => ToolCallStates.apply(map, { op: 'put', state: { ...done, status: 'running' } })).toThrow('illegal tool call transition succeeded → running');
  });

  it('an illegal run transition is an error', () => {
    const s = RunLifecycle.apply(RunLifecycle.init(), { op: 'done', reason: 'natural', at: 1 });
    expect(() => RunLifecycle.apply(s, { op: 'set_running', at: 2 })).toThrow(IllegalTransition);
  });

  it('input the thread already holds (same message id) is not appended again; input without ids always is', async () => {
    const h = harness([{ text: 'one' }, { text: 'two' }, { text: 'three' }], { tools: [echoTool] });
    await h.runtime.run({ threadId: 'dup', messages: [Messages.user('hi', { id: 'm1' })] }, h.sink);
    await h.runtime.run({ threadId: 'dup', messages: [Messages.user('hi', { id: 'm1' }), Messages.user('new', { id: 'm2' })] }, h.sink);
    expect(h.llm.requests[1]?.messages.filter((m) => m.role === 'user').map((m) => m.id)).toEqual(['m1', 'm2']);
    await h.runtime.run({ threadId: 'dup', messages: [Messages.user('again')] }, h.sink);
    expect(h.llm.requests[2]?.messages.filter((m) => m.role === 'user')).toHaveLength(3);
  });

  it('checkpoints are written at run start (the input, write-ahead), at each phase of a tool call, at every step end and at the run end', async () => {
    const h = harness([{ tool_calls: [{ id: 'c', name: 'echo', arguments: { text: 'x' } }] }, { text: 'ok' }], { tools: [echoTool] });
    await h.runtime.run({ threadId: 'th', messages: go }, h.sink);
    const batchOf = (c: RunCheckpoint): unknown => {
      const record = c.threadState.extensions['__runtime.tool_batch'] as { calls: { id: string }[]; results: object } | null | undefined;
      const states = c.threadState.extensions['__runtime.tool_call_states'] as { [id: string]: { status: string } } | undefined;
      return record === null || record === undefined ? null : [record.calls.map((x) => x.id), Object.keys(record.results), states?.['c']?.status];
    };
    expect(h.store.checkpoints.map((c) => [c.status, c.steps, c.termination?.type ?? null, c.messages.length, batchOf(c)])).toEqual([
      ['running', 0, null, 1, null],
      // The batch as requested, before any gate or tool; the call marked running before its tool is
      // called; its outcome once settled — each stored before the batch goes on.
      ['running', 1, null, 1, [['c'], [], 'new']],
      ['running', 1, null, 1, [['c'], [], 'running']],
      ['running', 1, null, 1, [['c'], ['c'], 'succeeded']],
      ['running', 1, null, 3, null],
      ['running', 2, null, 4, null],
      ['done', 2, 'natural_end', 4, null],
    ]);
    const again = await h.runtime.run({ threadId: 'th', messages: [Messages.user('more')] }, h.sink);
    expect(again.ok && h.llm.requests.at(-1)?.messages.length).toBe(6);
  });
});

/** A runtime over a hand-written provider and the echo tool. */
function runtimeOver(stream: LlmExecutor['stream'], spec: { readonly system_prompt?: string } = {}) {
  const built = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('p', { name: 'p', stream })
    .withModel('m', { provider: 'p', model_name: 'p' })
    .withAgentSpec({ id: 'a', model: 'm', ...spec })
    .withTool(echoTool)
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return built.value;
}

/** A provider stream that answers `calls` echo tool calls, one per inference, then text; `seen` gets each request. */
function echoCallsThenText(calls: number, seen: (request: InferenceRequest) => void): LlmExecutor['stream'] {
  let k = 0;
  return (request) => {
    seen(request);
    const parts: StreamPart[] =
      k++ < calls
        ? [
            { type: 'tool_call_start', id: `c${k}`, name: 'echo' },
            { type: 'tool_call_delta', id: `c${k}`, args_delta: '{"text":"x"}' },
            { type: 'finish', stop_reason: 'ToolUse' },
          ]
        : [
            { type: 'text_delta', delta: 'done' },
            { type: 'finish', stop_reason: 'EndTurn' },
          ];
    return (async function* () {
      yield* parts;
    })();
  };
}

describe('a provider that ignores the run signal', () => {
  it('a cancel ends the run while the provider never answers its next part', async () => {
    const runtime = runtimeOver(() => ({
      [Symbol.asyncIterator]: () => {
        let sent = false;
        return {
          next: () =>
            sent
              ? new Promise<IteratorResult<StreamPart>>(() => undefined)
              : ((sent = true), Promise.resolve({ done: false as const, value: { type: 'text_delta' as const, delta: 'Hel' } })),
        };
      },
    }));
    const events: AgentEvent[] = [];
    const started = await runtime.start({ messages: go }, { emit: (e) => void events.push(e) });
    if (!started.ok) throw new Error('not started');
    await vi.waitFor(() => expect(events.some((e) => e.event_type === 'text_delta')).toBe(true));
    started.value.cancel();
    const result = await started.value.done;
    expect(result.termination).toEqual({ type: 'cancelled' });
    expect(finishOf(events).termination).toEqual({ type: 'cancelled' });
  });

  it('a finished run leaves no listener on the signal it handed the provider', async () => {
    const signals: AbortSignal[] = [];
    const runtime = runtimeOver(echoCallsThenText(3, (request) => request.signal !== undefined && signals.push(request.signal)));
    const r = await runtime.run({ messages: go }, { emit: () => undefined });
    expect(r.ok && r.value.steps).toBe(4);
    expect(signals).toHaveLength(4);
    for (const s of new Set(signals)) expect(getEventListeners(s, 'abort')).toEqual([]);
  });
});

describe('the messages a request carries', () => {
  it('each step sends the history as of that step; without a context policy the run appends to one array rather than copying the history per step', async () => {
    const seen: { array: readonly unknown[]; length: number; last: string }[] = [];
    const runtime = runtimeOver(
      echoCallsThenText(2, (request) => seen.push({ array: request.messages, length: request.messages.length, last: JSON.stringify(request.messages.at(-1)) })),
      { system_prompt: 'sys' },
    );
    const r = await runtime.run({ messages: go }, { emit: () => undefined });
    expect(r.ok && r.value.steps).toBe(3);
    // system + user, then + assistant(call) + tool result per step.
    expect(seen.map((s) => s.length)).toEqual([2, 4, 6]);
    expect(seen.map((s) => JSON.parse(s.last).role)).toEqual(['user', 'tool', 'tool']);
    expect(seen[1]?.array).toBe(seen[0]?.array);
    expect(seen[2]?.array).toBe(seen[0]?.array);
  });
});

describe('maps keyed by call id', () => {
  it('withEntry sets an own key and leaves the map it copies as it was, "__proto__" included; the copy has no prototype', () => {
    const before = { a: 1 };
    const after = withEntry(before, 'b', 2);
    expect(after).toEqual({ a: 1, b: 2 });
    expect(JSON.stringify(after)).toBe('{"a":1,"b":2}');
    expect(Object.getPrototypeOf(after)).toBeNull();
    expect(before).toEqual({ a: 1 });
    const proto = withEntry(before, '__proto__', 3);
    expect(Object.keys(proto)).toEqual(['a', '__proto__']);
    expect(Object.getPrototypeOf(proto)).toBeNull();
    const again = withEntry(proto, 'c', 4);
    expect(Object.keys(again)).toEqual(['a', '__proto__', 'c']);
    expect(Object.getOwnPropertyDescriptor(again, '__proto__')?.value).toBe(3);
  });

  it('withEntry gives what a copy of every key would, on the map it made last or any other (index-like keys, "__proto__"); keysOf lists the own keys of each', () => {
    // The copy of a map enumerated anew, key by key: what withEntry must give whichever map it is set on.
    const copied = (map: Readonly<Record<string, number>> | undefined, key: string, value: number): Record<string, number> => {
      const next: Record<string, number> = Object.create(null);
      if (map !== undefined) for (const k in map) next[k] = map[k] as number;
      next[key] = value;
      return next;
    };
    const entries = (map: Readonly<Record<string, number>>): [string, number][] => Object.keys(map).map((k) => [k, map[k] as number]);
    const key = fc.constantFrom('a', 'b', 'c', '0', '7', '10', '__proto__', 'call_1');
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), key, fc.integer()), { minLength: 1, maxLength: 30 }), (ops) => {
        const made: (Readonly<Record<string, number>> | undefined)[] = [undefined];
        const expected: (Readonly<Record<string, number>> | undefined)[] = [undefined];
        for (const [pick, k, v] of ops) {
          const i = pick % made.length;
          const before = made[i] === undefined ? undefined : entries(made[i] as Record<string, number>);
          made.push(withEntry(made[i], k, v));
          expected.push(copied(expected[i], k, v));
          if (before !== undefined) expect(entries(made[i] as Record<string, number>)).toEqual(before);
          // keysOf lists a map's own keys, whether it is the map made last or an earlier one.
          for (const m of [made[made.length - 1], made[i], made[pick % made.length]])
            if (m !== undefined) expect([...keysOf(m)].sort()).toEqual(Object.keys(m).sort());
        }
        for (let i = 1; i < made.length; i++) {
          expect(entries(made[i] as Record<string, number>)).toEqual(entries(expected[i] as Record<string, number>));
          expect(Object.getPrototypeOf(made[i])).toBeNull();
          expect([...keysOf(made[i] as Record<string, number>)].sort()).toEqual(Object.keys(made[i] as Record<string, number>).sort());
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a tool call with the id "__proto__" keeps its state and result under that id', async () => {
    const h = harness([{ tool_calls: [{ id: '__proto__', name: 'echo', arguments: { text: 'p' } }] }, { text: 'ok' }]);
    const r = await h.runtime.run({ messages: go }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    const stored = await h.store.loadThread(r.ok ? r.value.threadId : '');
    const states = stored?.threadState?.extensions['__runtime.tool_call_states'] as Record<string, { status: string }>;
    expect(Object.keys(states)).toEqual(['__proto__']);
    expect(Object.getOwnPropertyDescriptor(states, '__proto__')?.value).toMatchObject({ status: 'succeeded' });
  });
});

describe('an agent whose plugins are all pre-registered', () => {
  const counting = (): RuntimePlugin => ({ name: 'counting', register: (r) => void r.registerPhaseHook('step_start', () => StateCommand.empty()) });

  it('shares one execution env between its runs: nothing is registered again', async () => {
    const h = harness([{ text: 'one' }, { text: 'two' }]);
    const a = h.runtime.resolve('agent');
    const b = h.runtime.resolve('agent');
    expect(a.ok && b.ok).toBe(true);
    if (!a.ok || !b.ok) return;
    expect(b.value.executionEnv).toBe(a.value.executionEnv);
    const shared = preRegistered(counting());
    const withShared = harness([{ text: 'one' }], { plugins: [shared] });
    const c = withShared.runtime.resolve('agent');
    const d = withShared.runtime.resolve('agent');
    expect(c.ok && d.ok && d.value.executionEnv === c.value.executionEnv).toBe(true);
    // The runs behave as before on the shared env.
    expect((await h.runtime.run({ messages: go }, h.sink)).ok).toBe(true);
    expect((await h.runtime.run({ messages: go }, h.sink)).ok).toBe(true);
  });

  it('but a plugin that is not pre-registered is registered afresh for every run, with an env of its own', () => {
    const h = harness([{ text: 'one' }], { plugins: [counting()] });
    const a = h.runtime.resolve('agent');
    const b = h.runtime.resolve('agent');
    expect(a.ok && b.ok && b.value.executionEnv !== a.value.executionEnv).toBe(true);
  });

  it('and new registries with another stop policy get an env of their own', () => {
    const h = harness([{ text: 'one' }]);
    const before = h.runtime.resolve('agent');
    const registries = h.runtime.registries;
    const spec = registries.agents.get('agent');
    if (spec === undefined || !before.ok) throw new Error('no agent');
    const published = h.runtime.publish({ ...registries, agents: new Map([['agent', { ...spec, max_rounds: 3 }]]) });
    expect(published.ok).toBe(true);
    const after = h.runtime.resolve('agent');
    expect(after.ok && after.value.executionEnv !== before.value.executionEnv).toBe(true);
    expect(after.ok && after.value.stopPolicies.map((p) => p.id)).toEqual(before.value.stopPolicies.map((p) => p.id));
  });
});

describe('a plugin is registered once per run', () => {
  it('its register runs once for each run (the agent is resolved per run, and the run’s engine uses that registration)', async () => {
    let registered = 0;
    const counting: RuntimePlugin = {
      name: 'counting',
      register: (r) => {
        registered++;
        r.registerPhaseHook('step_start', () => StateCommand.empty());
      },
    };
    const h = harness([{ text: 'one' }, { text: 'two' }], { plugins: [counting] });
    // Building the runtime resolves every agent once (to validate it).
    const built = registered;
    const first = await h.runtime.run({ messages: go }, h.sink);
    expect(first.ok).toBe(true);
    expect(registered - built).toBe(1);
    const second = await h.runtime.run({ messages: go, ...(first.ok ? { threadId: first.value.threadId } : {}) }, h.sink);
    expect(second.ok).toBe(true);
    expect(registered - built).toBe(2);
  });
});
