import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults, type ToolCallResumeMode } from '../../src/contract/tool.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { defineStateKey } from '../../src/core/state/state-key.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder, type AgentRuntime, type RunHandle } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv, type Env } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';
import type { AgentRunResult } from '../../src/runtime/run-loop.ts';
import { MemoryThreadRunStore } from '../../src/runtime/thread-run-store.ts';
import { defineTool, type Tool } from '../../src/runtime/tool.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { echoTool } from '../support/runtime.ts';

// A run parked waiting for decisions outlives its process (issue: the server under faults → durable
// HITL): a new runtime on the same store revives it, and from the decision on it does exactly what the
// run would have done had its process never stopped.

const Counter = defineStateKey({ key: 'test.counter', merge: 'exclusive', init: () => 0, apply: (_v: number, u: number) => u, codec: z.number() });
const counterPlugin: RuntimePlugin = { name: 'counter', register: (r) => r.registerKey(Counter) };

/** Writes the counter (a staged write, published once the whole batch is settled). */
const bump = defineTool({
  id: 'bump',
  description: 'reads and writes the counter',
  args: z.object({}).loose(),
  execute: (_args, ctx) => {
    const v = ctx.state(Counter) ?? 0;
    return { result: ToolResults.success('bump', v), command: StateCommand.empty().update(Counter, v + 10) };
  },
});

/** Suspends with the given resume mode; resumed, it reports how it ran (and bumps the counter). */
function modal(mode: ToolCallResumeMode): Tool {
  return defineTool({
    id: mode,
    description: mode,
    args: z.object({ n: z.number() }).loose(),
    execute: (args, ctx) => {
      if (ctx.resume === undefined) {
        return ToolResults.suspended(mode, 'waiting', {
          suspension: { id: `s-${ctx.callId}`, action: 'confirm', message: `ok ${ctx.callId}?` },
          pending: { id: ctx.callId, name: mode, arguments: args as never },
          resume_mode: mode,
        });
      }
      const v = ctx.state(Counter) ?? 0;
      return {
        result: ToolResults.success(mode, { ranWith: args as never, decision: ctx.resume.decision.result ?? null, saw: v }),
        command: StateCommand.empty().update(Counter, v + 1),
      };
    },
  });
}

const MODES = ['replay_tool_call', 'use_decision_as_tool_result', 'pass_decision_to_tool'] as const satisfies readonly ToolCallResumeMode[];
const TOOLS: readonly Tool[] = [echoTool, bump, ...MODES.map(modal)];

interface Scenario {
  readonly calls: readonly string[];
  readonly mode: 'sequential' | 'parallel_streaming' | 'parallel_batch_approval';
  readonly replay: 'immediate' | 'batch_all_suspended';
  readonly actions: readonly ('resume' | 'cancel')[];
}

function runtimeOf(env: Env, llm: ScriptedLlm, store: MemoryThreadRunStore, s: Scenario): AgentRuntime {
  const builder = new AgentRuntimeBuilder()
    .withEnv(env)
    .withProvider('scripted', llm)
    .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
    .withThreadRunStore(store)
    .withPlugin(counterPlugin.name, counterPlugin)
    .withAgentSpec({
      id: 'agent',
      model: 'm',
      system_prompt: 'be brief',
      plugin_ids: ['counter'],
      sections: { tool_execution: { mode: s.mode, decision_replay: s.replay } },
    });
  for (const tool of TOOLS) builder.withTool(tool);
  const built = builder.build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return built.value;
}

const scriptOf = (s: Scenario): ScriptStep[] => [
  { text: 'calling', tool_calls: s.calls.map((name, i) => ({ id: `c${i}`, name, arguments: name === 'echo' ? { text: `t${i}` } : { n: i } })) },
  { text: 'all settled' },
];

/** Decides the parked run's calls one by one (in model order) until it ends. */
async function decideUntilDone(handle: RunHandle, actions: readonly ('resume' | 'cancel')[]): Promise<AgentRunResult> {
  const decided = new Set<string>();
  let k = 0;
  for (let turns = 0; turns < 10_000; turns++) {
    const parked = await Promise.race([handle.parked(), handle.done.then(() => false)]);
    if (!parked) return handle.done;
    // A call decided and still waiting is held back (BatchAllSuspended waits for every decision).
    const next = handle.waitingOn().find((c) => !decided.has(c.call.id));
    if (next === undefined) {
      await new Promise((r) => setTimeout(r, 0));
      continue;
    }
    const action = actions[k % actions.length] ?? 'resume';
    const sent = handle.decide([{ targetId: next.call.id, decision: { decision_id: `d${k}`, action, result: { answer: k }, updated_at: 0 } }]);
    if (!sent.ok) throw new Error(JSON.stringify(sent.error));
    decided.add(next.call.id);
    k++;
  }
  throw new Error('the run neither ended nor asked for another decision');
}

