import type { AgentEvent } from '../../src/contract/event.ts';
import type { Decision } from '../../src/contract/decision.ts';
import type { Message } from '../../src/contract/message.ts';
import type { AgentRunResult } from '../../src/contract/run-result.ts';
import type { AgentRuntime, RunHandle, SuspendedCall } from '../../src/runtime/agent-runtime.ts';
import type { Env } from '../../src/runtime/env.ts';
import type { RunOptions } from '../../src/runtime/run-handle.ts';
import type { ControlCommand, ClusterBus, SharedFrame } from '../../src/runtime/cluster-bus.ts';
import type { RunCheckpoint } from '../../src/runtime/thread-run-store.ts';
import type { LiveRun } from '../../src/server/live-run.ts';
import type { LogItem } from '../../src/server/thread-log.ts';
import type { RunSink } from '../../src/server/registry/types.ts';
import type { MemoryStore } from '../../src/stores/memory.ts';
import type { ClusterRelay } from '../../src/server/cluster-relay.ts';
import { silentLogger } from '../../src/server/log.ts';
import { RunLauncher } from '../../src/server/registry/launch.ts';
import type { LiveRuns } from '../../src/server/registry/live-runs.ts';
import { ThreadLogs } from '../../src/server/registry/thread-logs.ts';
import type { RunLeases } from '../../src/server/run-leases.ts';

// Stand-ins for what the registry's parts take: a run handle driven by the spec, a cluster bus in
// memory, a run as the registry holds it, runs put in the store by hand.

/** A run handle whose end, parking and decisions the spec drives. */
export interface FakeHandle extends RunHandle {
  readonly decided: (readonly Decision[])[];
  readonly cancels: number;
  /** Ends the run (`done` resolves with this termination). */
  end(termination?: AgentRunResult['termination']): void;
  /** Makes `done` reject, as a run that crashed. */
  crash(error: Error): void;
  /** The sink the run emits to (set when the fake runtime started it). */
  sink: RunSink | undefined;
  /** The options the registry began it with. */
  options?: RunOptions | undefined;
  /** Whether `detach` lets it go (a parked run). */
  detachable: boolean;
  /** Whether a cancel ends it at once. */
  endsOnCancel: boolean;
}

export function fakeHandle(runId: string, threadId: string, options: { readonly waitingOn?: readonly SuspendedCall[] } = {}): FakeHandle {
  let resolve!: (r: AgentRunResult) => void;
  let reject!: (e: unknown) => void;
  const done = new Promise<AgentRunResult>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const result = (termination: AgentRunResult['termination']): AgentRunResult =>
    ({ threadId, runId, response: '', steps: 0, termination, usage: {} }) as unknown as AgentRunResult;
  const handle: FakeHandle = {
    threadId,
    runId,
    decided: [],
    cancels: 0,
    sink: undefined,
    detachable: false,
    endsOnCancel: true,
    decide(decisions) {
      this.decided.push(decisions);
      return { ok: true, value: undefined };
    },
    parked: async () => true,
    waitingOn: () => options.waitingOn ?? [],
    detach() {
      if (!this.detachable) return false;
      resolve(result({ type: 'suspended' }));
      return true;
    },
    cancel() {
      (this as { cancels: number }).cancels++;
      if (this.endsOnCancel) resolve(result({ type: 'cancelled' }));
    },
    messages: () => [],
    done,
    end: (termination = { type: 'natural_end' }) => resolve(result(termination)),
    crash: (e) => reject(e),
  };
  return handle;
}

/** A run as the registry holds it, with a fake handle. */
export function liveRun(runId: string, threadId: string, fields: Partial<LiveRun> = {}): LiveRun & { handle: FakeHandle } {
  const handle = fakeHandle(runId, threadId);
  return {
    runId,
    threadId,
    agentId: 'agent',
    handle,
    createdAt: 0,
    input: [],
    fromSeq: 0,
    status: 'running',
    stopRequested: false,
    waiting: new Map(),
    calls: new Map(),
    stepMessageId: runId,
    terminalSeen: false,
    released: Promise.resolve(),
    owner: undefined,
    ...fields,
  } as LiveRun & { handle: FakeHandle };
}

/** Puts a run in the store in the given status. */
export const stored = (
  store: MemoryStore,
  runId: string,
  threadId: string,
  status: RunCheckpoint['status'],
  messages: readonly Message[] = [],
  parentRunId?: string,
): Promise<void> =>
  store.checkpoint({
    threadId,
    runId,
    agentId: 'agent',
    messages: [...messages],
    status,
    steps: 1,
    threadState: { revision: 1, extensions: {} },
    runState: { revision: 1, extensions: {} },
    updatedAt: 0,
    ...(parentRunId !== undefined ? { parentRunId } : {}),
  });

