import type { JsonValue } from '../contract/json.ts';
import type { TerminationReason } from '../contract/lifecycle.ts';
import { serialiseEvent } from '../contract/event.ts';
import type { StreamPart } from '../contract/stream.ts';
import { ToolResults } from '../contract/tool.ts';
import type { StopPolicy } from '../core/policies/stop-policy.ts';
import { StateCommand, type ScheduledAction, type TypedEffect } from '../core/state/state-command.ts';
import { MutationBatch } from '../core/state/mutation-batch.ts';
import { PLUGIN_CATALOG } from '../plugins/catalog.ts';
import { AgentRuntimeBuilder } from '../runtime/agent-runtime.ts';
import { deterministicEnv, type Env, type IdKind } from '../runtime/env.ts';
import { InferenceFailure, type InferenceRequest, type LlmExecutor } from '../runtime/llm.ts';
import { ToolFailure, type Tool } from '../runtime/tool.ts';
import { jsonChanges, renderChanges } from './json-diff.ts';
import {
  configDigest,
  digestOf,
  normaliseRequest,
  readTranscript,
  TRANSCRIPT_FORMAT,
  type DecisionRecord,
  type EnvRecord,
  type Header,
  type LlmRecord,
  type NormalisedRequest,
  type ReadLine,
  type ToolRecord,
} from './transcript.ts';

/** Where a replay first left the recording, at a port. */
export interface PortDivergence {
  readonly port: 'transcript' | 'env' | 'llm' | 'tool' | 'decision';
  readonly message: string;
  readonly diff?: readonly string[];
  /** Events the replay had emitted when it left the recording: from this index on nothing is trusted. */
  readonly atEvent: number;
}

/** The result of replaying one transcript. */
export interface ReplayReport {
  readonly identical: boolean;
  readonly expectedEvents: number;
  readonly actualEvents: number;
  readonly firstDifference?: { readonly index: number; readonly expected?: string; readonly actual?: string; readonly diff: readonly string[] };
  readonly divergence?: PortDivergence;
  readonly termination?: TerminationReason;
}

export interface ReplayOptions {
  /** Custom stop policies named in the header, by id (they are code, not data). */
  readonly stopPolicies?: ReadonlyMap<string, StopPolicy>;
}

type Corrupt = { readonly corrupt: string; readonly line: number };
const isCorrupt = (x: unknown): x is Corrupt => typeof x === 'object' && x !== null && 'corrupt' in x;

const EVENT_LINE = /^\{"type":"event","seq":\d+,"event":(.*)\}$/;

