import { AsyncLocalStorage } from 'node:async_hooks';
import type { ClientInputs } from '../runtime/run-handle.ts';
import { createHash } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentEvent } from '../contract/event.ts';
import type { AgentSpec } from '../contract/agent-spec.ts';
import type { JsonValue } from '../contract/json.ts';
import type { Message } from '../contract/message.ts';
import type { ToolDescriptor } from '../contract/tool.ts';
import type { AgentRuntime, RunHandle } from '../runtime/agent-runtime.ts';
import type { Env, IdKind } from '../runtime/env.ts';
import type { LlmExecutor } from '../runtime/llm.ts';
import type { ModelEntry, RuntimePlugin } from '../runtime/resolve.ts';
import type { AgentRunResult } from '../contract/run-result.ts';
import type { Decision } from '../contract/decision.ts';
import type { ThreadRunStore } from '../runtime/thread-run-store.ts';
import type { Tool } from '../runtime/tool.ts';
import { recordingAsk, recordingEnv, recordingLlm, recordingTool, TranscriptLog } from './recorder.ts';
import { pluginEntryOf } from './plugins.ts';
import { clientFieldsOf, configDigest, endRecordOf, recordedDecision, SuspensionModes, TRANSCRIPT_FORMAT, type PluginEntry } from './transcript.ts';
import { PLUGIN_CATALOG } from '../plugins/catalog.ts';
import { DELEGATION_CATEGORY } from '../runtime/delegation.ts';

/**
 * Transcripts of the runs a server serves (`awaken serve --record DIR`): one file per run,
 * `DIR/<thread>--<run>.jsonl` (`transcriptFileName`), replayable with `awaken replay`; its header
 * names the principal that owned the thread when the run started (what the inspector authorises
 * on). The ports are wrapped once, for the whole server; what a call records goes to the run it
 * belongs to, found through the async context the run was started in (`AsyncLocalStorage`). The
 * server's own work inside a run — writing a frame to its thread log, a checkpoint to its store —
 * runs outside that context and is not recorded:
 * only what the run drew from its ports is. What reaches a transcript is what reaches the ports —
 * the requests, the streamed parts, tool arguments and results, env draws — never a credential (API
 * keys stay in the providers, tokens in the HTTP layer).
 */
interface ServedRun {
  /** Whose loads are the run's own: a sub-run revived inside its context (to cancel it) loads others. */
  readonly threadId: string;
  readonly runId: string;
  readonly log: TranscriptLog;
  readonly modes: SuspensionModes;
  /**
   * The run's agent, the app's plugins by id and the app itself as they were when the run started:
   * the code the run ran with, whatever is loaded by its end.
   */
  readonly agent: ReturnType<AgentRuntime['resolve']> | undefined;
  readonly plugins: ReadonlyMap<string, RuntimePlugin> | undefined;
  readonly app: { readonly file: string; readonly version: string } | undefined;
  readonly models: Readonly<Record<string, ModelEntry>>;
  readonly tools: readonly ToolDescriptor[];
  history?: readonly Message[];
  threadState?: { readonly revision: number; readonly extensions: Readonly<Record<string, unknown>> };
  /** The run-scoped state a run taken up from the store was revived from (`request.run_state`). */
  runState?: { readonly revision: number; readonly extensions: Readonly<Record<string, unknown>> };
}

/** The longest file name a transcript is written under (in bytes: file systems allow 255 or fewer). */
const MAX_NAME = 200;
/** The longest a run id is written whole in a name (a thread id gets what is left). */
const MAX_RUN = 80;

/**
 * An id as a part of a file name: `a`–`z`, `0`–`9` and `_` as they are, every other UTF-16 code unit
 * as `~` and its value in lower-case hex (`~3a` for `:`, `~2d` for `-`, `~41` for `A`; `~uXXXX` for a code
 * unit above `ff`). So the name gives the id back, `--` separates thread and run, no name is
 * `.`, `..` or holds a separator, and two ids never differ only by case (a case-insensitive file
 * system keeps them apart). An id whose escaped form is longer than `max` is written as its start,
 * `~~` and 32 hex digits of its SHA-256: still one name per id, no longer read back.
 */
