import type { AgentSpec } from '../../contract/agent-spec.ts';
import type { AgentEvent } from '../../contract/event.ts';
import type { TerminationReason } from '../../contract/lifecycle.ts';
import type { ToolCall } from '../../contract/message.ts';
import type { StopReason } from '../../contract/stream.ts';
import type { ToolDescriptor, ToolResult } from '../../contract/tool.ts';
import { preRegistered, type PhaseContext } from '../../core/phase/plugin.ts';
import { StateCommand } from '../../core/state/state-command.ts';
import { RunLifecycle } from '../../runtime/loop-keys.ts';
import type { RuntimePlugin } from '../../runtime/resolve.ts';
import type { RunTap, TapRun, TappedInference } from '../../runtime/tap.ts';
import { addTotals, NO_TOTALS, RunCarryKey, type RunCarry, type RunTotals } from './carry.ts';
import { contentOf } from './content.ts';
import { totalsOf, type AgentMetrics, type GenAISpan, type MetricsSink, type ToolSpan } from './spans.ts';

export const OBSERVABILITY_PLUGIN_ID = 'observability';

export interface ObservabilityOptions {
  /** Told when the sink throws (the run goes on; the span is lost). */
  readonly onSinkError?: (e: unknown) => void;
}

/**
 * The observability plugin (book: 启用可观测性): every inference, tool execution and run of an agent
 * that names it in `plugin_ids`, reported to `sink` as `GenAISpan`, `ToolSpan` and `AgentMetrics`.
 * It watches the run through a `RunTap`. Its spans' ids are drawn from the run's `Env` (`trace` and
 * `span` at each `run_start`, `span` per span) and its times are the run's clock — the inference's
 * as the loop measured it, a tool's read when it starts and when it settles — so a replayed run (its
 * draws handed out again) reports the same spans. An agent's run with the plugin draws those extra
 * values; a run without it draws nothing more.
 *
 * A run that suspends and is resumed is one trace (docs/adr/0047-genai-spans.md): the segment after
 * a resume keeps the run's first trace id, goes on counting steps and totals, and names the first
 * segment's span. In the same process the tap remembers; across processes the plugin's hooks carry
 * it: the step that parks the run writes `RunCarryKey` (run-scoped, stored with the waiting run),
 * and the first hook of a segment taken up from the store hands it to the tap, which holds that
 * segment's spans until it knows their trace.
 */
export function observabilityPlugin(sink: MetricsSink, options: ObservabilityOptions = {}): RuntimePlugin {
  /** The runs in a segment now, by run id: whom a hook tells what the state carries. */
  const observed = new Map<string, Set<ObservedRun>>();
  const tell = (ctx: PhaseContext): ObservedRun | undefined => {
    const run = observedRun(observed, ctx.input.runId, ctx.input.agentSpec);
    run?.carried(ctx.snapshot.get(RunCarryKey));
    return run;
  };
  const registered = preRegistered({
    name: OBSERVABILITY_PLUGIN_ID,
    register: (r) => {
      r.registerKey(RunCarryKey);
      r.registerPhaseHook('run_start', (ctx) => void tell(ctx));
      r.registerPhaseHook('step_start', (ctx) => void tell(ctx));
      r.registerPhaseHook('after_tool_execute', (ctx) => void tell(ctx));
      r.registerPhaseHook('run_end', (ctx) => void tell(ctx));
      r.registerPhaseHook('step_end', (ctx) => {
        const run = tell(ctx);
        // Only a step that parks the run writes: a run that never waits stores nothing more.
        if (run === undefined || ctx.snapshot.get(RunLifecycle)?.status !== 'waiting') return undefined;
        return StateCommand.empty().update(RunCarryKey, run.carry());
      });
    },
  });
  return { ...registered, tap: (run) => new ObservedRun(run, sink, options, observed) };
}

/**
 * The run a hook runs for: the one in a segment with its run id — or, when runtimes of one process
 * share the plugin and their ids (deterministic envs), the one of them acting as the hook's agent.
 */
function observedRun(observed: ReadonlyMap<string, ReadonlySet<ObservedRun>>, runId: string, agent: AgentSpec): ObservedRun | undefined {
  const runs = observed.get(runId);
  if (runs === undefined) return undefined;
  if (runs.size === 1) return runs.values().next().value;
  return [...runs].find((r) => r.agent === agent);
}

const FINISH_REASONS: Readonly<Record<StopReason, string>> = {
  EndTurn: 'end_turn',
  ToolUse: 'tool_use',
  MaxTokens: 'max_tokens',
  StopSequence: 'stop_sequence',
};

/** The provider the conventions require on `invoke_agent` of a run that made no inference yet. */
const UNKNOWN_PROVIDER = 'unknown';

/** The segment in progress: what its `run_start` drew. */
interface Segment {
  readonly drawnTrace: string;
  readonly spanId: string;
  readonly startedAt: number;
}

