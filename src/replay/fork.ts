import { createHash } from 'node:crypto';
import { z } from 'zod';
import { AgentSpecSchema, type AgentSpec } from '../contract/agent-spec.ts';
import type { AgentEvent } from '../contract/event.ts';
import type { JsonValue } from '../contract/json.ts';
import { MessageSchema, type Message } from '../contract/message.ts';
import type { AgentRunResult } from '../contract/run-result.ts';
import type { PersistedState } from '../core/state/state-ops.ts';
import { AgentRuntimeBuilder } from '../runtime/agent-runtime.ts';
import { deterministicEnv, withIdPrefix } from '../runtime/env.ts';
import type { LlmExecutor } from '../runtime/llm.ts';
import { RunLifecycle } from '../runtime/loop-keys.ts';
import type { TappedStep } from '../runtime/tap.ts';
import { MemoryThreadRunStore } from '../runtime/thread-run-store.ts';
import type { Tool } from '../runtime/tool.ts';
import { migrate, MigrationFailure, olderFormat } from './migrate.ts';
import { findCode, makePlugins, missingMessage, type CodeOptions } from './plugins.ts';
import { Suffix, type ForkError, type ForkErrorCode } from './fork-ports.ts';
import { recordingEnv, recordingLlm, recordingTool, TranscriptLog } from './recorder.ts';
import { replayTranscript } from './replayer.ts';
import {
  applyDeltas,
  configDigest,
  endRecordOf,
  PluginEntrySchema,
  readTranscript,
  TRANSCRIPT_FORMAT,
  type Header,
  type LlmRecord,
  type NormalisedRequest,
  type PluginEntry,
  type ToolRecord,
} from './transcript.ts';

/**
 * Forking a recorded run from a step (LangGraph's time travel, Temporal's reset): the parent is
 * replayed to the end of step N — bit for bit, or the fork is refused — and what the run was there
 * (its agent, the thread's messages, its state, its plugins) is edited; then the run is taken up from
 * that point as a run recovered from its store would be, and recorded. The child is a transcript of
 * its own, a segment taken up from the store whose header names its parent and the step
 * (`fork`), so it replays like any other.
 *
 * The rest of the run answers from the recording while it asks what the recording asked: an
 * inference whose request is the recorded one gets the recorded answer, a call with the recorded id,
 * name and arguments the recorded outcome. From the first request that differs the model given
 * answers (none given: the fork stops there, naming the step); a call the recording does not answer
 * runs the tool given of that id (an app's), else the fork stops, naming the step and the tool.
 */

/** One edit of the fork point: the JSON value at a JSON Pointer (RFC 6901) into it; `-` as an array's last key appends. */
export interface ForkEdit {
  readonly path: string;
  readonly value: JsonValue;
}

/**
 * What a fork starts from, as its edits address it: the agent (`/agent/system_prompt`), the
 * thread's messages (`/messages/3/content/0/text`; a tool's result is its message), the state by
 * key (thread- and run-scoped together, `/state/<key>`), and the plugins as the header names them
 * (`/plugins/0/config/...`).
 */
export interface ForkPoint {
  readonly agent: AgentSpec;
  readonly messages: readonly Message[];
  readonly state: { readonly [key: string]: JsonValue };
  readonly plugins: readonly PluginEntry[];
}

export interface ForkOptions extends CodeOptions {
  /** The step whose end the fork goes on from (1 is the first). */
  readonly atStep: number;
  readonly edits?: readonly ForkEdit[];
  /** Answers every inference from the first whose request differs from the recorded one. */
  readonly model?: LlmExecutor;
  /** Tools that run the calls the recording does not answer, by id. */
  readonly tools?: readonly Tool[];
  /** How the child's header names its parent (a file name); `parent` when not given. */
  readonly parentName?: string;
}

export type { ForkError, ForkErrorCode } from './fork-ports.ts';

