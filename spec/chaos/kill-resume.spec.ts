import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { killHard, startServe, type ServeProcess } from '../support/serve-process.ts';
import { readFrames, type SseFrame } from '../support/server.ts';
import { report, rngOf, SCALE } from './chaos.ts';
import { countsOf, EMPTY_ROW, json, judgeEnded } from './crash-table.ts';

/**
 * kill -9 of `awaken serve --recovery resume` at random points of runs that call a tool that may not
 * run twice (`charge`) and a replay-safe one (`lookup`), then a restart on the same SQLite store:
 * every killed run goes on by itself from its last durable point and ends; `charge` never ran twice
 * (its executions are counted in a file outside the server), and a `charge` that never ran is never
 * answered as done: it ran once with its result, or its result is `indeterminate`; an
 * `indeterminate` one never ran after the restart; `lookup` ran once, or twice when it had left
 * without its outcome stored. A kill between a call's running mark and its tool's call leaves
 * `charge` indeterminate although it never ran (docs/server.md: the store cannot tell that death
 * from one inside the tool); such runs are counted, not failed. That a death before the mark leaves
 * no call indeterminate is crash-points.spec.ts's (its `before-executing` point, killed there).
 */
const KILLS = 6 * SCALE;
/** What the server logs at start-up when it took the killed run up: the line docs/server.md shows (→ Runs a process left running). */
const RESUMED = (() => {
  const page = readFileSync(join(import.meta.dirname, '../../docs/server.md'), 'utf8');
  const section = page.slice(page.indexOf('\n## Runs a process left running\n'));
  return (/^```text\n(.*)\n```$/m.exec(section)?.[1] ?? 'no line in docs/server.md').trim();
})();
const APP = join(import.meta.dirname, 'fixtures/durable-app.ts');

interface Figures {
  tried: number;
  /** Killed before the run's first write: nothing of it was stored. */
  neverStored: number;
  /** Ended before the kill landed. */
  endedBeforeKill: number;
  resumed: number;
  indeterminate: number;
  chargedTwice: number;
  /** `charge` never ran, and the model was told it did. */
  neverRanAnswered: number;
  /** `charge` ran after the restart, and the model was told its outcome is unknown (crash-table.ts's `indeterminateRunAfter`). */
  indeterminateRunAfter: number;
  /** Indeterminate, `charge` never ran: the kill fell between its running mark and its call. */
  indeterminateNeverRan: number;
  lookupReplayed: number;
  /** `lookup` run more than once again, or a history with a call answered twice or an answer given twice. */
  overRun: number;
  duplicated: number;
  stuck: number;
  resumeMaxMs: number;
}

describe('kill -9 of awaken serve --recovery resume mid-run, then a restart on the same store', () => {
  it(`SQLite: ${KILLS} kill points; every killed run goes on and ends, no call that may not run twice runs twice`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-resume-'));
    const counts = join(dir, 'counts.txt');
    const args = ['--app', APP, '--store', `sqlite:${join(dir, 'awaken.db')}`, '--recovery', 'resume'];
    const env = { AWAKEN_TEST_COUNTS: counts };
    const rng = rngOf('kill-resume');
    const f: Figures = {
      tried: 0,
      neverStored: 0,
      endedBeforeKill: 0,
      resumed: 0,
      indeterminate: 0,
      chargedTwice: 0,
      neverRanAnswered: 0,
      indeterminateRunAfter: 0,
      indeterminateNeverRan: 0,
      lookupReplayed: 0,
      overRun: 0,
      duplicated: 0,
      stuck: 0,
      resumeMaxMs: 0,
    };
    let s: ServeProcess = await startServe(args, env);
    try {
      for (let i = 0; i < KILLS; i++) {
        const thread = `r${i}`;
        f.tried++;
        const r = await fetch(`${s.url}/v1/runs`, json({ agentId: 'worker', threadId: thread, messages: [{ role: 'user', content: `order ${i}` }] }));
        const runId = r.headers.get('x-awaken-run-id') as string;
        // The run takes about 100 ms to infer, 300 ms of tools, 100 ms more to answer: the kill lands anywhere in it.
        // Read as a client does, and die at a time of its own (not only when a frame arrives).
        const reading = readFrames(r, () => false, 5_000).catch(() => [] as SseFrame[]);
        await new Promise((res) => setTimeout(res, 50 + Math.floor(rng() * 500)));
        await killHard(s);
        await reading;
        const before = countsOf(counts, thread);
        s = await startServe(args, env);

        const restarted = Date.now();
        let run: { status?: string; termination?: { type: string } } = {};
        let stored = true;
        while (Date.now() - restarted < 15_000) {
          const got = await fetch(`${s.url}/v1/runs/${runId}`);
          if (got.status === 404) {
            stored = false;
            await got.body?.cancel();
            break;
          }
          run = (await got.json()) as typeof run;
          if (run.status === 'done') break;
          await new Promise((res) => setTimeout(res, 50));
        }
        f.resumeMaxMs = Math.max(f.resumeMaxMs, Date.now() - restarted);
        if (!stored) {
          f.neverStored++;
          continue;
        }
        if (run.status !== 'done' || run.termination?.type !== 'natural_end') {
          f.stuck++;
          continue;
        }
        // The server says at start-up whether it found the run running and took it up.
        if (s.log().includes(RESUMED)) f.resumed++;
        else f.endedBeforeKill++;
        // Judged as the crash-point tables judge a run that ended by itself.
        const row = { ...EMPTY_ROW };
        await judgeEnded(s.url, thread, counts, before, row);
        f.chargedTwice += row.chargedTwice;
        f.indeterminate += row.indeterminate;
        f.indeterminateRunAfter += row.indeterminateRunAfter;
        if (row.chargedNever === 1 && row.indeterminate === 0) f.neverRanAnswered++;
        if (row.chargedNever === 1 && row.indeterminate === 1) f.indeterminateNeverRan++;
        if (countsOf(counts, thread).lookup === 2) f.lookupReplayed++;
        f.overRun += row.lookupOverRun;
        f.duplicated += row.badHistory;
      }
    } finally {
      await s.stop();
    }
    report('kill -9 / resume / sqlite', { ...f });
    expect(f.tried).toBe(KILLS);
    expect(f.neverStored + f.endedBeforeKill + f.resumed + f.stuck).toBe(KILLS);
    expect({
      stuck: f.stuck,
      chargedTwice: f.chargedTwice,
      neverRanAnswered: f.neverRanAnswered,
      indeterminateRunAfter: f.indeterminateRunAfter,
      overRun: f.overRun,
      duplicated: f.duplicated,
    }).toEqual({ stuck: 0, chargedTwice: 0, neverRanAnswered: 0, indeterminateRunAfter: 0, overRun: 0, duplicated: 0 });
    // Most kills land inside a run, and are resumed.
    expect(f.resumed).toBeGreaterThan(KILLS / 2);
  }, 180_000);
});
