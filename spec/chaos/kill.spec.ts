import { describe, expect, it } from 'vitest';
import { dropPrefix, pgUrlWithPrefix } from '../support/postgres.ts';
import { killHard, startServe } from '../support/serve-process.ts';
import { parseSse, readFrames, type SseFrame } from '../support/server.ts';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { report, rngOf, SCALE, slowScript } from './chaos.ts';

/**
 * kill -9 of `awaken serve --recovery interrupt` at random points of its runs (issue: the server under faults), then a
 * restart on the same store: every run that completed keeps its messages exactly once, the killed run
 * ends interrupted (never looks alive), its thread takes a new run, and a client holding a frame id
 * from before the kill resumes above it or is resynced — never sent a reused id.
 */
const KILLS = 10 * SCALE;
const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const data = (f: SseFrame) => JSON.parse(f.data) as { event_type: string; run_id?: string; termination?: { type: string; value?: string } };
const isFinish = (f: SseFrame) => f.event === undefined && data(f).event_type === 'run_finish';

interface Figures {
  tried: number;
  killedMidRun: number;
  interrupted: number;
  /** Runs that had ended by the time the kill landed (the client had not read their last frame). */
  finishedBeforeKill: number;
  /** Runs killed before their first checkpoint: never in the store. */
  neverStored: number;
  lost: number;
  duplicated: number;
  stuck: number;
  reusedIds: number;
  resynced: number;
  /** The longest time from a restart to the killed run ended. */
  recoveryMaxMs: number;
}

async function killLoop(name: string, args: readonly string[], freeWithinMs = 0): Promise<Figures> {
  const rng = rngOf(name);
  const script = slowScript(10, 40);
  // The killed run ends interrupted: what this suite proves (kill-resume.spec.ts: taken up instead).
  const serveArgs = [...args, '--model', `scripted:${script}`, '--recovery', 'interrupt'];
  const f: Figures = {
    tried: 0,
    killedMidRun: 0,
    interrupted: 0,
    finishedBeforeKill: 0,
    neverStored: 0,
    lost: 0,
    duplicated: 0,
    stuck: 0,
    reusedIds: 0,
    resynced: 0,
    recoveryMaxMs: 0,
  };
  const completed: { thread: string; text: string }[] = [];
  let s = await startServe(serveArgs);
  try {
    for (let i = 0; i < KILLS; i++) {
      const thread = `k${i % 3}`;
      f.tried++;
      // A run, read until a random point, then the process dies under it. The point falls within the
      // run's answer (10 pieces 40 ms apart) nearly always: a kill after the end proves nothing, and
      // with ten kills a window past it left too few mid-run kills for the figures to mean much.
      const r = await fetch(`${s.url}/v1/runs`, json({ threadId: thread, messages: [{ role: 'user', content: `killed ${i}` }] }));
      const runId = r.headers.get('x-awaken-run-id') as string;
      const deadline = Date.now() + Math.floor(rng() * 300);
      const seen = await readFrames(r, () => Date.now() >= deadline, 2_000).catch(() => [] as SseFrame[]);
      const held = seen.length > 0 ? Math.max(...seen.filter((x) => x.id !== undefined).map((x) => Number(x.id))) : 0;
      if (!seen.some(isFinish)) f.killedMidRun++;
      await killHard(s);
      s = await startServe(serveArgs);

      // The killed run never looks alive for longer than a lease and a sweep.
      const restarted = Date.now();
      let run: { status: string; termination?: { type: string; value?: string } } = { status: 'running' };
      let stored = true;
      while (Date.now() - restarted < 10_000) {
        const got = await fetch(`${s.url}/v1/runs/${runId}`);
        // Killed before its first checkpoint: nothing of it was stored, nothing can look alive.
        if (got.status === 404) {
          stored = false;
          await got.body?.cancel();
          break;
        }
        run = (await got.json()) as typeof run;
        if (run.status === 'done') break;
        await new Promise((res) => setTimeout(res, 50));
      }
      if (!stored) f.neverStored++;
      else if (run.status === 'done' && run.termination?.type === 'error' && String(run.termination.value).startsWith('interrupted')) f.interrupted++;
      else if (run.status === 'done' && run.termination?.type === 'natural_end') f.finishedBeforeKill++;
      else f.stuck++;
      f.recoveryMaxMs = Math.max(f.recoveryMaxMs, Date.now() - restarted);

      // A client holding `held` follows the thread; a new run must start and reach it above `held` (or after a resync).
      const follow = held > 0 ? await fetch(`${s.url}/v1/threads/${thread}/stream`, { headers: { 'last-event-id': String(held) } }) : undefined;
      const followed = follow?.status === 200 ? readFrames(follow, (fs) => fs.some(isFinish), 10_000) : Promise.resolve([] as SseFrame[]);
      const text = `after kill ${i}`;
      // A thread whose lease outlived its process is free again within a lease and a sweep (single
      // process stores: at once, their leases are dropped at start-up).
      let next = await fetch(`${s.url}/v1/runs`, json({ threadId: thread, messages: [{ role: 'user', content: text }] }));
      for (const until = Date.now() + freeWithinMs; next.status === 409 && Date.now() < until; ) {
        await next.body?.cancel();
        await new Promise((res) => setTimeout(res, 50));
        next = await fetch(`${s.url}/v1/runs`, json({ threadId: thread, messages: [{ role: 'user', content: text }] }));
      }
      if (next.status !== 200) {
        f.stuck++;
        continue;
      }
      const frames = parseSse(await next.text());
      if (!frames.some((x) => isFinish(x) && data(x).termination?.type === 'natural_end')) f.stuck++;
      else completed.push({ thread, text });
      const got = await followed;
      if (held > 0 && got.length > 0) {
        if (got[0]?.event === 'resync') f.resynced++;
        else if (Number(got[0]?.id) <= held) f.reusedIds++;
      }
    }
    // Every completed run's question and answer, exactly once.
    for (const thread of ['k0', 'k1', 'k2']) {
      const page = (await (await fetch(`${s.url}/v1/threads/${thread}/messages?limit=200`)).json()) as {
        messages: { id: string; role: string; content: { text?: string }[] }[];
      };
      const ids = page.messages.map((m) => m.id);
      f.duplicated += ids.length - new Set(ids).size;
      const texts = page.messages.map((m) => m.content.map((c) => c.text ?? '').join(''));
      for (const c of completed.filter((x) => x.thread === thread)) {
        const n = texts.filter((t) => t === c.text).length;
        if (n === 0) f.lost++;
        if (n > 1) f.duplicated += n - 1;
        const at = texts.indexOf(c.text);
        if (!(texts[at + 1] ?? '').startsWith('piece 0;')) f.lost++;
      }
    }
  } finally {
    await s.stop();
  }
  return f;
}