/** One run under observation: its open spans and what it reported, segment by segment. */
class ObservedRun implements RunTap {
  readonly #run: TapRun;
  readonly #sink: MetricsSink;
  readonly #options: ObservabilityOptions;
  readonly #observed: Map<string, Set<ObservedRun>>;
  /** What this segment continues: the run's earlier segments (none for its first). */
  #carry: RunCarry | undefined;
  /** Whether `#carry` is settled for this segment; until it is, its spans wait in `#pending`. */
  #known = false;
  #segment: Segment | undefined;
  readonly #pending: (() => void)[] = [];
  /** Inferences of this segment so far. */
  #steps = 0;
  #provider: string | undefined;
  #model: string | undefined;
  #tools: readonly ToolDescriptor[] | undefined;
  /** The conventions' names the run's providers said, by registry id. */
  readonly #names = new Map<string, string>();
  readonly #open = new Map<string, { readonly spanId: string; readonly startedAt: number; readonly step: number; readonly description: string | undefined }>();
  readonly #inferenceSpans: GenAISpan[] = [];
  readonly #toolSpans: ToolSpan[] = [];

  constructor(run: TapRun, sink: MetricsSink, options: ObservabilityOptions, observed: Map<string, Set<ObservedRun>>) {
    this.#run = run;
    this.#sink = sink;
    this.#options = options;
    this.#observed = observed;
  }

  /** The agent the run was started as. */
  get agent(): AgentSpec {
    return this.#run.agent;
  }

  event(event: AgentEvent): void {
    if (event.event_type === 'run_start') this.#begin();
    else if (event.event_type === 'run_finish') this.#end(event.termination);
  }

