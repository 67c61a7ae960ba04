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

/** The call's own folder inside the sandbox (its working directory and `HOME`). */
export const CALL_FOLDER = '/call';

/**
 * Runs inside the new namespaces, as root there, before the call. It builds a root of its own on
 * a small tmpfs: the system's programs and libraries (`/usr`, `/etc` and the `/bin`, `/lib` links)
 * and the folders the job reads, each bound read-only; the call's folder, `/tmp` and `/dev/shm` as
 * tmpfs mounts bounded in bytes and inodes; four device files; a `/proc` of its own. Then it pivots
 * into it and drops the old root, so nothing else of the machine is there — no socket of a local
 * database, no file a read-only mount would still show. It closes every descriptor it inherited
 * past stderr and runs the call as `nobody` with no capabilities and no way to gain any; this shell
 * stays as the namespace's first process, so when the call ends everything it started dies with it.
 */
const SETUP = `set -e
call_path=$PATH
PATH=/usr/local/sbin:/usr/sbin:/sbin:$PATH
r=$1; shift; keep=$1; shift
mount --make-rprivate /
mount -t tmpfs -o size=1m,nr_inodes=256,mode=0755 tmpfs "$r"
for d in usr bin sbin lib lib32 lib64 libx32 etc; do
  if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$r/$d"
  elif [ -d "/$d" ]; then mkdir -p "$r/$d"; mount --rbind "/$d" "$r/$d"; mount -o remount,bind,ro "$r/$d"
  fi
done
mkdir -p "$r${CALL_FOLDER}" "$r/tmp" "$r/dev" "$r/proc"
mount -t tmpfs -o size=64m,nr_inodes=4096,mode=0700,uid=${SANDBOX_UID},gid=${SANDBOX_UID} tmpfs "$r${CALL_FOLDER}"
mount -t tmpfs -o size=16m,nr_inodes=1024,mode=1777 tmpfs "$r/tmp"
IFS=:
for k in $keep; do
  if [ -n "$k" ] && [ ! -e "$r$k" ]; then mkdir -p "$r$k"; mount --bind "$k" "$r$k"; mount -o remount,bind,ro "$r$k"; fi
done
unset IFS
mount -t tmpfs -o size=64k,nr_inodes=64,mode=0755 tmpfs "$r/dev"
for n in null zero random urandom; do touch "$r/dev/$n"; mount --bind "/dev/$n" "$r/dev/$n"; done
mkdir "$r/dev/shm"
mount -t tmpfs -o size=1m,nr_inodes=64,mode=1777 tmpfs "$r/dev/shm"
ln -s /proc/self/fd "$r/dev/fd"
mount -t proc proc "$r/proc"
mkdir "$r/.old"
cd "$r"
pivot_root . .old
umount -l /.old
rmdir /.old
mount -o remount,bind,ro /
cd ${CALL_FOLDER}
for fd in /proc/$$/fd/*; do n=\${fd##*/}; if [ "$n" -gt 2 ]; then eval "exec $n>&-"; fi; done
set +e
PATH=$call_path
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
  /** Host folders the call reads (bound read-only at the same paths), besides the system's. */
  readonly readable: readonly string[];
  /** Address space on top of the memory limit (a runtime's own reservation). */
  readonly reserveBytes?: number;
}

/** The environment a call sees: nothing of the server's (no secrets), its folder as home. */
export const SANDBOX_ENVIRONMENT: NodeJS.ProcessEnv = Object.freeze({
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: CALL_FOLDER,
  TMPDIR: '/tmp',
  LANG: 'C.UTF-8',
});

/** Processes `nobody` may have at once, across every call (`RLIMIT_NPROC`): a fork bomb stops there. */
export const SANDBOX_PROCESSES = 256;

/**
 * The command line that runs `argv` contained, its new root mounted on `root` (an empty host
 * folder): `setpriv --pdeathsig` kills it if the server dies, `prlimit` holds memory, CPU and
 * processes, `unshare` gives it network, mount, pid, IPC and host-name namespaces of its own.
 */
export function sandboxCommand(
  root: string,
  readable: readonly string[],
  argv: readonly string[],
  limits: Pick<SandboxLimits, 'cpuSeconds'>,
  addressSpace: number,
): string[] {
  const cpu = Math.max(1, Math.ceil(limits.cpuSeconds));
  return [
    'setpriv',
    '--pdeathsig=KILL',
    '--',
    'prlimit',
    `--as=${addressSpace}`,
    `--cpu=${cpu}:${cpu + 1}`,
    `--nproc=${SANDBOX_PROCESSES}`,
    '--core=0',
    '--',
    'unshare',
    '--net',
    '--mount',
    '--pid',
    '--ipc',
    '--uts',
    '--fork',
    '--kill-child',
    '--',
    'bash',
    '-c',
    SETUP,
    'awaken-sandbox',
    root,
    readable.filter((p) => p.startsWith('/') && !p.includes(':') && p !== '/').join(':'),
    ...argv,
  ];
}

const SIGXCPU = 24;
const OUT_OF_MEMORY = /heap out of memory|allocation failed|MemoryError|Cannot allocate memory|cannot allocate|out of memory|memory exhausted/i;

/**
 * Runs one job under the limits: `prlimit` holds memory and CPU, new namespaces hold the network
 * (none), files (its folder only) and processes (killed with it), and this side holds wall-clock
 * time and output. The wall clock is `env.sleep`; `signal` (the run's) kills the call too.
 */
export function runSandboxed(job: SandboxJob, limits: SandboxLimits, env: Pick<Env, 'sleep'>, signal?: AbortSignal): Promise<SandboxEnd> {
  const folder = mkdtempSync(join(tmpdir(), 'awaken-sandbox-'));
  const [program, ...args] = sandboxCommand(folder, job.readable, job.argv, limits, limits.memoryBytes + (job.reserveBytes ?? 0));
  const child = spawn(program as string, args, { env: SANDBOX_ENVIRONMENT, cwd: '/', detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
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
      if (status === 128 + SIGXCPU) return resolve({ type: 'limit', limit: 'cpu', stderr: err });
      // What the program said last, not anything it printed on the way (a warning about memory is no failure of it).
      if (status !== 0 && OUT_OF_MEMORY.test(err.trim().split('\n').at(-1) ?? '')) return resolve({ type: 'limit', limit: 'memory', stderr: err });
      resolve({ type: 'exited', code: status, stdout: text(stdout), stderr: err });
    });
  });
}