const expectSound = (f: Figures) => {
  expect(f.tried).toBe(KILLS);
  expect(f.interrupted).toBeGreaterThan(KILLS / 2);
  expect(f.interrupted + f.finishedBeforeKill + f.neverStored).toBe(KILLS);
  expect({ lost: f.lost, duplicated: f.duplicated, stuck: f.stuck, reusedIds: f.reusedIds }).toEqual({ lost: 0, duplicated: 0, stuck: 0, reusedIds: 0 });
};

describe('kill -9 of awaken serve mid-run, then a restart on the same store', () => {
  it(`SQLite: ${KILLS} kill points`, async () => {
    const f = await killLoop('kill-sqlite', ['--store', `sqlite:${join(mkdtempSync(join(tmpdir(), 'awaken-chaos-')), 'awaken.db')}`]);
    report('kill -9 / sqlite', { ...f });
    expectSound(f);
  }, 600_000);

  it(`file: ${KILLS} kill points`, async () => {
    const f = await killLoop('kill-file', ['--store', `file:${mkdtempSync(join(tmpdir(), 'awaken-chaos-'))}`]);
    report('kill -9 / file', { ...f });
    expectSound(f);
  }, 600_000);

  it(`PostgreSQL, one instance: ${KILLS} kill points (its leases expire; a sweep ends the run)`, async () => {
    const prefix = `chk${process.pid}`;
    try {
      const f = await killLoop('kill-postgres', ['--store', pgUrlWithPrefix(prefix), '--lease-ms', '600', '--sweep-ms', '100'], 600 + 100 + 1_000);
      report('kill -9 / postgres', { ...f });
      expectSound(f);
    } finally {
      await dropPrefix(prefix);
    }
  }, 600_000);
});