function namePart(id: string, max: number): string {
  let out = '';
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    out +=
      (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x5f
        ? id[i]
        : c <= 0xff
          ? `~${c.toString(16).padStart(2, '0')}`
          : `~u${c.toString(16).padStart(4, '0')}`;
  }
  if (out.length <= max) return out;
  let cut = max - 34;
  // Not inside an escape: the kept start reads back as a prefix of the id.
  const escapeAt = out.lastIndexOf('~', cut - 1);
  if (escapeAt >= 0 && escapeAt + (out[escapeAt + 1] === 'u' ? 6 : 3) > cut) cut = escapeAt;
  return `${out.slice(0, cut)}~~${createHash('sha256').update(id).digest('hex').slice(0, 32)}`;
}

/** The id a name part stands for, or undefined when it was shortened (or is not one). */
function idOfPart(part: string): string | undefined {
  let out = '';
  for (let i = 0; i < part.length; ) {
    const ch = part[i] as string;
    if (/[a-z0-9_]/.test(ch)) {
      out += ch;
      i++;
      continue;
    }
    const m = /^~(?:u([0-9a-f]{4})|([0-9a-f]{2}))/.exec(part.slice(i, i + 6));
    if (m === null) return undefined;
    out += String.fromCharCode(parseInt((m[1] ?? m[2]) as string, 16));
    i += m[0].length;
  }
  return out === '' ? undefined : out;
}

/**
 * The file a served run's transcript is written to, `<thread>--<run>.jsonl` with both ids escaped
 * (`namePart`): at most 200 bytes, one name per thread and run. The name is for whoever reads the
 * directory; what a transcript is — its thread, run and owner — its header says (the inspector reads
 * nothing else).
 */
export function transcriptFileName(threadId: string, runId: string): string {
  const run = namePart(runId, MAX_RUN);
  return `${namePart(threadId, MAX_NAME - run.length - '--.jsonl'.length)}--${run}.jsonl`;
}

/**
 * The file of a run's later segment (`segment` ≥ 2: the run was let go while parked and taken up
 * again from the store): its first segment's name with `--<segment>` before `.jsonl`.
 */
export function segmentFileName(threadId: string, runId: string, segment: number): string {
  const first = transcriptFileName(threadId, runId);
  return segment <= 1 ? first : `${first.slice(0, -'.jsonl'.length)}--${segment}.jsonl`;
}

/** The thread, run and (from 2) segment a name `segmentFileName` wrote gives back (undefined: shortened, or not such a name). */
export function transcriptIdsOf(name: string): { readonly threadId: string; readonly runId: string; readonly segment?: number } | undefined {
  const m = /^([a-z0-9_~]+)--([a-z0-9_~]+)(?:--([2-9]|[1-9][0-9]+))?\.jsonl$/.exec(name);
  if (m === null) return undefined;
  const threadId = idOfPart(m[1] as string);
  const runId = idOfPart(m[2] as string);
  if (threadId === undefined || runId === undefined) return undefined;
  return m[3] === undefined ? { threadId, runId } : { threadId, runId, segment: Number(m[3]) };
}

export interface ServedRecorderOptions {
  readonly dir: string;
  /** The models and tool descriptors a header lists: fixed, or read as each run starts (an app loaded again changes them). */
  readonly models: Readonly<Record<string, ModelEntry>> | (() => Readonly<Record<string, ModelEntry>>);
  readonly tools: readonly ToolDescriptor[] | (() => readonly ToolDescriptor[]);
  /** Told when a transcript could not be written (the run itself is not affected). */
  readonly onError?: (file: string, e: unknown) => void;
  /** Told of each transcript written. */
  readonly onWritten?: (file: string) => void;
  /**
   * The current app's plugins by id, read as each run starts: a header lists those the agent names
   * (a factory-made one with its factory and config) beside the catalog's. Without it, the catalog's alone.
   */
  readonly plugins?: () => ReadonlyMap<string, RuntimePlugin>;
  /** The current app module and its version, read as each run starts and written in its header. */
  readonly app?: () => { readonly file: string; readonly version: string } | undefined;
}

