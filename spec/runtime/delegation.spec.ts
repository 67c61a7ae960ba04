import { describe, expect, it } from 'vitest';
import type { AgentSpecInput } from '../../src/contract/agent-spec.ts';
import type { AgentEvent, AgentEventOf } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder, type AgentRuntime } from '../../src/runtime/agent-runtime.ts';
import { delegateToolId, delegationOf } from '../../src/runtime/delegation.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import type { LlmExecutor } from '../../src/runtime/llm.ts';
import { decisionFor } from '../../src/runtime/run-loop.ts';
import { MemoryThreadRunStore } from '../../src/runtime/thread-run-store.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { approvalTool, echoTool } from '../support/runtime.ts';

const call = (id: string, agent: string, prompt: string): ScriptStep => ({ tool_calls: [{ id, name: delegateToolId(agent), arguments: { prompt } }] });

interface Setup {
  readonly agents: readonly AgentSpecInput[];
  /** A provider per agent id (model `m-<id>`). */
  readonly models: Readonly<Record<string, LlmExecutor>>;
  readonly store?: MemoryThreadRunStore | false | undefined;
}

function build(setup: Setup): { runtime: AgentRuntime; store: MemoryThreadRunStore | undefined } {
  const store = setup.store === false ? undefined : (setup.store ?? new MemoryThreadRunStore());
  const b = new AgentRuntimeBuilder().withEnv(deterministicEnv()).withTool(echoTool).withTool(approvalTool);
  // Sub-runs draw from an environment of their own: their ids do not shift the parent's.
  b.withDelegation({ env: prefixed(deterministicEnv(), 'sub-') });
  if (store !== undefined) b.withThreadRunStore(store);
  for (const [id, llm] of Object.entries(setup.models)) b.withProvider(id, llm).withModel(`m-${id}`, { provider: id, model_name: `model-${id}` });
  for (const a of setup.agents) b.withAgentSpec(a);
  const built = b.build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return { runtime: built.value, store };
}

function prefixed(env: ReturnType<typeof deterministicEnv>, prefix: string): ReturnType<typeof deterministicEnv> {
  return { ...env, ids: { next: (kind) => `${prefix}${env.ids.next(kind)}` } };
}

const of = <T extends AgentEvent['event_type']>(events: readonly AgentEvent[], type: T): AgentEventOf<T>[] =>
  events.filter((e): e is AgentEventOf<T> => e.event_type === type);
const delegationViews = (events: readonly AgentEvent[]) =>
  of(events, 'activity_snapshot')
    .filter((e) => e.activity_type === 'agent-delegation')
    .map((e) => e.content as Record<string, unknown>);

const ORCHESTRATOR: AgentSpecInput = { id: 'orchestrator', model: 'm-orchestrator', system_prompt: 'You coordinate.', delegates: ['researcher'] };
const RESEARCHER: AgentSpecInput = {
  id: 'researcher',
  model: 'm-researcher',
  system_prompt: 'You research sources.\nBe thorough.',
  allowed_tools: ['echo', 'approve'],
};

