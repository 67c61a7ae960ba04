import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { stepsAfter } from '../core/steps-after.ts';

/**
 * A run's timeline (docs/inspector.md): its steps, each inference (the request as the model got it,
 * the streamed answer, usage, duration), each tool call (arguments, result, progress, streamed
 * output, times), suspensions and decisions, the state after each step's commit with its JSON Patch
 * against the one before, and how the run ended. One fold over a transcript's records in order —
 * or over events alone (a run followed live has nothing else) — shared by `awaken inspect` and the
 * inspector page. Times are the run's own clock readings (its `now` draws) nearest each record;
 * without them (events alone) there are none. Records it does not know are skipped: an edited
 * transcript is still shown.
 */

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export interface TimelineToolCall {
  readonly call_id: string;
  readonly name: string;
  arguments: Json | undefined;
  /** Set at `tool_call_done`. */
  result?: Json;
  outcome?: string;
  started_at?: number;
  ended_at?: number;
  /** `tool-call-progress` reports, in order. */
  readonly progress: { readonly status: string; readonly message?: string; readonly progress?: number }[];
  /** Other activities of the call (`activity_snapshot` / `activity_delta` with the call's id). */
  readonly activity: { readonly type: string; readonly content: Json }[];
  /** `tool_call_stream_delta`s, joined. */
  stream: string;
  /** The ticket of a suspended call, and the decision that settled it. */
  suspension?: Json;
  decision?: Json;
  resumed?: boolean;
  /** What the call gave once resumed (`tool_call_resumed`). */
  resumed_result?: Json;
  /** Where it failed to run (a tool error or a throw, from the transcript). */
  failure?: string;
}

export interface TimelineInference {
  model?: string;
  /** The full request, when the transcript has it (`llm` records; several when the retry policy tried again). */
  readonly requests: {
    readonly model: string;
    readonly messages: readonly Json[];
    readonly message_count: number;
    readonly tools: readonly string[];
    readonly error?: Json;
    readonly interrupted?: boolean;
  }[];
  text: string;
  reasoning: string;
  usage?: Json;
  duration_ms?: number;
  started_at?: number;
}

export interface TimelineState {
  /** The event index of the `state_snapshot`. */
  readonly event: number;
  readonly step: number;
  readonly revision: number | undefined;
  readonly state: Json;
  /** From the state before it (the empty state for the first). */
  readonly patch: readonly Operation[];
}

export interface TimelineStep {
  readonly index: number;
  readonly message_id: string;
  started_at?: number;
  ended_at?: number;
  readonly inference: TimelineInference;
  readonly tools: TimelineToolCall[];
  /** Activities not tied to a tool call (a handoff, a context window report, …). */
  readonly activities: { readonly type: string; readonly content: Json }[];
  readonly errors: string[];
  state?: TimelineState;
  ended: boolean;
}

export interface Timeline {
  thread_id?: string;
  run_id?: string;
  agent_id?: string;
  /** The app module and its version that ran the run (a served app's transcript names it). */
  app?: { readonly file: string; readonly version: string };
  /** Which of the run's recorded segments this is, from 2 (absent: its first, or its only one). */
  segment?: number;
  /** A segment of a run taken up again from the store (a reload, a restart): it starts parked, where the one before left it. */
  resumed?: boolean;
  parent_run_id?: string;
  started_at?: number;
  ended_at?: number;
  termination?: Json;
  response?: string;
  /** Token totals of the inferences seen. */
  readonly usage: { input: number; output: number; total: number };
  /** The run's steps (`stepsAfter`, the count its record and result give), whatever sections `steps` shows. */
  step_count: number;
  readonly steps: TimelineStep[];
  readonly states: TimelineState[];
  readonly decisions: { readonly after_event: number; readonly decisions: Json }[];
  cancelled_after_event?: number;
  /** Events folded. */
  events: number;
  /** Whether the run ended (a `run_finish`). */
  finished: boolean;
}

/** The state before the first snapshot: no keys, so the first patch adds each key on its own. */
export const INITIAL_STATE: Json = { revision: 0, extensions: {} };

