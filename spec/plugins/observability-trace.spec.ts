import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  GEN_AI_OPERATION_NAME_VALUE_CHAT,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
  GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
} from '@opentelemetry/semantic-conventions/incubating';
import { describe, expect, it, vi } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { segmentFileName, ServedRecorder } from '../../src/replay/served.ts';
import { AgentRuntimeBuilder, type AgentRuntime, type RunHandle } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv, type Env } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { decisionFor } from '../../src/runtime/run-loop.ts';
import { MemoryThreadRunStore } from '../../src/runtime/thread-run-store.ts';
import { RunRegistry } from '../../src/server/run-registry.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { observabilityPlugin } from '../../src/plugins/observability/plugin.ts';
import { otelSpanId, otelTraceId } from '../../src/plugins/observability/otel.ts';
import { InMemorySink, type MetricsSink } from '../../src/plugins/observability/spans.ts';
import { approvalTool } from '../support/runtime.ts';
import { ofKind, otel, runtimeOf, shape } from './otel-support.ts';

/**
 * One trace per run across suspensions (docs/observability.md → One trace per run, across
 * suspensions; ADR 0047): a run that parks for a decision and is resumed — in this process, or in a
 * new runtime that takes it up from the store — exports every segment in the run's first trace, the
 * later segment linked to the first, its steps and totals counted on; a recorded later segment
 * replays to the same spans.
 */

const SUSPENDING: readonly ScriptStep[] = [
  {
    text: 'asking',
    tool_calls: [{ id: 'a1', name: 'approve', arguments: { what: 'the trip' } }],
    usage: { prompt_tokens: 20, completion_tokens: 4, total_tokens: 24 },
  },
  { text: 'booked', usage: { prompt_tokens: 30, completion_tokens: 6, total_tokens: 36 } },
];

const approve = (handle: RunHandle) =>
  handle.decide([{ targetId: 'a1', decision: { decision_id: 'd1', action: 'resume', result: { ok: true }, updated_at: 0 } }]);

/** The run in one process: it parks, the decision resumes it, it ends. */
async function inProcess(sink: MetricsSink) {
  const { runtime } = runtimeOf(SUSPENDING, sink, new MemoryThreadRunStore(), deterministicEnv({ tick: 5 }));
  const started = await runtime.start({ threadId: 'th', messages: [Messages.user('book it')] }, new VecEventSink());
  if (!started.ok) throw new Error('start');
  expect(await started.value.parked()).toBe(true);
  expect(approve(started.value).ok).toBe(true);
  const done = await started.value.done;
  expect(done.termination.type).toBe('natural_end');
}

/** The run parks in one process; a new runtime on the same store (a restart) takes it up and the decision resumes it there. */
async function acrossRestart(first: MetricsSink, second: MetricsSink) {
  const env = deterministicEnv({ tick: 5 });
  const store = new MemoryThreadRunStore();
  const parked = await runtimeOf(SUSPENDING, first, store, env).runtime.run({ threadId: 'th', messages: [Messages.user('book it')] }, new VecEventSink(), {
    waitForDecisions: false,
  });
  if (!parked.ok) throw new Error('run');
  expect(parked.value.termination.type).toBe('suspended');
  // The model's first answer was read in the first process: the new one has the rest of the script.
  const revived = await runtimeOf(SUSPENDING.slice(1), second, store, env).runtime.revive({ threadId: 'th', runId: parked.value.runId }, new VecEventSink());
  if (!revived.ok) throw new Error(JSON.stringify(revived.error));
  expect(await revived.value.parked()).toBe(true);
  expect(approve(revived.value).ok).toBe(true);
  expect((await revived.value.done).termination.type).toBe('natural_end');
}

