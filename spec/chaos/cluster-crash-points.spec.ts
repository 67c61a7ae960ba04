import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dropPrefix, pgUrlWithPrefix } from '../support/postgres.ts';
import { startServe, type ServeProcess } from '../support/serve-process.ts';
import { parseSse, readFrames, type SseFrame } from '../support/server.ts';
import { report, SCALE } from './chaos.ts';
import {
  agentAt,
  countsOf,
  EMPTY_ROW,
  EXECUTING_WITHOUT_OUTCOME,
  exited,
  expectedRow,
  json,
  judgeEnded,
  type KillRow,
  NEVER_RUN,
  POINTS,
} from './crash-table.ts';

/**
 * The crash-point table (crash-points.spec.ts) on PostgreSQL with two instances: instance A, armed,
 * kills itself at each durable point of a run with a tool that may not run twice (`charge`) and a
 * replay-safe one (`lookup`); instance B, never armed and alive for the whole table, takes the run
 * up once A's thread lease expires (its lease sweep), under the same run id and thread log. The
 * table's rows hold as on one instance restarted: every run ends by itself, `charge` never runs
 * twice, it is `indeterminate` exactly where it was recorded Executing without its outcome.
 *
 * A follower on B, from the start of the thread while A still runs, sees the thread as one log
 * across both processes: frame ids rise by one (no frame lost or sent twice across the takeover),
 * exactly one `run_finish` of the run, last, and the step A was cut off in is closed before B's
 * segment begins. The thread's whole log, read again from B once the run is done, holds the same.
 * A's own client (the response to its `POST /v1/runs`) holds only frames the log holds under the
 * same ids, so that reconnecting to B from its last frame it gets the rest of the thread exactly
 * (or a resync): the shared log must never number anew what a client of the dead instance was given.
 *
 * One table prefix (one set of tables) serves every kill: each kill has a thread of its own, and B
 * must be on the tables of every A. Kills run one at a time: an A alive while another A's lease
 * expires would sweep it too and could take that run up, dying in it at its own point.
 */
const KILLS = 4 * SCALE;
const LEASE_MS = 1_000;
const SWEEP_MS = 200;
const APP = join(import.meta.dirname, 'fixtures/crash-app.ts');

const prefix = `ccp${process.pid}`;
const store = pgUrlWithPrefix(prefix);
const counts = join(tmpdir(), `awaken-cluster-crash-counts-${process.pid}.txt`);
const ARGS = ['--app', APP, '--store', store, '--recovery', 'resume', '--lease-ms', String(LEASE_MS), '--sweep-ms', String(SWEEP_MS)];

interface Row extends KillRow {
  /** A view of the thread where a frame id is more than one past the one before (a frame lost). */
  gaps: number;
  /** A view where a frame id is not past the one before (a frame sent twice, or out of order). */
  dupes: number;
  /** A view without exactly one `run_finish` on the thread, that of the run, as its last frame. */
  terminals: number;
  /** A view where a `step_start` is followed by another `step_start` or a `run_start` before its `step_end`. */
  unclosedSteps: number;
  /** The live follower's frames differ from the thread's log read afterwards (same id, other frame). */
  liveNotLog: number;
  /** A view without two segments of the run (a `run_start` each): A's and B's, so the takeover is in it. */
  notTwoSegments: number;
  /** A frame A's own client was given that the thread's log holds otherwise, or not at all (under its id). */
  clientOfANotLog: number;
  /**
   * A's client, reconnected to B from the last frame it has (`?since=`), sees a broken thread: its
   * frames and B's answer, one after the other, fail a check above (a resync from B is no fault: it
   * tells the client to start over).
   */
  reconnectBroken: number;
  /** B's `GET /v1/runs/:id` answered `status: done` without the run's termination (polled on until it has one). */
  doneWithoutTermination: number;
}

const EMPTY: Row = {
  ...EMPTY_ROW,
  gaps: 0,
  dupes: 0,
  terminals: 0,
  unclosedSteps: 0,
  liveNotLog: 0,
  notTwoSegments: 0,
  clientOfANotLog: 0,
  reconnectBroken: 0,
  doneWithoutTermination: 0,
};

interface Frame {
  readonly id: number;
  readonly event: string;
  readonly type: string;
  readonly runId: string | undefined;
  readonly data: string;
}

