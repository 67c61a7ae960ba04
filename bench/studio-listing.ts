import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SqliteStore } from '../src/stores/sqlite.ts';
import { median } from './stats.ts';

/**
 * The inspector's finding routes at scale (`npm run bench:studio`): a real `awaken serve` on a SQLite
 * store of 2,000 threads (two runs each, one in seven ended in error) with 10,000 recorded
 * transcripts in its record directory. Each route is asked once to warm (the first listing reads every
 * transcript's header; later ones a `stat` per file), then 5 times; the median of the 5 is printed,
 * and the process exits 1 when one is over 200 ms. Requests go as a browser's do (fetch takes gzip).
 */
const THREADS = 2_000;
const TRANSCRIPTS = 10_000;
const BOUND_MS = 200;
const repo = resolve(import.meta.dirname, '..');
const T = Date.UTC(2026, 0, 1);

const work = mkdtempSync(join(tmpdir(), 'awaken-bench-studio-'));
const record = join(work, 'runs');
const dbPath = join(work, 'store.db');

/** The store as a server that ran these threads left it. */
async function seedStore(): Promise<void> {
  const store = new SqliteStore(dbPath);
  for (let i = 0; i < THREADS; i++) {
    const threadId = `thread-${String(i).padStart(4, '0')}`;
    if (i % 5 === 0) await store.createThread({ id: threadId, title: `Customer ${i} follow-up`, now: T + i * 10 });
    for (const [k, at] of [
      [0, T + i * 10 + 1],
      [1, T + i * 10 + 2],
    ] as const) {
      const failed = k === 1 && i % 7 === 0;
      await store.checkpoint({
        threadId,
        runId: `run-${i}-${k}`,
        agentId: i % 3 === 0 ? 'writer' : 'helper',
        status: 'done',
        termination: failed ? { type: 'error', value: 'the model did not answer' } : { type: 'natural_end' },
        steps: 2,
        messages: [],
        threadState: { revision: 1, extensions: {} },
        runState: { revision: 1, extensions: {} },
        updatedAt: at,
      });
    }
  }
  await store.close();
}

/** 10,000 transcripts: five a thread, each a header and a few records, as `--record` writes them. */
function seedRecord(): void {
  mkdirSync(record, { recursive: true });
  const lines = (thread: string, run: string): string =>
    [
      JSON.stringify({
        type: 'header',
        format: 'awaken-transcript/7',
        request: { thread_id: thread, run_id: run },
        agent: { id: 'helper', model: 'main', system_prompt: 'You help.' },
      }),
      JSON.stringify({ type: 'env', draw: 'now', value: T }),
      JSON.stringify({ type: 'event', event: { event_type: 'run_start', thread_id: thread, run_id: run } }),
      JSON.stringify({ type: 'event', event: { event_type: 'text_delta', delta: 'Here is what I found about your order.' } }),
      JSON.stringify({ type: 'end', steps: 2 }),
      '',
    ].join('\n');
  for (let i = 0; i < TRANSCRIPTS; i++) {
    const t = i % THREADS;
    const thread = `thread-${String(t).padStart(4, '0')}`;
    const name = `${thread}--run-${t}-${Math.floor(i / THREADS)}.jsonl`;
    writeFileSync(join(record, name), lines(thread, `run-${t}-${Math.floor(i / THREADS)}`));
    utimesSync(join(record, name), new Date(T + i * 1_000), new Date(T + i * 1_000));
  }
}

interface Server {
  readonly url: string;
  stop(): Promise<void>;
}

function serve(): Promise<Server> {
  const child = spawn(process.execPath, [join(repo, 'src/cli/awaken.js'), 'serve', '--store', `sqlite:${dbPath}`, '--record', record, '--port', '0'], {
    cwd: repo,
    env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '', AWAKEN_API_TOKEN: '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`awaken serve did not start:\n${log}`)), 30_000);
    child.stderr.on('data', (d: Buffer) => {
      log += d.toString();
      const m = /listening on (http:\/\/[^\s"]+)/.exec(log);
      if (m !== null) {
        clearTimeout(timer);
        done({
          url: m[1] as string,
          stop: () =>
            new Promise<void>((stopped) => {
              child.once('exit', () => stopped());
              child.kill('SIGTERM');
            }),
        });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`awaken serve exited with ${code}:\n${log}`));
    });
  });
}

async function timed(url: string): Promise<{ ms: number; bytes: number; total: number }> {
  const t0 = performance.now();
  const r = await fetch(url);
  const text = await r.text();
  const ms = performance.now() - t0;
  if (r.status !== 200) throw new Error(`${url}: ${r.status} ${text.slice(0, 200)}`);
  return { ms, bytes: Buffer.byteLength(text), total: (JSON.parse(text) as { total: number }).total };
}

await seedStore();
seedRecord();
const server = await serve();
let over = false;
try {
  const cases: [string, string][] = [
    ['transcripts, a page of 50', '/v1/inspector/transcripts?limit=50'],
    ['transcripts, all 10,000', '/v1/inspector/transcripts'],
    ['transcripts, search q=run-19', '/v1/inspector/transcripts?q=run-19&limit=50'],
    ['threads, a page of 50', '/v1/inspector/threads?limit=50'],
    ['threads, the last page', `/v1/inspector/threads?offset=${THREADS - 50}&limit=50`],
    ['threads, search q=RUN-19', '/v1/inspector/threads?q=RUN-19'],
    ['threads, search by title', '/v1/inspector/threads?q=customer%2012'],
    ['threads, errors=true&agent_id=helper', '/v1/inspector/threads?errors=true&agent_id=helper'],
  ];
  const first = await timed(`${server.url}${cases[1]?.[1] as string}`);
  console.log(`studio listing: ${THREADS} threads (SQLite), ${TRANSCRIPTS} transcripts; first listing (every header read) ${first.ms.toFixed(1)} ms`);
  // What no listing of the directory can go below: a stat of each file (the index's check that a header it read still holds).
  const stats: number[] = [];
  for (let k = 0; k < 5; k++) {
    const t0 = performance.now();
    for (const name of readdirSync(record)) statSync(join(record, name));
    stats.push(performance.now() - t0);
  }
  console.log(`a stat of each of the ${TRANSCRIPTS} files on this machine now: ${median(stats).toFixed(1)} ms (median of 5)`);
  console.log(`${'route'.padEnd(40)} ${'median ms'.padStart(10)} ${'total'.padStart(7)} ${'json bytes'.padStart(11)}`);
  for (const [name, path] of cases) {
    await timed(`${server.url}${path}`);
    const runs: number[] = [];
    let last = { ms: 0, bytes: 0, total: 0 };
    for (let k = 0; k < 5; k++) {
      last = await timed(`${server.url}${path}`);
      runs.push(last.ms);
    }
    const m = median(runs);
    if (m > BOUND_MS) over = true;
    console.log(
      `${name.padEnd(40)} ${m.toFixed(1).padStart(10)} ${String(last.total).padStart(7)} ${String(last.bytes).padStart(11)}${m > BOUND_MS ? `  OVER ${BOUND_MS} ms` : ''}`,
    );
  }
} finally {
  await server.stop();
  rmSync(work, { recursive: true, force: true });
}
if (over) {
  console.error(`studio listing: a median is over ${BOUND_MS} ms`);
  process.exit(1);
}