export const emptyTimeline = (): Timeline => ({
  usage: { input: 0, output: 0, total: 0 },
  step_count: 0,
  steps: [],
  states: [],
  decisions: [],
  events: 0,
  finished: false,
});

/** Folds records (parsed transcript lines, or `{type: 'event', event}` alone) into a timeline. */
export function timelineOf(records: readonly unknown[]): Timeline {
  const t = emptyTimeline();
  const fold = new TimelineFold(t);
  for (const r of records) fold.record(r);
  return t;
}

/** The lines of a transcript, parsed (a line that is not JSON is skipped). */
export function transcriptRecords(text: string): unknown[] {
  const out: unknown[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // An edited line: the timeline shows what it can.
    }
  }
  return out;
}

/**
 * The fold itself, one record at a time: a live view feeds it events as they arrive
 * (`fold.record({type: 'event', event})`) and renders `timeline` after each.
 */
export class TimelineFold {
  readonly timeline: Timeline;
  #now: number | undefined;
  #previousState: Json = INITIAL_STATE;
  /**
   * The conversation as the last request had it: a request keeps a prefix of the one before it and adds
   * to it, so it is appended to in place (a shorter prefix starts a copy). Each request is its length
   * of it, copied out only when read: a long run's requests share one array instead of each holding
   * the whole conversation so far.
   */
  #conversation: Json[] = [];
  #previousTools: readonly string[] = [];
  readonly #calls = new Map<string, TimelineToolCall>();

  constructor(timeline: Timeline = emptyTimeline()) {
    this.timeline = timeline;
  }

  record(r: unknown): void {
    if (typeof r !== 'object' || r === null) return;
    const rec = r as Record<string, Json>;
    switch (rec['type']) {
      case 'header':
        this.#header(rec);
        return;
      case 'env':
        if (rec['draw'] === 'now' && typeof rec['value'] === 'number') this.#now = rec['value'];
        return;
      case 'event':
        if (typeof rec['event'] === 'object' && rec['event'] !== null && !Array.isArray(rec['event'])) this.#event(rec['event']);
        return;
      case 'llm':
        this.#llm(rec);
        return;
      case 'tool':
        this.#tool(rec);
        return;
      case 'decision':
        this.timeline.decisions.push({ after_event: Number(rec['after_event']), decisions: rec['decisions'] ?? null });
        for (const d of Array.isArray(rec['decisions']) ? rec['decisions'] : []) {
          const o = d as { target_id?: string; decision?: Json };
          const call = o.target_id === undefined ? undefined : this.#callBySuspension(o.target_id);
          if (call !== undefined) call.decision = o.decision ?? null;
        }
        return;
      case 'cancel':
        this.timeline.cancelled_after_event = Number(rec['after_event']);
        return;
      case 'end': {
        const result = rec['result'] as Record<string, Json> | undefined;
        if (result !== undefined) {
          this.timeline.termination ??= result['termination'] ?? null;
          if (typeof result['response'] === 'string') this.timeline.response = result['response'];
        }
        return;
      }
      default:
        return;
    }
  }

