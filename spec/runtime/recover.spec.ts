import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages, messageText, type Message } from '../../src/contract/message.ts';
import type { StreamPart } from '../../src/contract/stream.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { DEFAULT_RECOVERY_POLICY, type ToolRecoveryCapability } from '../../src/contract/tool-recovery.ts';
import { indeterminateResult, recoverCall } from '../../src/core/tools/recovery.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import type { ToolExecutionMode } from '../../src/runtime/resolve.ts';
import { MemoryThreadRunStore, type RunCheckpoint, type ThreadRunStore } from '../../src/runtime/thread-run-store.ts';
import { defineTool, type Tool } from '../../src/runtime/tool.ts';
import { checkRunInvariants, PartStream } from '../../src/testing/index.ts';
import { DyingStore } from '../support/dying-store.ts';

/**
 * A run taken up after its process died (seed 003's durable call phases). The death is simulated
 * at every write the run makes to its store: the store keeps the first `k` writes and never answers
 * the next one, so nothing the run does after its k-th write is stored — as after a kill -9 right
 * after it (what the run does between two writes, a tool's effect outside, still happened: the
 * tools count their executions outside the store). A second runtime over the same store then
 * recovers the run.
 */

/** The world outside: how often each tool really ran. */
type Counts = Map<string, number>;

/** `later`: the tool answers a turn after it is called (in parallel, the other call settles while it runs). */
const counting = (id: string, counts: Counts, recovery?: ToolRecoveryCapability, later = false): Tool =>
  defineTool({
    id,
    description: id,
    args: z.object({ n: z.number() }),
    ...(recovery !== undefined ? { recovery } : {}),
    execute: ({ n }) => {
      counts.set(id, (counts.get(id) ?? 0) + 1);
      const result = ToolResults.success(id, { done: n });
      return later ? new Promise<typeof result>((r) => setImmediate(() => r(result))) : result;
    },
  });

/** A model that answers from the history alone (so a run taken up again gets the same answer): two calls after the user, text after tool results. */
function model() {
  return {
    name: 'history',
    stream: (request: { readonly messages: readonly Message[] }) => {
      const last = request.messages.at(-1);
      const parts: StreamPart[] =
        last?.role === 'user'
          ? [
              { type: 'tool_call_start', id: 'c1', name: 'charge' },
              { type: 'tool_call_delta', id: 'c1', args_delta: '{"n":1}' },
              { type: 'tool_call_start', id: 'c2', name: 'lookup' },
              { type: 'tool_call_delta', id: 'c2', args_delta: '{"n":2}' },
              { type: 'finish', stop_reason: 'ToolUse' },
            ]
          : [
              { type: 'text_delta', delta: 'all done' },
              { type: 'finish', stop_reason: 'EndTurn' },
            ];
      return new PartStream(parts);
    },
  };
}

const RECOVERY = { tool_execution: { recovery: { lookup: { mode: 'replay_safe', max_attempts: 3 } } } };

function runtimeOn(store: ThreadRunStore, counts: Counts, mode: ToolExecutionMode) {
  const built = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('p', model())
    .withModel('m', { provider: 'p', model_name: 'history' })
    .withThreadRunStore(store)
    .withAgentSpec({ id: 'agent', model: 'm', sections: { ...RECOVERY, tool_execution: { ...RECOVERY.tool_execution, mode } } as never })
    .withTool(counting('charge', counts))
    .withTool(counting('lookup', counts, 'replay_safe', true))
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return built.value;
}

/** Each call's stored status; `running, outcome stored` for a parallel call whose outcome was stored while the other still ran. */
const statusesOf = (c: RunCheckpoint | undefined): Record<string, string> => {
  const states = c?.threadState.extensions['__runtime.tool_call_states'] as Record<string, { status: string }> | undefined;
  const batch = c?.threadState.extensions['__runtime.tool_batch'] as { outcomes?: Record<string, unknown> } | null | undefined;
  if (batch === null || batch === undefined || states === undefined) return {};
  return Object.fromEntries(
    Object.entries(states).map(([id, s]) => [id, s.status === 'running' && batch.outcomes?.[id] !== undefined ? 'running, outcome stored' : s.status]),
  );
};

