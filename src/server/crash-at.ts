import type { PersistedState } from '../core/state/state-ops.ts';
import type { RunCheckpoint } from '../runtime/thread-run-store.ts';

/**
 * The durable points of a tool batch where a chaos test has `awaken serve` kill itself
 * (`AWAKEN_CRASH_AT=<point>:<n>`, the n-th time this process reaches the point; docs/adr/0058):
 *
 * - `before-batch`: the batch and its tool-use block are about to be stored;
 * - `before-executing`: the batch is stored, a call is about to be recorded Executing;
 * - `before-dispatch`: a call is recorded Executing, its executor not yet called;
 * - `after-outcome`: a parallel call's outcome is stored while another call still runs;
 * - `before-finalise`: the batch's last outcome is stored, the batch not yet published;
 * - `in-publication`: the batch's results are about to join the history (its record cleared).
 *
 * What a point is, is read from the checkpoints themselves (the batch record and the calls' states
 * in the run's state, against the run's previous checkpoint in this process), so the hook sits
 * outside the runtime: a store that kills its process, nothing a run can reach.
 */
export const CRASH_POINTS = ['before-batch', 'before-executing', 'before-dispatch', 'after-outcome', 'before-finalise', 'in-publication'] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

export interface CrashAt {
  readonly point: CrashPoint;
  /** The occurrence of the point that kills, from 1. */
  readonly n: number;
}

/** `AWAKEN_CRASH_AT`'s value read, or why it cannot be (one line naming the variable). */
export function crashAtOf(value: string): CrashAt | string {
  const m = /^([a-z-]+):([1-9][0-9]{0,5})$/.exec(value);
  const point = CRASH_POINTS.find((p) => p === m?.[1]);
  if (m === null || point === undefined) return `AWAKEN_CRASH_AT: '${value}' is not <point>:<n> with a point among ${CRASH_POINTS.join(', ')} and n from 1`;
  return { point, n: Number(m[2]) };
}

/** What a checkpoint says of the run's batch: whether one is stored, each call's status, and how many outcomes were stored as calls settled. */
interface BatchView {
  readonly stored: boolean;
  readonly statuses: ReadonlyMap<string, string>;
  readonly outcomes: number;
}

const NO_BATCH: BatchView = { stored: false, statuses: new Map(), outcomes: 0 };
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'indeterminate']);

function extension(c: RunCheckpoint, key: string): unknown {
  const of = (s: PersistedState): unknown => s.extensions[key];
  return of(c.runState) ?? of(c.threadState);
}

function viewOf(c: RunCheckpoint): BatchView {
  const record = extension(c, '__runtime.tool_batch');
  const states = extension(c, '__runtime.tool_call_states');
  const statuses = new Map<string, string>();
  if (typeof states === 'object' && states !== null)
    for (const [id, state] of Object.entries(states)) {
      const status = (state as { status?: unknown }).status;
      if (typeof status === 'string') statuses.set(id, status);
    }
  const outcomes = typeof record === 'object' && record !== null ? (record as { outcomes?: unknown }).outcomes : undefined;
  return {
    stored: record !== undefined && record !== null,
    statuses,
    outcomes: typeof outcomes === 'object' && outcomes !== null ? Object.keys(outcomes).length : 0,
  };
}

/** Which points a write crosses, given what the run's previous write in this process held (none: `NO_BATCH`). */
export function pointsOf(previous: BatchView, next: BatchView): CrashPoint[] {
  const points: CrashPoint[] = [];
  if (!previous.stored && next.stored) points.push('before-batch');
  if (previous.stored && !next.stored) points.push('in-publication');
  if (next.stored) {
    const running = [...next.statuses].some(([id, status]) => status === 'running' && previous.statuses.get(id) !== 'running');
    if (running) points.push('before-executing', 'before-dispatch');
    if (next.outcomes > previous.outcomes) points.push('after-outcome');
    const allDone = (v: BatchView): boolean => v.statuses.size > 0 && [...v.statuses.values()].every((s) => TERMINAL.has(s));
    if (allDone(next) && !(previous.stored && allDone(previous))) points.push('before-finalise');
  }
  return points;
}

/** Points reached before their write (the write is not made), and after it (the write returned). */
const BEFORE: ReadonlySet<CrashPoint> = new Set(['before-batch', 'before-executing', 'in-publication']);

/**
 * `store`, with its checkpoints watched: the `at.n`-th time a write reaches `at.point`, `kill` is
 * called — before the write for a point that lies before it, after it for one that lies after.
 * Every other method is the store's own.
 */
export function crashingStore<S extends { checkpoint(c: RunCheckpoint): Promise<void> | void }>(store: S, at: CrashAt, kill: () => void): S {
  const views = new Map<string, BatchView>();
  let reached = 0;
  const checkpoint = async (c: RunCheckpoint): Promise<void> => {
    // The checkpoint's arrays are the writer's and valid during the call: only what the points need is kept.
    const next = viewOf(c);
    const hit = pointsOf(views.get(c.runId) ?? NO_BATCH, next).includes(at.point) && ++reached === at.n;
    views.set(c.runId, next);
    if (hit && BEFORE.has(at.point)) kill();
    await store.checkpoint(c);
    if (hit && !BEFORE.has(at.point)) kill();
  };
  return new Proxy(store, {
    get(target, property) {
      if (property === 'checkpoint') return checkpoint;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** Kills this process at once, as kill -9 does: nothing after it runs (the caller waits for the signal). */
export function killSelf(): void {
  process.kill(process.pid, 'SIGKILL');
  // The signal may take a moment to land: nothing of this process may go on meanwhile.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10_000);
}
