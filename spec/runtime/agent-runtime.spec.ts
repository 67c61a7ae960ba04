import { describe, expect, it } from 'vitest';
import { decisionFor } from '../../src/contract/decision.ts';
import { Messages } from '../../src/contract/message.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { approvalTool, harness, types } from '../support/runtime.ts';

/** The runtime's public promises (docs/api.md → AgentRuntime, RunHandle): start, stream, park, decide, cancel, let go. */

const approveCall: ScriptStep[] = [{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }] }, { text: 'shipped' }];
const twoApprovals: ScriptStep[] = [
  {
    tool_calls: [
      { id: 'c1', name: 'approve', arguments: { what: 'a' } },
      { id: 'c2', name: 'approve', arguments: { what: 'b' } },
    ],
  },
  { text: 'both done' },
];
const resume = (targetId: string) => decisionFor(targetId, 'resume', 0, { decisionId: `d-${targetId}` });

/** Whether `p` has settled once the callbacks queued now have run. */
async function settledNow(p: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void p.then(() => (settled = true));
  for (let i = 0; i < 20; i++) await Promise.resolve();
  return settled;
}

describe('AgentRuntime.start and run', () => {
  it('starts a run under new ids, streams its events to the sink in order, and resolves done with the result', async () => {
    const h = harness([{ text: 'hello' }]);
    const started = await h.runtime.start({ messages: [Messages.user('hi')] }, h.sink);
    if (!started.ok) throw new Error(JSON.stringify(started.error));
    const result = await started.value.done;
    expect(result).toMatchObject({ threadId: started.value.threadId, runId: started.value.runId, response: 'hello', termination: { type: 'natural_end' } });
    expect(started.value.threadId).not.toBe(started.value.runId);
    expect(types(h.sink.events)[0]).toBe('run_start');
    expect(types(h.sink.events).at(-1)).toBe('run_finish');
    expect(checkRunInvariants(h.sink.events)).toEqual([]);
    expect(h.sink.events.every((e) => !('run_id' in e) || e.run_id === started.value.runId)).toBe(true);
  });

  it("a caller's tap (RunOptions.tap) sees the run where it checkpoints between steps — at its start and each step's end: its steps, the thread's messages, the state by scope; the run is the same with it", async () => {
    const script: ScriptStep[] = [{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }];
    const plain = harness(script);
    await plain.runtime.run({ threadId: 't', runId: 'r', messages: [Messages.user('hi')] }, plain.sink);
    const tapped = harness(script);
    const seen: { steps: number; roles: string[]; run: string[]; thread: string[]; events: number }[] = [];
    let events = 0;
    await tapped.runtime.run({ threadId: 't', runId: 'r', messages: [Messages.user('hi')] }, tapped.sink, {
      tap: {
        event: () => void events++,
        stepEnded: (s) =>
          seen.push({
            steps: s.steps,
            roles: s.messages.map((m) => m.role),
            run: Object.keys(s.state.run.extensions).filter((k) => k === '__runtime.run_lifecycle'),
            thread: Object.keys(s.state.thread.extensions).filter((k) => k === '__runtime.tool_call_states'),
            events,
          }),
      },
    });
    expect(JSON.stringify(tapped.sink.events)).toBe(JSON.stringify(plain.sink.events));
    const stepEnds = types(tapped.sink.events).flatMap((t, i) => (t === 'step_end' ? [i] : []));
    expect(seen).toEqual([
      { steps: 0, roles: ['user'], run: ['__runtime.run_lifecycle'], thread: [], events: 1 },
      {
        steps: 1,
        roles: ['user', 'assistant', 'tool'],
        run: ['__runtime.run_lifecycle'],
        thread: ['__runtime.tool_call_states'],
        events: (stepEnds[0] as number) - 1,
      },
      {
        steps: 2,
        roles: ['user', 'assistant', 'tool', 'assistant'],
        run: ['__runtime.run_lifecycle'],
        thread: ['__runtime.tool_call_states'],
        events: (stepEnds[1] as number) - 1,
      },
    ]);
  });

  it('run() is start() followed by done, under the ids the request chose', async () => {
    const h = harness([{ text: 'hello' }]);
    const result = await h.runtime.run({ threadId: 't1', runId: 'r1', messages: [Messages.user('hi')] }, h.sink);
    expect(result).toMatchObject({ ok: true, value: { threadId: 't1', runId: 'r1', termination: { type: 'natural_end' } } });
  });

  it('run() and start() answer every failure through their promise: a request that is no object rejects it, nothing is thrown where they are called', async () => {
    const h = harness([{ text: 'hello' }]);
    let returned: Promise<unknown> | undefined;
    expect(() => {
      returned = h.runtime.run(undefined as never, h.sink);
    }).not.toThrow();
    await expect(returned).rejects.toThrow(TypeError);
    expect(() => {
      returned = h.runtime.start(undefined as never, h.sink);
    }).not.toThrow();
    await expect(returned).rejects.toThrow(TypeError);
    const throwing = harness([{ text: 'hello' }]);
    // A sink that throws at the run's last event, where the run ends without a promise of its own.
    const sink = {
      emit: (e: { readonly event_type: string }) => {
        if (e.event_type === 'run_finish') throw new Error('the sink broke');
      },
    };
    await expect(throwing.runtime.run({ messages: [Messages.user('hi')] }, sink)).rejects.toThrow('the sink broke');
  });

  it('run() starts through start(): a wrapper put in its place sees every run', async () => {
    const h = harness([{ text: 'hello' }]);
    const seen: (string | undefined)[] = [];
    const start = h.runtime.start.bind(h.runtime);
    h.runtime.start = (request, sink, options) => (seen.push(request.threadId), start(request, sink, options));
    const result = await h.runtime.run({ threadId: 't1', messages: [Messages.user('hi')] }, h.sink);
    expect(result).toMatchObject({ ok: true, value: { threadId: 't1', response: 'hello' } });
    expect(seen).toStrictEqual(['t1']);
  });

  it('a request without an agent runs the first agent by id', async () => {
    const llm = new ScriptedLlm([{ text: 'from b?' }]);
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('p', llm)
      .withModel('m', { provider: 'p', model_name: 'pm' })
      .withAgentSpec({ id: 'zeta', model: 'm', system_prompt: 'z' })
      .withAgentSpec({ id: 'alpha', model: 'm', system_prompt: 'a' })
      .build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    expect(built.value.agentIds()).toEqual(['alpha', 'zeta']);
    const result = await built.value.run({ messages: [Messages.user('hi')] }, new VecEventSink());
    expect(result.ok).toBe(true);
    expect(llm.requests[0]?.messages[0]).toMatchObject({ role: 'system' });
    expect(JSON.stringify(llm.requests[0]?.messages[0])).toContain('"a"');
  });

  it('an unknown agent is agent_not_found, and a runtime without agents has none to run', async () => {
    const h = harness([{ text: 'never' }]);
    expect(await h.runtime.start({ agentId: 'nobody', messages: [] }, h.sink)).toEqual({ ok: false, error: { code: 'agent_not_found', agentId: 'nobody' } });
    const empty = new AgentRuntimeBuilder().withEnv(deterministicEnv()).build();
    if (!empty.ok) throw new Error(JSON.stringify(empty.error));
    expect(await empty.value.start({ messages: [] }, h.sink)).toEqual({ ok: false, error: { code: 'agent_not_found', agentId: '' } });
    expect(h.sink.events).toEqual([]);
  });

  it('an agent that does not resolve is resolve_failed, with the reason', async () => {
    const built = new AgentRuntimeBuilder().withEnv(deterministicEnv()).withAgentSpec({ id: 'a', model: 'missing', system_prompt: 'x' }).buildUnchecked();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    const started = await built.value.start({ messages: [] }, new VecEventSink());
    expect(started.ok).toBe(false);
    if (!started.ok) expect(started.error).toMatchObject({ code: 'resolve_failed', message: expect.stringContaining('missing') });
  });

  it('one run per thread: a second start on a busy thread is thread_already_running; the thread is free once the run ends', async () => {
    const h = harness(approveCall);
    const first = await h.runtime.start({ threadId: 't', messages: [Messages.user('go')] }, h.sink);
    if (!first.ok) throw new Error('start');
    expect(await h.runtime.start({ threadId: 't', messages: [Messages.user('again')] }, h.sink)).toEqual({
      ok: false,
      error: { code: 'thread_already_running', threadId: 't' },
    });
    expect(h.runtime.cancel('t')).toBe(true);
    await first.value.done;
    expect(h.runtime.cancel('t')).toBe(false);
    const second = await h.runtime.start({ threadId: 't', messages: [Messages.user('again')] }, h.sink);
    expect(second.ok).toBe(true);
  });
});