export type ForkResult =
  | {
      readonly ok: true;
      /** The child transcript. */
      readonly transcript: string;
      readonly result: AgentRunResult;
      /** The fork point after the edits. */
      readonly point: ForkPoint;
      /** Events of the parent up to the fork point: the two runs part after them. */
      readonly eventsBefore: number;
      /** The inferences after the fork point: how many the recording answered, and how many the model given. */
      readonly inferences: { readonly recorded: number; readonly model: number };
    }
  | { readonly ok: false; readonly error: ForkError };

const failure = (code: ForkErrorCode, message: string, step?: number): ForkResult => ({
  ok: false,
  error: { code, message, ...(step !== undefined ? { step } : {}) },
});

/** The SHA-256 of a transcript's text, as the child's header names its parent by it. */
export const transcriptDigest = (text: string): string => `sha256:${createHash('sha256').update(text).digest('hex')}`;

/** What of the parent a fork reads: its header, its steps, and the answers it recorded. */
interface Parent {
  readonly header: Header;
  readonly steps: number;
  /** The steps of the run before this transcript (a segment taken up from the store): not forked from here. */
  readonly before: number;
  readonly llm: readonly Lined<LlmRecord>[];
  readonly requests: readonly (NormalisedRequest | undefined)[];
  readonly tools: readonly Lined<ToolRecord>[];
  /** The line of each event, by its `seq`. */
  readonly eventLines: readonly number[];
  readonly clock: number;
}

function readParent(text: string): Parent | string {
  let current = text;
  if (olderFormat(text) !== undefined) {
    try {
      current = migrate(text).text;
    } catch (e) {
      if (e instanceof MigrationFailure) return e.message;
      throw e;
    }
  }
  let header: Header | undefined;
  let steps = 0;
  let ended: number | undefined;
  let clock = 0;
  const llm: Lined<LlmRecord>[] = [];
  const tools: Lined<ToolRecord>[] = [];
  const eventLines: number[] = [];
  for (const l of readTranscript(current)) {
    if (!l.ok) return `line ${l.line}: ${l.reason}`;
    const r = l.record;
    if (r.type === 'header') header = r;
    else if (r.type === 'llm') llm.push({ record: r, line: l.line });
    else if (r.type === 'tool') tools.push({ record: r, line: l.line });
    else if (r.type === 'event') {
      eventLines[r.seq] = l.line;
      if ((r.event as { event_type?: unknown } | null)?.event_type === 'step_start') steps++;
    } else if (r.type === 'env' && r.draw === 'now') clock = Math.max(clock, r.value);
    else if (r.type === 'end') ended = r.result.steps;
  }
  if (header === undefined) return 'line 1: not a transcript header';
  if (header.env.kind === 'deterministic') clock = Math.max(clock, header.env.start);
  const before = stepsBefore(header.request.run_state);
  return { header, steps: ended ?? before + steps, before, llm, requests: applyDeltas(llm.map((r) => r.record.request)), tools, eventLines, clock };
}

/**
 * The steps a run had before a transcript of it began: its header's stored run state's (a segment
 * taken up from the store goes on from them; steps count over the whole run), else 0.
 */
export function stepsBefore(runState: { readonly extensions?: { readonly [key: string]: unknown } } | undefined): number {
  const count = (runState?.extensions?.[RunLifecycle.key] as { step_count?: unknown } | undefined)?.step_count;
  return typeof count === 'number' ? count : 0;
}

/** A record and its line in the transcript. */
interface Lined<R> {
  readonly record: R;
  readonly line: number;
}

/** The run at the end of step `atStep`, as the parent's replay reached it: the events before it, and the ids of its run. */
interface Reached {
  readonly step: TappedStep;
  readonly events: number;
  readonly threadId: string | undefined;
  readonly runId: string | undefined;
}

