import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { median } from './stats.ts';

/**
 * `npm run bench:cli`: how long the compiled `awaken` command (dist/cli/bin.js, as a user's `npx
 * awaken` runs it) takes to start — `--version` and `--help` to their exit, and `serve --app` with a
 * two-agent app until its "listening on" line (then SIGTERM, and the exit is awaited before the next
 * run). Ten runs each, one after another, beside `node -e 0` (what Node itself takes to start and
 * exit on this machine); prints the median and the min and exits 1 when a median is over its target
 * (--version and --help: 150 ms, serve: 1.5 s).
 */

const repo = resolve(import.meta.dirname, '..');
const BIN = join(repo, 'dist/cli/bin.js');
// Two agents (one delegates to the other), a plugin and scripted models: no key, no network.
const APP = join(repo, 'spec/cli/fixtures/apps/delegating.ts');
const RUNS = 10;

interface Case {
  readonly name: string;
  /** None for the floor: Node starting and exiting with nothing to run. */
  readonly targetMs?: number;
  readonly once: () => Promise<number>;
}

/** Wall time of a command that exits by itself; a failed exit stops the bench. */
function timedExit(nodeArgs: readonly string[]): () => Promise<number> {
  return async () => {
    const start = performance.now();
    const r = spawnSync(process.execPath, nodeArgs, { cwd: repo, encoding: 'utf8' });
    const ms = performance.now() - start;
    if (r.status !== 0) throw new Error(`node ${nodeArgs.join(' ')} exited ${r.status}: ${r.stderr}`);
    return ms;
  };
}

/** Wall time from the spawn of `awaken serve` to its "listening on" line; then it is stopped. */
function timedServe(args: readonly string[]): () => Promise<number> {
  return () =>
    new Promise<number>((done, fail) => {
      const data = mkdtempSync(join(tmpdir(), 'awaken-bench-cli-'));
      const start = performance.now();
      const child = spawn(process.execPath, [BIN, ...args], { cwd: data, stdio: ['ignore', 'ignore', 'pipe'] });
      let log = '';
      let ready: number | undefined;
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (chunk: string) => {
        log += chunk;
        if (ready === undefined && log.includes('listening on')) {
          ready = performance.now() - start;
          child.kill('SIGTERM');
        }
      });
      child.on('exit', (code, signal) => {
        rmSync(data, { recursive: true, force: true });
        if (ready !== undefined) done(ready);
        else fail(new Error(`awaken ${args.join(' ')} ended (${code ?? signal}) before it listened:\n${log}`));
      });
    });
}

async function main(): Promise<void> {
  if (!existsSync(BIN)) throw new Error(`${BIN} is not there: run npm run build first`);
  const cases: readonly Case[] = [
    { name: 'node -e 0 (the floor: Node alone)', once: timedExit(['-e', '0']) },
    { name: 'awaken --version', targetMs: 150, once: timedExit([BIN, '--version']) },
    { name: 'awaken --help', targetMs: 150, once: timedExit([BIN, '--help']) },
    { name: 'awaken serve --app (two agents) until listening', targetMs: 1500, once: timedServe(['serve', '--app', APP, '--port', '0', '--store', 'memory']) },
  ];
  const rows: { name: string; times: number[]; target: number | undefined }[] = [];
  for (const c of cases) {
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) times.push(await c.once());
    rows.push({ name: c.name, times, target: c.targetMs });
  }
  const lines = [
    '| command | median | min | target | |',
    '|---|---|---|---|---|',
    ...rows.map((r) => {
      const m = median(r.times);
      const verdict = r.target === undefined ? ' | ' : `${r.target} ms | ${m <= r.target ? 'ok' : 'OVER'}`;
      return `| ${r.name} | ${m.toFixed(0)} ms | ${Math.min(...r.times).toFixed(0)} ms | ${verdict} |`;
    }),
  ];
  process.stdout.write(`awaken start-up, dist/cli/bin.js on Node ${process.versions.node} (${RUNS} runs each)\n\n${lines.join('\n')}\n`);
  if (rows.some((r) => r.target !== undefined && median(r.times) > r.target)) process.exitCode = 1;
}

await main();