const frameOf = (f: SseFrame): Frame => {
  const d = JSON.parse(f.data) as { event_type?: string; run_id?: string };
  return { id: Number(f.id ?? Number.NaN), event: f.event ?? 'message', type: d.event_type ?? f.event ?? '?', runId: d.run_id, data: f.data };
};

/** What a view of the thread breaks, each 0 or 1: the stream of a thread whose one run is `runId`. */
function viewFaults(frames: readonly Frame[], runId: string): Pick<Row, 'gaps' | 'dupes' | 'terminals' | 'unclosedSteps' | 'notTwoSegments'> {
  let gaps = 0;
  let dupes = 0;
  let last = 0;
  for (const f of frames) {
    // A resync frame stands for frames not sent one by one: a gap in what the client was given.
    if (f.event === 'resync' || !Number.isInteger(f.id) || f.id > last + 1) gaps = 1;
    else if (f.id <= last) dupes = 1;
    if (Number.isInteger(f.id)) last = Math.max(last, f.id);
  }
  const finishes = frames.filter((f) => f.type === 'run_finish');
  const terminals = finishes.length === 1 && finishes[0]?.runId === runId && frames.at(-1) === finishes[0] ? 0 : 1;
  let open = false;
  let unclosedSteps = 0;
  for (const f of frames) {
    if (f.type === 'step_start' || f.type === 'run_start') {
      if (open) unclosedSteps = 1;
      open = f.type === 'step_start';
    } else if (f.type === 'step_end') open = false;
  }
  const starts = frames.filter((f) => f.type === 'run_start');
  const notTwoSegments = starts.length === 2 && starts.every((f) => f.runId === runId) ? 0 : 1;
  return { gaps, dupes, terminals, unclosedSteps, notTwoSegments };
}

/** The thread's stream on `b` from its start, once the thread is there (A may not have stored it yet). */
async function streamFromStart(b: ServeProcess, thread: string): Promise<Response> {
  const until = Date.now() + 5_000;
  for (;;) {
    const r = await fetch(`${b.url}/v1/threads/${thread}/stream?since=0`);
    if (r.status === 200 || Date.now() > until) return r;
    await r.body?.cancel();
    await new Promise((res) => setTimeout(res, 25));
  }
}

/** Every whole frame of a response until its connection drops (A's, when A dies). */
async function framesUntilDropped(r: Response): Promise<SseFrame[]> {
  const reader = (r.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) text += decoder.decode(next.value, { stream: true });
  } catch {
    // the process died mid-response: what came before is what its client holds
  }
  return parseSse(text.slice(0, text.lastIndexOf('\n\n') + 2));
}

/** What a failing kill looked like, printed after the table. */
const evidence: string[] = [];

