import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dropPrefix, pgUrlWithPrefix } from '../support/postgres.ts';
import { killHard, startServe } from '../support/serve-process.ts';
import { readFrames, type SseFrame } from '../support/server.ts';
import { report, rngOf, SCALE } from './chaos.ts';

/**
 * kill -9 of `awaken serve --recovery interrupt` while its runs ask for a decision (issue: the server under faults →
 * durable HITL): a run killed while it waited stays waiting across the restart and its decision,
 * sent to the new process, resumes it to the end — exactly once; a run killed while it was still
 * working is marked interrupted. Never a run stuck, never a decision lost.
 */
const KILLS = 10 * SCALE;
const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const data = (f: SseFrame) => JSON.parse(f.data) as { event_type: string; termination?: { type: string } };

/** A config whose `asker` agent streams a little, then calls `confirm_action` (it waits for a decision). */
function askerConfig(): string {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-chaos-'));
  writeFileSync(
    join(dir, 'ask.json'),
    JSON.stringify([
      { text: ['checking; ', 'still checking; ', 'asking; '], delay_ms: 40, tool_calls: [{ id: 'c', name: 'confirm_action', arguments: { action: 'ship' } }] },
    ]),
  );
  // Two rounds: once the decision is taken the run answers once more and ends (after a restart the
  // script starts again, so that answer asks again; the round limit stops it before that call runs).
  writeFileSync(
    join(dir, 'awaken.yaml'),
    [
      'providers:',
      '  asker: { kind: scripted, file: ask.json }',
      'models:',
      '  ask: { provider: asker, model_name: ask }',
      'agents:',
      '  - { id: asker, model: ask, system_prompt: "Ask first.", max_rounds: 2 }',
      '',
    ].join('\n'),
  );
  return join(dir, 'awaken.yaml');
}

interface Figures {
  tried: number;
  parkedWhenKilled: number;
  decidedAfterRestart: number;
  interrupted: number;
  stuck: number;
  lost: number;
  duplicated: number;
  /** The longest time from a restart to a decision taken (202). */
  decideMaxMs: number;
  /** Decisions that had to wait for the dead process's lease to expire (PostgreSQL). */
  waitedForLease: number;
}

async function killWaitingLoop(name: string, args: readonly string[], retryWithinMs = 0): Promise<Figures> {
  const rng = rngOf(name);
  // A run killed while it worked ends interrupted: what this suite counts (kill-resume.spec.ts: taken up instead).
  const serveArgs = [...args, '--config', askerConfig(), '--recovery', 'interrupt'];
  const f: Figures = {
    tried: 0,
    parkedWhenKilled: 0,
    decidedAfterRestart: 0,
    interrupted: 0,
    stuck: 0,
    lost: 0,
    duplicated: 0,
    decideMaxMs: 0,
    waitedForLease: 0,
  };
  let s = await startServe(serveArgs);
  try {
    for (let i = 0; i < KILLS; i++) {
      f.tried++;
      const thread = `w${i}`;
      const r = await fetch(`${s.url}/v1/runs`, json({ threadId: thread, agentId: 'asker', messages: [{ role: 'user', content: `ship ${i}` }] }));
      const runId = r.headers.get('x-awaken-run-id') as string;
      // Killed at a random point: mostly after the run parked, sometimes while it still streams.
      const deadline = Date.now() + Math.floor(rng() * 1_000);
      const seen = await readFrames(r, () => Date.now() >= deadline, 2_000).catch(() => [] as SseFrame[]);
      const parked = seen.some((x) => x.event === undefined && data(x).event_type === 'run_finish' && data(x).termination?.type === 'suspended');
      if (parked) f.parkedWhenKilled++;
      await killHard(s);
      s = await startServe(serveArgs);
      const restarted = Date.now();

      const status = async (): Promise<{ status: string; termination?: { type: string; value?: string } } | undefined> => {
        const got = await fetch(`${s.url}/v1/runs/${runId}`);
        if (got.status === 404) return (await got.body?.cancel(), undefined);
        return (await got.json()) as { status: string; termination?: { type: string; value?: string } };
      };
      if (!parked) {
        // It may still have parked after the last frame read; else it was working: interrupted.
        let run = await status();
        for (const until = Date.now() + retryWithinMs + 2_000; run !== undefined && run.status === 'running' && Date.now() < until; run = await status()) {
          await new Promise((res) => setTimeout(res, 50));
        }
        if (run === undefined || (run.status === 'done' && String(run.termination?.value).startsWith('interrupted'))) {
          f.interrupted++;
          continue;
        }
        if (run.status !== 'waiting') {
          f.stuck++;
          continue;
        }
      }
      // The run waits in the store; its decision, sent to the new process, resumes it.
      expect((await status())?.status).toBe('waiting');
      let decided = await fetch(`${s.url}/v1/runs/${runId}/decision`, json({ toolCallId: 'c', action: 'resume', payload: { ok: i } }));
      for (const until = Date.now() + retryWithinMs; decided.status === 409 && Date.now() < until; ) {
        await decided.body?.cancel();
        await new Promise((res) => setTimeout(res, 50));
        decided = await fetch(`${s.url}/v1/runs/${runId}/decision`, json({ toolCallId: 'c', action: 'resume', payload: { ok: i } }));
      }
      if (decided.status !== 202) {
        f.lost++;
        await decided.body?.cancel();
        continue;
      }
      f.decideMaxMs = Math.max(f.decideMaxMs, Date.now() - restarted);
      if (Date.now() - restarted > 500) f.waitedForLease++;
      let run = await status();
      for (const until = Date.now() + 5_000; run?.status !== 'done' && Date.now() < until; run = await status())
        await new Promise((res) => setTimeout(res, 25));
      if (run?.status !== 'done' || run.termination?.type === 'error') {
        f.stuck++;
        console.error(`kill-waiting ${name} #${i}: run ${runId} after its decision: ${JSON.stringify(run)}\n${s.log().slice(-3_000)}`);
        continue;
      }
      // The confirmed call's result is in the thread exactly once, after the question.
      const page = (await (await fetch(`${s.url}/v1/threads/${thread}/messages?limit=50`)).json()) as {
        messages: { id: string; role: string; content: { text?: string }[] }[];
      };
      const results = page.messages.filter((m) => m.role === 'tool' && m.content.some((c) => (c.text ?? '').includes('"confirmed":"ship"')));
      if (results.length === 0) f.lost++;
      f.duplicated += Math.max(0, results.length - 1) + page.messages.length - new Set(page.messages.map((m) => m.id)).size;
      f.decidedAfterRestart++;
    }
  } finally {
    await s.stop();
  }
  return f;
}