/** Forks `parent` (a transcript's text) at the end of `options.atStep`: the child transcript, or why not. */
export async function forkTranscript(parent: string, options: ForkOptions): Promise<ForkResult> {
  const read = readParent(parent);
  if (typeof read === 'string') return failure('unreadable', read);
  const { header } = read;
  const n = options.atStep;
  if (!Number.isInteger(n) || n < 1) return failure('step_past_end', `step ${n} is not a step: steps count from 1`);
  if (n > read.steps) return failure('step_past_end', `step ${n} is past the run's end: it has ${read.steps} step(s)`, n);
  if (n <= read.before)
    return failure('step_past_end', `step ${n} ended before this segment, which goes on from step ${read.before}: fork the transcript that has it`, n);
  if (header.agent.delegates.length > 0) return failure('cannot_run', 'a run whose agent delegates is not forked: its sub-runs are not recorded to go on from');

  // The prefix: the parent replayed to the end of step N, watched.
  let events = 0;
  // The events up to step N's `step_end` (its state snapshot and end come after its checkpoint).
  let through: number | undefined;
  let threadId = header.request.thread_id;
  let runId = header.request.run_id;
  let reached: Reached | undefined;
  const report = await replayTranscript(parent, {
    ...codeOf(options),
    tap: {
      event: (e) => {
        events++;
        if (e.event_type === 'run_start') {
          threadId = e.thread_id;
          runId = e.run_id;
        }
        if (e.event_type === 'step_end' && reached !== undefined && through === undefined) through = events;
      },
      stepEnded: (step) => {
        if (step.steps === n && reached === undefined) reached = { step, events, threadId, runId };
      },
    },
  });
  // Where the replay first left the recording: at a port, or at an event (whichever came first).
  const port = report.divergence?.atEvent ?? Number.POSITIVE_INFINITY;
  const event = report.firstDifference?.index ?? Number.POSITIVE_INFINITY;
  const left = report.identical ? Number.POSITIVE_INFINITY : Math.min(port, event);
  if (reached === undefined || left < (through ?? reached.events)) {
    if (report.identical || (reached === undefined && left === Number.POSITIVE_INFINITY))
      return failure('cannot_run', `step ${n} ends without a checkpoint to go on from (its run parks or stops in it)`, n);
    const why =
      event < port
        ? `line ${read.eventLines[event] ?? 0} (event #${event}) differs: ${report.firstDifference?.diff[0] ?? ''}`.trimEnd()
        : `${report.at !== undefined ? `line ${report.at.line} (a ${report.at.record} record): ` : ''}${report.divergence?.message ?? ''}`;
    return failure('prefix_diverges', `the run does not replay up to step ${n}: ${why}`, n);
  }
  const at = reached;
  // What the recording holds after the fork point: its records from the first event after step N's end.
  const forkLine = read.eventLines[through ?? at.events] ?? Number.POSITIVE_INFINITY;
  const firstAfter = read.llm.findIndex((r) => r.line > forkLine);
  const after = firstAfter < 0 ? read.llm.length : firstAfter;
  const recorded = {
    llm: read.llm.slice(after).map((r) => r.record),
    requests: read.requests.slice(after),
    tools: read.tools.filter((r) => r.line > forkLine).map((r) => r.record),
  };

  // The fork point, edited: a run that ended at this step's end (a stop) goes on from it.
  const { thread } = at.step.state;
  const lifecycle = at.step.state.run.extensions[RunLifecycle.key] as { run_id: string; status: string; updated_at: number; step_count: number } | undefined;
  if (lifecycle?.status === 'waiting')
    return failure('cannot_run', `step ${n} ends with the run waiting for a decision: a fork goes on from a step the run went on from`, n);
  const run: PersistedState =
    lifecycle?.status === 'done'
      ? {
          revision: at.step.state.run.revision,
          extensions: {
            ...at.step.state.run.extensions,
            // A stop ends its step without counting it: the run goes on after the step it ended.
            [RunLifecycle.key]: { run_id: lifecycle.run_id, status: 'running', updated_at: lifecycle.updated_at, step_count: at.step.steps },
          },
        }
      : at.step.state.run;
  const point = {
    agent: header.agent as unknown as JsonValue,
    messages: at.step.messages as unknown as JsonValue,
    state: { ...thread.extensions, ...run.extensions } as JsonValue,
    plugins: header.plugins as unknown as JsonValue,
  };
  const doc = structuredClone(point) as { [k: string]: JsonValue };
  for (const edit of options.edits ?? []) {
    if (edit.path === '/state' || edit.path.startsWith('/state/__runtime.'))
      return failure(
        'invalid_edit',
        `${edit.path}: the runtime's own state is where the fork goes on from, not an edit (edit a key of a plugin's, /state/<key>)`,
      );
    const problem = applyEdit(doc, edit);
    if (problem !== undefined) return failure('no_such_field', problem);
  }
  const edited = EditedPointSchema.safeParse(doc);
  if (!edited.success) {
    const issue = edited.error.issues[0] as z.ZodIssue;
    return failure('invalid_edit', `/${issue.path.join('/')}: ${issue.message}`);
  }
  const forked = edited.data;
  if (forked.agent.id !== header.agent.id) return failure('invalid_edit', `/agent/id: a fork runs the same agent (${header.agent.id})`);
  if (forked.agent.delegates.length > 0) return failure('invalid_edit', '/agent/delegates: a fork runs no sub-runs (they would not be recorded to go on from)');
  const threadKeys = new Set(Object.keys(thread.extensions));
  const threadState: PersistedState = { revision: thread.revision, extensions: {} };
  const runState: PersistedState = { revision: run.revision, extensions: {} };
  for (const [key, value] of Object.entries(forked.state))
    ((threadKeys.has(key) ? threadState : runState).extensions as Record<string, JsonValue>)[key] = value;

  // The rest of the run, recorded.
  const code = findCode(forked.plugins, header.stop_policies, codeOf(options));
  if (!code.ok) return failure('cannot_run', missingMessage(code.missing));
  const made = makePlugins(code.plugins);
  if (!made.ok) return failure('cannot_run', made.message);
  const log = new TranscriptLog();
  const env = withIdPrefix(deterministicEnv({ start: read.clock + 1, tick: 1 }), 'fork-');
  const suffix = new Suffix(recorded, n, options);
  const builder = new AgentRuntimeBuilder().withEnv(recordingEnv(env, log)).withAgentSpec(forked.agent);
  for (const [id, model] of Object.entries(header.models)) builder.withModel(id, model);
  for (const provider of new Set(Object.values(header.models).map((m) => m.provider))) builder.withProvider(provider, recordingLlm(suffix.llm(provider), log));
  for (const descriptor of header.tools) builder.withTool(recordingTool(suffix.tool(descriptor), log));
  for (const plugin of made.plugins) builder.withPlugin(plugin.name, plugin);
  for (const policy of code.stopPolicies) builder.withStopPolicy(policy);
  if (header.circuit_breaker !== undefined) builder.withCircuitBreaker(header.circuit_breaker as never);
  const thread0 = at.threadId ?? '';
  const run0 = at.runId ?? '';
  const store = new MemoryThreadRunStore();
  store.threads.set(thread0, { messages: [...forked.messages], threadState });
  builder.withThreadRunStore({
    loadThread: (id) => store.loadThread(id),
    checkpoint: (c) => store.checkpoint(c),
    loadRunState: (id) => Promise.resolve(id === run0 ? runState : undefined),
  });
  const built = builder.buildUnchecked();
  if (!built.ok) return failure('cannot_run', `cannot build the runtime: ${messageOf(built.error)}`);

  const base = {
    agent: forked.agent,
    models: header.models,
    tools: header.tools,
    plugins: forked.plugins,
    stop_policies: header.stop_policies,
    ...(header.circuit_breaker !== undefined ? { circuit_breaker: header.circuit_breaker } : {}),
  };
  log.push({
    type: 'header',
    format: TRANSCRIPT_FORMAT,
    config_digest: configDigest(base as Header),
    ...base,
    ...(header.app !== undefined ? { app: header.app } : {}),
    fork: { parent: options.parentName ?? 'parent', parent_digest: transcriptDigest(parent), at_step: n },
    env: { kind: 'recorded' },
    request: {
      thread_id: thread0,
      run_id: run0,
      ...(header.request.owner !== undefined ? { owner: header.request.owner } : {}),
      agent_id: forked.agent.id,
      messages: [],
      history: forked.messages,
      thread_state: threadState,
      run_state: runState,
      recovered: true,
    },
  });
  const controller = new AbortController();
  const sink = {
    emit: (e: AgentEvent) => {
      log.event(e);
      suffix.saw(e);
    },
  };
  suffix.abort = () => controller.abort();
  // A segment taken up from the store waits for decisions, as its replay does; none comes, so a run
  // that parks is let go there and the child ends suspended.
  const started = await built.value.recover({ threadId: thread0, runId: run0, agentId: forked.agent.id }, sink, {
    signal: controller.signal,
    waitForDecisions: true,
  });
  if (!started.ok) {
    const refused = refusedKey(started.error);
    if (refused !== undefined) return failure('invalid_edit', `/state/${refused.key}: the key does not take this value: ${refused.why}`);
    return failure('cannot_run', `cannot take the run up: ${messageOf(started.error)}`);
  }
  const handle = started.value;
  void handle.parked().then((parked) => parked && handle.detach());
  const result = await handle.done;
  if (suffix.stopped !== undefined) return { ok: false, error: suffix.stopped };
  log.push(endRecordOf(result, handle.messages()));
  return {
    ok: true,
    transcript: log.text(),
    result,
    point: forked as ForkPoint,
    eventsBefore: at.events,
    inferences: { recorded: suffix.recorded, model: suffix.answeredByModel },
  };
}

