// One file past 500 lines: the replaying ports (env, llm, tool) are methods of `ReplaySession`,
// sharing its private record queues and line map with `replayTranscript`, which drives them.
import type { JsonValue } from '../contract/json.ts';
import type { AgentSpec } from '../contract/agent-spec.ts';
import type { ToolRecoveryCapability } from '../contract/tool-recovery.ts';
import { ToolExecutionConfigKey, ToolExecutionSchema } from '../runtime/resolve.ts';
import { unreachable } from '../contract/never.ts';
import type { TerminationReason } from '../contract/lifecycle.ts';
import { serialiseEvent, type AgentEvent } from '../contract/event.ts';
import type { StreamPart } from '../contract/stream.ts';
import { ToolCallResumeSchema } from '../contract/tool.ts';
import type { AgentRunResult } from '../contract/run-result.ts';
import { AgentRuntimeBuilder, type RunHandle } from '../runtime/agent-runtime.ts';
import { DELEGATION_CATEGORY, delegateToolId } from '../runtime/delegation.ts';
import { MemoryThreadRunStore } from '../runtime/thread-run-store.ts';
import { deterministicEnv, type Env, type IdKind } from '../runtime/env.ts';
import { InferenceFailure, type InferenceRequest, type LlmExecutor } from '../runtime/llm.ts';
import type { Tool } from '../runtime/tool.ts';
import type { RunTap } from '../runtime/tap.ts';
import { andThen } from '../runtime/maybe-promise.ts';
import { jsonChanges, renderChanges } from './json-diff.ts';
import { recordedOutcome, reportAgain } from './recorded-call.ts';
import { recordingEnv, recordingLlm, recordingTool } from './recorder.ts';
import { cancelledAlike, historyDivergence, sameEvent, withBothSides } from './history.ts';
import { RecordQueue } from './record-queue.ts';
import { StrictLog } from './strict-log.ts';
import { type Migrated, migrate, MigrationFailure, olderFormat, TRANSCRIPT_FORMAT_1 } from './migrate.ts';
import { findCode, makePlugins, missingMessage, type CodeOptions, type MissingCode } from './plugins.ts';
import {
  clientInputsOf,
  configDigest,
  applyDeltas,
  chainDigestIn,
  decisionFieldProblem,
  decisionOf,
  endRecordOf,
  normaliseRequest,
  RequestChain,
  SuspensionModes,
  type RequestDelta,
  readLine,
  readTranscript,
  TRANSCRIPT_FORMAT,
  type CancelRecord,
  type DecisionRecord,
  type EnvRecord,
  type Header,
  type LlmRecord,
  type NormalisedRequest,
  type PluginEntry,
  PluginEntrySchema,
  type ReadLine,
  type EndRecord,
  type AskRecord,
  type ToolRecord,
} from './transcript.ts';
import { whereInEvents } from './side-by-side.ts';

export { whereInEvents };

/** Where a replay first left the recording, at a port. */
export interface PortDivergence {
  readonly port: 'transcript' | 'env' | 'llm' | 'tool' | 'decision' | 'cancel' | 'end' | 'event';
  readonly message: string;
  readonly diff?: readonly string[];
  /**
   * Where the history itself differs (a record missing, one more, two in another order): the
   * transcript's line there (absent past its end) and what the replay has there (absent when it had
   * ended before it).
   */
  readonly recorded?: string;
  readonly replayed?: string;
  /** Events the replay had emitted when it left the recording: from this index on nothing is trusted. */
  readonly atEvent: number;
  /** The transcript line (1-based) of the record the port was reading, when there was one. */
  readonly line?: number;
  /**
   * The replay could not run the transcript at all (it does not read, names code that is not there
   * or cannot be built, or the run could not start or threw): nothing about the run was compared.
   */
  readonly unreplayable?: true;
  /**
   * What kind of difference it is, where the message alone would have to be read for it (the
   * upgrade gate classes divergences by it): a record that does not read, a missing end record, an
   * inference request or a call's arguments that changed, a call the recording never made, a result
   * that ended otherwise (`fields`: which of its fields differ).
   */
  readonly kind?: DivergenceKind;
  readonly fields?: readonly string[];
}

export type DivergenceKind = 'unreadable_record' | 'no_end_record' | 'request_changed' | 'arguments_changed' | 'call_not_recorded' | 'result_changed';

/** A place in the transcript: a line and the type of the record on it. */
export interface TranscriptPlace {
  readonly line: number;
  readonly record: string;
}

/** The result of replaying one transcript. */
export interface ReplayReport {
  readonly identical: boolean;
  readonly expectedEvents: number;
  readonly actualEvents: number;
  readonly firstDifference?: { readonly index: number; readonly expected?: string; readonly actual?: string; readonly diff: readonly string[] };
  readonly divergence?: PortDivergence;
  /** Where the replay first left the recording: the line of the port's record, else of the first differing event. */
  readonly at?: TranscriptPlace;
  readonly termination?: TerminationReason;
  /** How the replayed run ended: its result and the thread's messages, as an `end` record. */
  readonly end?: EndRecord;
  /** The plugin or stop policy the header names that the replay was not given (it failed at line 1 then, naming it). */
  readonly missing?: MissingCode;
  /**
   * The older format the transcript was written in, when it was migrated before its replay: an
   * identical replay of it re-recorded the migrated text, so the file itself is not that re-recording.
   */
  readonly migratedFrom?: string;
}

/** Where to find the header's code (`CodeOptions`: the app, stop policies and catalog instances), and how to read the transcript. */
export interface ReplayOptions extends CodeOptions {
  /**
   * Replay a transcript that has no `end` record (one migrated from format 1): how the run ended is
   * not compared, only returned in the report. Off by default: a missing `end` record is a divergence.
   */
  readonly withoutEndRecord?: boolean;
  /** Whether the run waited for decisions, for a transcript that says so (format 1); derived from the records otherwise. */
  readonly waitForDecisions?: boolean;
  /**
   * The agent as it is now, to replay with in place of the one the header recorded (the upgrade
   * gate's: a changed prompt or config is what it looks for). Its id must be the header's agent's.
   */
  readonly agent?: AgentSpec;
  /** A tap on the replayed run (`RunOptions.tap`): it watches, and the replay is the same with it. */
  readonly tap?: RunTap;
}

type Corrupt = { readonly corrupt: string; readonly line: number };
const isCorrupt = (x: unknown): x is Corrupt => typeof x === 'object' && x !== null && 'corrupt' in x;