/** A cluster bus in memory: one instance's view, with what it sent. */
export function memoryBus(): ClusterBus & { readonly sent: ControlCommand[]; readonly frames: Map<string, SharedFrame[]>; command(c: ControlCommand): void } {
  const frames = new Map<string, SharedFrame[]>();
  const sent: ControlCommand[] = [];
  let onCommand: ((c: ControlCommand) => void) | undefined;
  let onAppend: ((threadId: string) => void) | undefined;
  const of = (t: string): SharedFrame[] => frames.get(t) ?? (frames.set(t, []), frames.get(t) as SharedFrame[]);
  return {
    frames,
    sent,
    status: 'listening',
    append: async (t, fs) => {
      of(t).push(...fs);
      onAppend?.(t);
    },
    appendNext: async (t, f) => {
      const seq = (of(t).at(-1)?.seq ?? 0) + 1;
      of(t).push({ ...f, seq });
      onAppend?.(t);
      return seq;
    },
    read: async (t, after, limit) =>
      of(t)
        .filter((f) => f.seq > after)
        .slice(0, limit),
    lastSeq: async (t) => of(t).at(-1)?.seq ?? 0,
    forget: async (t) => void frames.delete(t),
    send: async (c) => void sent.push(c),
    listen: async (append, command) => {
      onAppend = append;
      onCommand = command;
    },
    close: async () => undefined,
    command: (c) => onCommand?.(c),
  };
}

/** An event of a run, as its frames carry it. */
export const textEvent = (threadId: string, runId: string, delta: string): AgentEvent =>
  ({ event_type: 'text_delta', thread_id: threadId, run_id: runId, delta }) as unknown as AgentEvent;

export const finishEvent = (threadId: string, runId: string, termination: AgentRunResult['termination'] = { type: 'natural_end' }): AgentEvent => ({
  event_type: 'run_finish',
  thread_id: threadId,
  run_id: runId,
  termination,
});

/** What a follower saw: frames by their event type (and delta), resyncs by their seq. */
export const seen = (items: readonly LogItem[]): string[] =>
  items.map((i) => (i.kind === 'frame' ? `${i.seq}:${i.event.event_type}${'delta' in i.event ? `:${String(i.event.delta)}` : ''}` : `resync@${i.seq}`));

export const tick = (ms = 0): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A runtime whose runs are fake handles, kept in `handles` in the order they began (`revived`: by `revive`). */
export function fakeRuntime(env: Env): { runtime: AgentRuntime; handles: FakeHandle[]; revived: FakeHandle[]; recovered: FakeHandle[] } {
  const handles: FakeHandle[] = [];
  const revived: FakeHandle[] = [];
  const recovered: FakeHandle[] = [];
  const runtime = {
    env,
    agentIds: () => ['agent'],
    start: async (request: { readonly runId?: string; readonly threadId?: string }, sink: RunSink, options?: RunOptions) => {
      const handle = fakeHandle(request.runId ?? '', request.threadId ?? '');
      handle.sink = sink;
      handle.options = options;
      handles.push(handle);
      return { ok: true, value: handle };
    },
    revive: async (request: { readonly runId: string; readonly threadId: string }, sink: RunSink, options?: RunOptions) => {
      const handle = fakeHandle(request.runId, request.threadId);
      handle.sink = sink;
      handle.options = options;
      handle.detachable = true;
      revived.push(handle);
      return { ok: true, value: handle };
    },
    // A run whose id starts with `gone` names an agent the runtime no longer has.
    recover: async (request: { readonly runId: string; readonly threadId: string }, sink: RunSink, options?: RunOptions) => {
      if (request.runId.startsWith('gone')) return { ok: false, error: { code: 'resolve_failed', message: "agent 'retired' not found" } };
      const handle = fakeHandle(request.runId, request.threadId);
      handle.sink = sink;
      handle.options = options;
      recovered.push(handle);
      return { ok: true, value: handle };
    },
  } as unknown as AgentRuntime;
  return { runtime, handles, revived, recovered };
}

/** A registry's thread logs over `store` for the runs in `runs`: a ring of `capacity` frames, relayed when `relay` is given. */
export function testLogs(store: MemoryStore, runs: LiveRuns, relay: ClusterRelay | undefined, capacity = 64): ThreadLogs {
  return new ThreadLogs({
    store,
    logger: silentLogger,
    relay,
    capacity,
    ringBytes: 1 << 20,
    maxThreadLogs: 100,
    maxReplayBytes: 1 << 20,
    seqBlock: 1024,
    isBusy: (t) => runs.current(t) !== undefined,
  });
}

/** A launcher of runs into `runs` and `logs`, releasing each thread's lease through `leases`. */
export function testLauncher(env: Env, logs: ThreadLogs, runs: LiveRuns, leases: RunLeases): RunLauncher {
  return new RunLauncher({
    env,
    logger: silentLogger,
    logs,
    runs,
    releaseLease: (t, r) => leases.release(t, r),
    noted: () => undefined,
    quiet: () => undefined,
  });
}
