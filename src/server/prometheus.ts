import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { AgentEvent } from '../contract/event.ts';
import type { TerminationReason } from '../contract/lifecycle.ts';
import type { ToolCallOutcome } from '../contract/tool.ts';
import type { RunWatcher } from './run-registry.ts';
import { unreachable } from '../contract/never.ts';

/** The content type of the Prometheus text exposition format `GET /metrics` answers in. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * What `awaken_errors_total` counts, by `class` (docs/server.md → Metrics):
 * - `run_error`: a run ended with an error (its `run_finish` termination is `error`);
 * - `http_5xx`: a request answered 5xx — other than the limit's 503 and the health checks';
 * - `store`: a health check found the store not answering;
 * - `overloaded`: a request refused by `max_concurrent_requests`.
 */
export const ERROR_CLASSES = ['run_error', 'http_5xx', 'store', 'overloaded'] as const;
export type ErrorClass = (typeof ERROR_CLASSES)[number];

/** Every way a run (or a segment of it, up to a suspension) ends: the `outcome` of `awaken_runs_total`. */
export const RUN_OUTCOMES: readonly TerminationReason['type'][] = [
  'natural_end',
  'behavior_requested',
  'stopped',
  'cancelled',
  'blocked',
  'suspended',
  'error',
];
const TOOL_STATUSES: readonly ToolCallOutcome[] = ['succeeded', 'failed', 'suspended'];

/** Where the gauges read at a scrape come from. */
export interface MetricsSources {
  /** Runs this instance is executing or holding parked. */
  readonly activeRuns: () => number;
  /** Mailbox jobs this instance holds (claimed, their runs going); undefined: no mailbox. */
  readonly mailboxJobs?: () => number;
}

/**
 * The server's Prometheus metrics, in a registry of its own (never prom-client's global one: two
 * servers in one process, or an application's own metrics, do not mix). Run counters come from the
 * frames of this instance's runs (`observe`, a `RunWatcher`); request gauges from the ops middleware.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  readonly #inFlight: Gauge;
  readonly #sse: Gauge;
  readonly #runs: Counter<'outcome'>;
  readonly #duration: Histogram;
  readonly #errors: Counter<'class'>;
  readonly #tokens: Counter<'type'>;
  readonly #toolCalls: Counter<'status'>;

  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    new Gauge({
      name: 'awaken_active_runs',
      help: 'Runs this instance is executing or holding parked',
      registers,
      collect() {
        this.set(sources.activeRuns());
      },
    });
    new Gauge({
      name: 'awaken_mailbox_queue_depth',
      help: 'Mailbox jobs this instance has claimed whose runs are going',
      registers,
      collect() {
        this.set(sources.mailboxJobs?.() ?? 0);
      },
    });
    this.#sse = new Gauge({ name: 'awaken_sse_connections', help: 'Open event-stream responses', registers });
    this.#inFlight = new Gauge({
      name: 'awaken_http_requests_in_flight',
      help: 'Requests being handled (not /health*, /metrics, nor streams once their response started)',
      registers,
    });
    this.#runs = new Counter({
      name: 'awaken_runs_total',
      help: 'Runs (and segments up to a suspension) ended, by outcome',
      labelNames: ['outcome'],
      registers,
    });
    this.#duration = new Histogram({
      name: 'awaken_run_duration_seconds',
      help: 'From a run (or a resumed segment of it) starting on this instance to its run_finish',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers,
    });
    this.#errors = new Counter({
      name: 'awaken_errors_total',
      help: 'Errors, by class (run_error, http_5xx, store, overloaded)',
      labelNames: ['class'],
      registers,
    });
    this.#tokens = new Counter({
      name: 'awaken_tokens_total',
      help: 'Tokens the inferences of this instance reported, by type',
      labelNames: ['type'],
      registers,
    });
    this.#toolCalls = new Counter({ name: 'awaken_tool_calls_total', help: 'Tool calls done, by status', labelNames: ['status'], registers });
    // Every series present from the start: a rate over a counter that appears late misses its first rise.
    for (const outcome of RUN_OUTCOMES) this.#runs.inc({ outcome }, 0);
    for (const c of ERROR_CLASSES) this.#errors.inc({ class: c }, 0);
    for (const type of ['input', 'output']) this.#tokens.inc({ type }, 0);
    for (const status of TOOL_STATUSES) this.#toolCalls.inc({ status }, 0);
  }

  /** When each run's current segment began (its last `run_start`), until its `run_finish`. */
  readonly #segments = new Map<string, number>();

  /** Counts a frame of a run of this instance (see `RunRegistry.watch`). */
  readonly observe: RunWatcher = (run, event: AgentEvent, at) => {
    switch (event.event_type) {
      case 'run_start':
        // A resumed run starts again: its duration is this segment's, not the wait for a decision.
        this.#segments.set(run.runId, at);
        return;
      case 'run_finish': {
        const outcome = event.termination.type;
        const began = this.#segments.get(run.runId) ?? run.startedAt;
        this.#segments.delete(run.runId);
        this.#runs.inc({ outcome });
        this.#duration.observe(Math.max(0, at - began) / 1000);
        if (outcome === 'error') this.#errors.inc({ class: 'run_error' });
        return;
      }
      case 'inference_complete': {
        const usage = event.usage;
        if (usage?.prompt_tokens !== undefined) this.#tokens.inc({ type: 'input' }, usage.prompt_tokens);
        if (usage?.completion_tokens !== undefined) this.#tokens.inc({ type: 'output' }, usage.completion_tokens);
        return;
      }
      case 'tool_call_done':
        this.#toolCalls.inc({ status: event.outcome });
        return;
      case 'error':
      case 'text_delta':
      case 'reasoning_delta':
      case 'tool_call_start':
      case 'tool_call_delta':
      case 'tool_call_ready':
      case 'tool_call_stream_delta':
      case 'reasoning_encrypted_value':
      case 'messages_snapshot':
      case 'activity_snapshot':
      case 'activity_delta':
      case 'tool_call_resumed':
      case 'step_start':
      case 'step_end':
      case 'state_snapshot':
      case 'state_delta':
        return;
      default:
        return unreachable(event);
    }
  };

  /** One more (or one fewer) request being handled. */
  requests(delta: number): void {
    this.#inFlight.inc(delta);
  }

  /** One more (or one fewer) event stream open. */
  streams(delta: number): void {
    this.#sse.inc(delta);
  }

  error(kind: ErrorClass): void {
    this.#errors.inc({ class: kind });
  }

  /** The text exposition of every metric (`METRICS_CONTENT_TYPE`). */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}