/** How many writes a run that is never cut off makes. */
async function writesOfWholeRun(mode: ToolExecutionMode): Promise<number> {
  const store = new MemoryThreadRunStore();
  const r = await runtimeOn(store, new Map(), mode).run({ threadId: 't', runId: 'r', messages: [Messages.user('go')] }, new VecEventSink());
  if (!r.ok || r.value.termination.type !== 'natural_end') throw new Error('the whole run did not end naturally');
  return store.checkpoints.length;
}

describe('a run taken up after its process died at each of its writes', () => {
  for (const mode of ['sequential', 'parallel_streaming'] as const) {
    it(`${mode}: ends by itself; no call that left and may not run again runs twice; only a call that left ends indeterminate`, async () => {
      const writes = await writesOfWholeRun(mode);
      const seen: string[] = [];
      // Dying after the last write is a run that ended: nothing to take up.
      for (let k = 1; k < writes - 1; k++) {
        const counts: Counts = new Map();
        const inner = new MemoryThreadRunStore();
        const first = runtimeOn(new DyingStore(inner, k), counts, mode);
        void first.run({ threadId: 't', runId: 'r', messages: [Messages.user('go')] }, new VecEventSink());
        // Let the first process go as far as it can (it hangs at its k+1-th write).
        for (let i = 0; i < 50; i++) await new Promise<void>((r) => setImmediate(r));
        expect(inner.checkpoints).toHaveLength(k);
        const atDeath = statusesOf(inner.checkpoints.at(-1));
        const before = new Map(counts);

        const sink = new VecEventSink();
        const recovered = await runtimeOn(inner, counts, mode).recover({ threadId: 't', runId: 'r' }, sink);
        expect(recovered.ok, `k=${k}`).toBe(true);
        if (!recovered.ok) continue;
        const result = await recovered.value.done;
        const at = `k=${k}, stored ${JSON.stringify(atDeath)}`;
        seen.push(JSON.stringify(atDeath));
        expect(result.termination, at).toEqual({ type: 'natural_end' });
        // Two steps, as the run that was never cut off: the step taken up counts once.
        expect(result.steps, at).toBe(2);
        // The segment keeps every invariant of a stream: a step it goes on with opens again.
        expect((sink.events[0] as AgentEvent).event_type, at).toBe('run_start');
        expect(checkRunInvariants(sink.events), at).toEqual([]);
        // It says where it went on: inside the batch of the first step, or at the start of the step cut off.
        const resumed = Object.keys(atDeath).length > 0 ? { from: 'tool_batch', step: 1 } : { from: 'inference', step: seen.filter((s) => s === '{}').length };
        expect(sink.events[1], at).toMatchObject({ event_type: 'activity_snapshot', activity_type: 'run_resumed', content: resumed, replace: true });

        // `charge` is not recoverable: it ran exactly once, before the death or after it.
        expect(counts.get('charge'), at).toBe(1);
        // It ends indeterminate exactly when the store saw it running and never saw its outcome — then it ran before the death.
        const history = (await inner.loadThread('t'))?.messages ?? [];
        const chargeResult = history.find((m) => m.role === 'tool' && m.tool_call_id === 'c1');
        const indeterminate = messageText(chargeResult as Message).startsWith('The outcome of tool call c1 (charge) is unknown');
        expect(indeterminate, at).toBe(atDeath['c1'] === 'running');
        if (indeterminate) expect(before.get('charge'), at).toBe(1);
        // `lookup` is replay-safe under its policy: run again when it had left without an outcome stored, else once in all.
        expect(counts.get('lookup'), at).toBe(atDeath['c2'] === 'running' ? 2 : 1);
        // The history holds one answer per call and the final text, once.
        expect(
          history.filter((m) => m.role === 'tool').map((m) => m.tool_call_id),
          at,
        ).toEqual(['c1', 'c2']);
        expect(
          history.filter((m) => m.role === 'assistant').map((m) => messageText(m)),
          at,
        ).toEqual(['', 'all done']);
      }
      // Every durable point was a death: before the batch, at each phase of each call, after the step.
      expect(seen).toEqual(
        mode === 'sequential'
          ? [
              '{}',
              '{"c1":"new","c2":"new"}',
              '{"c1":"running","c2":"new"}',
              '{"c1":"succeeded","c2":"new"}',
              '{"c1":"succeeded","c2":"running"}',
              '{"c1":"succeeded","c2":"succeeded"}',
              '{}',
            ]
          : [
              '{}',
              '{"c1":"new","c2":"new"}',
              '{"c1":"running","c2":"running"}',
              // The first call's outcome, stored as it settled while the second still ran: taken up, it keeps it (it is not unknown).
              '{"c1":"running, outcome stored","c2":"running"}',
              '{"c1":"succeeded","c2":"succeeded"}',
              '{}',
            ],
      );
    });
  }

  it('a call that left may run again at most max_attempts times in all, across deaths', async () => {
    const counts: Counts = new Map();
    const inner = new MemoryThreadRunStore();
    // Die right after `lookup` is marked running, three times over: the policy allows three dispatches.
    const runningMarkOf = async (store: MemoryThreadRunStore): Promise<number> => store.checkpoints.findIndex((c) => statusesOf(c)['c2'] === 'running') + 1;
    const first = runtimeOn(new DyingStore(inner, 1_000), new Map(), 'sequential');
    await first.run({ threadId: 'probe', runId: 'probe', messages: [Messages.user('go')] }, new VecEventSink());
    const keep = await runningMarkOf(inner);
    expect(keep).toBeGreaterThan(0);

    const store = new MemoryThreadRunStore();
    void runtimeOn(new DyingStore(store, keep), counts, 'sequential').run({ threadId: 't', runId: 'r', messages: [Messages.user('go')] }, new VecEventSink());
    for (let i = 0; i < 50; i++) await new Promise<void>((r) => setImmediate(r));
    for (const attempt of [2, 3]) {
      const written = store.checkpoints.length;
      // Each recovery dies right after its own running mark (one write more than it found).
      const recovered = await runtimeOn(new DyingStore(store, 1), counts, 'sequential').recover({ threadId: 't', runId: 'r' }, new VecEventSink());
      expect(recovered.ok).toBe(true);
      for (let i = 0; i < 50; i++) await new Promise<void>((r) => setImmediate(r));
      expect(store.checkpoints.length).toBe(written + 1);
      expect(store.checkpoints.at(-1)?.threadState.extensions['__runtime.tool_call_states']).toMatchObject({ c2: { status: 'running', attempt } });
    }
    expect(counts.get('lookup')).toBe(3);
    const sink = new VecEventSink();
    const last = await runtimeOn(store, counts, 'sequential').recover({ threadId: 't', runId: 'r' }, sink);
    if (!last.ok) throw new Error(JSON.stringify(last.error));
    expect((await last.value.done).termination).toEqual({ type: 'natural_end' });
    expect(counts.get('lookup')).toBe(3);
    const done = sink.events.filter((e): e is Extract<AgentEvent, { event_type: 'tool_call_done' }> => e.event_type === 'tool_call_done');
    expect(done.find((e) => e.id === 'c2')?.result.message).toBe(
      'The outcome of tool call c2 (lookup) is unknown: it was dispatched before the run was interrupted and was not run again, because it was dispatched 3 times and its policy allows at most 3 times.',
    );
  });

  it('a run that had answered when it died ends with its answer: the model is not asked again', async () => {
    const probe = new MemoryThreadRunStore();
    await runtimeOn(probe, new Map(), 'sequential').run({ threadId: 'probe', runId: 'probe', messages: [Messages.user('go')] }, new VecEventSink());
    // Die right after the last step's end is stored, before the run's end is.
    const keep = probe.checkpoints.length - 1;
    const store = new MemoryThreadRunStore();
    void runtimeOn(new DyingStore(store, keep), new Map(), 'sequential').run(
      { threadId: 't', runId: 'r', messages: [Messages.user('go')] },
      new VecEventSink(),
    );
    for (let i = 0; i < 50; i++) await new Promise<void>((r) => setImmediate(r));
    let asked = 0;
    const sink = new VecEventSink();
    const runtime = runtimeOn(store, new Map(), 'sequential');
    const recovered = await runtime.recover({ threadId: 't', runId: 'r' }, { emit: (e) => (e.event_type === 'inference_complete' && asked++, sink.emit(e)) });
    if (!recovered.ok) throw new Error(JSON.stringify(recovered.error));
    const result = await recovered.value.done;
    expect([result.termination, result.steps, asked]).toEqual([{ type: 'natural_end' }, 2, 0]);
    expect(sink.events.map((e) => e.event_type)).toEqual(['run_start', 'activity_snapshot', 'state_snapshot', 'run_finish']);
    expect(sink.events[1]).toMatchObject({ activity_type: 'run_resumed', content: { from: 'answered', step: 2 } });
  });

  it('a batch stored for a step that had ended (it was cancelled) is not taken up: the run ends interrupted, and the call it never ran stays unrun', async () => {
    const counts: Counts = new Map();
    // The run being cancelled: the probe's, then the one that dies.
    let controller = new AbortController();
    const cancelling = defineTool({
      id: 'charge',
      description: 'cancels the run as it runs',
      args: z.object({ n: z.number() }),
      execute: () => {
        counts.set('charge', (counts.get('charge') ?? 0) + 1);
        controller.abort();
        return ToolResults.success('charge', { done: 1 });
      },
    });
    const build = (store: ThreadRunStore) => {
      const built = new AgentRuntimeBuilder()
        .withEnv(deterministicEnv())
        .withProvider('p', model())
        .withModel('m', { provider: 'p', model_name: 'history' })
        .withThreadRunStore(store)
        .withAgentSpec({ id: 'agent', model: 'm', sections: RECOVERY as never })
        .withTool(cancelling)
        .withTool(counting('lookup', counts, 'replay_safe'))
        .build();
      if (!built.ok) throw new Error(JSON.stringify(built.error));
      return built.value;
    };
    const probe = new MemoryThreadRunStore();
    const ended = await build(probe).run({ threadId: 'p', runId: 'p', messages: [Messages.user('go')] }, new VecEventSink(), { signal: controller.signal });
    expect(ended.ok && ended.value.termination).toEqual({ type: 'cancelled' });
    // Die right after the cancelled step's end is stored (the batch record is still there), before the run's end is.
    const keep = probe.checkpoints.length - 1;
    expect(statusesOf(probe.checkpoints[keep - 1])).toMatchObject({ c2: 'new' });
    controller = new AbortController();
    counts.clear();
    const store = new MemoryThreadRunStore();
    const dying = new DyingStore(store, keep);
    const dead = build(dying);
    void dead.run({ threadId: 't', runId: 'r', messages: [Messages.user('go')] }, new VecEventSink(), { signal: controller.signal });
    for (let i = 0; i < 50; i++) await new Promise<void>((r) => setImmediate(r));
    expect(counts.get('lookup') ?? 0).toBe(0);
    const sink = new VecEventSink();
    const recovered = await build(store).recover({ threadId: 't', runId: 'r' }, sink);
    if (!recovered.ok) throw new Error(JSON.stringify(recovered.error));
    const result = await recovered.value.done;
    expect(result.termination).toEqual({
      type: 'error',
      value: 'interrupted: the run was ending a step when its process stopped, and is not taken up from there',
    });
    expect(counts.get('lookup') ?? 0).toBe(0);
    expect(result.steps).toBe(1);
    expect(sink.events[1]).toMatchObject({ activity_type: 'run_resumed', content: { from: 'step_end', step: 1 } });
  });

  it('a batch going on after a decision (its step had ended when it parked) is not taken up: the run ends interrupted, the approved call never runs twice', async () => {
    let runs = 0;
    const approve = defineTool({
      id: 'approve',
      description: 'runs once approved',
      args: z.object({ n: z.number() }).loose(),
      recovery: 'replay_safe',
      execute: (_args, ctx) => {
        if (ctx.resume === undefined)
          return ToolResults.suspended('approve', 'needs approval', {
            suspension: { id: `s-${ctx.callId}`, action: 'confirm', message: 'approve?' },
            pending: { id: ctx.callId, name: 'approve', arguments: {} },
            resume_mode: 'replay_tool_call',
          });
        runs++;
        return ToolResults.success('approve', { approved: true });
      },
    });
    const llm = () => ({
      name: 'one-call',
      stream: (request: { readonly messages: readonly Message[] }) =>
        new PartStream(
          request.messages.at(-1)?.role === 'user'
            ? [
                { type: 'tool_call_start', id: 'a1', name: 'approve' },
                { type: 'tool_call_delta', id: 'a1', args_delta: '{"n":1}' },
                { type: 'finish', stop_reason: 'ToolUse' },
              ]
            : [
                { type: 'text_delta', delta: 'approved' },
                { type: 'finish', stop_reason: 'EndTurn' },
              ],
        ),
    });
    const build = (store: ThreadRunStore) => {
      const built = new AgentRuntimeBuilder()
        .withEnv(deterministicEnv())
        .withProvider('p', llm())
        .withModel('m', { provider: 'p', model_name: 'one-call' })
        .withThreadRunStore(store)
        .withAgentSpec({ id: 'agent', model: 'm', sections: { tool_execution: { recovery: { approve: { mode: 'replay_safe' } } } } as never })
        .withTool(approve)
        .build();
      if (!built.ok) throw new Error(JSON.stringify(built.error));
      return built.value;
    };
    const decideOnce = async (store: ThreadRunStore, threadId: string): Promise<void> => {
      const started = await build(store).start({ threadId, runId: threadId, messages: [Messages.user('go')] }, new VecEventSink(), { waitForDecisions: true });
      if (!started.ok) throw new Error(JSON.stringify(started.error));
      await started.value.parked();
      started.value.decide([{ targetId: 'a1', decision: { decision_id: 'd', action: 'resume', updated_at: 0 } }]);
    };
    const probe = new MemoryThreadRunStore();
    await decideOnce(probe, 'probe');
    for (let i = 0; i < 50; i++) await new Promise<void>((r) => setImmediate(r));
    const states = probe.checkpoints.map((c) => statusesOf(c)['a1']);
    // The write that marks the approved call running, after it had parked.
    const keep = states.indexOf('running', states.indexOf('suspended')) + 1;
    expect(keep).toBeGreaterThan(0);
    runs = 0;
    const store = new MemoryThreadRunStore();
    await decideOnce(new DyingStore(store, keep), 't');
    for (let i = 0; i < 50; i++) await new Promise<void>((r) => setImmediate(r));
    expect(runs).toBe(1);
    const recovered = await build(store).recover({ threadId: 't', runId: 't' }, new VecEventSink());
    if (!recovered.ok) throw new Error(JSON.stringify(recovered.error));
    const result = await recovered.value.done;
    expect([result.termination, result.steps, runs]).toEqual([
      { type: 'error', value: 'interrupted: the run was ending a step when its process stopped, and is not taken up from there' },
      1,
      1,
    ]);
  });

  it('is refused for a run the store does not hold as running', async () => {
    const store = new MemoryThreadRunStore();
    const runtime = runtimeOn(store, new Map(), 'sequential');
    await runtime.run({ threadId: 't', runId: 'r', messages: [Messages.user('go')] }, new VecEventSink());
    const again = await runtime.recover({ threadId: 't', runId: 'r' }, new VecEventSink());
    expect(again.ok ? 'recovered' : again.error).toEqual({ code: 'resolve_failed', message: 'run r is not running in the store' });
  });
});