const firstSuspension = (events: readonly AgentEvent[]): number => events.findIndex((e) => e.event_type === 'run_finish' && e.termination.type === 'suspended');

async function uninterrupted(s: Scenario) {
  const env = deterministicEnv();
  const llm = new ScriptedLlm(scriptOf(s));
  const store = new MemoryThreadRunStore();
  const sink = new VecEventSink();
  const started = await runtimeOf(env, llm, store, s).start({ threadId: 'th', messages: [Messages.user('go', { id: 'u1' })] }, sink);
  if (!started.ok) throw new Error('start');
  const result = await decideUntilDone(started.value, s.actions);
  return { result, events: sink.events, store, requests: llm.requests };
}

async function acrossProcesses(s: Scenario) {
  const env = deterministicEnv();
  const llm = new ScriptedLlm(scriptOf(s));
  const store = new MemoryThreadRunStore();
  const first = new VecEventSink();
  const parked = await runtimeOf(env, llm, store, s).run({ threadId: 'th', messages: [Messages.user('go', { id: 'u1' })] }, first, { waitForDecisions: false });
  if (!parked.ok) throw new Error('run');
  // The first process is gone; a new runtime on the same store (and the same configuration) takes the run up.
  const second = new VecEventSink();
  const revived = await runtimeOf(env, llm, store, s).revive({ threadId: 'th', runId: parked.value.runId }, second);
  if (!revived.ok) throw new Error(JSON.stringify(revived.error));
  expect(await revived.value.parked()).toBe(true);
  expect(second.events).toEqual([]);
  const result = await decideUntilDone(revived.value, s.actions);
  return { parked: parked.value, result, before: first.events, after: second.events, store, requests: llm.requests };
}

const scenario: fc.Arbitrary<Scenario> = fc
  .record({
    calls: fc.array(fc.constantFrom('echo', 'bump', ...MODES), { minLength: 1, maxLength: 4 }),
    mode: fc.constantFrom('sequential' as const, 'parallel_streaming' as const, 'parallel_batch_approval' as const),
    replay: fc.constantFrom('immediate' as const, 'batch_all_suspended' as const),
    actions: fc.array(fc.constantFrom('resume' as const, 'cancel' as const), { minLength: 1, maxLength: 4 }),
  })
  .filter((s) => s.calls.some((c) => (MODES as readonly string[]).includes(c)));

