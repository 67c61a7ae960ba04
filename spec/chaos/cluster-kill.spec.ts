import { afterAll, describe, expect, it } from 'vitest';
import { dropPrefix, pgUrlWithPrefix } from '../support/postgres.ts';
import { killHard, startServe } from '../support/serve-process.ts';
import { readFrames, type SseFrame } from '../support/server.ts';
import { report, rngOf, SCALE, slowScript } from './chaos.ts';

/**
 * Two `awaken serve --recovery interrupt` instances on one PostgreSQL database: kill -9 of the instance running a thread's run; the survivor ends that run (its followers get the
 * terminal frame) and takes a new run on the thread within a lease and a sweep.
 */
const LEASE_MS = 1_000;
const SWEEP_MS = 200;
const prefix = `chc${process.pid}`;
const url = pgUrlWithPrefix(prefix);
const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const data = (f: SseFrame) => JSON.parse(f.data) as { event_type: string; run_id?: string; termination?: { type: string; value?: string } };

afterAll(async () => {
  await dropPrefix(prefix);
});

describe('two instances on PostgreSQL', () => {
  it(`kill -9 of the instance running a thread, ${20 * SCALE} times: the other ends the run for its followers and takes the thread within lease + sweep`, async () => {
    const rng = rngOf('cluster-kill');
    // Interrupt: the survivor ends the dead instance's run (taking it up instead: cluster-crash-points.spec.ts).
    const args = [
      '--store',
      url,
      '--model',
      `scripted:${slowScript(10, 50)}`,
      '--lease-ms',
      String(LEASE_MS),
      '--sweep-ms',
      String(SWEEP_MS),
      '--recovery',
      'interrupt',
    ];
    let a = await startServe(args);
    const b = await startServe(args);
    const figures = { tried: 0, terminalSeen: 0, interrupted: 0, refusedWhileLeased: 0, stuck: 0, recoveryMaxMs: 0, recoveryBoundMs: LEASE_MS + SWEEP_MS };
    try {
      for (let i = 0; i < 20 * SCALE; i++) {
        figures.tried++;
        const thread = `ck${i}`;
        const r = await fetch(`${a.url}/v1/runs`, json({ threadId: thread, messages: [{ role: 'user', content: `run ${i}` }] }));
        const runId = r.headers.get('x-awaken-run-id') as string;
        // A follower on the survivor, from the start of the thread.
        const follower = readFrames(
          await fetch(`${b.url}/v1/threads/${thread}/stream?since=0`),
          (fs) => fs.some((f) => data(f).event_type === 'run_finish' && data(f).run_id === runId),
          15_000,
        );
        const until = Date.now() + 50 + Math.floor(rng() * 300);
        await readFrames(r, () => Date.now() >= until, 2_000).catch(() => []);
        await killHard(a);
        const killed = Date.now();
        // B refuses while the dead instance's lease lasts, then takes the thread.
        let accepted: Response | undefined;
        while (Date.now() - killed < 10_000) {
          const next = await fetch(`${b.url}/v1/runs`, json({ threadId: thread, messages: [{ role: 'user', content: `after ${i}` }] }));
          if (next.status === 200) {
            accepted = next;
            break;
          }
          if (next.status === 409) figures.refusedWhileLeased++;
          await next.text();
          await new Promise((res) => setTimeout(res, 25));
        }
        if (accepted === undefined) {
          figures.stuck++;
        } else {
          figures.recoveryMaxMs = Math.max(figures.recoveryMaxMs, Date.now() - killed);
          await accepted.text();
        }
        const seen = await follower.catch(() => [] as SseFrame[]);
        const end = seen.find((f) => data(f).event_type === 'run_finish' && data(f).run_id === runId);
        if (end !== undefined) figures.terminalSeen++;
        if (end !== undefined && String(data(end).termination?.value).startsWith('interrupted')) figures.interrupted++;
        a = await startServe(args);
      }
      report('kill -9 / postgres, two instances', figures);
      expect(figures.stuck).toBe(0);
      expect(figures.terminalSeen).toBe(figures.tried);
      expect(figures.interrupted).toBeGreaterThan(figures.tried / 2);
      expect(figures.recoveryMaxMs).toBeLessThan(LEASE_MS + SWEEP_MS + 1_500);
    } finally {
      await a.stop();
      await b.stop();
    }
  }, 600_000);

  it(`${100 * SCALE} concurrent starts on one thread across both instances: exactly one runs`, async () => {
    // The run that wins lasts 3 s, so that every start lands while it runs: with a 250 ms run a start
    // that reached a loaded machine late found the thread free again, and rightly ran.
    const args = ['--store', url, '--model', `scripted:${slowScript(30, 100)}`];
    const a = await startServe(args);
    const b = await startServe(args);
    try {
      const n = 100 * SCALE;
      const responses = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          fetch(`${(i % 2 === 0 ? a : b).url}/v1/runs`, json({ threadId: 'race', messages: [{ role: 'user', content: `start ${i}` }] })),
        ),
      );
      const statuses = responses.map((r) => r.status);
      await Promise.all(responses.map((r) => r.text()));
      report('concurrent starts / postgres, two instances', {
        tried: n,
        ran: statuses.filter((s) => s === 200).length,
        refused: statuses.filter((s) => s === 409).length,
      });
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(statuses.filter((s) => s === 409)).toHaveLength(n - 1);
    } finally {
      await a.stop();
      await b.stop();
    }
  }, 120_000);
});