/** A state key that refused its value when the run was taken up (an edit of `/state`), and the first reason its codec gave. */
function refusedKey(error: unknown): { readonly key: string; readonly why: string } | undefined {
  const e = error as { code?: unknown; error?: { code?: unknown; key?: unknown; message?: unknown } };
  if (e.code !== 'state' || e.error?.code !== 'key_decode' || typeof e.error.key !== 'string') return undefined;
  const message = typeof e.error.message === 'string' ? e.error.message : '';
  let why = message;
  try {
    // A codec's zod issues, as the state store words them: the first one says enough.
    const issues = JSON.parse(message) as { message?: unknown }[];
    if (typeof issues[0]?.message === 'string') why = issues[0].message;
  } catch {
    // Not zod's: the message as it is.
  }
  return { key: e.error.key, why: why.split('\n')[0] as string };
}

const codeOf = (options: ForkOptions): CodeOptions => ({
  ...(options.stopPolicies !== undefined ? { stopPolicies: options.stopPolicies } : {}),
  ...(options.plugins !== undefined ? { plugins: options.plugins } : {}),
  ...(options.app !== undefined ? { app: options.app } : {}),
});

const EditedPointSchema = z.object({
  agent: AgentSpecSchema,
  messages: z.array(MessageSchema),
  state: z.record(
    z.string(),
    z.custom<JsonValue>(() => true),
  ),
  plugins: z.array(PluginEntrySchema),
});

