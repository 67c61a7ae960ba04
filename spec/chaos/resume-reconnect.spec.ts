import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { killHard, startServe, type ServeProcess } from '../support/serve-process.ts';
import { parseSse, type SseFrame } from '../support/server.ts';
import { report, rngOf, SCALE } from './chaos.ts';

/**
 * A client streaming a run when `awaken serve --recovery resume` is killed under it (kill -9), back
 * with the last id it got once the server is up again and has taken the run up: it is never sent a
 * frame twice, never a gap without a resync, its ids only grow across the restart, and it sees the
 * run taken up go on to its end. Once back, it drops and reconnects again while the run streams.
 */
const KILLS = 6 * SCALE;
const APP = join(import.meta.dirname, 'fixtures/resume-stream-app.ts');
const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

interface Event {
  readonly event_type: string;
  readonly run_id?: string;
  readonly id?: string;
  readonly message_id?: string;
  readonly termination?: { readonly type: string };
}
interface Snapshot {
  readonly messages: readonly { readonly id?: string; readonly tool_call_id?: string; readonly tool_calls?: readonly { readonly id: string }[] }[];
}

/**
 * What one client got from a thread, across all its connections, checked as it arrives: the `seq` of
 * every item grows, a frame follows the item before it by one unless a resync came between, no `seq`
 * comes twice, and nothing comes twice by what it is since the client's view was last reset by a
 * resync (a run started or ended twice, a step opened while one is open, a tool call started or
 * done twice, a step or tool result the resync's messages already hold).
 */
class Client {
  readonly seqs = new Set<number>();
  last = 0;
  frames = 0;
  resyncs = 0;
  duplicatedBySeq = 0;
  duplicatedByIdentity = 0;
  silentGaps = 0;
  notIncreasing = 0;
  /** What the client's view holds since its last reset. */
  #known = new Set<string>();
  #stepOpen = false;

  /** Takes one whole SSE frame; returns its event (undefined for a resync). */
  take(frame: SseFrame): Event | undefined {
    const seq = Number(frame.id);
    if (this.seqs.has(seq)) this.duplicatedBySeq++;
    this.seqs.add(seq);
    if (seq <= this.last) this.notIncreasing++;
    const resync = frame.event === 'resync';
    if (!resync && seq !== this.last + 1) this.silentGaps++;
    this.last = Math.max(this.last, seq);
    if (resync) {
      this.resyncs++;
      this.#reset(JSON.parse(frame.data) as Snapshot);
      return undefined;
    }
    this.frames++;
    const event = JSON.parse(frame.data) as Event;
    this.#see(event);
    return event;
  }

  #reset(snapshot: Snapshot): void {
    this.#known = new Set();
    this.#stepOpen = false;
    for (const m of snapshot.messages ?? []) {
      if (m.id !== undefined) this.#known.add(`message ${m.id}`);
      if (m.tool_call_id !== undefined) this.#known.add(`done ${m.tool_call_id}`);
      for (const c of m.tool_calls ?? []) this.#known.add(`call ${c.id}`);
    }
  }

  #once(key: string): void {
    if (this.#known.has(key)) this.duplicatedByIdentity++;
    this.#known.add(key);
  }

  #see(e: Event): void {
    switch (e.event_type) {
      case 'run_start':
        this.#once(`start ${e.run_id}`);
        break;
      case 'run_finish':
        this.#once(`finish ${e.run_id}`);
        // A run that goes on after a suspension starts again: its next segment is new.
        this.#known.delete(`start ${e.run_id}`);
        break;
      case 'step_start':
        if (this.#stepOpen) this.duplicatedByIdentity++;
        this.#stepOpen = true;
        this.#once(`message ${e.message_id}`);
        break;
      case 'step_end':
        this.#stepOpen = false;
        break;
      case 'tool_call_start':
        this.#once(`call ${e.id}`);
        break;
      case 'tool_call_done':
        this.#once(`done ${e.id}`);
        this.#once(`message ${e.message_id}`);
        break;
      default:
        break;
    }
  }
}