describe('reviving a parked run in a new runtime (durable HITL)', () => {
  it('property: from the decision on, a revived run emits, stores and asks the model exactly what the uninterrupted run does', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const a = await uninterrupted(s);
        const b = await acrossProcesses(s);
        const cut = firstSuspension(a.events);
        if (cut < 0) return; // a sequential batch may stop before any call suspends
        expect(b.before).toEqual(a.events.slice(0, cut + 1));
        expect(b.after).toEqual(a.events.slice(cut + 1));
        expect(checkRunInvariants(a.events)).toEqual([]);
        expect(b.result).toEqual({ ...a.result, steps: b.result.steps });
        const sent = (requests: typeof a.requests) => requests.map(({ signal: _signal, ...request }) => request);
        expect(sent(b.requests)).toEqual(sent(a.requests));
        const last = (store: MemoryThreadRunStore) => {
          const c = store.checkpoints.at(-1);
          return { messages: c?.messages, status: c?.status, steps: c?.steps, threadState: c?.threadState, runState: c?.runState, termination: c?.termination };
        };
        expect(last(b.store)).toEqual(last(a.store));
      }),
      { numRuns: 60 },
    );
  });

  it('publishes the staged writes of calls settled before the suspension (they wait behind the barrier in the store)', async () => {
    const s: Scenario = { calls: ['bump', 'replay_tool_call'], mode: 'parallel_streaming', replay: 'immediate', actions: ['resume'] };
    const b = await acrossProcesses(s);
    expect(b.result.termination).toEqual({ type: 'natural_end' });
    // bump staged 0 + 10 while the other call waited; resumed, the other call sees the committed state
    // plus that staged write (10) and writes 11; publication in model order: 10, then 11. Had the staged
    // write been lost with the first process, the revived call would see 0 and the run end with 1.
    expect(b.store.checkpoints.at(-1)?.runState.extensions['test.counter']).toBe(11);
    const done = b.before.filter((e) => e.event_type === 'tool_call_done').map((e) => (e as { id: string }).id);
    expect(done).toEqual(['c0', 'c1']);
    expect(b.store.checkpoints.some((c) => c.status === 'waiting' && JSON.stringify(c.threadState).includes('"staged"'))).toBe(true);
  });

  it('stores the run as running before a resumed tool runs (a process dying then leaves it running, not waiting)', async () => {
    const s: Scenario = { calls: ['replay_tool_call'], mode: 'sequential', replay: 'immediate', actions: ['resume'] };
    const a = await uninterrupted(s);
    const statuses = a.store.checkpoints.map((c) => c.status);
    const waiting = statuses.lastIndexOf('waiting');
    expect(waiting).toBeGreaterThan(0);
    expect(statuses[waiting + 1]).toBe('running');
  });

  it('refuses to revive a run the store does not hold as waiting, and one already going here', async () => {
    const s: Scenario = { calls: ['echo'], mode: 'sequential', replay: 'immediate', actions: ['resume'] };
    const env = deterministicEnv();
    const llm = new ScriptedLlm(scriptOf(s));
    const store = new MemoryThreadRunStore();
    const rt = runtimeOf(env, llm, store, s);
    const done = await rt.run({ threadId: 'th', messages: [Messages.user('go')] }, new VecEventSink());
    if (!done.ok) throw new Error('run');
    const again = await rt.revive({ threadId: 'th', runId: done.value.runId }, new VecEventSink());
    expect(again.ok).toBe(false);
    expect(!again.ok && again.error).toMatchObject({ code: 'resolve_failed' });
    const ghost = await rt.revive({ threadId: 'nope', runId: 'nope' }, new VecEventSink());
    expect(ghost.ok).toBe(false);
  });

  it('detach lets a parked run go: it ends suspended, nothing more is emitted or stored, and it can be revived', async () => {
    const s: Scenario = { calls: ['replay_tool_call'], mode: 'sequential', replay: 'immediate', actions: ['resume'] };
    const env = deterministicEnv();
    const llm = new ScriptedLlm(scriptOf(s));
    const store = new MemoryThreadRunStore();
    const sink = new VecEventSink();
    const rt = runtimeOf(env, llm, store, s);
    const started = await rt.start({ threadId: 'th', messages: [Messages.user('go')] }, sink);
    if (!started.ok) throw new Error('start');
    expect(await started.value.parked()).toBe(true);
    expect(started.value.detach()).toBe(true);
    const result = await started.value.done;
    expect(result.termination).toEqual({ type: 'suspended' });
    const emitted = sink.events.length;
    const stored = store.checkpoints.length;
    expect(store.checkpoints.at(-1)?.status).toBe('waiting');
    expect(rt.isWaiting('th')).toBe(false);
    const revived = await runtimeOf(env, llm, store, s).revive({ threadId: 'th', runId: started.value.runId }, sink);
    if (!revived.ok) throw new Error(JSON.stringify(revived.error));
    expect(sink.events.length).toBe(emitted);
    expect(store.checkpoints.length).toBe(stored);
    const end = await decideUntilDone(revived.value, ['resume']);
    expect(end.termination).toEqual({ type: 'natural_end' });
  });

  it('a revived run cancelled before its decision ends cancelled in the store, and emits nothing', async () => {
    const s: Scenario = { calls: ['replay_tool_call'], mode: 'sequential', replay: 'immediate', actions: ['resume'] };
    const env = deterministicEnv();
    const llm = new ScriptedLlm(scriptOf(s));
    const store = new MemoryThreadRunStore();
    const parked = await runtimeOf(env, llm, store, s).run({ threadId: 'th', messages: [Messages.user('go')] }, new VecEventSink(), {
      waitForDecisions: false,
    });
    if (!parked.ok) throw new Error('run');
    const sink = new VecEventSink();
    const revived = await runtimeOf(env, llm, store, s).revive({ threadId: 'th', runId: parked.value.runId }, sink);
    if (!revived.ok) throw new Error('revive');
    await revived.value.parked();
    revived.value.cancel();
    expect((await revived.value.done).termination).toEqual({ type: 'cancelled' });
    expect(sink.events).toEqual([]);
    expect(store.checkpoints.at(-1)).toMatchObject({ status: 'done', termination: { type: 'cancelled' } });
    expect(await store.loadRunState(parked.value.runId)).toBeUndefined();
  });
});
