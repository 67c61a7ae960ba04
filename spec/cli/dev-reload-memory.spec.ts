import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { app } from '../support/app-module.ts';
import { repo } from '../support/serve-process.ts';

/**
 * `awaken dev --app` as a user runs it, edited again and again: ES modules cannot be unloaded, so
 * every reload keeps that version's code, and a reload also builds a new runtime and swaps it in.
 * What a long editing session may cost is measured on the real process: its resident set
 * (VmRSS, /proc/<pid>/status) before and after 100 reloads, each a real edit of app.ts.
 */
const folders: string[] = [];
let dev: Dev | undefined;
afterAll(async () => {
  if (dev !== undefined) {
    await dev.stop();
    // `awaken dev` records into a temporary folder of its own when --record is not given.
    const record = /timelines of the runs recorded in ([^\s)]+)/.exec(dev.log())?.[1];
    if (record?.startsWith(tmpdir())) folders.push(record);
  }
  for (const f of folders) rmSync(f, { recursive: true, force: true });
});

/** An app folder (`"type": "module"`) holding `files`. */
function appFolder(files: Readonly<Record<string, string>>): string {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-app-'));
  folders.push(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

interface Dev {
  readonly child: ChildProcess;
  log(): string;
  stop(): Promise<void>;
}

/** `awaken dev --app app.ts` as a process in `dir` (in-memory store, a free port). */
function startDev(dir: string): Dev {
  const child = spawn(process.execPath, [join(repo, 'src/cli/awaken.js'), 'dev', '--app', 'app.ts', '--store', 'memory', '--port', '0'], {
    cwd: dir,
    env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  child.stdout?.resume();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    child,
    log: () => log,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Polls (25 ms) until `found` gives a value; fails with the log when the process ends, a reload fails, or 10 s pass. */
async function until<T>(d: Dev, what: string, found: () => T | undefined): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const value = found();
    if (value !== undefined) return value;
    if (/reload failed: /.test(d.log())) throw new Error(`a reload failed while waiting for ${what}:\n${d.log()}`);
    if (d.child.exitCode !== null || d.child.signalCode !== null)
      throw new Error(`awaken dev ended (${d.child.exitCode ?? d.child.signalCode}) while waiting for ${what}:\n${d.log()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no ${what} within 10 s:\n${d.log()}`);
}

const RELOADED = /reloaded app\.ts \((sha256:[0-9a-f]{12}) → (sha256:[0-9a-f]{12})\): new runs use it;[^\n]*/g;
const reloadsOf = (log: string): [string, string][] => [...log.matchAll(RELOADED)].map((m) => [m[1] as string, m[2] as string]);

/** The answer of one chat run on `url` (`POST /v1/runs`, its SSE stream read to the end). */
async function answer(url: string, threadId: string): Promise<string> {
  const res = await fetch(`${url}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ agentId: 'helper', threadId, messages: [{ role: 'user', content: 'say hi' }] }),
  });
  expect(res.status).toBe(200);
  const events = (await res.text())
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)) as { event_type: string; [k: string]: unknown });
  expect(events.at(-1)).toMatchObject({ event_type: 'run_finish', termination: { type: 'natural_end' } });
  return events
    .filter((e) => e.event_type === 'text_delta')
    .map((e) => e['delta'] as string)
    .join('');
}

/** The process's resident set in kB (VmRSS of /proc/<pid>/status). */
function rssKb(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (m === null) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(m[1]);
}

const BOUND_KB = 50 * 1024;

describe('awaken dev --app, reloaded 100 times', () => {
  it('100 reloads, each a real edit that new runs then use, keep the process within +50 MB RSS', { timeout: 240_000 }, async () => {
    const dir = appFolder({ 'app.ts': app('version 0') });
    const d = startDev(dir);
    dev = d;
    const pid = d.child.pid as number;
    const url = await until(d, '"listening on"', () => /listening on (http:\/\/[^\s"]+)/.exec(d.log())?.[1]);
    expect(await answer(url, 't-0')).toBe('version 0');

    /** Edits app.ts to answer `text` and waits for its reload line (the `count`th), which must follow on from the last one. */
    let count = 0;
    const reloadTo = async (text: string, step: number): Promise<void> => {
      writeFileSync(join(dir, 'app.ts'), app(text, step));
      count += 1;
      const reloads = await until(d, `reload line ${count} (after the edit to ${JSON.stringify(text)})`, () => {
        const all = reloadsOf(d.log());
        return all.length >= count ? all : undefined;
      });
      expect(reloads, `one reload line per edit, no more:\n${d.log()}`).toHaveLength(count);
      if (count > 1) expect(reloads[count - 1]?.[0], 'each reload starts from the version the last one made current').toBe(reloads[count - 2]?.[1]);
    };

    // Warm: a run, 5 reloads, a run on the reloaded code.
    for (let w = 1; w <= 5; w++) await reloadTo(`warm-up ${w}`, w);
    expect(await answer(url, 't-warm')).toBe('warm-up 5');
    const before = rssKb(pid);

    const checkpoints: Record<number, number> = {};
    for (let i = 1; i <= 100; i++) {
      await reloadTo(`version ${i}`, (i % 7) + 1);
      if (i % 25 === 0) {
        expect(await answer(url, `t-${i}`), `the answer after reload ${i}`).toBe(`version ${i}`);
        checkpoints[i] = rssKb(pid);
      }
    }
    const after = rssKb(pid);
    const growth = after - before;

    const reloads = reloadsOf(d.log());
    expect(new Set(reloads.map(([, to]) => to)).size, 'every edit is a version of its own').toBe(105);
    const measured = `VmRSS of awaken dev over 100 reloads: before ${before} kB, after ${after} kB, growth ${growth} kB (${(growth / 1024).toFixed(1)} MB; bound ${BOUND_KB} kB); after reloads 25/50/75/100: ${[25, 50, 75, 100].map((n) => `${checkpoints[n]} kB`).join(' / ')}`;
    console.log(measured);
    expect(growth, measured).toBeLessThanOrEqual(BOUND_KB);
  });
});