/** Reads whole frames of an SSE response into `onFrame` until it returns true, the stream ends (a kill) or the time runs out. */
async function follow(response: Response, onFrame: (frame: SseFrame) => boolean, timeoutMs: number): Promise<void> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const deadline = Date.now() + timeoutMs;
  let text = '';
  try {
    while (Date.now() < deadline) {
      const next = await Promise.race([reader.read(), new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), Math.max(1, deadline - Date.now())))]);
      if (next === 'timeout' || next.done === true) return;
      text += decoder.decode(next.value, { stream: true });
      // Only whole frames count: a frame cut by the kill was not received.
      const end = text.lastIndexOf('\n\n') + 2;
      const whole = parseSse(text.slice(0, end)).filter((f) => f.id !== undefined);
      text = text.slice(end);
      for (const f of whole) if (onFrame(f)) return;
    }
  } catch {
    // The connection died with the server.
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

const reconnect = (s: ServeProcess, thread: string, last: number): Promise<Response> =>
  fetch(`${s.url}/v1/threads/${thread}/stream`, { headers: { 'last-event-id': String(last) } });

interface Figures {
  tried: number;
  neverStored: number;
  endedBeforeKill: number;
  resumed: number;
  /** Runs taken up whose run_finish (natural end) the client got on its reconnected stream. */
  finishSeen: number;
  /** Runs taken up of which the client got frames (not only a resync) after the restart. */
  eventsAfterRestart: number;
  stuck: number;
  /** The last id the client held when the last kill landed. */
  heldAtKill: number;
  frames: number;
  resyncs: number;
  duplicatedBySeq: number;
  duplicatedByIdentity: number;
  silentGaps: number;
  notIncreasing: number;
}

/**
 * One kill: a run of `shape` on `thread`, followed from its start until `killWhen` (a frame, or the
 * time); kill -9; a restart that takes the run up; the client back with its last id, dropping once
 * after `dropAfter` frames, then following to the run's end.
 */
async function killAndReconnect(
  args: readonly string[],
  s: ServeProcess,
  thread: string,
  shape: string,
  killWhen: { readonly afterMs?: number; readonly atSeq?: number },
  dropAfter: number,
  f: Figures,
): Promise<ServeProcess> {
  const client = new Client();
  f.tried++;
  const r = await fetch(`${s.url}/v1/runs`, json({ agentId: 'worker', threadId: thread, messages: [{ role: 'user', content: shape }] }));
  const runId = r.headers.get('x-awaken-run-id') as string;
  let finished = false;
  const isEnd = (e: Event | undefined): boolean => e?.event_type === 'run_finish' && e.run_id === runId && e.termination?.type !== 'suspended';
  let reachedSeq: () => void = () => undefined;
  const reached = new Promise<void>((res) => {
    reachedSeq = res;
  });
  const reading = follow(
    r,
    (frame) => {
      finished ||= isEnd(client.take(frame));
      if (killWhen.atSeq !== undefined && client.last >= killWhen.atSeq) {
        reachedSeq();
        return true;
      }
      return false;
    },
    10_000,
  );
  await (killWhen.atSeq !== undefined ? reached : new Promise((res) => setTimeout(res, killWhen.afterMs ?? 0)));
  await killHard(s);
  await reading;
  f.heldAtKill = client.last;
  const restarted = await startServe(args);
  const got = await fetch(`${restarted.url}/v1/runs/${runId}`);
  if (got.status === 404) {
    await got.body?.cancel();
    f.neverStored++;
    return restarted;
  }
  await got.body?.cancel();
  if (finished) {
    // Ended before the kill: back with its last id, the client is sent nothing of it again.
    f.endedBeforeKill++;
    await follow(await reconnect(restarted, thread, client.last), (frame) => (client.take(frame), false), 300);
  } else {
    f.resumed++;
    const framesBefore = client.frames;
    // Back with the last id; a second drop while the run taken up streams, and back again.
    let taken = 0;
    await follow(
      await reconnect(restarted, thread, client.last),
      (frame) => {
        finished ||= isEnd(client.take(frame));
        return finished || ++taken >= dropAfter;
      },
      10_000,
    );
    if (!finished) await follow(await reconnect(restarted, thread, client.last), (frame) => (finished ||= isEnd(client.take(frame))), 10_000);
    const run = (await (await fetch(`${restarted.url}/v1/runs/${runId}`)).json()) as { status: string; termination?: { type: string } };
    if (!finished || run.status !== 'done' || run.termination?.type !== 'natural_end') f.stuck++;
    else f.finishSeen++;
    if (client.frames > framesBefore) f.eventsAfterRestart++;
  }
  f.frames += client.frames;
  f.resyncs += client.resyncs;
  f.duplicatedBySeq += client.duplicatedBySeq;
  f.duplicatedByIdentity += client.duplicatedByIdentity;
  f.silentGaps += client.silentGaps;
  f.notIncreasing += client.notIncreasing;
  return restarted;
}

const figures = (): Figures => ({
  tried: 0,
  neverStored: 0,
  endedBeforeKill: 0,
  resumed: 0,
  finishSeen: 0,
  eventsAfterRestart: 0,
  stuck: 0,
  heldAtKill: 0,
  frames: 0,
  resyncs: 0,
  duplicatedBySeq: 0,
  duplicatedByIdentity: 0,
  silentGaps: 0,
  notIncreasing: 0,
});

const sound = (f: Figures) => ({
  stuck: f.stuck,
  duplicatedBySeq: f.duplicatedBySeq,
  duplicatedByIdentity: f.duplicatedByIdentity,
  silentGaps: f.silentGaps,
  notIncreasing: f.notIncreasing,
});
const NONE = { stuck: 0, duplicatedBySeq: 0, duplicatedByIdentity: 0, silentGaps: 0, notIncreasing: 0 };

describe('a client streaming a run when awaken serve --recovery resume is killed, back with Last-Event-ID after the restart', () => {
  it(`SQLite: ${KILLS} kill points; nothing twice, no gap without a resync, ids only grow, the run taken up reaches the client to its end`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-resume-stream-'));
    const args = ['--app', APP, '--store', `sqlite:${join(dir, 'awaken.db')}`, '--recovery', 'resume'];
    const rng = rngOf('resume-reconnect');
    const f = figures();
    let s = await startServe(args);
    try {
      // The run: 6 pieces 40 ms apart, a 200 ms tool, an answer of 20 pieces 40 ms apart (about 1.3 s).
      for (let i = 0; i < KILLS; i++) {
        const killAt = 40 + Math.floor(rng() * 1_000);
        s = await killAndReconnect(args, s, `r${i}`, 'first=6,gap=40,hold=0,answer=20', { afterMs: killAt }, 1 + Math.floor(rng() * 8), f);
      }
    } finally {
      await s.stop();
    }
    report('kill -9 / resume / reconnect', { ...f });
    expect(f.neverStored + f.endedBeforeKill + f.resumed).toBe(KILLS);
    expect(sound(f)).toEqual(NONE);
    // Every run taken up reached its client, frames of it and its end.
    expect(f.finishSeen).toBe(f.resumed);
    expect(f.eventsAfterRestart).toBe(f.resumed);
    expect(f.resumed).toBeGreaterThan(KILLS / 2);
  }, 60_000);

  it('SQLite: the client holds the last frame the stored seq mark covers when the kill lands; it is resynced, never sent the run again under new ids', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-resume-stream-'));
    const args = ['--app', APP, '--store', `sqlite:${join(dir, 'awaken.db')}`, '--recovery', 'resume'];
    const f = figures();
    let s = await startServe(args);
    try {
      // A new thread's mark is raised to 1024 before its first frame: run_start, step_start and 1022
      // pieces are frames 1…1024, then the run holds still (3 s) before its tool call — the kill lands there.
      s = await killAndReconnect(args, s, 'edge', 'first=1022,gap=0,hold=3000,answer=3', { atSeq: 1024 }, 3, f);
    } finally {
      await s.stop();
    }
    report('kill -9 / resume / reconnect at the mark', { ...f });
    expect({ resumed: f.resumed, heldAtKill: f.heldAtKill }).toEqual({ resumed: 1, heldAtKill: 1024 });
    expect(sound(f)).toEqual(NONE);
    expect(f.resyncs).toBe(1);
    expect(f.finishSeen).toBe(1);
  }, 60_000);
});