describe('delegation to local agents (book: 通过 AgentSpec.delegates 进行 agent 委托)', () => {
  it('offers agent_run_<id> described by the delegate, and refuses a delegate that is not registered', () => {
    const { runtime } = build({
      agents: [ORCHESTRATOR, RESEARCHER, { id: 'writer', model: 'm-orchestrator', description: 'Writes the final text', delegates: [] }],
      models: { orchestrator: new ScriptedLlm([]), researcher: new ScriptedLlm([]) },
    });
    const r = runtime.resolve('orchestrator');
    expect(r.ok && r.value.tools.get('agent_run_researcher')?.descriptor).toEqual({
      id: 'agent_run_researcher',
      name: 'agent_run_researcher',
      description: 'You research sources.',
      parameters: { type: 'object', properties: { prompt: { type: 'string', description: 'The task for the researcher agent' } }, required: ['prompt'] },
      category: 'delegation',
    });
    const broken = new AgentRuntimeBuilder()
      .withProvider('p', new ScriptedLlm([]))
      .withModel('m', { provider: 'p', model_name: 'x' })
      .withAgentSpec({ id: 'a', model: 'm', delegates: ['ghost'] })
      .build();
    expect(broken).toEqual({ ok: false, error: { code: 'validation_failed', message: "agent 'a': agent 'a' delegates to 'ghost', which is not registered" } });
  });

  it('runs the delegate in a child thread of its own: its answer is the tool result, its text the call’s output, never the parent’s text', async () => {
    const parentLlm = new ScriptedLlm([call('c1', 'researcher', 'find sources on tides'), { text: 'Here is what the researcher found.' }]);
    const childLlm = new ScriptedLlm([{ tool_calls: [{ id: 'k1', name: 'echo', arguments: { text: 'tides' } }] }, { text: ['Three ', 'sources.'] }]);
    const { runtime, store } = build({ agents: [ORCHESTRATOR, RESEARCHER], models: { orchestrator: parentLlm, researcher: childLlm } });
    const sink = new VecEventSink();
    const r = await runtime.run({ threadId: 't', agentId: 'orchestrator', messages: [Messages.user('research tides')] }, sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    checkRunInvariants(sink.events);

    const done = of(sink.events, 'tool_call_done').find((e) => e.id === 'c1');
    expect(done?.result).toEqual({
      tool_name: 'agent_run_researcher',
      status: 'success',
      data: { agent_id: 'researcher', status: 'completed', response: 'Three sources.', steps: 2, thread_id: 'sub-thread-1', run_id: 'sub-run-1' },
      message: null,
    });
    // The child's text reached the parent stream as the call's output only.
    expect(of(sink.events, 'tool_call_stream_delta').map((e) => [e.id, e.delta])).toEqual([
      ['c1', 'Three '],
      ['c1', 'sources.'],
    ]);
    expect(
      of(sink.events, 'text_delta')
        .map((e) => e.delta)
        .join(''),
    ).toBe('Here is what the researcher found.');
    // Its progress: the activity of the call, ending completed, with the child's tool call.
    const views = delegationViews(sink.events);
    expect(views.at(-1)).toEqual({
      schema: 'agent-delegation.v1',
      agent_id: 'researcher',
      status: 'completed',
      parent_run_id: 'run-1',
      parent_call_id: 'c1',
      thread_id: 'sub-thread-1',
      run_id: 'sub-run-1',
      steps: 2,
      tool_calls: [{ id: 'k1', name: 'echo', status: 'succeeded' }],
    });
    expect(views.map((v) => v['status'])).toContain('running');
    // The child ran on its own prompt, and its thread is kept apart from the parent's.
    expect(childLlm.requests[0]?.messages.map((m) => m.role)).toEqual(['system', 'user']);
    const child = await store?.loadThread('sub-thread-1');
    expect(child?.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const parent = await store?.loadThread('t');
    expect(parent?.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const answered = parentLlm.requests[1]?.messages.at(-1)?.content[0];
    expect(JSON.parse(answered?.type === 'text' ? answered.text : '{}')).toMatchObject({ response: 'Three sources.' });
  });

  it('the call’s activity names the child thread and run as soon as the child starts', async () => {
    const childLlm = new ScriptedLlm([{ text: 'ok' }]);
    const seen: AgentEvent[] = [];
    const { runtime } = build({
      agents: [ORCHESTRATOR, RESEARCHER],
      models: { orchestrator: new ScriptedLlm([call('c1', 'researcher', 'x'), { text: 'done' }]), researcher: childLlm },
    });
    const sink = { emit: (e: AgentEvent) => void seen.push(e) };
    await runtime.run({ threadId: 't', agentId: 'orchestrator', messages: [Messages.user('go')] }, sink);
    const views = delegationViews(seen);
    expect(views[0]).toEqual({
      schema: 'agent-delegation.v1',
      agent_id: 'researcher',
      status: 'running',
      parent_run_id: 'run-1',
      parent_call_id: 'c1',
      thread_id: 'sub-thread-1',
      run_id: 'sub-run-1',
      steps: 0,
      tool_calls: [],
    });
    expect(views.at(-1)).toMatchObject({ status: 'completed', steps: 1 });
  });

  it.each([
    ['a store that revives runs (the child is let go and revived)', true],
    ['no store (the child stays parked in memory)', false],
  ] as const)('a suspension inside the child suspends the parent’s call; the decision goes on to the child — %s', async (_name, withStore) => {
    const parentLlm = new ScriptedLlm([call('c1', 'researcher', 'publish it'), { text: 'Published, says the researcher.' }]);
    const childLlm = new ScriptedLlm([
      { tool_calls: [{ id: 'k1', name: 'approve', arguments: { what: 'publication' } }] },
      { text: 'Approved and published.' },
    ]);
    const { runtime, store } = build({
      agents: [ORCHESTRATOR, RESEARCHER],
      models: { orchestrator: parentLlm, researcher: childLlm },
      store: withStore ? undefined : false,
    });
    const sink = new VecEventSink();
    const started = await runtime.start({ threadId: 't', agentId: 'orchestrator', messages: [Messages.user('publish')] }, sink);
    if (!started.ok) throw new Error('start');
    expect(await started.value.parked()).toBe(true);
    const [waiting] = started.value.waitingOn();
    // The parent's call asks the child's question, and knows which sub-run waits.
    expect(waiting?.call.name).toBe('agent_run_researcher');
    expect(waiting?.ticket?.suspension).toMatchObject({ id: 'delegate:sub-run-1:k1', action: 'confirm', message: 'approve publication?' });
    expect(delegationOf(waiting?.ticket)).toEqual({
      child: { agent_id: 'researcher', backend: 'local', thread_id: 'sub-thread-1', run_id: 'sub-run-1', depth: 1 },
      targetId: 'k1',
    });
    if (withStore) expect(await store?.loadRunState('sub-run-1')).toBeDefined();
    expect(runtime.isWaiting('sub-thread-1')).toBe(!withStore);

    expect(started.value.decide([decisionFor('delegate:sub-run-1:k1', 'resume', 1, { result: 'yes' })]).ok).toBe(true);
    const result = await started.value.done;
    expect(result.termination).toEqual({ type: 'natural_end' });
    expect(result.response).toBe('Published, says the researcher.');
    const done = of(sink.events, 'tool_call_resumed').find((e) => e.target_id === 'c1');
    expect(done?.result).toMatchObject({ agent_id: 'researcher', status: 'completed', response: 'Approved and published.' });
    // The child resumed its own call with the decision.
    expect(childLlm.requests[1]?.messages.at(-1)?.content).toEqual([{ type: 'text', text: '{"approved":"publication","decision":"yes"}' }]);
    checkRunInvariants(sink.events);
    if (withStore) expect(await store?.loadRunState('sub-run-1')).toBeUndefined();
  });

  it('after a restart: a new runtime on the same store revives the parent, and its decision revives the child', async () => {
    const store = new MemoryThreadRunStore();
    const first = build({
      agents: [ORCHESTRATOR, RESEARCHER],
      models: {
        orchestrator: new ScriptedLlm([call('c1', 'researcher', 'publish it')]),
        researcher: new ScriptedLlm([{ tool_calls: [{ id: 'k1', name: 'approve', arguments: { what: 'it' } }] }]),
      },
      store,
    });
    const started = await first.runtime.start({ threadId: 't', agentId: 'orchestrator', messages: [Messages.user('publish')] }, new VecEventSink());
    if (!started.ok) throw new Error('start');
    expect(await started.value.parked()).toBe(true);
    expect(started.value.detach()).toBe(true);
    await started.value.done;

    // The process is gone; another one on the same store takes the parked run up.
    const childLlm = new ScriptedLlm([{ text: 'Done after the restart.' }]);
    const second = build({
      agents: [ORCHESTRATOR, RESEARCHER],
      models: { orchestrator: new ScriptedLlm([{ text: 'All published.' }]), researcher: childLlm },
      store,
    });
    const sink = new VecEventSink();
    const revived = await second.runtime.revive({ threadId: 't', runId: 'run-1', agentId: 'orchestrator' }, sink);
    if (!revived.ok) throw new Error(JSON.stringify(revived.error));
    expect(revived.value.decide([decisionFor('c1', 'resume', 2, { result: 'ok' })]).ok).toBe(true);
    const result = await revived.value.done;
    expect(result.termination).toEqual({ type: 'natural_end' });
    expect(of(sink.events, 'tool_call_resumed')[0]?.result).toMatchObject({ status: 'completed', response: 'Done after the restart.' });
    expect((await store.loadThread('sub-thread-1'))?.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
  });

  it('cancelling the parent cancels the child while it runs', async () => {
    const childLlm = new ScriptedLlm([{ text: ['a', 'b', 'c', 'd'], delay_ms: 2000 }]);
    const { runtime, store } = build({
      agents: [ORCHESTRATOR, RESEARCHER],
      models: { orchestrator: new ScriptedLlm([call('c1', 'researcher', 'slow work')]), researcher: childLlm },
    });
    const seen: AgentEvent[] = [];
    let cancel = (): void => undefined;
    const started = await runtime.start(
      { threadId: 't', agentId: 'orchestrator', messages: [Messages.user('go')] },
      {
        emit: (e) => {
          seen.push(e);
          if (e.event_type === 'activity_snapshot' && e.activity_type === 'agent-delegation' && (e.content as { run_id?: string }).run_id !== undefined)
            setTimeout(() => cancel(), 10);
        },
      },
    );
    if (!started.ok) throw new Error('start');
    cancel = () => started.value.cancel();
    const t0 = Date.now();
    const result = await started.value.done;
    expect(result.termination).toEqual({ type: 'cancelled' });
    expect(Date.now() - t0).toBeLessThan(1500);
    const childRuns = store?.checkpoints.filter((c) => c.runId === 'sub-run-1') ?? [];
    expect(childRuns.at(-1)?.termination).toEqual({ type: 'cancelled' });
  });

  it('a parent that ends while its child waits takes the child along (cancelled in the store)', async () => {
    const { runtime, store } = build({
      agents: [ORCHESTRATOR, RESEARCHER],
      models: {
        orchestrator: new ScriptedLlm([call('c1', 'researcher', 'x')]),
        researcher: new ScriptedLlm([{ tool_calls: [{ id: 'k1', name: 'approve', arguments: { what: 'x' } }] }]),
      },
    });
    const started = await runtime.start({ threadId: 't', agentId: 'orchestrator', messages: [Messages.user('go')] }, new VecEventSink());
    if (!started.ok) throw new Error('start');
    expect(await started.value.parked()).toBe(true);
    expect(await store?.loadRunState('sub-run-1')).toBeDefined();
    started.value.cancel();
    expect((await started.value.done).termination).toEqual({ type: 'cancelled' });
    await expect.poll(async () => store?.loadRunState('sub-run-1'), { timeout: 2000 }).toBeUndefined();
    expect(store?.checkpoints.filter((c) => c.runId === 'sub-run-1').at(-1)?.termination).toEqual({ type: 'cancelled' });
  });

  it('past delegation.max_depth the call is refused with a reason the model reads', async () => {
    const llm = new ScriptedLlm([
      call('d1', 'self', 'level 1'),
      call('d2', 'self', 'level 2'),
      call('d3', 'self', 'level 3'),
      { text: 'refused at 3' },
      { text: 'two' },
      { text: 'one' },
    ]);
    const { runtime } = build({
      agents: [{ id: 'self', model: 'm-self', delegates: ['self'], sections: { delegation: { max_depth: 2 } } }],
      models: { self: llm },
    });
    const sink = new VecEventSink();
    const r = await runtime.run({ threadId: 't', agentId: 'self', messages: [Messages.user('recurse')] }, sink);
    expect(r.ok && r.value.response).toBe('one');
    const toolMessages = llm.requests[3]?.messages.filter((m) => m.role === 'tool').map((m) => (m.content[0] as { text: string }).text);
    expect(toolMessages).toEqual(['[delegation_depth_exceeded] delegation to self failed: self would run at depth 3, past delegation.max_depth 2']);
  });

  it('a batch of delegations alone runs its sub-runs side by side; past delegation.max_fan_out a call is refused', async () => {
    let inFlight = 0;
    let most = 0;
    const slow = (text: string): LlmExecutor => ({
      name: 'slow',
      stream: () =>
        (async function* () {
          inFlight++;
          most = Math.max(most, inFlight);
          await new Promise((r) => setTimeout(r, 30));
          inFlight--;
          yield { type: 'text_delta' as const, delta: text };
          yield { type: 'finish' as const, stop_reason: 'EndTurn' as const };
        })(),
    });
    const parent = new ScriptedLlm([
      { tool_calls: [1, 2, 3].map((i) => ({ id: `c${i}`, name: 'agent_run_worker', arguments: { prompt: `part ${i}` } })) },
      { text: 'merged' },
    ]);
    const { runtime } = build({
      agents: [
        { id: 'boss', model: 'm-boss', delegates: ['worker'], sections: { delegation: { max_fan_out: 2 } } },
        { id: 'worker', model: 'm-worker' },
      ],
      models: { boss: parent, worker: slow('part done') },
    });
    const sink = new VecEventSink();
    const r = await runtime.run({ threadId: 't', agentId: 'boss', messages: [Messages.user('split')] }, sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    expect(most).toBe(2);
    const results = of(sink.events, 'tool_call_done').map((e) => [e.id, e.result.status, e.result.message]);
    expect(results).toEqual([
      ['c1', 'success', null],
      ['c2', 'success', null],
      ['c3', 'error', '[delegation_fan_out_exceeded] delegation to worker failed: this run already has 2 sub-runs going (delegation.max_fan_out)'],
    ]);
  });

  it('an empty prompt is an invalid argument', async () => {
    const parentLlm = new ScriptedLlm([call('c1', 'researcher', '  '), { text: 'ok' }]);
    const { runtime } = build({ agents: [ORCHESTRATOR, RESEARCHER], models: { orchestrator: parentLlm, researcher: new ScriptedLlm([]) } });
    const sink = new VecEventSink();
    await runtime.run({ threadId: 't', agentId: 'orchestrator', messages: [Messages.user('go')] }, sink);
    expect(of(sink.events, 'tool_call_done')[0]?.result.message).toBe('Invalid arguments: prompt: must not be empty');
  });
});