const expectSound = (f: Figures) => {
  expect(f.tried).toBe(KILLS);
  // Some runs were killed while they waited (about two in three are).
  expect(f.parkedWhenKilled).toBeGreaterThanOrEqual(Math.max(2, KILLS / 5));
  expect(f.decidedAfterRestart).toBeGreaterThanOrEqual(f.parkedWhenKilled);
  expect(f.decidedAfterRestart + f.interrupted).toBe(KILLS);
  expect({ stuck: f.stuck, lost: f.lost, duplicated: f.duplicated }).toEqual({ stuck: 0, lost: 0, duplicated: 0 });
};

describe('kill -9 of awaken serve while its runs wait for a decision, then a restart on the same store', () => {
  it(`SQLite: ${KILLS} kill points; every waiting run is decided after the restart`, async () => {
    const f = await killWaitingLoop('kill-waiting-sqlite', ['--store', `sqlite:${join(mkdtempSync(join(tmpdir(), 'awaken-chaos-')), 'awaken.db')}`]);
    report('kill -9 waiting / sqlite', { ...f });
    expectSound(f);
  }, 600_000);

  it(`file: ${KILLS} kill points; every waiting run is decided after the restart`, async () => {
    const f = await killWaitingLoop('kill-waiting-file', ['--store', `file:${mkdtempSync(join(tmpdir(), 'awaken-chaos-'))}`]);
    report('kill -9 waiting / file', { ...f });
    expectSound(f);
  }, 600_000);

  it(`PostgreSQL: ${KILLS} kill points; a decision sent while the dead instance's lease runs is delivered once it expires`, async () => {
    const prefix = `chw${process.pid}`;
    try {
      // A lease longer than a restart, even on a loaded machine (6 s): the decision reaches the new process while the dead one's lease still runs.
      const f = await killWaitingLoop(
        'kill-waiting-postgres',
        ['--store', pgUrlWithPrefix(prefix), '--lease-ms', '6000', '--sweep-ms', '100'],
        6_000 + 100 + 1_000,
      );
      report('kill -9 waiting / postgres', { ...f });
      expectSound(f);
      expect(f.waitedForLease).toBeGreaterThan(0);
    } finally {
      await dropPrefix(prefix);
    }
  }, 600_000);
});
