import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServe } from '../support/serve-process.ts';
import { report, SCALE } from './chaos.ts';
import { agentAt, countsOf, EMPTY_ROW, exited, expectedRow, json, judgeEnded, type KillRow, POINTS } from './crash-table.ts';

/**
 * The crash-point table of durable execution: `awaken serve --recovery resume` kills itself at each
 * durable point of a run with a tool that may not run twice (`charge`) and a replay-safe one
 * (`lookup`) — the store's points by AWAKEN_CRASH_AT (src/server/crash-at.ts), the two in the app's
 * own code (inside a tool, mid-inference) by the fixture (fixtures/crash-app.ts) — then a server
 * without the hook starts on the same store. Every run ends by itself; `charge` never ran twice
 * (its executions are counted in a file outside the server); its result is `indeterminate` exactly
 * where it was recorded Executing without its outcome stored (the contract's dispatch boundary is
 * that record: after a kill nothing tells a call killed before its executor was called from one
 * killed inside it, so `charge` is then reported unknown and not run), never elsewhere; `lookup`
 * ran once, or twice when it had been recorded Executing without its outcome; the history holds each
 * answer once.
 */
const KILLS = 4 * SCALE;
const APP = join(import.meta.dirname, 'fixtures/crash-app.ts');

/** One kill at `point`, on a store of its own (`store` names it; the tools count their executions in a file named after it). */
async function killAt(store: string, point: (typeof POINTS)[number], kill: number): Promise<KillRow> {
  const counts = join(tmpdir(), `awaken-crash-counts-${process.pid}-${store.replace(/[^a-z0-9]/gi, '')}.txt`);
  const args = ['--app', APP, '--store', store, '--recovery', 'resume'];
  const thread = `${point.value.replace(/[^a-z0-9]/g, '-')}-${kill}`;
  const row: KillRow = { ...EMPTY_ROW, kills: 1 };
  const armed = await startServe(args, { AWAKEN_TEST_COUNTS: counts, [point.env]: point.value });
  const agentId = agentAt(point, kill);
  let runId = '';
  try {
    const r = await fetch(`${armed.url}/v1/runs`, json({ agentId, threadId: thread, messages: [{ role: 'user', content: 'charge order o-1' }] }));
    runId = r.headers.get('x-awaken-run-id') as string;
    await r.text().catch(() => '');
    if (await exited(armed, 10_000)) row.crashed = 1;
  } finally {
    await armed.stop();
  }
  const before = countsOf(counts, thread);
  const s = await startServe(args, { AWAKEN_TEST_COUNTS: counts });
  try {
    const started = Date.now();
    let run: { status?: string; termination?: { type: string } } = {};
    while (Date.now() - started < 15_000) {
      const got = await fetch(`${s.url}/v1/runs/${runId}`);
      run = got.status === 200 ? ((await got.json()) as typeof run) : (await got.body?.cancel(), {});
      if (run.status === 'done') break;
      await new Promise((res) => setTimeout(res, 50));
    }
    if (run.status !== 'done' || run.termination?.type !== 'natural_end') {
      row.stuck = 1;
      return row;
    }
    await judgeEnded(s.url, thread, counts, before, row);
  } finally {
    await s.stop();
  }
  return row;
}

const table: string[] = [];

describe('kill -9 at each durable point of a run, then a restart with --recovery resume on the same store', () => {
  afterAll(() => {
    if (table.length > 0)
      process.stdout.write(
        `${['| store | point | kills | crashed | stuck | charged twice | charged never | indeterminate | indeterminate, run after | lookup over-run | bad history |', '|---|---|---|---|---|---|---|---|---|---|---|', ...table].join('\n')}\n`,
      );
  });

  const stores = [
    { name: 'SQLite', spec: (dir: string) => `sqlite:${join(dir, 'awaken.db')}` },
    { name: 'file', spec: (dir: string) => `file:${dir}` },
  ];
  for (const store of stores)
    it(
      `${store.name}: ${KILLS} kills at each of ${POINTS.length} points; every run ends, charge never runs twice, indeterminate only once Executing`,
      async () => {
        // Each kill on a store of its own, two at a time (a server's start is most of a kill's time).
        const jobs = POINTS.flatMap((point) => Array.from({ length: KILLS }, (_, k) => ({ point, k })));
        const rows = new Map<string, KillRow>(POINTS.map((p) => [p.name, { ...EMPTY_ROW }]));
        let next = 0;
        const worker = async (): Promise<void> => {
          for (let job = jobs[next++]; job !== undefined; job = jobs[next++]) {
            const row = await killAt(store.spec(mkdtempSync(join(tmpdir(), 'awaken-crash-'))), job.point, job.k);
            const sum = rows.get(job.point.name) as KillRow;
            for (const key of Object.keys(sum) as (keyof KillRow)[]) sum[key] += row[key];
          }
        };
        await Promise.all([worker(), worker()]);
        for (const point of POINTS) {
          const sum = rows.get(point.name) as KillRow;
          report(`crash point / ${store.name} / ${point.name}`, { ...sum });
          table.push(
            `| ${store.name} | ${point.name} | ${sum.kills} | ${sum.crashed} | ${sum.stuck} | ${sum.chargedTwice} | ${sum.chargedNever} | ${sum.indeterminate} | ${sum.indeterminateRunAfter} | ${sum.lookupOverRun} | ${sum.badHistory} |`,
          );
        }
        expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(POINTS.map((p) => [p.name, expectedRow(p, KILLS)])));
      },
      240_000 * SCALE,
    );
});