  #header(rec: Record<string, Json>): void {
    const agent = rec['agent'] as { id?: string } | undefined;
    const request = rec['request'] as
      | { thread_id?: string; run_id?: string; run_state?: { revision?: Json; extensions?: Json }; thread_state?: { extensions?: Json } }
      | undefined;
    if (agent?.id !== undefined) this.timeline.agent_id = agent.id;
    if (typeof rec['segment'] === 'number') this.timeline.segment = rec['segment'];
    const runState = request?.run_state;
    if (typeof runState === 'object' && runState !== null) {
      this.timeline.resumed = true;
      // Its first state diff is against the state it was taken up with, not an empty one.
      const of = (x: Json | undefined): Record<string, Json> => (typeof x === 'object' && x !== null && !Array.isArray(x) ? x : {});
      this.#previousState = { revision: runState.revision ?? 0, extensions: { ...of(request?.thread_state?.extensions), ...of(runState.extensions) } };
    }
    const app = rec['app'] as { file?: unknown; version?: unknown } | undefined;
    if (typeof app?.file === 'string' && typeof app.version === 'string') this.timeline.app = { file: app.file, version: app.version };
    if (request?.thread_id !== undefined) this.timeline.thread_id = request.thread_id;
    if (request?.run_id !== undefined) this.timeline.run_id = request.run_id;
  }

  #step(): TimelineStep {
    const last = this.timeline.steps.at(-1);
    if (last !== undefined && !last.ended) return last;
    // Something before the first step_start (a resumed call's result): a step of its own.
    return this.#newStep('');
  }

  #newStep(messageId: string): TimelineStep {
    const step: TimelineStep = {
      index: this.timeline.steps.length + 1,
      message_id: messageId,
      ...(this.#now !== undefined ? { started_at: this.#now } : {}),
      inference: { requests: [], text: '', reasoning: '' },
      tools: [],
      activities: [],
      errors: [],
      ended: false,
    };
    this.timeline.steps.push(step);
    return step;
  }

  #call(id: string, name: string): TimelineToolCall {
    let call = this.#calls.get(id);
    if (call === undefined) {
      call = { call_id: id, name, arguments: undefined, progress: [], activity: [], stream: '' };
      this.#calls.set(id, call);
      this.#step().tools.push(call);
    }
    return call;
  }

  #callBySuspension(targetId: string): TimelineToolCall | undefined {
    const direct = this.#calls.get(targetId);
    if (direct !== undefined) return direct;
    for (const c of this.#calls.values()) {
      const s = c.suspension as { suspension?: { id?: string } } | undefined;
      if (s?.suspension?.id === targetId) return c;
    }
    return undefined;
  }

  #event(e: Record<string, Json>): void {
    const t = this.timeline;
    t.events++;
    t.step_count = stepsAfter(t.step_count, e);
    const s = (k: string): string => (typeof e[k] === 'string' ? (e[k] as string) : '');
    switch (e['event_type']) {
      case 'run_start':
        t.thread_id = s('thread_id');
        t.run_id = s('run_id');
        if (typeof e['parent_run_id'] === 'string') t.parent_run_id = e['parent_run_id'];
        if (this.#now !== undefined) t.started_at ??= this.#now;
        return;
      case 'step_start':
        this.#newStep(s('message_id'));
        return;
      case 'text_delta':
        this.#step().inference.text += s('delta');
        return;
      case 'reasoning_delta':
        this.#step().inference.reasoning += s('delta');
        return;
      case 'tool_call_start': {
        const call = this.#call(s('id'), s('name'));
        if (this.#now !== undefined) call.started_at ??= this.#now;
        return;
      }
      case 'tool_call_ready':
        this.#call(s('id'), s('name')).arguments = e['arguments'] ?? null;
        return;
      case 'tool_call_done': {
        const call = this.#call(s('id'), '');
        call.result = e['result'] ?? null;
        call.outcome = s('outcome');
        const suspension = (e['result'] as { suspension?: Json } | null)?.suspension;
        if (suspension !== undefined) call.suspension = suspension;
        if (this.#now !== undefined) call.ended_at = this.#now;
        return;
      }
      case 'tool_call_resumed': {
        const call = this.#callBySuspension(s('target_id'));
        if (call !== undefined) {
          call.resumed = true;
          call.resumed_result = e['result'] ?? null;
        }
        return;
      }
      case 'tool_call_stream_delta':
        this.#call(s('id'), s('name')).stream += s('delta');
        return;
      case 'activity_snapshot':
      case 'activity_delta': {
        const type = s('activity_type');
        const content = (e['event_type'] === 'activity_snapshot' ? e['content'] : e['patch']) ?? null;
        const call = this.#calls.get(s('message_id'));
        if (type === 'tool-call-progress' && call !== undefined) {
          const c = content as { status?: string; message?: string; progress?: number };
          call.progress.push({
            status: c.status ?? '',
            ...(c.message !== undefined ? { message: c.message } : {}),
            ...(c.progress !== undefined ? { progress: c.progress } : {}),
          });
        } else if (call !== undefined) call.activity.push({ type, content });
        else this.#step().activities.push({ type, content });
        return;
      }
      case 'inference_complete': {
        const inference = this.#step().inference;
        inference.model = s('model');
        if (e['usage'] !== undefined) {
          inference.usage = e['usage'];
          const u = e['usage'] as { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number };
          t.usage.input += u.prompt_tokens ?? 0;
          t.usage.output += u.completion_tokens ?? 0;
          t.usage.total += u.total_tokens ?? (u.prompt_tokens ?? 0) + (u.completion_tokens ?? 0);
        }
        if (typeof e['duration_ms'] === 'number') {
          inference.duration_ms = e['duration_ms'];
          if (this.#now !== undefined) inference.started_at = this.#now - e['duration_ms'];
        }
        return;
      }
      case 'state_snapshot': {
        const state = e['snapshot'] ?? null;
        // After the last step's end (the run's own end): the run's state, on no step.
        const last = t.steps.at(-1);
        const step = last !== undefined && !last.ended ? last : undefined;
        const before = this.#previousState;
        let patch: readonly Operation[] | undefined;
        const snapshot: TimelineState = {
          event: t.events - 1,
          step: step?.index ?? last?.index ?? 0,
          revision: (state as { revision?: number } | null)?.revision,
          state,
          // Compared when first read: a long run's view reads the patches of the steps it shows.
          get patch(): readonly Operation[] {
            return (patch ??= fastJsonPatch.compare(before as object, state as object));
          },
        };
        this.#previousState = state;
        t.states.push(snapshot);
        if (step !== undefined) step.state = snapshot;
        return;
      }
      case 'step_end': {
        const step = this.#step();
        step.ended = true;
        if (this.#now !== undefined) step.ended_at = this.#now;
        return;
      }
      case 'error':
        this.#step().errors.push(s('message'));
        return;
      case 'run_finish': {
        t.finished = true;
        t.termination = e['termination'] ?? null;
        const result = e['result'] as { response?: string } | undefined;
        if (typeof result?.response === 'string') t.response = result.response;
        if (this.#now !== undefined) t.ended_at = this.#now;
        return;
      }
      default:
        return;
    }
  }

  /** An inference's request, rebuilt whole from its change against the previous one. */
  #llm(rec: Record<string, Json>): void {
    const request = rec['request'] as { model?: string; kept?: number; messages?: Json[]; tools?: { id?: string }[] } | undefined;
    if (request === undefined) return;
    const kept = request.kept ?? 0;
    if (kept < this.#conversation.length) this.#conversation = this.#conversation.slice(0, kept);
    for (const m of request.messages ?? []) this.#conversation.push(m);
    const conversation = this.#conversation;
    const length = conversation.length;
    let messages: Json[] | undefined;
    // Tools are written only when they differ from the previous request's.
    const tools = request.tools !== undefined ? request.tools.map((d) => d.id ?? '') : this.#previousTools;
    this.#previousTools = tools;
    this.#step().inference.requests.push({
      model: request.model ?? '',
      get messages(): readonly Json[] {
        return (messages ??= conversation.slice(0, length));
      },
      message_count: length,
      tools,
      ...(rec['error'] !== undefined ? { error: rec['error'] } : {}),
      ...(rec['interrupted'] === true ? { interrupted: true } : {}),
    });
  }

  /** A tool execution: what the transcript adds to the events (a failure, times). */
  #tool(rec: Record<string, Json>): void {
    const call = this.#call(String(rec['call_id']), String(rec['name']));
    if (call.arguments === undefined) call.arguments = rec['arguments'] ?? null;
    // The last clock reading before the record: the call's start (the one after it, at tool_call_done, its end).
    if (this.#now !== undefined) call.started_at = this.#now;
    if (rec['resume'] !== undefined) call.resumed = true;
    const toolError = rec['tool_error'] as { message?: string } | undefined;
    if (toolError !== undefined) call.failure = toolError.message ?? 'tool error';
    if (typeof rec['thrown'] === 'string') call.failure = rec['thrown'];
  }
}

/** Milliseconds between two readings, when both are there. */
export const durationOf = (from: number | undefined, to: number | undefined): number | undefined =>
  from !== undefined && to !== undefined ? Math.max(0, to - from) : undefined;