/** Replays a transcript: rebuilds the runtime from its header, feeds the recorded inputs, compares the events byte for byte. */
export async function replayTranscript(text: string, options: ReplayOptions = {}): Promise<ReplayReport> {
  const lines = readTranscript(text);
  const first = lines[0];
  if (first === undefined || !first.ok || first.record.type !== 'header') {
    const reason = first === undefined ? 'the transcript is empty' : first.ok ? `line 1 is a ${first.record.type} record, not the header` : `line 1 is not a header: ${first.reason}`;
    return { identical: false, expectedEvents: 0, actualEvents: 0, divergence: { port: 'transcript', message: `${reason} (expected format ${TRANSCRIPT_FORMAT})`, atEvent: 0 } };
  }
  const header = first.record as Header;
  const session = new ReplaySession(lines.slice(1));
  if (configDigest(header) !== header.config_digest) {
    session.problems.unshift({ message: 'line 1: the header does not match its config_digest (agent, models, tools, plugins or stop policies edited)', atEvent: 0 });
  }
  const expected = session.expectedEvents;

  let divergence: PortDivergence | undefined;
  const actual: string[] = [];
  const diverge = (d: Omit<PortDivergence, 'atEvent'>): void => {
    divergence ??= { ...d, atEvent: actual.length };
  };

  const builder = new AgentRuntimeBuilder().withEnv(session.env(diverge, header.env)).withAgentSpec(header.agent);
  for (const [id, model] of Object.entries(header.models)) {
    builder.withModel(id, model);
  }
  for (const provider of new Set(Object.values(header.models).map((m) => m.provider))) builder.withProvider(provider, session.llm(provider, diverge));
  for (const descriptor of header.tools) builder.withTool(session.tool(descriptor, diverge));
  for (const id of header.plugins) {
    const plugin = PLUGIN_CATALOG.get(id);
    if (plugin === undefined) return { identical: false, expectedEvents: expected.length, actualEvents: 0, divergence: { port: 'transcript', message: `plugin '${id}' is not in the catalog`, atEvent: 0 } };
    builder.withPlugin(id, plugin);
  }
  for (const id of header.stop_policies) {
    const policy = options.stopPolicies?.get(id);
    if (policy === undefined) return { identical: false, expectedEvents: expected.length, actualEvents: 0, divergence: { port: 'transcript', message: `custom stop policy '${id}' was not supplied`, atEvent: 0 } };
    builder.withStopPolicy(policy);
  }
  if (header.circuit_breaker !== undefined) builder.withCircuitBreaker(header.circuit_breaker as never);
  const built = builder.buildUnchecked();
  if (!built.ok) return { identical: false, expectedEvents: expected.length, actualEvents: 0, divergence: { port: 'transcript', message: `cannot rebuild the runtime: ${JSON.stringify(built.error)}`, atEvent: 0 } };
  const runtime = built.value;

  const controller = new AbortController();
  const decisions = [...session.decisions];
  const cancels = [...session.cancels];
  let threadId = '';
  let parked = false;
  let finished = false;
  const deliver = (): void => {
    if (finished) return;
    if (!runtime.isWaiting(threadId)) {
      if (parked) setImmediate(deliver);
      return;
    }
    const next = decisions[0];
    if (next === undefined) {
      diverge({ port: 'decision', message: `the run waits for a decision after event #${actual.length - 1} that the transcript does not have` });
      controller.abort();
      return;
    }
    if (next.after_event !== actual.length) {
      // The run is parked and emits nothing more until it is answered: a decision recorded at
      // another point can never be delivered where it was.
      diverge({
        port: 'decision',
        message: `the run waits for a decision after event #${actual.length - 1}, the next recorded decision came after event #${next.after_event - 1}`,
      });
      controller.abort();
      return;
    }
    decisions.shift();
    parked = false;
    const r = runtime.decide(threadId, next.decisions.map((d) => ({ targetId: d.target_id, decision: d.decision })));
    if (!r.ok) {
      diverge({ port: 'decision', message: `the recorded decision after event #${next.after_event - 1} does not apply: ${JSON.stringify(r.error)}` });
      controller.abort();
      return;
    }
    // A decision that leaves the run waiting (it answered only some calls, or none) emits nothing: the
    // next recorded decision is due at the same point, and without one the replay stops, never hangs.
    const at = actual.length;
    setImmediate(() => {
      if (!finished && actual.length === at && runtime.isWaiting(threadId)) deliver();
    });
  };

  const started = await runtime.start(
    {
      ...(header.request.thread_id !== undefined ? { threadId: header.request.thread_id } : {}),
      agentId: header.request.agent_id,
      messages: header.request.messages,
      ...(header.request.overrides !== undefined ? { overrides: header.request.overrides } : {}),
    },
    {
      emit: (event) => {
        actual.push(serialiseEvent(event));
        while (cancels[0] !== undefined && cancels[0] <= actual.length) {
          cancels.shift();
          controller.abort();
        }
        if (event.event_type === 'run_finish' && event.termination.type === 'suspended' && header.options.wait_for_decisions) {
          threadId = event.thread_id;
          parked = true;
          setImmediate(deliver);
        }
      },
    },
    { signal: controller.signal, waitForDecisions: header.options.wait_for_decisions },
  );
  if (!started.ok) {
    return { identical: false, expectedEvents: expected.length, actualEvents: 0, divergence: { port: 'transcript', message: `cannot start the run: ${JSON.stringify(started.error)}`, atEvent: 0 } };
  }
  let termination: TerminationReason | undefined;
  try {
    termination = (await started.value.done).termination;
  } catch (e) {
    diverge({ port: 'transcript', message: `the replayed run failed: ${e instanceof Error ? e.message : String(e)}` });
  }
  finished = true;
  if (decisions.length > 0) diverge({ port: 'decision', message: `${decisions.length} recorded decision(s) were never asked for` });

  // A record that contradicts itself (a seq, a digest) is reported when the run diverged nowhere else.
  const problem = session.problems[0];
  if (divergence === undefined && problem !== undefined) divergence = { port: 'transcript', ...problem };
  const firstDifference = compareEvents(expected, actual);
  return {
    identical: firstDifference === undefined && divergence === undefined,
    expectedEvents: expected.length,
    actualEvents: actual.length,
    ...(firstDifference !== undefined ? { firstDifference } : {}),
    ...(divergence !== undefined ? { divergence } : {}),
    ...(termination !== undefined ? { termination } : {}),
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
    return { index: i, ...(e !== undefined ? { expected: e } : {}), ...(a !== undefined ? { actual: a } : {}), diff: diff.length > 0 ? diff : [`- ${e ?? '(none)'}`, `+ ${a ?? '(none)'}`] };
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

/** The recorded inputs of one transcript, handed out to the replaying ports in order. */
class ReplaySession {
  readonly expectedEvents: string[] = [];
  /** What the records say of themselves that does not hold (a seq, a digest): reported if the run itself diverges nowhere. */
  readonly problems: Omit<PortDivergence, 'port'>[] = [];
  readonly decisions: DecisionRecord[] = [];
  readonly cancels: number[] = [];
  readonly #env: (EnvRecord | Corrupt)[] = [];
  readonly #llm: (LlmRecord | Corrupt)[] = [];
  readonly #tools: (ToolRecord | Corrupt)[] = [];

  constructor(lines: readonly ReadLine[]) {
    for (const l of lines) {
      if (!l.ok) {
        const corrupt = { corrupt: l.reason, line: l.line };
        if (l.type === 'event') this.expectedEvents.push(EVENT_LINE.exec(l.text)?.[1] ?? l.text);
        else if (l.type === 'env') this.#env.push(corrupt);
        else if (l.type === 'llm') this.#llm.push(corrupt);
        else if (l.type === 'tool') this.#tools.push(corrupt);
        else this.#env.push(corrupt);
        continue;
      }
      const r = l.record;
      switch (r.type) {
        case 'event':
          if (r.seq !== this.expectedEvents.length) this.problems.push({ message: `line ${l.line}: event seq ${r.seq}, but it is event #${this.expectedEvents.length}`, atEvent: this.expectedEvents.length });
          this.expectedEvents.push(EVENT_LINE.exec(l.text)?.[1] ?? JSON.stringify(r.event));
          break;
        case 'env':
          this.#env.push(r);
          break;
        case 'llm': {
          const n = this.#llm.length + 1;
          if (r.seq !== n) this.problems.push({ message: `line ${l.line}: inference seq ${r.seq}, but it is inference #${n}`, atEvent: this.expectedEvents.length });
          if (digestOf(r.request) !== r.digest) this.problems.push({ message: `line ${l.line}: the recorded request of inference #${n} does not match its digest`, atEvent: this.expectedEvents.length });
          this.#llm.push(r);
          break;
        }
        case 'tool':
          this.#tools.push(r);
          break;
        case 'decision':
          this.decisions.push(r);
          break;
        case 'cancel':
          this.cancels.push(r.after_event);
          break;
        case 'header':
          this.#env.push({ corrupt: 'a second header', line: l.line });
          break;
      }
    }
  }

  /**
   * An `Env` that hands out the recorded draws in order; anything else is a divergence. A
   * deterministic recording is also checked draw by draw against the environment its header names,
   * so a tampered value is caught even where it would not change an event.
   */
  env(diverge: (d: Omit<PortDivergence, 'atEvent'>) => void, setup: Header['env']): Env {
    const reference = setup.kind === 'deterministic' ? deterministicEnv({ start: setup.start, seed: setup.seed, tick: setup.tick }) : undefined;
    const check = (what: string, recorded: unknown, expected: unknown): void => {
      if (reference !== undefined && recorded !== expected) {
        diverge({ port: 'env', message: `env draw #${draw} (${what}): the recording says ${JSON.stringify(recorded)}, the deterministic env of the header gives ${JSON.stringify(expected)}` });
      }
    };
    let draw = 0;
    let lastNow = Number.NEGATIVE_INFINITY;
    let stray = 0;
    const next = <D extends EnvRecord['draw']>(wanted: D, detail: string, kind?: string): Extract<EnvRecord, { draw: D }> | undefined => {
      const r = this.#env[draw];
      draw++;
      if (r === undefined) {
        diverge({ port: 'env', message: `env draw #${draw} (${detail}) is not in the transcript` });
        return undefined;
      }
      if (isCorrupt(r)) {
        diverge({ port: 'env', message: `env draw #${draw} (${detail}): transcript line ${r.line} is not a valid record: ${r.corrupt}` });
        return undefined;
      }
      if (r.draw !== wanted || (r.draw === 'id' && r.kind !== kind)) {
        diverge({ port: 'env', message: `env draw #${draw}: the run asked for ${detail}, the recording has ${JSON.stringify(r)}` });
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
          if (r.value < lastNow) diverge({ port: 'env', message: `env draw #${draw}: the clock went backwards (${r.value} after ${lastNow})` });
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
        const r = next('random', 'random');
        const expected = reference?.random();
        if (r === undefined) return 0;
        check('random', r.value, expected);
        return r.value;
      },
      sleep: (ms) => {
        void reference?.sleep(ms);
        const r = next('sleep', `sleep(${ms})`);
        if (r !== undefined && r.ms !== ms) diverge({ port: 'env', message: `env draw #${draw}: sleep(${ms}) but the recording slept ${r.ms} ms` });
        return Promise.resolve();
      },
    };
  }

  /** A provider that serves the recorded responses in order, after checking each request. */
  llm(provider: string, diverge: (d: Omit<PortDivergence, 'atEvent'>) => void): LlmExecutor {
    let seq = 0;
    const records = this.#llm;
    return {
      name: `replay:${provider}`,
      stream: (request: InferenceRequest) => {
        seq++;
        const r = records.shift();
        return (async function* (): AsyncGenerator<StreamPart> {
          if (r === undefined) {
            diverge({ port: 'llm', message: `request #${seq} is not in the transcript (the recording made fewer inference calls)` });
            throw new InferenceFailure({ code: 'provider', message: `replay: no recorded response for request #${seq}` });
          }
          if (isCorrupt(r)) {
            diverge({ port: 'llm', message: `request #${seq}: transcript line ${r.line} is not a valid record: ${r.corrupt}` });
            throw new InferenceFailure({ code: 'provider', message: `replay: unreadable recording for request #${seq}` });
          }
          const now = normaliseRequest(request);
          if (digestOf(now) !== r.digest) {
            diverge({
              port: 'llm',
              message: `request #${r.seq} no longer matches the recording: ${describeRequestChange(r.request, now)}`,
              diff: renderChanges(jsonChanges(r.request as unknown as JsonValue, now as unknown as JsonValue)),
            });
          }
          for (const part of r.parts) yield part as StreamPart;
          if (r.error !== undefined) throw new InferenceFailure(r.error);
        })();
      },
    };
  }

  /** A tool that answers each call with its recorded outcome (matched by call id and name). */
  tool(descriptor: Tool['descriptor'], diverge: (d: Omit<PortDivergence, 'atEvent'>) => void): Tool {
    const records = this.#tools;
    return {
      descriptor,
      execute: async (args, ctx) => {
        const i = records.findIndex((r) => isCorrupt(r) || (r.call_id === ctx.callId && r.name === descriptor.id));
        const r = i >= 0 ? records.splice(i, 1)[0] : undefined;
        if (r === undefined) {
          diverge({ port: 'tool', message: `tool call ${descriptor.id} [${ctx.callId}] is not in the transcript` });
          throw new Error(`replay: no recorded outcome for ${descriptor.id} [${ctx.callId}]`);
        }
        if (isCorrupt(r)) {
          diverge({ port: 'tool', message: `tool call ${descriptor.id} [${ctx.callId}]: transcript line ${r.line} is not a valid record: ${r.corrupt}` });
          throw new Error('replay: unreadable tool record');
        }
        if (JSON.stringify(r.arguments) !== JSON.stringify(args)) {
          diverge({ port: 'tool', message: `tool call ${descriptor.id} [${ctx.callId}] has other arguments than recorded`, diff: renderChanges(jsonChanges(r.arguments, args)) });
        }
        if (r.resumed !== (ctx.resume !== undefined)) {
          diverge({ port: 'tool', message: `tool call ${descriptor.id} [${ctx.callId}]: the recording says resumed: ${r.resumed}, the call is ${ctx.resume !== undefined ? 'a resume' : 'a first run'}` });
        }
        if (r.result !== undefined && r.result.tool_name !== descriptor.id) {
          diverge({ port: 'tool', message: `tool call ${descriptor.id} [${ctx.callId}]: the recorded result names tool '${r.result.tool_name}'` });
        }
        for (const a of r.activity) {
          const [x, y, z] = a.args;
          if (a.method === 'activity') await ctx.reportActivity(x as string, y as JsonValue);
          else if (a.method === 'activity_delta') await ctx.reportActivityDelta(x as string, y as JsonValue);
          else if (a.method === 'stream_output') await ctx.streamOutput(x as string);
          else await ctx.reportProgress(x as 'pending', (y ?? undefined) as string | undefined, (z ?? undefined) as number | undefined);
        }
        if (r.tool_error !== undefined) throw new ToolFailure(r.tool_error);
        if (r.thrown !== undefined) throw new Error(r.thrown);
        const result = r.result ?? ToolResults.error(descriptor.id, 'replay: the recording has no result');
        if (r.command === undefined) return result;
        const patch = new MutationBatch(undefined, r.command.ops.map((op) => (op.kind === 'clear' ? { kind: 'clear' as const, key: op.key } : { kind: 'update' as const, key: op.key, update: op.update })));
        return {
          result,
          command: new StateCommand(patch, r.command.actions as unknown as ScheduledAction[], r.command.effects as unknown as TypedEffect[]),
        };
      },
    };
  }
}