/** A runtime error's own words where it has them, else the error as JSON. */
const messageOf = (error: unknown): string =>
  typeof (error as { message?: unknown }).message === 'string' ? (error as { message: string }).message : JSON.stringify(error);

/** Sets the value at `edit.path` in `doc`, or says which part of the path is not there. */
function applyEdit(doc: { [k: string]: JsonValue }, edit: ForkEdit): string | undefined {
  if (!edit.path.startsWith('/')) return `${edit.path}: a path into the fork point starts with / (/agent, /messages, /state, /plugins)`;
  const keys = edit.path
    .slice(1)
    .split('/')
    .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
  let node: JsonValue = doc;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const here = `/${keys.slice(0, i + 1).join('/')}`;
    const last = i === keys.length - 1;
    if (Array.isArray(node)) {
      if (last && key === '-') {
        node.push(edit.value);
        return undefined;
      }
      const index = /^(0|[1-9]\d*)$/.test(key) ? Number(key) : -1;
      if (index < 0 || index >= node.length) return `${edit.path}: the fork point has no ${here} (${node.length} item(s))`;
      if (last) node[index] = edit.value;
      else node = node[index] as JsonValue;
    } else if (node !== null && typeof node === 'object' && Object.hasOwn(node, key)) {
      if (last) node[key] = edit.value;
      else node = node[key] as JsonValue;
    } else return `${edit.path}: the fork point has no ${here}`;
  }
  return undefined;
}