describe('suspension and decisions', () => {
  it('a suspended run parks: parked() is true, the runtime says it waits, waitingOn names the call; a decision resumes it to its end', async () => {
    const h = harness(approveCall);
    const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error('start');
    const handle = started.value;
    expect(await handle.parked()).toBe(true);
    expect(h.runtime.isWaiting(handle.threadId)).toBe(true);
    expect(handle.waitingOn().map((c) => c.call.id)).toEqual(['c1']);
    expect(h.runtime.decide(handle.threadId, [resume('c1')])).toEqual({ ok: true, value: undefined });
    const result = await handle.done;
    expect(result.termination).toEqual({ type: 'natural_end' });
    expect(h.runtime.isWaiting(handle.threadId)).toBe(false);
    expect(handle.waitingOn()).toEqual([]);
    expect(types(h.sink.events).filter((t) => t === 'run_finish')).toHaveLength(2);
  });

  it('refuses a decision for a call the run does not wait on, one for a run that is not parked, and one for a thread without a run', async () => {
    const h = harness(approveCall);
    const started = await h.runtime.start({ threadId: 't', messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error('start');
    // Not parked yet: the run has not reached its suspension.
    expect(started.value.decide([resume('c1')])).toMatchObject({ ok: false, error: { code: 'resolve_failed' } });
    expect(await started.value.parked()).toBe(true);
    expect(started.value.decide([resume('nope')])).toEqual({
      ok: false,
      error: { code: 'resolve_failed', message: "no suspended tool call or suspension 'nope'" },
    });
    expect(h.runtime.decide('elsewhere', [resume('c1')])).toEqual({
      ok: false,
      error: { code: 'resolve_failed', message: 'no active run on thread elsewhere' },
    });
    started.value.cancel();
    await started.value.done;
  });

  it('waitForDecisions: false returns at the first suspension with termination suspended', async () => {
    const h = harness(approveCall);
    const result = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink, { waitForDecisions: false });
    expect(result).toMatchObject({ ok: true, value: { termination: { type: 'suspended' } } });
  });

  it('after a decision that leaves calls waiting, parked() resolves once the run has taken it and waits for the rest', async () => {
    const h = harness(twoApprovals, { spec: { sections: { tool_execution: { mode: 'parallel_batch_approval' } } }, tools: [approvalTool] });
    const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error('start');
    const handle = started.value;
    expect(await handle.parked()).toBe(true);
    const before = h.sink.events.length;
    expect(handle.decide([resume('c1')]).ok).toBe(true);
    expect(await handle.parked()).toBe(true);
    // Waiting for the rest: nothing was emitted, both calls still wait (the batch resumes as one).
    expect(h.sink.events.length).toBe(before);
    expect(handle.waitingOn().map((c) => c.call.id)).toEqual(['c1', 'c2']);
    expect(handle.decide([resume('c2')]).ok).toBe(true);
    expect((await handle.done).termination).toEqual({ type: 'natural_end' });
  });

  it('after a decision that resumes the run, parked() answers for what the run does next: false when it then ends', async () => {
    const h = harness(approveCall);
    const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error('start');
    expect(await started.value.parked()).toBe(true);
    expect(started.value.decide([resume('c1')]).ok).toBe(true);
    const next = started.value.parked();
    expect(await settledNow(next)).toBe(false);
    await started.value.done;
    expect(await next).toBe(false);
  });

  it('messages sent with a decision join the thread after the resumed call', async () => {
    const h = harness(approveCall);
    const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error('start');
    expect(await started.value.parked()).toBe(true);
    expect(started.value.decide([resume('c1')], [Messages.user('and note it')]).ok).toBe(true);
    await started.value.done;
    expect(started.value.messages().map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user', 'assistant']);
  });
});

describe('cancel and detach', () => {
  it('cancelling a parked run ends it cancelled and emits nothing more', async () => {
    const h = harness(approveCall);
    const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error('start');
    expect(await started.value.parked()).toBe(true);
    const before = h.sink.events.length;
    started.value.cancel();
    expect((await started.value.done).termination).toEqual({ type: 'cancelled' });
    expect(h.sink.events.length).toBe(before);
    expect(await started.value.parked()).toBe(false);
  });

  it("the caller's signal cancels the run, also when it fired before the start", async () => {
    const h = harness([{ text: 'never read' }]);
    const controller = new AbortController();
    controller.abort();
    const result = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink, { signal: controller.signal });
    expect(result).toMatchObject({ ok: true, value: { termination: { type: 'cancelled' } } });
  });

  it('detach lets a parked run go: done resolves suspended and nothing more is emitted; a run that is not parked is not let go', async () => {
    const h = harness(approveCall);
    const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error('start');
    expect(started.value.detach()).toBe(false);
    expect(await started.value.parked()).toBe(true);
    const before = h.sink.events.length;
    expect(started.value.detach()).toBe(true);
    expect((await started.value.done).termination).toEqual({ type: 'suspended' });
    expect(h.sink.events.length).toBe(before);
    expect(h.runtime.isWaiting(started.value.threadId)).toBe(false);
  });
});

describe('AgentRuntime.revive', () => {
  it('takes up a run left waiting in the store: parked at once, silent until decided, then resumed under its own run id', async () => {
    const h = harness(approveCall);
    const first = await h.runtime.run({ threadId: 't', messages: [Messages.user('go')] }, h.sink, { waitForDecisions: false });
    if (!first.ok) throw new Error('run');
    const sink = new VecEventSink();
    const revived = await h.runtime.revive({ threadId: 't', runId: first.value.runId }, sink);
    if (!revived.ok) throw new Error(JSON.stringify(revived.error));
    expect(await revived.value.parked()).toBe(true);
    expect(sink.events).toEqual([]);
    expect(revived.value.decide([resume('c1')]).ok).toBe(true);
    const result = await revived.value.done;
    expect(result).toMatchObject({ runId: first.value.runId, termination: { type: 'natural_end' } });
  });

  it('fails for a run the store does not hold waiting, and without a store that keeps run state', async () => {
    const h = harness(approveCall);
    expect(await h.runtime.revive({ threadId: 't', runId: 'ghost' }, h.sink)).toEqual({
      ok: false,
      error: { code: 'resolve_failed', message: 'run ghost is not waiting in the store' },
    });
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('p', new ScriptedLlm([]))
      .withModel('m', { provider: 'p', model_name: 'pm' })
      .withAgentSpec({ id: 'a', model: 'm', system_prompt: 'x' })
      .build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    expect(await built.value.revive({ threadId: 't', runId: 'r' }, h.sink)).toEqual({
      ok: false,
      error: { code: 'resolve_failed', message: 'reviving a run needs a store that keeps run state' },
    });
  });
});

describe('AgentRuntime.publish', () => {
  it('publishes registries whose agents all resolve, and leaves the current ones when one does not', () => {
    const h = harness([{ text: 'x' }]);
    const current = h.runtime.registries;
    const broken = new Map(current.agents);
    broken.set('bad', { ...(current.agents.get('agent') as NonNullable<ReturnType<typeof current.agents.get>>), id: 'bad', model: 'missing' });
    const refused = h.runtime.publish({ ...current, agents: broken });
    expect(refused).toMatchObject({ ok: false, error: { code: 'validation_failed', message: expect.stringContaining("agent 'bad'") } });
    expect(h.runtime.registries).toBe(current);
    const fine = new Map(current.agents);
    fine.set('other', { ...(current.agents.get('agent') as NonNullable<ReturnType<typeof current.agents.get>>), id: 'other' });
    expect(h.runtime.publish({ ...current, agents: fine }).ok).toBe(true);
    expect(h.runtime.agentIds()).toEqual(['agent', 'other']);
  });
});
