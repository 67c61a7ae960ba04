import type { AgentEvent } from '../../contract/event.ts';
import type { TerminationReason } from '../../contract/lifecycle.ts';
import type { ToolCall } from '../../contract/message.ts';
import type { StopReason } from '../../contract/stream.ts';
import type { ToolResult } from '../../contract/tool.ts';
import type { RuntimePlugin } from '../../runtime/resolve.ts';
import type { RunTap, TapRun, TappedInference } from '../../runtime/tap.ts';
import { totalsOf, type AgentMetrics, type GenAISpan, type MetricsSink, type ToolSpan } from './spans.ts';

export const OBSERVABILITY_PLUGIN_ID = 'observability';

export interface ObservabilityOptions {
  /** Told when the sink throws (the run goes on; the span is lost). */
  readonly onSinkError?: (e: unknown) => void;
}

/**
 * The observability plugin (book: 启用可观测性): every inference, tool execution and run of an agent
 * that names it in `plugin_ids`, reported to `sink` as `GenAISpan`, `ToolSpan` and `AgentMetrics`.
 * It has no hooks and writes no state: it watches the run through a `RunTap`. Its spans' ids are
 * drawn from the run's `Env` (`trace` once per run, `span` per span) and its times are the run's
 * clock — the inference's as the loop measured it, a tool's read when it starts and when it settles
 * — so a replayed run (its draws handed out again) reports the same spans. An agent's run with the
 * plugin draws those extra values; a run without it draws nothing more.
 */
export function observabilityPlugin(sink: MetricsSink, options: ObservabilityOptions = {}): RuntimePlugin {
  return {
    name: OBSERVABILITY_PLUGIN_ID,
    register: () => undefined,
    tap: (run) => new ObservedRun(run, sink, options),
  };
}

const FINISH_REASONS: Readonly<Record<StopReason, string>> = { EndTurn: 'end_turn', ToolUse: 'tool_use', MaxTokens: 'max_tokens', StopSequence: 'stop_sequence' };

/** One run under observation: its open spans and what it reported. */
class ObservedRun implements RunTap {
  readonly #run: TapRun;
  readonly #sink: MetricsSink;
  readonly #options: ObservabilityOptions;
  #traceId = '';
  #spanId = '';
  #startedAt = 0;
  #steps = 0;
  readonly #open = new Map<string, { readonly spanId: string; readonly startedAt: number; readonly step: number }>();
  readonly #inferences: GenAISpan[] = [];
  readonly #tools: ToolSpan[] = [];

  constructor(run: TapRun, sink: MetricsSink, options: ObservabilityOptions) {
    this.#run = run;
    this.#sink = sink;
    this.#options = options;
  }

  event(event: AgentEvent): void {
    if (event.event_type === 'run_start') this.#begin();
    else if (event.event_type === 'run_finish') this.#end(event.termination);
  }

  inference(i: TappedInference): void {
    this.#ensureBegun();
    const usage = i.usage;
    const overrides = i.request.overrides;
    const error = i.error ?? (i.cancelled ? { code: 'cancelled' as const } : undefined);
    const span: GenAISpan = {
      ...this.#context(this.#run.env.ids.next('span'), i.startedAt, i.endedAt),
      operation: 'chat',
      step_index: this.#steps++,
      provider: i.provider,
      model: i.request.model,
      response_model: i.answeredBy,
      finish_reasons: i.stopReason !== undefined ? [FINISH_REASONS[i.stopReason]] : [],
      ...(usage?.prompt_tokens !== undefined ? { input_tokens: usage.prompt_tokens } : {}),
      ...(usage?.completion_tokens !== undefined ? { output_tokens: usage.completion_tokens } : {}),
      ...(usage?.total_tokens !== undefined ? { total_tokens: usage.total_tokens } : {}),
      ...(usage?.cache_read_tokens !== undefined ? { cache_read_input_tokens: usage.cache_read_tokens } : {}),
      ...(usage?.cache_creation_tokens !== undefined ? { cache_creation_input_tokens: usage.cache_creation_tokens } : {}),
      ...(usage?.thinking_tokens !== undefined ? { thinking_tokens: usage.thinking_tokens } : {}),
      ...(overrides?.temperature !== undefined ? { temperature: overrides.temperature } : {}),
      ...(overrides?.top_p !== undefined ? { top_p: overrides.top_p } : {}),
      ...(overrides?.max_tokens !== undefined ? { max_tokens: overrides.max_tokens } : {}),
      ...(error !== undefined ? { error_type: error.code, error_message: 'message' in error ? error.message : 'the inference was cancelled' } : {}),
    };
    this.#inferences.push(span);
    this.#tell(() => this.#sink.onInference(span));
  }

  toolStarted(call: ToolCall): void {
    this.#ensureBegun();
    this.#open.set(call.id, { spanId: this.#run.env.ids.next('span'), startedAt: this.#run.env.clock.now(), step: Math.max(0, this.#steps - 1) });
  }

  toolSettled(call: ToolCall, result: ToolResult): void {
    const open = this.#open.get(call.id);
    if (open === undefined) return;
    this.#open.delete(call.id);
    const span: ToolSpan = {
      ...this.#context(open.spanId, open.startedAt, this.#run.env.clock.now()),
      operation: 'execute_tool',
      step_index: open.step,
      name: call.name,
      call_id: call.id,
      tool_type: 'function',
      status: result.status,
      ...(result.status === 'error' ? { error_type: 'tool_error', error_message: result.message ?? '' } : {}),
    };
    this.#tools.push(span);
    this.#tell(() => this.#sink.onTool(span));
  }

  /** The run's trace and span, and its start: at `run_start`. */
  #begin(): void {
    this.#traceId = this.#run.env.ids.next('trace');
    this.#spanId = this.#run.env.ids.next('span');
    this.#startedAt = this.#run.env.clock.now();
  }

  #ensureBegun(): void {
    if (this.#traceId === '') this.#begin();
  }

  #end(termination: TerminationReason): void {
    this.#ensureBegun();
    const endedAt = this.#run.env.clock.now();
    const { run_id, thread_id, agent_id } = this.#context('', 0, 0);
    const metrics: AgentMetrics = {
      run_id,
      thread_id,
      agent_id,
      ...(this.#run.parentRunId !== undefined ? { parent_run_id: this.#run.parentRunId } : {}),
      trace_id: this.#traceId,
      span_id: this.#spanId,
      started_at_ms: this.#startedAt,
      ended_at_ms: endedAt,
      duration_ms: Math.max(0, endedAt - this.#startedAt),
      operation: 'invoke_agent',
      termination,
      inferences: [...this.#inferences],
      tools: [...this.#tools],
      ...totalsOf(this.#inferences, this.#tools),
    };
    this.#tell(() => this.#sink.onRunEnd(metrics));
    // A revived or resumed run begins again at its next run_start.
    this.#traceId = '';
    this.#inferences.length = 0;
    this.#tools.length = 0;
    this.#steps = 0;
  }

  #context(spanId: string, startedAt: number, endedAt: number) {
    return {
      run_id: this.#run.runId,
      thread_id: this.#run.threadId,
      agent_id: this.#run.agent.id,
      ...(this.#run.parentRunId !== undefined ? { parent_run_id: this.#run.parentRunId } : {}),
      trace_id: this.#traceId,
      span_id: spanId,
      parent_span_id: this.#spanId,
      started_at_ms: startedAt,
      ended_at_ms: endedAt,
      duration_ms: Math.max(0, endedAt - startedAt),
    };
  }

  #tell(f: () => void): void {
    try {
      f();
    } catch (e) {
      this.#options.onSinkError?.(e);
    }
  }
}