describe('one trace per run across suspensions', () => {
  it('in one process: both segments in the run’s trace, the resumed segment links to the first, steps and totals go on', async () => {
    const { exporter, sink } = otel();
    await inProcess(sink);
    const spans = exporter.getFinishedSpans();
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);
    const [first, second] = ofKind(spans, GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT);
    expect(first?.attributes).toMatchObject({ 'awaken.termination': 'suspended', 'awaken.segment_index': 0, 'gen_ai.usage.input_tokens': 20 });
    expect(first?.links).toEqual([]);
    expect(second?.attributes).toMatchObject({
      'awaken.termination': 'natural_end',
      'awaken.segment_index': 1,
      'gen_ai.usage.input_tokens': 50,
      'gen_ai.usage.output_tokens': 10,
    });
    expect(second?.links.map((l) => l.context)).toEqual([
      expect.objectContaining({ traceId: first?.spanContext().traceId, spanId: first?.spanContext().spanId }),
    ]);
    expect(ofKind(spans, GEN_AI_OPERATION_NAME_VALUE_CHAT).map((s) => [s.attributes['awaken.step_index'], s.parentSpanContext?.spanId])).toEqual([
      [0, first?.spanContext().spanId],
      [1, second?.spanContext().spanId],
    ]);
    // The approved call ran in the second segment, for the first step's inference.
    const tools = ofKind(spans, GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL);
    expect(tools.map((s) => [s.attributes['awaken.tool.status'], s.attributes['awaken.step_index'], s.parentSpanContext?.spanId])).toEqual([
      ['pending', 0, first?.spanContext().spanId],
      ['success', 0, second?.spanContext().spanId],
    ]);
  });

  it('AgentMetrics: the last segment’s counts and tokens cover the run; its spans are the segment’s', async () => {
    const sink = new InMemorySink();
    await inProcess(sink);
    const [first, second] = sink.metrics().runs;
    expect(first).toMatchObject({ segment_index: 0, inference_count: 1, tool_count: 1, input_tokens: 20, output_tokens: 4, total_tokens: 24 });
    expect(first?.first_span_id).toBeUndefined();
    expect(second).toMatchObject({
      segment_index: 1,
      first_span_id: first?.span_id,
      trace_id: first?.trace_id,
      inference_count: 2,
      tool_count: 2,
      input_tokens: 50,
      output_tokens: 10,
      total_tokens: 60,
    });
    expect(second?.inferences.map((s) => s.step_index)).toEqual([1]);
  });

  it('after a restart: the segment taken up from the store exports exactly what the run in one process exports', async () => {
    const one = otel();
    await inProcess(one.sink);
    const before = otel();
    const after = otel();
    await acrossRestart(before.sink, after.sink);
    const bySpanId = (a: ReturnType<typeof shape>, b: ReturnType<typeof shape>): number => a.spanId.localeCompare(b.spanId);
    const restarted = [...before.exporter.getFinishedSpans(), ...after.exporter.getFinishedSpans()].map(shape).sort(bySpanId);
    expect(restarted).toHaveLength(6);
    expect(restarted).toEqual(one.exporter.getFinishedSpans().map(shape).sort(bySpanId));
    // The second process exported the second segment, in the first one's trace.
    const traceOfFirst = before.exporter.getFinishedSpans()[0]?.spanContext().traceId;
    expect(after.exporter.getFinishedSpans().map((s) => s.spanContext().traceId)).toEqual([traceOfFirst, traceOfFirst, traceOfFirst]);
  });

  it('the parked run is stored with its trace: run-scoped state observability.run_carry', async () => {
    const env = deterministicEnv({ tick: 5 });
    const store = new MemoryThreadRunStore();
    const sink = new InMemorySink();
    const parked = await runtimeOf(SUSPENDING, sink, store, env).runtime.run({ threadId: 'th', messages: [Messages.user('book it')] }, new VecEventSink(), {
      waitForDecisions: false,
    });
    if (!parked.ok) throw new Error('run');
    const state = await store.loadRunState(parked.value.runId);
    const [run] = sink.metrics().runs;
    expect(state?.extensions['observability.run_carry']).toEqual({
      trace_id: run?.trace_id,
      first_span_id: run?.span_id,
      segments: 1,
      steps: 1,
      provider: 'scripted',
      model: 'scripted-model',
      totals: { inference_count: 1, tool_count: 1, input_tokens: 20, output_tokens: 4, total_tokens: 24, inference_errors: 0, tool_errors: 0 },
    });
    expect(otelTraceId(run?.trace_id ?? '')).toHaveLength(32);
    expect(otelSpanId(run?.span_id ?? '')).toHaveLength(16);
  });

  it('a run that never suspends writes no carry; one that parks shows it in its state snapshot', async () => {
    const carried = async (script: readonly ScriptStep[]): Promise<boolean[]> => {
      const events = new VecEventSink();
      const { runtime } = runtimeOf(script, new InMemorySink(), new MemoryThreadRunStore(), deterministicEnv());
      const r = await runtime.run({ threadId: 'th', messages: [Messages.user('hi')] }, events, { waitForDecisions: false });
      if (!r.ok) throw new Error('run');
      return events.events.flatMap((e) =>
        e.event_type === 'state_snapshot' ? [Object.keys(Object(Object(e.snapshot)['extensions'])).includes('observability.run_carry')] : [],
      );
    };
    expect(await carried([{ text: 'fine' }, { text: 'again' }])).toEqual([false, false]);
    expect(await carried(SUSPENDING)).toEqual([true, true]);
  });

  it('one plugin shared by runtimes whose runs have the same ids: each run taken up from the store keeps its own trace', async () => {
    /** Ids as a deterministic env draws them, the run's and thread's the same in both runtimes, the others told apart. */
    const envOf = (name: string): Env => {
      const env = deterministicEnv({ tick: 5 });
      return {
        ...env,
        ids: { ...env.ids, next: (kind: string) => (kind === 'run' || kind === 'thread' ? env.ids.next(kind) : `${name}-${env.ids.next(kind)}`) },
      };
    };
    const sink = new InMemorySink();
    const shared = observabilityPlugin(sink);
    const parkedIn = async (env: Env, store: MemoryThreadRunStore): Promise<string> => {
      const parked = await runtimeOf(SUSPENDING, sink, store, env, shared).runtime.run(
        { threadId: 'th', messages: [Messages.user('book it')] },
        new VecEventSink(),
        { waitForDecisions: false },
      );
      if (!parked.ok) throw new Error('run');
      return parked.value.runId;
    };
    const [a, b] = [envOf('a'), envOf('b')];
    const [storeA, storeB] = [new MemoryThreadRunStore(), new MemoryThreadRunStore()];
    const [runA, runB] = [await parkedIn(a, storeA), await parkedIn(b, storeB)];
    expect(runA).toBe(runB);
    const revive = async (env: Env, store: MemoryThreadRunStore, runId: string): Promise<RunHandle> => {
      const revived = await runtimeOf(SUSPENDING.slice(1), sink, store, env, shared).runtime.revive({ threadId: 'th', runId }, new VecEventSink());
      if (!revived.ok) throw new Error(JSON.stringify(revived.error));
      expect(await revived.value.parked()).toBe(true);
      return revived.value;
    };
    const [handleA, handleB] = [await revive(a, storeA, runA), await revive(b, storeB, runB)];
    // Both resumed segments run at once.
    expect([approve(handleA).ok, approve(handleB).ok]).toEqual([true, true]);
    await Promise.all([handleA.done, handleB.done]);
    const runs = sink.metrics().runs;
    expect(runs.map((r) => [r.trace_id, r.segment_index, r.termination.type]).sort()).toEqual([
      ['a-trace-1', 0, 'suspended'],
      ['a-trace-1', 1, 'natural_end'],
      ['b-trace-1', 0, 'suspended'],
      ['b-trace-1', 1, 'natural_end'],
    ]);
    for (const s of [...sink.metrics().inferences, ...sink.metrics().tools]) expect(s.trace_id.slice(0, 1), s.span_id).toBe(s.span_id.slice(0, 1));
  });

  it('a recorded segment taken up from the store (request.run_state) replays to the same spans, in the run’s trace', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-otel-segments-'));
    const store = new MemoryStore();
    const recorder = new ServedRecorder({
      dir,
      models: { m: { provider: 'scripted', model_name: 'scripted-model' } },
      tools: [approvalTool.descriptor],
      app: () => ({ file: 'app.ts', version: '1' }),
    });
    const env = recorder.env(deterministicEnv({ tick: 5 }));
    const llm = recorder.llm(new ScriptedLlm(SUSPENDING));
    const runtimeWith = (sink: MetricsSink): AgentRuntime => {
      const plugin = observabilityPlugin(sink);
      const built = new AgentRuntimeBuilder()
        .withEnv(env)
        .withThreadRunStore(recorder.store(store))
        .withProvider('scripted', llm)
        .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
        .withPlugin(plugin.name, plugin)
        .withAgentSpec({ id: 'agent', model: 'm', system_prompt: 'be brief', plugin_ids: [plugin.name] })
        .withTool(recorder.tool(approvalTool))
        .build();
      if (!built.ok) throw new Error(JSON.stringify(built.error));
      return built.value;
    };
    const [before, after] = [otel(), otel()];
    let current = runtimeWith(before.sink);
    const runtime = new Proxy(current, {
      get: (_t, prop) => {
        const v: unknown = Reflect.get(current, prop, current);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(current) : v;
      },
    });
    recorder.attach(runtime);
    const registry = new RunRegistry(runtime, store, { observer: recorder });
    const started = await registry.start({ threadId: 't1', messages: [Messages.user('book it')] });
    if (!started.ok) throw new Error(JSON.stringify(started.error));
    await vi.waitFor(() => expect(registry.waiting('t1')?.calls.map((c) => c.callId)).toEqual(['a1']));
    // A restart: the parked run is let go, and a new runtime (a new plugin, a new exporter) takes it up.
    current = runtimeWith(after.sink);
    expect(await registry.releaseParked()).toBe(1);
    expect(await registry.decideAnywhere('t1', [decisionFor('a1', 'resume', 5, { decisionId: 'd1' })])).toMatchObject({ ok: true });
    const file = join(dir, segmentFileName('t1', started.value.runId, 2));
    await vi.waitFor(() => expect(existsSync(file)).toBe(true));
    await vi.waitFor(() => expect(ofKind(after.exporter.getFinishedSpans(), GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT)).toHaveLength(1));
    const live = after.exporter.getFinishedSpans();
    expect(new Set(live.map((s) => s.spanContext().traceId))).toEqual(new Set([before.exporter.getFinishedSpans()[0]?.spanContext().traceId]));

    const replayed = otel();
    const report = await replayTranscript(readFileSync(file, 'utf8'), { plugins: new Map([['observability', observabilityPlugin(replayed.sink)]]) });
    expect(report.divergence).toBeUndefined();
    expect(report.identical).toBe(true);
    expect(replayed.exporter.getFinishedSpans().map(shape)).toEqual(live.map(shape));
  });
});