/** The structural shape of the server's `RunObserver` (the replay layer does not import the server). */
type Sink = { emit(event: AgentEvent): void | Promise<void> };

/** A run as the server starts it: its thread, its id, its agent, its input, and who owned the thread then. */
/** A run the recorder is told of, with what its client brought besides messages (written in the header exactly when given, and given back to the replay). */
interface ObservedRun extends ClientInputs {
  readonly threadId: string;
  readonly runId: string;
  readonly agentId: string;
  readonly messages: readonly Message[];
  /** The principal the thread belonged to when the run started (none: no access control, or a thread nobody owns). */
  readonly owner?: string;
  /** A parked run taken up again from the store (`start` revives it): it goes on in a segment of its own. */
  readonly resumed?: boolean;
  /** With `resumed`: a run its process left running, recovered from its last durable point (`start` recovers it). */
  readonly recovered?: boolean;
}

export class ServedRecorder {
  readonly #context = new AsyncLocalStorage<ServedRun>();
  readonly #o: ServedRecorderOptions;
  #runtime: AgentRuntime | undefined;
  /** Names the files a transcript is written to before it is linked in: one per write, unique in this process. */
  #partials = 0;

  constructor(options: ServedRecorderOptions) {
    this.#o = options;
    mkdirSync(options.dir, { recursive: true });
  }

  /** The runtime whose agents the transcripts rebuild (set once it is built). */
  attach(runtime: AgentRuntime): void {
    this.#runtime = runtime;
  }

  env(inner: Env): Env {
    const current = (): TranscriptLog | undefined => this.#context.getStore()?.log;
    return {
      clock: { now: () => (current() !== undefined ? recordingEnv(inner, current() as TranscriptLog).clock.now() : inner.clock.now()) },
      ids: { next: (kind: IdKind) => (current() !== undefined ? recordingEnv(inner, current() as TranscriptLog).ids.next(kind) : inner.ids.next(kind)) },
      random: () => (current() !== undefined ? recordingEnv(inner, current() as TranscriptLog).random() : inner.random()),
      sleep: (ms, signal) => (current() !== undefined ? recordingEnv(inner, current() as TranscriptLog).sleep(ms, signal) : inner.sleep(ms, signal)),
    };
  }

  llm(inner: LlmExecutor): LlmExecutor {
    return {
      name: inner.name,
      stream: (request) => {
        const run = this.#context.getStore();
        return run === undefined ? inner.stream(request) : recordingLlm(inner, run.log).stream(request);
      },
    };
  }

  tool(inner: Tool): Tool {
    const ask = inner.askBefore;
    return {
      descriptor: inner.descriptor,
      ...(inner.recovery !== undefined ? { recovery: inner.recovery } : {}),
      ...(inner.activityTypes !== undefined ? { activityTypes: inner.activityTypes } : {}),
      // The tool an agent is offered (its version, say) is recorded as this one is.
      ...(inner.forAgent !== undefined ? { forAgent: (spec: AgentSpec) => this.tool((inner.forAgent as (s: AgentSpec) => Tool).call(inner, spec)) } : {}),
      ...(ask !== undefined
        ? {
            askBefore: (args: JsonValue, call: { readonly id: string; readonly name: string }) => {
              const run = this.#context.getStore();
              return run === undefined ? ask.call(inner, args, call) : recordingAsk(inner, run.log)(args, call);
            },
          }
        : {}),
      // Arguments are validated inside the recorded execute, as `recordRun` does: a refusal is
      // recorded like any other outcome, so the replay answers it from its record.
      execute: (args, ctx) => {
        const run = this.#context.getStore();
        if (run === undefined) {
          inner.validateArgs?.(args);
          return inner.execute(args, ctx);
        }
        // What the tool does inside (a delegation's sub-run) is not the run's traffic: it runs outside the run's context.
        const outside: Tool = {
          descriptor: inner.descriptor,
          ...(inner.validateArgs !== undefined ? { validateArgs: (a: Parameters<NonNullable<Tool['validateArgs']>>[0]) => inner.validateArgs?.(a) } : {}),
          execute: (a, c) => this.#context.exit(() => inner.execute(a, c)),
        };
        return recordingTool(outside, run.log).execute(args, ctx);
      },
    };
  }