/** What a model's stream writes before its response: the events of its parts, and a cancel among them. */
const STREAMED =
  /^\{"type":"cancel"|^\{"type":"event","seq":\d+,"event":\{"event_type":"(?:text_delta|reasoning_delta|reasoning_encrypted_value|tool_call_start|tool_call_delta)"/;
const INFERENCE_COMPLETE = /^\{"type":"event","seq":\d+,"event":\{"event_type":"inference_complete"/;
/** What a tool call writes before its outcome: the events of the activity it reports (those naming the call). */
const ACTIVITY = /^\{"type":"event","seq":\d+,"event":\{"event_type":"(?:activity_snapshot|activity_delta|tool_call_stream_delta)"/;
const RECORD_TYPES: ReadonlySet<string> = new Set(['header', 'env', 'llm', 'tool', 'ask', 'decision', 'cancel', 'event', 'end']);
const EVENT_LINE = /^\{"type":"event","seq":\d+,"event":(.*)\}$/;
const CANONICAL_EVENT_LINE = /^\{"type":"event","seq":(0|[1-9]\d{0,14}),"event":(\{.*\})\}$/;

/** An `event` line of the event form, taken as it is: its JSON is read only if asked for. */
class EventLine {
  readonly type = 'event' as const;
  readonly seq: number;
  /** The event's JSON as the line has it. */
  readonly payload: string;

  constructor(seq: number, payload: string) {
    this.seq = seq;
    this.payload = payload;
  }

  get event(): JsonValue {
    return JSON.parse(this.payload) as JsonValue;
  }
}

/**
 * An `end` line, taken as it is: the line a replay ends with is compared with it as a line, and its
 * record is read only if asked for (`ReplaySession.#endRecord`).
 */
class EndLine {
  readonly type = 'end' as const;
  readonly text: string;
  readonly line: number;

  constructor(text: string, line: number) {
    this.text = text;
    this.line = line;
  }
}

/**
 * A line as `readLine` reads it but for an `event` or an `end` line, each compared byte for byte with
 * what the replay writes in its place (always canonical JSON): an event line's payload with the event
 * the replayed run emits, an end line with the replay's own end line. Either is taken as it is — an
 * edited one differs there — and read through its schema only if asked for.
 */
function readReplayLine(t: string, line: number): ReadLine {
  if (t.startsWith('{"type":"end",')) {
    // Typed by its JSON, as any line is (a later "type" key wins); its record is read through the
    // schema only when asked (`ReplaySession.#endRecord`).
    let json: unknown;
    try {
      json = JSON.parse(t);
    } catch {
      return readLine(t, line);
    }
    if ((json as { readonly type?: unknown }).type === 'end') return { line, text: t, ok: true, record: new EndLine(t, line) as unknown as EndRecord };
    return readLine(t, line);
  }
  const m = CANONICAL_EVENT_LINE.exec(t);
  if (m === null) return readLine(t, line);
  return { line, text: t, ok: true, record: new EventLine(Number(m[1]), m[2] as string) };
}

/**
 * The plugin or stop policy a transcript's header names that `options` do not give, read from its
 * first line alone (any format) without running anything — what `replayTranscript` would fail at
 * line 1 with — and the message it would fail with. Undefined when nothing is missing, or when the
 * first line is no header (the replay says what it is).
 */
export function missingCode(text: string, options: CodeOptions): (MissingCode & { readonly message: string }) | undefined {
  const first = text.split('\n', 1)[0] ?? '';
  let header: unknown;
  try {
    header = JSON.parse(first);
  } catch {
    return undefined;
  }
  if (typeof header !== 'object' || header === null || (header as { type?: unknown }).type !== 'header') return undefined;
  const { plugins, stop_policies: policies } = header as { plugins?: unknown; stop_policies?: unknown };
  // Before format 6 a plugin is its id; an entry of no known shape is the replay's to report.
  const entries = (Array.isArray(plugins) ? plugins : []).flatMap((p): PluginEntry[] => {
    const parsed = PluginEntrySchema.safeParse(typeof p === 'string' ? { id: p } : p);
    return parsed.success ? [parsed.data] : [];
  });
  const ids = (Array.isArray(policies) ? policies : []).filter((p): p is string => typeof p === 'string');
  const code = findCode(entries, ids, options);
  return code.ok ? undefined : { ...code.missing, message: missingMessage(code.missing) };
}

/** Replays a transcript: rebuilds the runtime from its header, feeds the recorded inputs, compares the events byte for byte. */

/**
 * What the recorded tools said of their recovery, as far as the run depends on it: the recording
 * checked the agent's `tool_execution.recovery` against each tool, so a tool whose policy names a
 * mode other than `never_replay` had that capability; the others act the same under the default.
 */
function recoveryCapabilities(agent: AgentSpec): ReadonlyMap<string, ToolRecoveryCapability> {
  const read = ToolExecutionSchema.safeParse(agent.sections[ToolExecutionConfigKey.key] ?? {});
  const capabilities = new Map<string, ToolRecoveryCapability>();
  if (!read.success) return capabilities;
  for (const [id, policy] of Object.entries(read.data.recovery ?? {})) if (policy.mode !== 'never_replay') capabilities.set(id, policy.mode);
  return capabilities;
}

export async function replayTranscript(text: string, options: ReplayOptions = {}): Promise<ReplayReport> {
  // An older transcript is brought up to date first; one that cannot be is reported where it fails.
  const older = olderFormat(text);
  if (older === undefined) return replayCurrent(text, options);
  let migrated: Migrated;
  try {
    migrated = migrate(text);
  } catch (e) {
    if (!(e instanceof MigrationFailure)) throw e;
    return {
      identical: false,
      expectedEvents: 0,
      actualEvents: 0,
      divergence: { port: 'transcript', message: `cannot migrate this ${older} transcript: ${e.message}`, atEvent: 0, line: e.line, unreplayable: true },
      at: { line: e.line, record: /"type":"([a-z]+)"/.exec(text.split('\n')[e.line - 1] ?? '')?.[1] ?? 'unknown' },
      migratedFrom: older,
    };
  }
  const formatOne = older === TRANSCRIPT_FORMAT_1 ? { withoutEndRecord: true, waitForDecisions: migrated.waitForDecisions === true } : {};
  // Its replay re-records the migrated text, not the file's bytes: the report says which format it was read as.
  return { ...(await replayCurrent(migrated.text, { ...options, ...formatOne })), migratedFrom: older };
}

async function replayCurrent(text: string, options: ReplayOptions): Promise<ReplayReport> {
  const lines = readTranscript(text, readReplayLine);
  // An end line where the header should be is reported as it reads.
  const head = lines[0];
  const first = head?.ok === true && head.record instanceof EndLine ? readLine(head.text, head.line) : head;
  if (first === undefined || !first.ok || first.record.type !== 'header') {
    const reason =
      first === undefined
        ? 'the transcript is empty'
        : first.ok
          ? `line 1 is a ${first.record.type} record, not the header`
          : `line 1 is not a header: ${first.reason}`;
    return {
      identical: false,
      expectedEvents: 0,
      actualEvents: 0,
      divergence: { port: 'transcript', message: `${reason} (expected format ${TRANSCRIPT_FORMAT})`, atEvent: 0, line: 1, unreplayable: true },
      at: { line: 1, record: 'header' },
    };
  }
  const header = first.record as Header;
  const session = new ReplaySession(lines.slice(1), first.line);
  if (configDigest(header) !== header.config_digest) {
    session.problems.unshift({
      message: 'line 1: the header does not match its config_digest (agent, models, tools, plugins, stop policies or circuit breaker edited)',
      atEvent: 0,
      line: 1,
    });
  }
  const expected = session.expectedEvents;

  let divergence: PortDivergence | undefined;
  const actual: string[] = [];
  const diverge = (d: Omit<PortDivergence, 'atEvent'>): void => {
    divergence ??= { ...d, atEvent: actual.length };
  };
  /** A record's line (the header's when it has none). */
  const lineOf = (r: object): number => session.lineOf(r).line ?? 1;
  // What the replay writes, beside the transcript: the first line where they differ is where its history changed.
  let historyFirst = false;
  const strict = new StrictLog(
    // An event line is taken as it is (`readReplayLine`), but no record is compared with one here:
    // events are written as they are emitted, not as records.
    lines.map((l) => ({ line: l.line, text: l.text, trusted: l.ok && !(l.record instanceof EndLine) })),
    (m) => {
      // An event that is there but says something else is the event comparison's to report.
      if (sameEvent(m)) return;
      historyFirst ||= divergence === undefined;
      diverge(historyDivergence(m));
    },
    (recorded, replayed) => recorded === replayed || cancelledAlike(recorded, replayed),
    new RequestChain(session.digests),
  );
  session.strict = strict;
  /**
   * Delivers a recorded decision or cancel: written as the transcript has it. A cancel comes at any
   * moment after its event (a served one when the client sends it), so what the run does before it
   * notices — draws, a call's outcome, a response, but no event — may be written first.
   */
  const delivered = (r: DecisionRecord | CancelRecord): void => {
    const line = session.lineOf(r).line;
    const text = (line !== undefined ? strict.textAt(line) : undefined) ?? JSON.stringify(r);
    if (r.type === 'cancel') strict.rawAt(line, text, (t) => /^\{"type":"(?:env|tool|ask|llm)"/.test(t));
    else strict.raw(text);
  };
  if (header.request.run_state === undefined) {
    // A run that starts emits `run_start` before anything can decide or cancel it.
    const early = [...session.decisions, ...session.cancels].filter((r) => r.after_event === 0).sort((a, b) => lineOf(a) - lineOf(b))[0];
    if (early !== undefined)
      diverge({
        port: early.type,
        message: `a ${early.type} before any event, but only a segment taken up from the store (request.run_state) has one`,
        line: lineOf(early),
      });
  } else if (header.request.messages.length > 0 || header.request.overrides !== undefined || Object.keys(clientInputsOf(header.request)).length > 0) {
    // Revived, a run reads no input (its client's tools are in its run state): what the header says
    // it was given would go unchecked.
    diverge({
      port: 'transcript',
      message:
        'a segment taken up from the store (request.run_state) has no input of its own: its messages are [] and it has no overrides, client tools, client state or client context',
      line: 1,
    });
  }

  if (options.agent !== undefined && options.agent.id !== header.agent.id)
    return {
      identical: false,
      expectedEvents: expected.length,
      actualEvents: 0,
      divergence: {
        port: 'transcript',
        message: `the run's agent is '${header.agent.id}', not '${options.agent.id}'`,
        atEvent: 0,
        line: 1,
        unreplayable: true,
      },
      at: { line: 1, record: 'header' },
    };
  const agent = options.agent ?? header.agent;
  // The model is asked by its provider too, which a request's digest does not cover: an agent that
  // names another model is asked something else from its first request on.
  const model = (a: AgentSpec): string => {
    const m = header.models[a.model];
    return m === undefined ? `'${a.model}'` : `'${a.model}' (${m.provider}/${m.model_name})`;
  };
  if (model(agent) !== model(header.agent))
    diverge({
      port: 'llm',
      kind: 'request_changed',
      message: `request #1 no longer matches the recording: model changed, ${model(header.agent)} → ${model(agent)}`,
      line: 1,
    });
  const builder = new AgentRuntimeBuilder().withEnv(recordingEnv(session.env(diverge, header.env), strict)).withAgentSpec(agent);
  for (const [id, model] of Object.entries(header.models)) {
    builder.withModel(id, model);
  }
  for (const provider of new Set(Object.values(header.models).map((m) => m.provider)))
    builder.withProvider(provider, recordingLlm(session.llm(provider, diverge), strict));
  // A delegation tool answers from its records too: the sub-run behind it is not run again.
  const delegated = new Map(agent.delegates.map((id) => [delegateToolId(id), id] as const));
  const standIns = new Map<string, Tool>();
  const recovery = recoveryCapabilities(agent);
  for (const descriptor of header.tools) {
    const delegate = descriptor.category === DELEGATION_CATEGORY ? delegated.get(descriptor.id) : undefined;
    const tool = session.tool(descriptor, diverge);
    const capability = recovery.get(descriptor.id);
    const replayed = recordingTool(capability === undefined ? tool : { ...tool, recovery: capability }, strict);
    if (delegate !== undefined) standIns.set(delegate, replayed);
    else builder.withTool(replayed);
  }
  if (standIns.size > 0) builder.withDelegation({ standIns });
  // The header's code: plugins and stop policies from the catalog, the options and the app; what is
  // missing, or what a factory will not make again, fails the replay at the header.
  const atHeader = (message: string, missing?: MissingCode): ReplayReport => ({
    identical: false,
    expectedEvents: expected.length,
    actualEvents: 0,
    divergence: { port: 'transcript', message, atEvent: 0, line: 1, unreplayable: true },
    at: { line: 1, record: 'header' },
    ...(missing !== undefined ? { missing } : {}),
  });
  const code = findCode(header.plugins, header.stop_policies, options);
  if (!code.ok) return atHeader(missingMessage(code.missing), code.missing);
  const made = makePlugins(code.plugins);
  if (!made.ok) return atHeader(made.message);
  for (const plugin of made.plugins) builder.withPlugin(plugin.name, plugin);
  for (const policy of code.stopPolicies) builder.withStopPolicy(policy);
  if (header.circuit_breaker !== undefined) builder.withCircuitBreaker(header.circuit_breaker as never);
  // A run that loaded a thread from its store loads the same thread from one holding it; a segment
  // taken up from the store finds its run's state there too.
  const resumed = header.request.run_state;
  if (header.request.history !== undefined || header.request.thread_state !== undefined || resumed !== undefined) {
    const store = new MemoryThreadRunStore();
    store.threads.set(header.request.thread_id ?? '', {
      messages: header.request.history ?? [],
      ...(header.request.thread_state !== undefined ? { threadState: header.request.thread_state } : {}),
    });
    builder.withThreadRunStore(
      resumed === undefined
        ? store
        : {
            loadThread: (id) => store.loadThread(id),
            checkpoint: (c) => store.checkpoint(c),
            loadRunState: (runId) => Promise.resolve(runId === header.request.run_id ? resumed : undefined),
          },
    );
  }
  const built = builder.buildUnchecked();
  if (!built.ok)
    return {
      identical: false,
      expectedEvents: expected.length,
      actualEvents: 0,
      divergence: { port: 'transcript', message: `cannot rebuild the runtime: ${JSON.stringify(built.error)}`, atEvent: 0, line: 1, unreplayable: true },
      at: { line: 1, record: 'header' },
    };
  const runtime = built.value;

  // A segment taken up from the store is parked from its start: it waits for decisions.
  const wait = resumed !== undefined || (options.waitForDecisions ?? session.waitsForDecisions);
  const controller = new AbortController();
  const decisions = [...session.decisions];
  const cancels = [...session.cancels];
  const modes = new SuspensionModes();
  let finished = false;
  /** Gives the parked run its next recorded decision, or lets it go, or says why it cannot. */
  const deliver = (handle: RunHandle): void => {
    if (finished) return;
    const next = decisions[0];
    if (next === undefined) {
      // Let go while parked once every recorded event was out (a reload, a shutdown): the recording
      // ends here, suspended, and so does the replay.
      if (session.endsSuspended && actual.length === expected.length && handle.detach()) return;
      diverge({
        port: 'decision',
        message: `the run waits for a decision ${whereInEvents(actual.length)} that the transcript does not have`,
        ...session.lastLine(),
      });
      controller.abort();
      return;
    }
    if (next.after_event !== actual.length) {
      // The run is parked and emits nothing more until it is answered: a decision recorded at
      // another point can never be delivered where it was.
      diverge({
        port: 'decision',
        message: `the run waits for a decision ${whereInEvents(actual.length)}, the next recorded decision came ${whereInEvents(next.after_event)}`,
        ...session.lineOf(next),
      });
      controller.abort();
      return;
    }
    decisions.shift();
    delivered(next);
    // The calls it waits on say how each keeps its decision (a revived run emitted none of their events).
    modes.noteWaiting(handle.waitingOn());
    // A decision writes its id and time exactly where the call it answers keeps them.
    for (const d of next.decisions) {
      const problem = decisionFieldProblem(d.decision, modes.of(d.target_id));
      if (problem === undefined) continue;
      diverge({ port: 'decision', message: `the decision for ${d.target_id} ${problem}`, ...session.lineOf(next) });
      controller.abort();
      return;
    }
    const r = handle.decide(next.decisions.map((d) => ({ targetId: d.target_id, decision: decisionOf(d.decision) })));
    if (!r.ok) {
      diverge({
        port: 'decision',
        message: `the recorded decision ${whereInEvents(next.after_event)} does not apply: ${JSON.stringify(r.error)}`,
        ...session.lineOf(next),
      });
      controller.abort();
      return;
    }
    // A cancel recorded after this decision with no event between came before the run woke up to it.
    const cancel = cancels[0];
    if (cancel !== undefined && cancel.after_event === actual.length && lineOf(cancel) < (decisions[0] !== undefined ? lineOf(decisions[0]) : Infinity)) {
      cancels.shift();
      delivered(cancel);
      controller.abort();
      return;
    }
    // A decision that leaves the run waiting (it answered only some calls, or none) emits nothing: the
    // next recorded decision is due at the same point, and without one the replay stops, never hangs.
    // One that resumes it emits events first, and its next `run_finish` brings the next decision.
    whenParked(actual.length);
  };

  /**
   * Delivers once the run has parked with no event since the `at`-th (it parks just after its
   * `run_finish{suspended}`, and after taking a decision that leaves calls waiting). The handle is
   * awaited: a run's first segment may end before `start` has handed it back.
   */
  const whenParked = (at: number): void => {
    void starting.then(async (s) => {
      if (s.ok && (await s.value.parked()) && actual.length === at) deliver(s.value);
    });
  };

  const sink = {
    emit: (event: AgentEvent) => {
      const payload = serialiseEvent(event);
      actual.push(payload);
      strict.event(event, payload);
      modes.note(event);
      // One cancel stops the run: a second one recorded is one it never reached.
      if (cancels[0] !== undefined && cancels[0].after_event <= actual.length && !controller.signal.aborted) {
        delivered(cancels.shift() as CancelRecord);
        controller.abort();
      }
      if (event.event_type === 'run_finish' && event.termination.type === 'suspended' && wait) whenParked(actual.length);
    },
  };
  const recovered = resumed !== undefined && header.request.recovered === true;
  const tapOption = options.tap !== undefined ? { tap: options.tap } : {};
  const starting = recovered
    ? runtime.recover({ threadId: header.request.thread_id ?? '', runId: header.request.run_id ?? '', agentId: header.request.agent_id }, sink, {
        signal: controller.signal,
        waitForDecisions: wait,
        ...tapOption,
      })
    : resumed !== undefined
      ? runtime.revive({ threadId: header.request.thread_id ?? '', runId: header.request.run_id ?? '', agentId: header.request.agent_id }, sink, {
          signal: controller.signal,
          ...tapOption,
        })
      : runtime.start(
          {
            ...(header.request.thread_id !== undefined ? { threadId: header.request.thread_id } : {}),
            ...(header.request.run_id !== undefined ? { runId: header.request.run_id } : {}),
            agentId: header.request.agent_id,
            messages: header.request.messages,
            ...(header.request.overrides !== undefined ? { overrides: header.request.overrides } : {}),
            ...clientInputsOf(header.request),
          },
          sink,
          { signal: controller.signal, waitForDecisions: wait, ...tapOption },
        );
  const started = await starting;
  if (started.ok && resumed !== undefined && !recovered) {
    // Parked from its start, and silent until its first decision (or a cancel recorded before any event).
    const revived = started.value;
    void revived.parked().then((parked) => {
      const cancel = cancels[0];
      // Cancelled before any event — and before any decision recorded ahead of the cancel.
      if (cancel?.after_event === 0 && (decisions[0]?.after_event !== 0 || lineOf(cancel) < lineOf(decisions[0]))) {
        cancels.shift();
        delivered(cancel);
        controller.abort();
      } else if (parked) deliver(revived);
    });
  }
  if (!started.ok) {
    return {
      identical: false,
      expectedEvents: expected.length,
      actualEvents: 0,
      divergence: { port: 'transcript', message: `cannot start the run: ${JSON.stringify(started.error)}`, atEvent: 0, line: 1, unreplayable: true },
      at: { line: 1, record: 'header' },
    };
  }
  let result: AgentRunResult | undefined;
  try {
    result = await started.value.done;
  } catch (e) {
    diverge({ port: 'transcript', message: `the replayed run failed: ${e instanceof Error ? e.message : String(e)}`, unreplayable: true });
  }
  finished = true;
  const termination = result?.termination;
  if (!wait && termination?.type === 'suspended' && actual.length < expected.length) {
    // No record answers the suspension, so the run was not started waiting; the recording goes on.
    diverge({
      port: 'decision',
      message: `the run waits for a decision ${whereInEvents(actual.length)} that the transcript does not have`,
      line: session.eventLine(actual.length),
    });
  }
  const cancel = cancels[0];
  if (cancel !== undefined)
    diverge({
      port: 'cancel',
      message: `the run ended after ${actual.length} event(s), before the recorded cancel ${whereInEvents(cancel.after_event)}`,
      ...session.lineOf(cancel),
    });
  if (decisions.length > 0)
    diverge({ port: 'decision', message: `${decisions.length} recorded decision(s) were never asked for`, ...session.lineOf(decisions[0] as DecisionRecord) });
  const end = result === undefined ? undefined : endRecordOf(result, started.value.messages());
  // The schema's own output, just made: its JSON is the line recording writes for it.
  const endLine = end === undefined ? undefined : JSON.stringify(end);
  session.checkEnd(end, endLine, options.withoutEndRecord === true, diverge);
  if (endLine !== undefined && options.withoutEndRecord !== true) strict.raw(endLine);
  strict.finish();
  if (strict.mismatch !== undefined) session.checkDigests();
  session.finish(header.env);

  // A record that contradicts itself (a seq, a digest) is reported when the run diverged nowhere else,
  // or left the history different first there or after: it says more than the line that differs.
  const problem = session.problems[0];
  const unexplained =
    divergence === undefined || (historyFirst && problem !== undefined && (problem.line ?? 0) <= (divergence.line ?? Number.POSITIVE_INFINITY));
  if (unexplained && problem !== undefined) divergence = { port: 'transcript', ...problem };
  divergence = divergence === undefined ? undefined : withBothSides(divergence, strict);
  // A history written again line for line holds the recorded events, each in its place.
  const firstDifference = strict.mismatch === undefined && actual.length === expected.length ? undefined : compareEvents(expected, actual);
  const at = session.place(divergence, firstDifference?.index);
  return {
    identical: firstDifference === undefined && divergence === undefined,
    expectedEvents: expected.length,
    actualEvents: actual.length,
    ...(firstDifference !== undefined ? { firstDifference } : {}),
    ...(divergence !== undefined ? { divergence } : {}),
    ...(at !== undefined ? { at } : {}),
    ...(termination !== undefined ? { termination } : {}),
    ...(end !== undefined ? { end } : {}),
  };
}

function compareEvents(expected: readonly string[], actual: readonly string[]): ReplayReport['firstDifference'] {
  const n = Math.max(expected.length, actual.length);
  for (let i = 0; i < n; i++) {
    const e = expected[i];
    const a = actual[i];
    if (e === a) continue;
    const parse = (s: string | undefined): JsonValue | undefined => {
      if (s === undefined) return undefined;
      try {
        return JSON.parse(s) as JsonValue;
      } catch {
        return s;
      }
    };
    const diff = renderChanges(jsonChanges(parse(e), parse(a)));
    return {
      index: i,
      ...(e !== undefined ? { expected: e } : {}),
      ...(a !== undefined ? { actual: a } : {}),
      diff: diff.length > 0 ? diff : [`- ${e ?? '(none)'}`, `+ ${a ?? '(none)'}`],
    };
  }
  return undefined;
}

/** Names what changed between a recorded and a new inference request. */
export function describeRequestChange(recorded: NormalisedRequest, now: NormalisedRequest): string {
  const what: string[] = [];
  const system = (r: NormalisedRequest): string => JSON.stringify(r.messages.filter((m) => m.role === 'system'));
  if (recorded.model !== now.model) what.push('model changed');
  if (system(recorded) !== system(now)) what.push('system prompt changed');
  if (recorded.messages.length !== now.messages.length) what.push(`${now.messages.length} messages instead of ${recorded.messages.length}`);
  else if (JSON.stringify(recorded.messages) !== JSON.stringify(now.messages) && !what.includes('system prompt changed')) what.push('messages changed');
  if (JSON.stringify(recorded.tools) !== JSON.stringify(now.tools)) what.push('tools changed');
  if (JSON.stringify(recorded.overrides) !== JSON.stringify(now.overrides)) what.push('overrides changed');
  return what.length > 0 ? what.join(', ') : 'request changed';
}

type Problem = Omit<PortDivergence, 'port'>;
type At = { readonly line?: number };

/** The recorded inputs of one transcript, handed out to the replaying ports in order. */
class ReplaySession {
  readonly expectedEvents: string[] = [];
  /** What the records say of themselves that does not hold (a seq, a digest): reported if the run itself diverges nowhere. */
  readonly problems: Problem[] = [];
  readonly decisions: DecisionRecord[] = [];
  readonly cancels: CancelRecord[] = [];
  readonly #env: (EnvRecord | Corrupt)[] = [];
  readonly #llm = new RecordQueue<LlmRecord | Corrupt>();
  readonly #tools = new RecordQueue<ToolRecord | Corrupt>();
  /** Tools' questions at the gate, in order (`ask` records). */
  readonly #asks: (AskRecord | Corrupt)[] = [];
  #end: EndRecord | Corrupt | EndLine | undefined;
  /** The recorded requests' changes (undefined for an unreadable one), what each was recorded under, and the replayed run's chain. */
  readonly #deltas: (RequestDelta | undefined)[] = [];
  readonly #requested: ({ readonly line: number; readonly n: number; readonly digest: string; readonly atEvent: number } | undefined)[] = [];
  /** Request digests taken, by the text they cover: for the replay's own chains too (`chainDigestIn`). */
  readonly digests = new Map<string, string>();
  readonly #requests = new RequestChain(this.digests);
  #ends = 0;
  /** The line of each record handed to a port, and of each event. */
  readonly #lines = new Map<object, number>();
  readonly #eventLines: number[] = [];
  /** The records after the header, as read (the type of the record on a line is looked up only for a report). */
  readonly #read: readonly ReadLine[];
  readonly #headerLine: number;
  #last = 1;
  #randomDraws = 0;
  /** What the replay writes, beside the transcript (set once the replay has it). */
  strict: StrictLog | undefined;

  constructor(lines: readonly ReadLine[], headerLine: number) {
    this.#read = lines;
    this.#headerLine = headerLine;
    for (const l of lines) {
      this.#last = l.line;
      if (!l.ok) {
        const corrupt = { corrupt: l.reason, line: l.line };
        if (l.type === 'event') {
          this.#eventLines.push(l.line);
          this.expectedEvents.push(EVENT_LINE.exec(l.text)?.[1] ?? l.text);
        } else if (l.type === 'env') this.#env.push(corrupt);
        else if (l.type === 'llm') {
          // What follows an unreadable request cannot be checked against it.
          this.#deltas.push(undefined);
          this.#requested.push(undefined);
          this.#llm.push(corrupt);
        } else if (l.type === 'tool') this.#tools.push(corrupt);
        else if (l.type === 'ask') this.#asks.push(corrupt);
        else if (l.type === 'end') this.#takeEnd(corrupt);
        else this.#env.push(corrupt);
        continue;
      }
      const r = l.record;
      if (r.type !== 'event') this.#lines.set(r, l.line);
      switch (r.type) {
        case 'event':
          if (r.seq !== this.expectedEvents.length)
            this.problems.push({
              message: `line ${l.line}: event seq ${r.seq}, but it is event #${this.expectedEvents.length}`,
              atEvent: this.expectedEvents.length,
              line: l.line,
            });
          this.#eventLines.push(l.line);
          this.expectedEvents.push(r instanceof EventLine ? r.payload : (EVENT_LINE.exec(l.text)?.[1] ?? JSON.stringify(r.event)));
          break;
        case 'env':
          this.#env.push(r);
          break;
        case 'llm': {
          const n = this.#llm.length + 1;
          if (r.seq !== n)
            this.problems.push({
              message: `line ${l.line}: inference seq ${r.seq}, but it is inference #${n}`,
              atEvent: this.expectedEvents.length,
              line: l.line,
            });
          this.#deltas.push(r.request);
          this.#requested.push({ line: l.line, n, digest: r.digest, atEvent: this.expectedEvents.length });
          this.#llm.push(r);
          break;
        }
        case 'tool':
          this.#tools.push(r);
          break;
        case 'ask':
          this.#asks.push(r);
          break;
        case 'decision':
          this.decisions.push(r);
          break;
        case 'cancel':
          this.cancels.push(r);
          break;
        case 'end':
          this.#takeEnd(r);
          break;
        case 'header':
          this.#env.push({ corrupt: 'a second header', line: l.line });
          break;
        default:
          unreachable(r, 'transcript record');
      }
    }
  }

  /**
   * Checks each recorded request against its digest, in the chain of the ones before it (an
   * unreadable one breaks the chain): a problem for each that does not match, placed among the
   * others in line order. Asked only where the history differs: a replay that wrote every line
   * again wrote each request and the digest of its chain as recorded, so they match.
   */
  checkDigests(): void {
    const found: Problem[] = [];
    let previous: string | null | undefined = null;
    for (let i = 0; i < this.#deltas.length; i++) {
      const delta = this.#deltas[i];
      const r = this.#requested[i];
      if (delta === undefined || r === undefined) {
        previous = undefined;
        continue;
      }
      if (previous !== undefined && chainDigestIn(this.digests, previous, delta) !== r.digest)
        found.push({ message: `line ${r.line}: the recorded request of inference #${r.n} does not match its digest`, atEvent: r.atEvent, line: r.line });
      previous = r.digest;
    }
    if (found.length === 0) return;
    // After every problem found on its line or before (a request's seq is checked first).
    const merged: Problem[] = [];
    let j = 0;
    for (const p of this.problems) {
      while (j < found.length && ((found[j] as Problem).line ?? 0) < (p.line ?? 0)) merged.push(found[j++] as Problem);
      merged.push(p);
    }
    while (j < found.length) merged.push(found[j++] as Problem);
    this.problems.splice(0, this.problems.length, ...merged);
  }

  #takeEnd(r: EndRecord | Corrupt | EndLine): void {
    if (++this.#ends > 1) this.#end = { corrupt: 'a second end record', line: this.lineOf(r).line ?? this.#last };
    else this.#end = r;
  }

  /** The `end` record, read from its line the first time it is asked for (or why the line is not one). */
  #endRecord(): EndRecord | Corrupt | undefined {
    const end = this.#end;
    if (!(end instanceof EndLine)) return end;
    // Its JSON says `end`, so a record read from it is one.
    const read = readLine(end.text, end.line);
    let r: EndRecord | Corrupt;
    if (read.ok) {
      r = read.record as EndRecord;
      this.#lines.set(r, end.line);
    } else r = { corrupt: read.reason, line: end.line };
    this.#end = r;
    return r;
  }

  /** Compares how the replayed run ended — its result, then the thread it left — with the `end` record (`nowLine`: the canonical line of `now`). */
  checkEnd(now: EndRecord | undefined, nowLine: string | undefined, withoutRecord: boolean, diverge: (d: Omit<PortDivergence, 'atEvent'>) => void): void {
    // The transcript's line is the canonical line of how the replay ended: the same result and the
    // same messages, so the record on it need not be read.
    const taken = this.#end;
    if (taken instanceof EndLine && now !== undefined && nowLine === taken.text) return;
    const r = this.#endRecord();
    if (r === undefined) {
      if (!withoutRecord)
        diverge({
          port: 'end',
          kind: 'no_end_record',
          message: 'the transcript has no end record (the result and the messages the run ended with)',
          ...this.#here(),
        });
      return;
    }
    const at = this.lineOf(r);
    if (isCorrupt(r)) {
      diverge({ port: 'end', kind: 'unreadable_record', message: `transcript line ${r.line} is not a valid end record: ${r.corrupt}`, ...at });
      return;
    }
    if (now === undefined) {
      diverge({ port: 'end', message: 'the replayed run has no result', ...at });
      return;
    }
    if (JSON.stringify(r.result) !== JSON.stringify(now.result)) {
      const fields = Object.keys(r.result).filter(
        (k) => JSON.stringify(r.result[k as keyof EndRecord['result']]) !== JSON.stringify(now.result[k as keyof EndRecord['result']]),
      );
      diverge({
        port: 'end',
        kind: 'result_changed',
        fields,
        message: `the run ended with another result than recorded: ${fields.join(', ')}`,
        diff: renderChanges(jsonChanges(r.result as unknown as JsonValue, now.result as unknown as JsonValue)),
        ...at,
      });
      return;
    }
    if (JSON.stringify(r.messages) === JSON.stringify(now.messages)) return;
    const first = now.messages.findIndex((m, i) => JSON.stringify(m) !== JSON.stringify(r.messages[i]));
    diverge({
      port: 'end',
      message:
        first < 0 || first >= r.messages.length
          ? `the run ended with ${now.messages.length} messages, the recording with ${r.messages.length}`
          : `the run ended with another message #${first} (${now.messages[first]?.role}) than recorded`,
      diff: renderChanges(jsonChanges(r.messages as unknown as JsonValue, now.messages as unknown as JsonValue)),
      ...at,
    });
  }

  /** Whether the recorded run ended `suspended`: it was let go while parked (a reload, a shutdown), or never waited. */
  get endsSuspended(): boolean {
    const end = this.#endRecord();
    return end !== undefined && !isCorrupt(end) && end.result.termination.type === 'suspended';
  }

  /**
   * Whether the run was started waiting for decisions. It is not written, because the records say it
   * wherever it mattered: a run that got decisions waited for them; a run whose last segment ended
   * suspended waited exactly when it did not end suspended (it was cancelled while parked). A run
   * that never suspends runs the same either way.
   */
  get waitsForDecisions(): boolean {
    if (this.decisions.length > 0) return true;
    const finish = this.expectedEvents.findLast((e) => e.startsWith('{"event_type":"run_finish"'));
    if (finish?.includes('"termination":{"type":"suspended"') !== true) return false;
    const end = this.#endRecord();
    return end !== undefined && !isCorrupt(end) && end.result.termination.type !== 'suspended';
  }

  lineOf(record: object): At {
    const line = isCorrupt(record) ? record.line : this.#lines.get(record);
    return line !== undefined ? { line } : {};
  }

  /** The last line of the transcript: where a missing record would have been. */
  lastLine(): At {
    return { line: this.#last };
  }

  /** Where the replay's next record goes: where a record it needs and the transcript lacks would have been. */
  #here(): At {
    return this.strict !== undefined ? { line: this.strict.position } : this.lastLine();
  }

  /** A record taken at a port must be the next one written: else the history differs where the replay is. */
  #inTurn(line: number | undefined, diverge: (d: Omit<PortDivergence, 'atEvent'>) => void): void {
    const strict = this.strict;
    if (strict === undefined || line === undefined || line === strict.position) return;
    const recorded = strict.textAt(strict.position);
    const replayed = strict.textAt(line);
    diverge(historyDivergence({ line: strict.position, ...(recorded !== undefined ? { recorded } : {}), ...(replayed !== undefined ? { replayed } : {}) }));
  }

  /**
   * Where the response of a request is written: after the events its stream makes. The first record
   * from the replay's place on that a stream cannot make is where it belongs, else the line of the
   * response served (`line`). A stream cancelled while read is let go only once the loop has told the
   * inference's end: its response follows the `inference_complete` after the cancel.
   */
  #streamEnd(line: number | undefined): At {
    const strict = this.strict;
    if (strict === undefined) return line !== undefined ? { line } : this.lastLine();
    let cancelled = false;
    let ended = false;
    for (const ahead of strict.ahead()) {
      if (ahead.line === line || ended) return { line: ahead.line };
      if (!cancelled) {
        if (!STREAMED.test(ahead.text)) return { line: ahead.line };
        cancelled = ahead.text.startsWith('{"type":"cancel"');
      } else if (INFERENCE_COMPLETE.test(ahead.text)) ended = true;
      else if (!ahead.text.startsWith('{"type":"env"')) return { line: ahead.line };
    }
    return { line: strict.position };
  }

  /** Where a call's outcome is written: after the activity it reports (events naming it). */
  #toolEnd(callId: string): At {
    const strict = this.strict;
    if (strict === undefined) return this.lastLine();
    const named = JSON.stringify(callId);
    for (const ahead of strict.ahead()) if (!(ACTIVITY.test(ahead.text) && ahead.text.includes(named))) return { line: ahead.line };
    return { line: strict.position };
  }

  /** The line of recorded event `i` (past the last one: the last one's). */
  eventLine(i: number): number {
    return this.#eventLines[Math.min(i, this.#eventLines.length - 1)] ?? this.#last;
  }

  /** Where the replay left the recording: the port's record, else the first differing event, else the event the port reached. */
  place(divergence: PortDivergence | undefined, differingEvent: number | undefined): TranscriptPlace | undefined {
    const line =
      divergence?.line ??
      (differingEvent !== undefined ? this.eventLine(differingEvent) : divergence !== undefined ? this.eventLine(divergence.atEvent) : undefined);
    if (line === undefined) return undefined;
    // Past the transcript's end: the record the replay has there (the port names its type).
    const past = line > this.#last && divergence !== undefined && divergence.port !== 'transcript' ? divergence.port : undefined;
    return { line, record: this.#typeAt(line) ?? past ?? 'unknown' };
  }

  /** The type of the record on `line`, as read ('unknown' for a line that names none); undefined past the last. */
  #typeAt(line: number): string | undefined {
    if (line === this.#headerLine) return 'header';
    const l = this.#read.find((x) => x.line === line);
    if (l === undefined) return undefined;
    return l.ok ? l.record.type : l.type !== undefined && RECORD_TYPES.has(l.type) ? l.type : 'unknown';
  }

  /** Checks what the header says of the environment against what the run drew. */
  finish(setup: Header['env']): void {
    const unasked = this.#asks[0];
    if (unasked !== undefined) {
      const line = this.lineOf(unasked).line ?? this.#last;
      this.problems.push({
        message: `line ${line}: ${this.#asks.length} recorded question(s) at the gate were never asked (an ask record no call made)`,
        atEvent: this.expectedEvents.length,
        line,
      });
    }
    if (setup.kind === 'deterministic' && setup.seed !== undefined && this.#randomDraws === 0) {
      this.problems.push({
        message: 'line 1: the header gives env.seed, but the run drew no random number (the seed is written only for runs that draw one)',
        atEvent: this.expectedEvents.length,
        line: 1,
      });
    }
  }

  /**
   * An `Env` that hands out the recorded draws in order; anything else is a divergence. A
   * deterministic recording is also checked draw by draw against the environment its header names,
   * so a tampered value is caught even where it would not change an event.
   */
  env(diverge: (d: Omit<PortDivergence, 'atEvent'>) => void, setup: Header['env']): Env {
    const reference = setup.kind === 'deterministic' ? deterministicEnv({ start: setup.start, seed: setup.seed ?? 0, tick: setup.tick }) : undefined;
    let draw = 0;
    let at: At = {};
    const check = (what: string, recorded: unknown, expected: unknown): void => {
      if (reference !== undefined && recorded !== expected) {
        diverge({
          port: 'env',
          message: `env draw #${draw} (${what}): the recording says ${JSON.stringify(recorded)}, the deterministic env of the header gives ${JSON.stringify(expected)}`,
          ...at,
        });
      }
    };
    let lastNow = Number.NEGATIVE_INFINITY;
    let stray = 0;
    const next = <D extends EnvRecord['draw']>(wanted: D, detail: string, kind?: string): Extract<EnvRecord, { draw: D }> | undefined => {
      const r = this.#env[draw];
      draw++;
      if (r === undefined) {
        at = {};
        diverge({ port: 'env', message: `env draw #${draw} (${detail}) is not in the transcript`, ...this.#here() });
        return undefined;
      }
      at = this.lineOf(r);
      if (isCorrupt(r)) {
        diverge({
          port: 'env',
          kind: 'unreadable_record',
          message: `env draw #${draw} (${detail}): transcript line ${r.line} is not a valid record: ${r.corrupt}`,
          ...at,
        });
        return undefined;
      }
      // (A sleep is written as it starts, before it reaches here: where it is written is compared there.)
      if (wanted !== 'sleep') this.#inTurn(at.line, diverge);
      if (r.draw !== wanted || (r.draw === 'id' && r.kind !== kind)) {
        diverge({ port: 'env', message: `env draw #${draw}: the run asked for ${detail}, the recording has ${JSON.stringify(r)}`, ...at });
        return undefined;
      }
      return r as Extract<EnvRecord, { draw: D }>;
    };
    return {
      clock: {
        now: () => {
          const r = next('now', 'now');
          const expected = reference?.clock.now();
          if (r === undefined) return Math.max(lastNow, 0);
          check('now', r.value, expected);
          if (r.value < lastNow) diverge({ port: 'env', message: `env draw #${draw}: the clock went backwards (${r.value} after ${lastNow})`, ...at });
          lastNow = Math.max(lastNow, r.value);
          return r.value;
        },
      },
      ids: {
        next: (kind: IdKind) => {
          const r = next('id', `id(${kind})`, kind);
          const expected = reference?.ids.next(kind);
          if (r === undefined) return `${kind}-unrecorded-${++stray}`;
          check(`id(${kind})`, r.value, expected);
          return r.value;
        },
      },
      random: () => {
        this.#randomDraws++;
        const r = next('random', 'random');
        const expected = reference?.random();
        if (r === undefined) return 0;
        if (setup.kind === 'deterministic' && setup.seed === undefined) {
          diverge({ port: 'env', message: `env draw #${draw}: the run drew a random number, but the header gives no env.seed`, line: 1 });
        } else check('random', r.value, expected);
        return r.value;
      },
      sleep: (ms) => {
        void reference?.sleep(ms);
        const r = next('sleep', `sleep(${ms})`);
        if (r !== undefined && r.ms !== ms) diverge({ port: 'env', message: `env draw #${draw}: sleep(${ms}) but the recording slept ${r.ms} ms`, ...at });
        return Promise.resolve();
      },
    };
  }

  /** What changed between recorded request `i` (rebuilt from the recorded changes) and the request now. */
  #requestChange(i: number, request: InferenceRequest): { readonly what: string; readonly diff: readonly string[] } {
    const recorded = applyDeltas(this.#deltas.slice(0, i + 1).map((d) => d ?? { model: '', kept: Number.MAX_SAFE_INTEGER, messages: [] }))[i];
    const now = normaliseRequest(request);
    // The requests before it may differ too (one digest covers them all): the change shown is this one's.
    if (recorded === undefined) return { what: 'request changed', diff: [] };
    return { what: describeRequestChange(recorded, now), diff: renderChanges(jsonChanges(recorded as unknown as JsonValue, now as unknown as JsonValue)) };
  }

  /** A provider that serves the recorded responses in order, after checking each request. */
  llm(provider: string, diverge: (d: Omit<PortDivergence, 'atEvent'>) => void): LlmExecutor {
    let seq = 0;
    const records = this.#llm;
    const session = this;
    return {
      name: `replay:${provider}`,
      stream: (request: InferenceRequest) => {
        seq++;
        const r = records.shift();
        // Taken at the call, like the recorder: a request's messages are valid while its stream is read.
        // The replay's recorder, which this port runs behind, has just taken it into a chain of the
        // same requests: its digest is this chain's. (Were a request ever to reach the port some
        // other way, this chain would have missed the ones before and the digest would differ: a
        // divergence, not a silent pass.)
        const { digest } = session.strict?.requests.taken(request) ?? session.#requests.next(request);
        const changed = r !== undefined && !isCorrupt(r) && digest !== r.digest ? session.#requestChange(seq - 1, request) : undefined;
        return (async function* (): AsyncGenerator<StreamPart> {
          if (r === undefined) {
            diverge({
              port: 'llm',
              message: `request #${seq} is not in the transcript (the recording made fewer inference calls)`,
              ...session.#streamEnd(undefined),
            });
            throw new InferenceFailure({ code: 'provider', message: `replay: no recorded response for request #${seq}` });
          }
          const at = session.lineOf(r);
          if (isCorrupt(r)) {
            diverge({
              port: 'llm',
              kind: 'unreadable_record',
              message: `request #${seq}: transcript line ${r.line} is not a valid record: ${r.corrupt}`,
              ...at,
            });
            throw new InferenceFailure({ code: 'provider', message: `replay: unreadable recording for request #${seq}` });
          }
          // The response of another request (this one's deleted, or moved): reported where this one's would be.
          if (changed !== undefined)
            diverge({
              port: 'llm',
              kind: 'request_changed',
              message: `request #${seq} no longer matches the recording: ${changed.what}`,
              diff: changed.diff,
              ...session.#streamEnd(at.line),
            });
          // Like the recorder: the stream was read to its end only if the run asked past the last part.
          let readToEnd = false;
          try {
            for (const part of r.parts) yield part as StreamPart;
            readToEnd = true;
          } finally {
            // A stream that ended in the provider's own `cancelled` error saw the cancel from inside; the
            // run of a replay, whose provider cannot see it, may stop reading at the same point first.
            const cancelledEither = r.error?.code === 'cancelled' && !readToEnd;
            if (readToEnd === (r.interrupted === true) && !cancelledEither) {
              diverge({
                port: 'llm',
                message: readToEnd
                  ? `request #${r.seq}: the recording says the run stopped reading the stream, but it read it to the end`
                  : `request #${r.seq}: the run stopped reading the stream after ${r.parts.length} recorded part(s), but the recording says it read it to the end`,
                ...session.#streamEnd(at.line),
              });
            }
          }
          if (r.error !== undefined) throw new InferenceFailure(r.error);
        })();
      },
    };
  }

  /** A tool that answers each call with its recorded outcome (matched by call id and name). */
  tool(descriptor: Tool['descriptor'], diverge: (d: Omit<PortDivergence, 'atEvent'>) => void): Tool {
    const records = this.#tools;
    const asks = this.#asks;
    // A tool that asked at the gate in the recording asks here, answered from its records.
    const asked = asks.some((r) => isCorrupt(r) || r.name === descriptor.id);
    return {
      descriptor,
      ...(asked
        ? {
            askBefore: (args: JsonValue, call: { readonly id: string }) => {
              const i = asks.findIndex((r) => isCorrupt(r) || (r.call_id === call.id && r.name === descriptor.id));
              const r = i >= 0 ? asks.splice(i, 1)[0] : undefined;
              if (r === undefined) {
                diverge({
                  port: 'tool',
                  message: `tool call ${descriptor.id} [${call.id}] was asked about at the gate, the transcript has no ask record for it`,
                  ...this.lastLine(),
                });
                return undefined;
              }
              const at = this.lineOf(r);
              if (isCorrupt(r)) {
                diverge({
                  port: 'tool',
                  kind: 'unreadable_record',
                  message: `tool call ${descriptor.id} [${call.id}]: transcript line ${r.line} is not a valid record: ${r.corrupt}`,
                  ...at,
                });
                return undefined;
              }
              if (JSON.stringify(r.arguments) !== JSON.stringify(args)) {
                diverge({
                  port: 'tool',
                  message: `tool call ${descriptor.id} [${call.id}] is asked about with other arguments than recorded`,
                  diff: renderChanges(jsonChanges(r.arguments, args)),
                  ...at,
                });
              }
              if ('thrown' in r) throw new Error(r.thrown);
              return r.ticket ?? undefined;
            },
          }
        : {}),
      execute: async (args, ctx) => {
        // A call run first and again on its resume has a record for each: the one of the same kind first.
        const ofCall = (r: ToolRecord | Corrupt): boolean => isCorrupt(r) || (r.call_id === ctx.callId && r.name === descriptor.id);
        const resumed = ctx.resume !== undefined;
        let i = records.findIndex((r) => ofCall(r) && (isCorrupt(r) || (r.resume !== undefined) === resumed));
        const sameKind = i >= 0;
        if (i < 0) i = records.findIndex(ofCall);
        const r = records.take(i);
        if (r === undefined) {
          // Its outcome would be written once the calls settling with it have: where the replay stops without it.
          await this.strict?.stalled();
          diverge({
            port: 'tool',
            kind: 'call_not_recorded',
            message: `tool call ${descriptor.id} [${ctx.callId}] is not in the transcript`,
            ...this.#toolEnd(ctx.callId),
          });
          throw new Error(`replay: no recorded outcome for ${descriptor.id} [${ctx.callId}]`);
        }
        const at = this.lineOf(r);
        if (isCorrupt(r)) {
          diverge({
            port: 'tool',
            kind: 'unreadable_record',
            message: `tool call ${descriptor.id} [${ctx.callId}]: transcript line ${r.line} is not a valid record: ${r.corrupt}`,
            ...at,
          });
          throw new Error('replay: unreadable tool record');
        }
        // A record of the other kind (the call's first run where it resumes, or the reverse) says what
        // differs where this run's record would be written, which may be before that one's.
        const here = sameKind || at.line === undefined ? undefined : this.#toolEnd(ctx.callId).line;
        const where: At = here === undefined || at.line === undefined ? at : { line: Math.min(at.line, here) };
        if (JSON.stringify(r.arguments) !== JSON.stringify(args)) {
          diverge({
            port: 'tool',
            kind: 'arguments_changed',
            message: `tool call ${descriptor.id} [${ctx.callId}] has other arguments than recorded`,
            diff: renderChanges(jsonChanges(r.arguments, args)),
            ...where,
          });
        }
        const resume = ctx.resume === undefined ? undefined : (ToolCallResumeSchema.parse(ctx.resume.decision) as unknown as JsonValue);
        if (JSON.stringify(r.resume) !== JSON.stringify(resume)) {
          diverge({
            port: 'tool',
            message: `tool call ${descriptor.id} [${ctx.callId}] ${resume === undefined ? 'is a first run, the recording has it resumed' : r.resume === undefined ? 'is a resume, the recording has a first run' : 'resumes under another decision than recorded'}`,
            diff: renderChanges(jsonChanges(r.resume as unknown as JsonValue, resume)),
            ...where,
          });
        }
        if (r.result !== undefined && r.result.tool_name !== descriptor.id) {
          diverge({ port: 'tool', message: `tool call ${descriptor.id} [${ctx.callId}]: the recorded result names tool '${r.result.tool_name}'`, ...where });
        }
        // Each report is an event naming the call: in a parallel batch, written where the recording has it.
        const named = JSON.stringify(ctx.callId);
        const reports = this.strict?.before(at.line ?? 0, r.activity.length, (t) => ACTIVITY.test(t) && t.includes(named));
        for (const [i, a] of r.activity.entries()) {
          await this.strict?.turn(reports?.[i] ?? 0);
          await reportAgain(ctx, a);
        }
        // Settled in the recorded order: a call of a parallel batch waits until its record is next.
        const recorded = r;
        return andThen(this.strict?.turn(at.line ?? 0), () => recordedOutcome(recorded, descriptor.id));
      },
    };
  }
}
