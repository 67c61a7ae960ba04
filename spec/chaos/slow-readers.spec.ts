import { connect, type Socket } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { realEnv } from '../../src/runtime/env.ts';
import { listen } from '../../src/server/node.ts';
import { SqliteStore } from '../../src/stores/sqlite.ts';
import { startServe } from '../support/serve-process.ts';
import { testServer } from '../support/server.ts';
import { report, rssOf, SCALE } from './chaos.ts';

/**
 * Clients that stop reading (issue: the server under faults, finding 3), against a real `awaken
 * serve`: 50 followers never read while 40 runs of 200 × 2 KB pieces stream on the threads they follow. What
 * the server holds for them is bounded, and given back once they are gone. The limits are generous
 * correctness bounds (the unbounded server grew by gigabytes), not measurements. The baseline is the
 * server after the same runs on the same threads without followers, settled (a quiet server collects:
 * `server.idle_gc_ms`): V8 keeps the heap it grew for them and each thread keeps its replay ring,
 * which is not what the followers cost.
 */
const MB = 1024 * 1024;
const FOLLOWERS = 50 * SCALE;
const RUNS = 40 * SCALE;
/** Rounds of the same runs before the baseline (one fills each thread's replay ring as the next will). */
const WARM_ROUNDS = 1;

/** Every model step: 200 pieces of 2 KB (one string, shared). */
function bigSteps(fill: string) {
  const piece = fill.repeat(2048);
  return Array.from({ length: (WARM_ROUNDS + 1) * RUNS + 5 }, () => ({ text: Array.from({ length: 200 }, () => piece) }));
}

/**
 * The scenario against a server at `base`: threads `slow-0…` and the same runs on them without
 * followers (then, once settled, the baseline), the followers that never read, the runs on their
 * threads (the peak), the followers gone (what is held after, waited for up to 10 s while above
 * baseline + 50 MB).
 */
async function followersThatNeverRead(base: string, measure: () => number | Promise<number>, settleMs: number) {
  const post = (path: string, body: unknown) =>
    fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  for (let t = 0; t < RUNS; t++) expect((await post('/v1/threads', { id: `slow-${t}` })).status).toBe(201);
  // The same runs on the same threads without followers: their replay rings and the heap V8 grew
  // for them are in the baseline, which the followers' cost is measured against.
  for (let round = 0; round < WARM_ROUNDS; round++) {
    for (let t = 0; t < RUNS; t++) await (await post('/v1/runs', { threadId: `slow-${t}`, messages: [{ role: 'user', content: `warm up ${round}` }] })).text();
  }
  await new Promise((r) => setTimeout(r, settleMs));
  const baseline = await measure();
  const url = new URL(base);
  const sockets: Socket[] = [];
  try {
    for (let i = 0; i < FOLLOWERS; i++) {
      const socket = connect(Number(url.port), url.hostname);
      await new Promise<void>((r) => socket.once('connect', () => r()));
      socket.write(`GET /v1/threads/slow-${i % RUNS}/stream HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
      socket.pause();
      sockets.push(socket);
    }
    let peak = baseline;
    for (let i = 0; i < RUNS; i++) {
      await (await post('/v1/runs', { threadId: `slow-${i}`, messages: [{ role: 'user', content: `run ${i}` }] })).text();
      peak = Math.max(peak, await measure());
    }
    for (const socket of sockets) socket.destroy();
    const closedAt = Date.now();
    let after = await measure();
    while (Date.now() - closedAt < 10_000 && after > baseline + 50 * MB) {
      await new Promise((r) => setTimeout(r, 250));
      after = await measure();
    }
    const figures = {
      followers: FOLLOWERS,
      runs: RUNS,
      baselineMB: Math.round(baseline / MB),
      peakOverMB: Math.round((peak - baseline) / MB),
      afterOverMB: Math.round((after - baseline) / MB),
      afterMs: Date.now() - closedAt,
    };
    return { baseline, peak, after, figures };
  } finally {
    for (const socket of sockets) socket.destroy();
  }
}

describe('followers that never read', () => {
  it(`${FOLLOWERS} of them through ${RUNS} runs of 200 × 2 KB against awaken serve: RSS ≤ baseline + 200 MB throughout, ≤ baseline + 50 MB 10 s after they leave`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-chaos-'));
    const script = join(dir, 'big.json');
    writeFileSync(script, JSON.stringify(bigSteps('z')));
    const s = await startServe(['--store', `sqlite:${join(dir, 'awaken.db')}`, '--model', `scripted:${script}`]);
    const pid = s.child.pid as number;
    try {
      const { baseline, peak, after, figures } = await followersThatNeverRead(s.url, () => rssOf(pid), 2500);
      const dropped = (s.log().match(/slow client dropped/g) ?? []).length;
      report('slow readers', { ...figures, dropped });
      expect(peak - baseline).toBeLessThanOrEqual(200 * MB);
      // Given back within 10 s of their leaving: a quiet server collects what they left behind
      // (server.idle_gc_ms), which V8 alone would keep until the next burst of work.
      expect(after - baseline).toBeLessThanOrEqual(50 * MB);
      expect((await fetch(`${s.url}/health`)).status).toBe(200);
    } finally {
      await s.stop();
    }
  }, 300_000);

  it(`the same in one process: what the server holds (heap and buffers, after a GC) is ≤ baseline + 200 MB with them and ≤ baseline + 50 MB 10 s after they disconnect`, async () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    expect(gc).toBeTypeOf('function');
    const held = (): number => {
      (gc as () => void)();
      const m = process.memoryUsage();
      return m.heapUsed + m.external;
    };
    // SQLite, as served: an in-memory store would hold every answer in the heap being measured.
    const store = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'awaken-chaos-')), 'awaken.db'));
    const s = testServer(bigSteps('y'), { env: realEnv(), store, recordRequests: false });
    const server = await listen(s.app, { port: 0 });
    try {
      const { baseline, peak, after, figures } = await followersThatNeverRead(server.url, held, 0);
      report('slow readers, in process', figures);
      expect(peak - baseline).toBeLessThanOrEqual(200 * MB);
      expect(after - baseline).toBeLessThanOrEqual(50 * MB);
    } finally {
      await server.close();
    }
  }, 300_000);
});