/** One kill at `point`: A armed dies at it, `b` takes the run up. */
async function killAt(b: ServeProcess, point: (typeof POINTS)[number], kill: number): Promise<Row> {
  const thread = `${point.value.replace(/[^a-z0-9]/g, '-')}-${kill}`;
  const row: Row = { ...EMPTY, kills: 1 };
  const armed = await startServe(ARGS, { AWAKEN_TEST_COUNTS: counts, [point.env]: point.value });
  const agentId = agentAt(point, kill);
  let runId = '';
  let live: Promise<SseFrame[]> = Promise.resolve([]);
  let aFrames: Frame[] = [];
  try {
    const r = await fetch(`${armed.url}/v1/runs`, json({ agentId, threadId: thread, messages: [{ role: 'user', content: 'charge order o-1' }] }));
    runId = r.headers.get('x-awaken-run-id') as string;
    const follower = await streamFromStart(b, thread);
    if (follower.status === 200)
      live = readFrames(
        follower,
        (fs) =>
          fs.some((f) => {
            const frame = frameOf(f);
            return frame.type === 'run_finish' && frame.runId === runId;
          }),
        30_000,
      );
    else await follower.body?.cancel();
    aFrames = (await framesUntilDropped(r)).map(frameOf);
    if (await exited(armed, 10_000)) row.crashed = 1;
  } finally {
    await armed.stop();
  }
  const aLog = armed.log();
  const before = countsOf(counts, thread);
  const started = Date.now();
  let run: { status?: string; termination?: { type: string; value?: string } } = {};
  while (Date.now() - started < 20_000) {
    const got = await fetch(`${b.url}/v1/runs/${runId}`);
    run = got.status === 200 ? ((await got.json()) as typeof run) : (await got.body?.cancel(), {});
    if (run.status === 'done' && run.termination !== undefined) break;
    if (run.status === 'done') row.doneWithoutTermination = 1;
    await new Promise((res) => setTimeout(res, 50));
  }
  const liveFrames = (await live.catch(() => [] as SseFrame[])).map(frameOf);
  const logFrames = (await readFrames(await fetch(`${b.url}/v1/threads/${thread}/stream?since=0&until=idle`), () => false, 10_000)).map(frameOf);
  if (run.status !== 'done' || run.termination?.type !== 'natural_end') row.stuck = 1;
  else {
    await judgeEnded(b.url, thread, counts, before, row);
  }
  const liveFaults = viewFaults(liveFrames, runId);
  const logFaults = viewFaults(logFrames, runId);
  for (const key of ['gaps', 'dupes', 'terminals', 'unclosedSteps', 'notTwoSegments'] as const) row[key] = Math.max(liveFaults[key], logFaults[key]);
  const logById = new Map(logFrames.map((f) => [f.id, f.data]));
  if (liveFrames.some((f) => logById.get(f.id) !== f.data)) row.liveNotLog = 1;
  if (aFrames.some((f) => logById.get(f.id) !== f.data)) row.clientOfANotLog = 1;
  const lastOfA = aFrames.at(-1)?.id ?? 0;
  const rest = (await readFrames(await fetch(`${b.url}/v1/threads/${thread}/stream?since=${lastOfA}&until=idle`), () => false, 10_000)).map(frameOf);
  if (rest[0]?.event !== 'resync' && Object.values(viewFaults([...aFrames, ...rest], runId)).some((n) => n > 0)) row.reconnectBroken = 1;
  const expected = EXECUTING_WITHOUT_OUTCOME.has(point.name) ? 1 : 0;
  const faulty =
    row.crashed !== 1 ||
    row.stuck +
      row.chargedTwice +
      row.lookupOverRun +
      row.badHistory +
      row.indeterminateRunAfter +
      row.gaps +
      row.dupes +
      row.terminals +
      row.unclosedSteps +
      row.liveNotLog +
      row.notTwoSegments +
      row.clientOfANotLog +
      row.reconnectBroken +
      row.doneWithoutTermination >
      0 ||
    row.indeterminate !== expected ||
    row.chargedNever !== (NEVER_RUN.has(point.name) ? 1 : 0);
  if (faulty)
    evidence.push(
      [
        `--- ${point.name} kill ${kill} (${agentId}), thread ${thread}, run ${runId}: ${JSON.stringify(row)}`,
        `run: ${JSON.stringify(run)}`,
        `counts before takeover ${JSON.stringify(before)}, after ${JSON.stringify(countsOf(counts, thread))}`,
        `A's client: ${aFrames.map((f) => `${f.id}:${f.event === 'resync' ? 'RESYNC' : f.type}`).join(' ')}`,
        `A's client, reconnected to B: ${rest.map((f) => `${f.id}:${f.event === 'resync' ? 'RESYNC' : f.type}`).join(' ')}`,
        `A's log: ${aLog}`,
        `B's log on the run: ${b
          .log()
          .split('\n')
          .filter((l) => l.includes(runId) || l.includes(thread) || l.includes('reload'))
          .join('\n')}`,
        `live: ${liveFrames.map((f) => `${f.id}:${f.event === 'resync' ? 'RESYNC' : f.type}`).join(' ')}`,
        `log:  ${logFrames.map((f) => `${f.id}:${f.event === 'resync' ? 'RESYNC' : f.type}`).join(' ')}`,
      ].join('\n'),
    );
  return row;
}

const table: string[] = [];

afterAll(async () => {
  if (table.length > 0)
    process.stdout.write(
      `${[
        '| point | kills | crashed | stuck | charged twice | charged never | indeterminate | indeterminate, run after | lookup over-run | bad history | gaps | dupes | terminals != 1 | unclosed steps | live != log | segments != 2 | client of A != log | client of A reconnected: broken | done, no termination |',
        '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
        ...table,
      ].join('\n')}\n`,
    );
  if (evidence.length > 0) process.stdout.write(`${evidence.join('\n')}\n`);
  await dropPrefix(prefix);
});