  inference(i: TappedInference): void {
    this.#ensureBegun();
    const spanId = this.#run.env.ids.next('span');
    const local = this.#steps++;
    const failed = i.error !== undefined || i.cancelled;
    const finishReasons = !failed && i.stopReason !== undefined ? [FINISH_REASONS[i.stopReason]] : [];
    // An inference that failed before its provider said its name is named as the provider's earlier ones were.
    const provider = i.providerName ?? this.#names.get(i.provider) ?? i.provider;
    if (i.providerName !== undefined) this.#names.set(i.provider, i.providerName);
    this.#provider = provider;
    this.#model = i.request.model;
    this.#tools = i.request.tools;
    // The request's messages are read now: the loop appends to the same array afterwards.
    const content = this.#sink.captureContent === true ? contentOf(i.request.messages, failed ? undefined : i.output, finishReasons[0]) : undefined;
    const usage = i.usage;
    const overrides = i.request.overrides;
    const error = i.error ?? (i.cancelled ? { code: 'cancelled' as const } : undefined);
    this.#report(() => {
      const span: GenAISpan = {
        ...this.#context(spanId, i.startedAt, i.endedAt),
        operation: 'chat',
        step_index: this.#stepsBefore() + local,
        provider,
        provider_id: i.provider,
        model: i.request.model,
        answered_by: i.answeredBy,
        ...(i.responseModel !== undefined ? { response_model: i.responseModel } : {}),
        ...(i.responseId !== undefined ? { response_id: i.responseId } : {}),
        ...(i.server !== undefined ? { server_address: i.server.address, ...(i.server.port !== undefined ? { server_port: i.server.port } : {}) } : {}),
        finish_reasons: finishReasons,
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
        ...(content !== undefined ? { content } : {}),
      };
      this.#inferenceSpans.push(span);
      this.#tell(() => this.#sink.onInference(span));
    });
  }

  toolStarted(call: ToolCall): void {
    this.#ensureBegun();
    const description = this.#tools?.find((t) => t.name === call.name)?.description;
    // A call resumed before this segment's first inference belongs to the step that parked the run (-1: the one before).
    this.#open.set(call.id, { spanId: this.#run.env.ids.next('span'), startedAt: this.#run.env.clock.now(), step: this.#steps - 1, description });
  }

  toolSettled(call: ToolCall, result: ToolResult): void {
    const open = this.#open.get(call.id);
    if (open === undefined) return;
    this.#open.delete(call.id);
    const endedAt = this.#run.env.clock.now();
    this.#report(() => {
      const span: ToolSpan = {
        ...this.#context(open.spanId, open.startedAt, endedAt),
        operation: 'execute_tool',
        step_index: Math.max(0, this.#stepsBefore() + open.step),
        name: call.name,
        call_id: call.id,
        tool_type: 'function',
        ...(open.description !== undefined ? { description: open.description } : {}),
        status: result.status,
        ...(result.status === 'error' ? { error_type: 'tool_error', error_message: result.message ?? '' } : {}),
      };
      this.#toolSpans.push(span);
      this.#tell(() => this.#sink.onTool(span));
    });
  }

  /**
   * What the run's state carries (a hook's snapshot): an earlier segment's trace and totals when the
   * run was taken up from the store. The first word of a segment settles it; later ones change nothing.
   */
  carried(stored: RunCarry | undefined): void {
    if (this.#known || this.#segment === undefined) return;
    if (this.#carry === undefined && stored !== undefined && stored.trace_id !== '') this.#carry = stored;
    this.#known = true;
    for (const report of this.#pending.splice(0)) report();
  }

  /** What the run's next segment takes over: the state a parked run is stored with. */
  carry(): RunCarry {
    const segment = this.#segment as Segment;
    return {
      trace_id: this.#traceId(),
      first_span_id: this.#carry?.first_span_id ?? segment.spanId,
      segments: (this.#carry?.segments ?? 0) + 1,
      steps: this.#stepsBefore() + this.#steps,
      provider: this.#providerName(),
      model: this.#modelName(),
      totals: this.#totals(),
    };
  }

  /** The segment's trace and span, and its start: at `run_start`. A continuation in this process knows its carry already. */
  #begin(): void {
    this.#segment = { drawnTrace: this.#run.env.ids.next('trace'), spanId: this.#run.env.ids.next('span'), startedAt: this.#run.env.clock.now() };
    this.#known = this.#carry !== undefined;
    const runs = this.#observed.get(this.#run.runId);
    if (runs === undefined) this.#observed.set(this.#run.runId, new Set([this]));
    else runs.add(this);
  }

  #ensureBegun(): void {
    if (this.#segment === undefined) this.#begin();
  }

  #end(termination: TerminationReason): void {
    this.#ensureBegun();
    const endedAt = this.#run.env.clock.now();
    // A segment no hook spoke to (taken up from the store and parked again at once) keeps the trace it drew.
    this.carried(undefined);
    const segment = this.#segment as Segment;
    const totals = this.#totals();
    const { run_id, thread_id, agent_id } = this.#context('', 0, 0);
    const description = this.#run.agent.description;
    const metrics: AgentMetrics = {
      run_id,
      thread_id,
      agent_id,
      ...(this.#run.parentRunId !== undefined ? { parent_run_id: this.#run.parentRunId } : {}),
      trace_id: this.#traceId(),
      span_id: segment.spanId,
      started_at_ms: segment.startedAt,
      ended_at_ms: endedAt,
      duration_ms: Math.max(0, endedAt - segment.startedAt),
      operation: 'invoke_agent',
      termination,
      provider: this.#providerName(),
      model: this.#modelName(),
      ...(description !== undefined ? { agent_description: description } : {}),
      ...(this.#carry !== undefined ? { first_span_id: this.#carry.first_span_id } : {}),
      segment_index: this.#carry?.segments ?? 0,
      inferences: [...this.#inferenceSpans],
      tools: [...this.#toolSpans],
      ...totals,
    };
    this.#tell(() => this.#sink.onRunEnd(metrics));
    // A suspended run goes on in this process at its next run_start (a resume); any other has ended.
    this.#carry = termination.type === 'suspended' ? this.carry() : undefined;
    this.#segment = undefined;
    this.#known = false;
    this.#steps = 0;
    this.#provider = undefined;
    this.#model = undefined;
    this.#tools = undefined;
    this.#inferenceSpans.length = 0;
    this.#toolSpans.length = 0;
    const runs = this.#observed.get(this.#run.runId);
    runs?.delete(this);
    if (runs?.size === 0) this.#observed.delete(this.#run.runId);
  }

  /** Reports now when the segment's trace is known, else once it is. */
  #report(report: () => void): void {
    if (this.#known) report();
    else this.#pending.push(report);
  }

  #traceId(): string {
    return this.#carry?.trace_id ?? (this.#segment as Segment).drawnTrace;
  }

  #stepsBefore(): number {
    return this.#carry?.steps ?? 0;
  }

  #providerName(): string {
    return this.#provider ?? this.#carry?.provider ?? UNKNOWN_PROVIDER;
  }

  #modelName(): string {
    return this.#model ?? this.#carry?.model ?? this.#run.agent.model;
  }

  /** The run's counts and tokens: the carried ones and this segment's. */
  #totals(): RunTotals {
    const own = totalsOf(this.#inferenceSpans, this.#toolSpans);
    return addTotals(this.#carry?.totals ?? NO_TOTALS, { ...own, inference_count: this.#inferenceSpans.length, tool_count: this.#toolSpans.length });
  }

  #context(spanId: string, startedAt: number, endedAt: number) {
    return {
      run_id: this.#run.runId,
      thread_id: this.#run.threadId,
      agent_id: this.#run.agent.id,
      ...(this.#run.parentRunId !== undefined ? { parent_run_id: this.#run.parentRunId } : {}),
      trace_id: this.#traceId(),
      span_id: spanId,
      parent_span_id: (this.#segment as Segment).spanId,
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