describe('docs/server.md → Runs a process left running, as written', () => {
  const section = (() => {
    const page = readFileSync(join(import.meta.dirname, '../../docs/server.md'), 'utf8');
    const start = page.indexOf('\n## Runs a process left running\n');
    return page.slice(start, page.indexOf('\n## ', start + 5));
  })();
  const blocks = (lang: string): string[] =>
    [...section.matchAll(new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map((m) => (m[1] as string).trimEnd());

  it('the indeterminate result it shows is the one a call of a tool with the default recovery gets', () => {
    const decided = recoverCall({ phase: 'executing', attempts: 1 }, 'non_recoverable', DEFAULT_RECOVERY_POLICY);
    if (decided.type !== 'indeterminate') throw new Error('not indeterminate');
    const result = indeterminateResult({ id: 'c1', name: 'charge', arguments: { cents: 500 } }, decided.reason);
    expect(blocks('text')[1]).toBe(result.message);
    expect(result.metadata).toEqual({ indeterminate: true });
  });

  it('the run_resumed activity it shows is the one a run taken up inside the batch of its first step emits', async () => {
    const inner = new MemoryThreadRunStore();
    // Dies right after its batch is stored.
    const keep = async (): Promise<number> => {
      const probe = new MemoryThreadRunStore();
      await runtimeOn(probe, new Map(), 'sequential').run({ threadId: 't', runId: 'r', messages: [Messages.user('go')] }, new VecEventSink());
      return probe.checkpoints.findIndex((c) => Object.keys(statusesOf(c)).length > 0) + 1;
    };
    void runtimeOn(new DyingStore(inner, await keep()), new Map(), 'sequential').run(
      { threadId: 't', runId: 'r', messages: [Messages.user('go')] },
      new VecEventSink(),
    );
    for (let i = 0; i < 50; i++) await new Promise<void>((r) => setImmediate(r));
    const sink = new VecEventSink();
    const recovered = await runtimeOn(inner, new Map(), 'sequential').recover({ threadId: 't', runId: 'r' }, sink);
    if (!recovered.ok) throw new Error(JSON.stringify(recovered.error));
    await recovered.value.done;
    const { message_id: _id, ...shown } = sink.events[1] as Extract<AgentEvent, { event_type: 'activity_snapshot' }>;
    expect(shown).toEqual(JSON.parse(blocks('json')[0] as string));
  });

  it('its agent config is one the runtime takes, with a replay-safe lookup tool', () => {
    const agent = (parseYaml(blocks('yaml')[0] as string) as { agents: { sections: Record<string, unknown> }[] }).agents[0];
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('p', model())
      .withModel('m', { provider: 'p', model_name: 'history' })
      .withAgentSpec({ id: 'worker', model: 'm', sections: agent?.sections as never })
      .withTool(counting('lookup', new Map(), 'replay_safe'))
      .build();
    expect(built.ok).toBe(true);
    // The same config for a tool that says nothing of its recovery is refused.
    const refused = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('p', model())
      .withModel('m', { provider: 'p', model_name: 'history' })
      .withAgentSpec({ id: 'worker', model: 'm', sections: agent?.sections as never })
      .withTool(counting('lookup', new Map()))
      .build();
    expect(refused.ok ? 'built' : refused.error.code).toBe('validation_failed');
  });
});