  /** The store as the runtime sees it: what a run loads is its transcript's history; its writes are not recorded. */
  store<S extends ThreadRunStore>(inner: S): ThreadRunStore {
    const context = this.#context;
    return {
      loadThread: async (threadId) => {
        const run = context.getStore();
        const thread = await context.exit(() => inner.loadThread(threadId));
        if (run !== undefined && threadId === run.threadId) {
          // Written even when empty: the run had a store (its checkpoints draw from the env), and so has its replay.
          run.history = thread?.messages.slice() ?? [];
          if (thread?.threadState !== undefined) run.threadState = thread.threadState;
        }
        return thread;
      },
      checkpoint: (c) => context.exit(() => inner.checkpoint(c)),
      ...(inner.loadRunState !== undefined
        ? {
            loadRunState: async (runId: string) => {
              const run = context.getStore();
              const state = await context.exit(() => (inner.loadRunState as NonNullable<ThreadRunStore['loadRunState']>).call(inner, runId));
              // What a revived run is taken up from: its replay revives it from the same.
              if (run !== undefined && state !== undefined && runId === run.runId) run.runState = state;
              return state;
            },
          }
        : {}),
    };
  }

  /**
   * The server registry's `RunObserver`: each run started, and each parked run taken up again from
   * the store, in its own recording context — a segment of its own, with the code current then.
   */
  observe(run: ObservedRun, start: (sink: Sink) => ReturnType<AgentRuntime['start']>, sink: Sink): ReturnType<AgentRuntime['start']> {
    // Read now: an app loaded again while the run goes on is not the code it runs.
    const served: ServedRun = {
      threadId: run.threadId,
      runId: run.runId,
      log: new TranscriptLog(),
      modes: new SuspensionModes(),
      agent: this.#runtime?.resolve(run.agentId),
      plugins: this.#o.plugins?.(),
      app: this.#o.app?.(),
      models: typeof this.#o.models === 'function' ? this.#o.models() : this.#o.models,
      tools: typeof this.#o.tools === 'function' ? this.#o.tools() : this.#o.tools,
    };
    const context = this.#context;
    const recording: Sink = {
      emit: (event) => {
        served.log.event(event);
        served.modes.note(event);
        return context.exit(() => sink.emit(event));
      },
    };
    return context.run(served, async () => {
      const started = await start(recording);
      if (!started.ok) return started;
      const handle = started.value;
      void handle.done.then(
        (result) => this.#write(run, served, result, handle.messages()),
        () => undefined,
      );
      return { ok: true as const, value: this.#watched(handle, served, run.resumed === true) };
    });
  }

  /**
   * The handle with its decisions and cancel recorded where they happen (a segment taken up from the
   * store may be decided or cancelled before it emits anything).
   */
  #watched(handle: RunHandle, served: ServedRun, resumed: boolean): RunHandle {
    return new Proxy(handle, {
      get: (target, prop) => {
        if (prop === 'decide') {
          return (decisions: readonly Decision[], messages?: readonly Message[]) => {
            // How each call keeps its decision: a revived run emitted none of their events in this segment.
            served.modes.noteWaiting(target.waitingOn());
            served.log.push({
              type: 'decision',
              after_event: served.log.eventCount,
              decisions: decisions.map((d) => ({ target_id: d.targetId, decision: recordedDecision(d.decision, served.modes.of(d.targetId)) })),
            });
            return target.decide(decisions, messages);
          };
        }
        if (prop === 'cancel') {
          return () => {
            if ((resumed || served.log.eventCount > 0) && !served.log.lines.some((l) => l.startsWith('{"type":"end"')))
              served.log.push({ type: 'cancel', after_event: served.log.eventCount });
            target.cancel();
          };
        }
        const v: unknown = Reflect.get(target, prop, target);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }

  /**
   * Writes a segment's transcript under the first name of its run not taken yet (`segmentFileName`):
   * a run taken up again never overwrites what an earlier segment wrote, and each header says which
   * segment it is.
   */
  #write(run: ObservedRun, served: ServedRun, result: AgentRunResult, messages: readonly Message[]): void {
    let file = join(this.#o.dir, transcriptFileName(run.threadId, run.runId));
    try {
      const resolved = served.agent ?? this.#runtime?.resolve(run.agentId);
      if (resolved === undefined || !resolved.ok) throw new Error(`cannot resolve agent ${run.agentId}`);
      const headerBase = {
        agent: resolved.value.spec,
        models: Object.fromEntries(Object.entries(served.models).map(([k, v]) => [k, { provider: v.provider, model_name: v.model_name }])),
        // The delegation tools the agent was offered are ports too.
        tools: [...served.tools, ...[...resolved.value.tools.values()].filter((t) => t.descriptor.category === DELEGATION_CATEGORY).map((t) => t.descriptor)],
        // The plugins the agent names that a replay can find again: the app's (a factory-made one
        // with its factory and config) and the catalog's.
        plugins: resolved.value.spec.plugin_ids.flatMap((id): PluginEntry[] => {
          const mine = served.plugins?.get(id);
          return mine !== undefined ? [pluginEntryOf(mine)] : PLUGIN_CATALOG.has(id) ? [{ id }] : [];
        }),
        stop_policies: [] as string[],
      };
      const header = {
        type: 'header',
        format: TRANSCRIPT_FORMAT,
        config_digest: configDigest(headerBase as never),
        ...headerBase,
        ...(served.app !== undefined ? { app: served.app } : {}),
        env: { kind: 'recorded' },
        request: {
          thread_id: run.threadId,
          run_id: run.runId,
          ...(run.owner !== undefined ? { owner: run.owner } : {}),
          agent_id: run.agentId,
          messages: run.messages,
          ...clientFieldsOf(run),
          ...(served.history !== undefined ? { history: served.history } : {}),
          ...(served.threadState !== undefined ? { thread_state: served.threadState } : {}),
          ...(served.runState !== undefined ? { run_state: served.runState } : {}),
          ...(run.recovered === true ? { recovered: true } : {}),
        },
      };
      served.log.push(endRecordOf(result, messages));
      const body = `${served.log.lines.join('\n')}\n`;
      for (let segment = 1; ; segment++) {
        file = join(this.#o.dir, segmentFileName(run.threadId, run.runId, segment));
        if (existsSync(file)) continue;
        const head = new TranscriptLog();
        head.push(segment === 1 ? header : { ...header, segment });
        // Whole or not at all, and never over an earlier segment: written aside under a name of its
        // own (another process recording into the directory has others), then linked in under the
        // name only if nothing holds it (a rename would replace what is there).
        const partial = join(this.#o.dir, `.${process.pid.toString(36)}-${(++this.#partials).toString(36)}.partial`);
        writeFileSync(partial, `${head.lines[0] as string}\n${body}`);
        try {
          linkSync(partial, file);
          break;
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        } finally {
          rmSync(partial, { force: true });
        }
      }
      this.#o.onWritten?.(file);
    } catch (e) {
      this.#o.onError?.(file, e);
    }
  }
}