describe('the checks of a view of the thread', () => {
  const f = (id: number, type: string, extra: { event?: string; runId?: string } = {}): Frame => ({
    id,
    event: extra.event ?? 'message',
    type,
    runId: extra.runId ?? (type.startsWith('run_') ? 'r' : undefined),
    data: `${id}`,
  });
  const sound = [f(1, 'run_start'), f(2, 'step_start'), f(3, 'step_end'), f(4, 'run_start'), f(5, 'step_start'), f(6, 'step_end'), f(7, 'run_finish')];
  const none = { gaps: 0, dupes: 0, terminals: 0, unclosedSteps: 0, notTwoSegments: 0 };

  it('find nothing in a view of two segments, each step closed, one run_finish last', () => {
    expect(viewFaults(sound, 'r')).toEqual(none);
  });

  it('find a frame lost, one sent twice, a resync, a second or misplaced run_finish, a step left open, a missing segment', () => {
    expect(viewFaults([...sound.slice(0, 3), ...sound.slice(4)], 'r')).toEqual({ ...none, gaps: 1, notTwoSegments: 1 });
    expect(viewFaults([...sound.slice(0, 3), f(3, 'step_end'), ...sound.slice(3)], 'r')).toEqual({ ...none, dupes: 1 });
    expect(viewFaults([f(3, 'resync', { event: 'resync' }), ...sound.slice(3)], 'r')).toEqual({ ...none, gaps: 1, notTwoSegments: 1 });
    expect(viewFaults([...sound, f(8, 'run_finish')], 'r')).toEqual({ ...none, terminals: 1 });
    expect(viewFaults([...sound, f(8, 'step_start')], 'r')).toEqual({ ...none, terminals: 1 });
    expect(viewFaults(sound, 'other')).toEqual({ ...none, terminals: 1, notTwoSegments: 1 });
    const cut = [f(1, 'run_start'), f(2, 'step_start'), f(3, 'run_start'), f(4, 'step_start'), f(5, 'step_start'), f(6, 'step_end'), f(7, 'run_finish')];
    expect(viewFaults(cut, 'r')).toEqual({ ...none, unclosedSteps: 1 });
    expect(viewFaults([f(1, 'run_start'), f(2, 'step_start'), f(3, 'run_start'), f(4, 'step_start'), f(5, 'run_finish')], 'r')).toEqual({
      ...none,
      unclosedSteps: 1,
    });
    // A run_finish ends every block (CutStream): a step open at the end is not counted here.
    expect(viewFaults([f(1, 'run_start'), f(2, 'step_start'), f(3, 'step_end'), f(4, 'run_start'), f(5, 'step_start'), f(6, 'run_finish')], 'r')).toEqual(none);
  });
});

describe('kill -9 of an instance at each durable point of a run; the other instance on the same PostgreSQL takes the run up', () => {
  it(
    `${KILLS} kills at each of ${POINTS.length} points; every run ends on the survivor, charge never runs twice, its follower sees one unbroken log`,
    async () => {
      const began = Date.now();
      const b = await startServe(ARGS, { AWAKEN_TEST_COUNTS: counts });
      const rows = new Map<string, Row>(POINTS.map((p) => [p.name, { ...EMPTY }]));
      try {
        for (const point of POINTS)
          for (let k = 0; k < KILLS; k++) {
            const row = await killAt(b, point, k);
            const sum = rows.get(point.name) as Row;
            for (const key of Object.keys(sum) as (keyof Row)[]) sum[key] += row[key];
          }
      } finally {
        await b.stop();
      }
      for (const point of POINTS) {
        const s = rows.get(point.name) as Row;
        report(`cluster crash point / postgres / ${point.name}`, { ...s });
        table.push(
          `| ${point.name} | ${s.kills} | ${s.crashed} | ${s.stuck} | ${s.chargedTwice} | ${s.chargedNever} | ${s.indeterminate} | ${s.indeterminateRunAfter} | ${s.lookupOverRun} | ${s.badHistory} | ${s.gaps} | ${s.dupes} | ${s.terminals} | ${s.unclosedSteps} | ${s.liveNotLog} | ${s.notTwoSegments} | ${s.clientOfANotLog} | ${s.reconnectBroken} | ${s.doneWithoutTermination} |`,
        );
      }
      report('cluster crash points / postgres', { kills: KILLS * POINTS.length, seconds: ((Date.now() - began) / 1000).toFixed(1) });
      expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(POINTS.map((p) => [p.name, { ...EMPTY, ...expectedRow(p, KILLS) }])));
    },
    240_000 * SCALE,
  );
});
