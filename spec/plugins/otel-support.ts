import { ATTR_GEN_AI_OPERATION_NAME } from '@opentelemetry/semantic-conventions/incubating';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder, type AgentRuntime } from '../../src/runtime/agent-runtime.ts';
import type { Env } from '../../src/runtime/env.ts';
import type { MemoryThreadRunStore } from '../../src/runtime/thread-run-store.ts';
import { observabilityPlugin } from '../../src/plugins/observability/plugin.ts';
import { AwakenIdGenerator, otelSink } from '../../src/plugins/observability/otel.ts';
import type { MetricsSink } from '../../src/plugins/observability/spans.ts';
import { approvalTool, echoTool } from '../support/runtime.ts';

/** What the observability specs share: an OpenTelemetry pipeline, a runtime with the plugin, span selectors. */

/** An OpenTelemetry pipeline as a user sets one up: a tracer provider with awaken's ids, an in-memory exporter. */
export function otel(options: { readonly captureContent?: boolean } = {}) {
  const exporter = new InMemorySpanExporter();
  const idGenerator = new AwakenIdGenerator();
  const provider = new BasicTracerProvider({ idGenerator, spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { exporter, sink: otelSink(provider.getTracer('awaken'), { idGenerator, ...options }) };
}

const operation = (s: ReadableSpan): unknown => s.attributes[ATTR_GEN_AI_OPERATION_NAME];
/** The spans of one `gen_ai.operation.name`, in the order they ended. */
export const ofKind = (spans: readonly ReadableSpan[], op: string): ReadableSpan[] => spans.filter((s) => operation(s) === op);

/** A runtime whose agent names the observability plugin (made for `sink` unless given), with the approval and echo tools. */
export function runtimeOf(
  script: readonly ScriptStep[],
  sink: MetricsSink,
  store: MemoryThreadRunStore,
  env: Env,
  plugin = observabilityPlugin(sink),
): { runtime: AgentRuntime; llm: ScriptedLlm } {
  const llm = new ScriptedLlm(script);
  const built = new AgentRuntimeBuilder()
    .withEnv(env)
    .withProvider('scripted', llm)
    .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
    .withThreadRunStore(store)
    .withTool(approvalTool)
    .withTool(echoTool)
    .withPlugin(plugin.name, plugin)
    .withAgentSpec({ id: 'agent', model: 'm', system_prompt: 'be brief', plugin_ids: [plugin.name] })
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return { runtime: built.value, llm };
}

/** What of an exported span is compared across the two ways: names, ids, parents, links, attributes, times. */
export const shape = (s: ReadableSpan) => ({
  name: s.name,
  traceId: s.spanContext().traceId,
  spanId: s.spanContext().spanId,
  parent: s.parentSpanContext?.spanId,
  links: s.links.map((l) => l.context.spanId),
  attributes: s.attributes,
  start: s.startTime,
  end: s.endTime,
});
