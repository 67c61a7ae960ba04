import { spawn } from 'node:child_process';
import { mkdtempSync, rmdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Env } from '../env.ts';

/** What one sandboxed call may use. */
export interface SandboxLimits {
  /** Wall-clock time, then the call is killed (default 30 s). */
  readonly wallMs: number;
  /** Memory, held by `RLIMIT_AS` (default 512 MiB; a Node tool gets its runtime's reservation on top, see `NODE_RESERVE`). */
  readonly memoryBytes: number;
  /** stdout and stderr together, then the call is killed (default 1 MiB). */
  readonly outputBytes: number;
  /** CPU time, held by `RLIMIT_CPU` (default 30 s). */
  readonly cpuSeconds: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = { wallMs: 30_000, memoryBytes: 512 * 1024 * 1024, outputBytes: 1024 * 1024, cpuSeconds: 30 };

/** The unprivileged user a call runs as (`nobody` on Debian and most Linux systems). */
export const SANDBOX_UID = 65534;

/**
 * Runs inside the new namespaces, as root there, before the call: a process table of its own, the
 * call's folder a fresh tmpfs only it can write, a throwaway `/dev/shm`, and every other file system
 * read-only. Then the call runs as `nobody` with no capabilities and no way to gain any; this shell
 * stays as the namespace's first process, so when the call ends everything it started dies with it.
 */
const SETUP = `set -e
w=$1; shift
mount --make-rprivate /
mount -t proc proc /proc
mount -t tmpfs -o size=64m,mode=0700,uid=${SANDBOX_UID},gid=${SANDBOX_UID} tmpfs "$w"
if [ -d /dev/shm ]; then mount -t tmpfs -o size=1m,mode=1777 tmpfs /dev/shm; fi
mount -o remount,bind,ro /
cd "$w"
set +e
setpriv --reuid=${SANDBOX_UID} --regid=${SANDBOX_UID} --clear-groups --no-new-privs --bounding-set=-all --inh-caps=-all -- "$@"
exit $?`;

/** How a sandboxed process ended. */
export type SandboxEnd =
  | { readonly type: 'exited'; readonly code: number; readonly stdout: string; readonly stderr: string }
  | { readonly type: 'limit'; readonly limit: 'wall-clock' | 'output' | 'cpu' | 'memory'; readonly stderr: string }
  | { readonly type: 'cancelled' };

/** One process to run contained: its command line (found on the sandbox's PATH) and what it reads on stdin. */
export interface SandboxJob {
  readonly argv: readonly string[];
  readonly input: string;
  /** Address space on top of the memory limit (a runtime's own reservation). */
  readonly reserveBytes?: number;
}

/** The environment a call sees: nothing of the server's (no secrets), its folder as home. */
export const sandboxEnvironment = (folder: string): NodeJS.ProcessEnv => ({
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: folder,
  TMPDIR: folder,
  LANG: 'C.UTF-8',
});

const SIGXCPU = 24;
const OUT_OF_MEMORY = /heap out of memory|allocation failed|MemoryError|Cannot allocate memory|cannot allocate|out of memory|memory exhausted/i;

/**
 * Runs one job under the limits: `prlimit` holds memory and CPU, new namespaces hold the network
 * (none), files (its folder only) and processes (killed with it), and this side holds wall-clock
 * time and output. The wall clock is `env.sleep`; `signal` (the run's) kills the call too.
 */
export function runSandboxed(job: SandboxJob, limits: SandboxLimits, env: Pick<Env, 'sleep'>, signal?: AbortSignal): Promise<SandboxEnd> {
  const folder = mkdtempSync(join(tmpdir(), 'awaken-sandbox-'));
  const addressSpace = limits.memoryBytes + (job.reserveBytes ?? 0);
  const cpu = Math.max(1, Math.ceil(limits.cpuSeconds));
  const child = spawn(
    'prlimit',
    [
      `--as=${addressSpace}`,
      `--cpu=${cpu}:${cpu + 1}`,
      '--core=0',
      '--',
      'unshare',
      '--net',
      '--mount',
      '--pid',
      '--fork',
      '--kill-child',
      '--',
      'sh',
      '-c',
      SETUP,
      'awaken-sandbox',
      folder,
      ...job.argv,
    ],
    { env: sandboxEnvironment(folder), cwd: '/', detached: true, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  return new Promise<SandboxEnd>((resolve) => {
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let bytes = 0;
    let stopped: SandboxEnd | undefined;
    const timer = new AbortController();
    const kill = (end: SandboxEnd): void => {
      stopped ??= end;
      try {
        // The whole group: prlimit became unshare, whose death takes the namespace with it.
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const text = (chunks: Buffer[]): string => Buffer.concat(chunks).toString('utf8');
    const take = (into: Buffer[]) => (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > limits.outputBytes) kill({ type: 'limit', limit: 'output', stderr: '' });
      else into.push(chunk);
    };
    child.stdout.on('data', take(stdout));
    child.stderr.on('data', take(stderr));
    // A call that never reads its input, or dies first, closes the pipe under us.
    child.stdin.on('error', () => undefined);
    child.stdin.end(job.input);
    const onAbort = (): void => kill({ type: 'cancelled' });
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted === true) onAbort();
    env.sleep(limits.wallMs, timer.signal).then(
      () => kill({ type: 'limit', limit: 'wall-clock', stderr: text(stderr) }),
      () => undefined,
    );
    child.on('error', (e) => kill({ type: 'exited', code: 127, stdout: '', stderr: e.message }));
    child.on('close', (code, sig) => {
      timer.abort();
      signal?.removeEventListener('abort', onAbort);
      try {
        rmdirSync(folder);
      } catch {
        // Left for the system's temp cleaner: never worth failing a call over.
      }
      if (stopped !== undefined) return resolve(stopped);
      const err = text(stderr);
      const status = code ?? 128 + (sig === 'SIGKILL' ? 9 : 0);
      if (status === 128 + SIGXCPU || status === 128 + 9) return resolve({ type: 'limit', limit: 'cpu', stderr: err });
      if (status !== 0 && OUT_OF_MEMORY.test(err)) return resolve({ type: 'limit', limit: 'memory', stderr: err });
      resolve({ type: 'exited', code: status, stdout: text(stdout), stderr: err });
    });
  });
}
