import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SANDBOX_ENVIRONMENT, sandboxCommand } from './run.ts';

/** What the sandbox needs to know of the machine it would run tools on. */
export interface SandboxHost {
  readonly platform: string;
  /** Undefined where the platform has no user ids. */
  readonly uid: number | undefined;
  /** `process.version`. */
  readonly nodeVersion: string;
  hasProgram(name: string): boolean;
  /** Undefined when a process can be started contained, exactly as a call is; else why not. */
  namespaces(): string | undefined;
}

/** Whether tools can be contained here, and how Node's permission model is switched on. */
export type SandboxProbe =
  | { readonly ok: true; readonly permissionFlag: '--permission' | '--experimental-permission' }
  | { readonly ok: false; readonly reason: string };

/** The programs the sandbox is built from (util-linux, and bash for its set-up). */
export const SANDBOX_PROGRAMS = ['prlimit', 'unshare', 'setpriv', 'mount', 'umount', 'pivot_root', 'bash'] as const;

/** Node's permission model is `--experimental-permission` up to 23.4 and `--permission` from 23.5. */
export function permissionFlag(nodeVersion: string): '--permission' | '--experimental-permission' {
  const [major = 0, minor = 0] = nodeVersion.replace(/^v/, '').split('.').map(Number);
  return major > 23 || (major === 23 && minor >= 5) ? '--permission' : '--experimental-permission';
}

const refused = (why: string): SandboxProbe => ({ ok: false, reason: `the sandbox cannot contain tools on this machine: ${why}` });

/**
 * Decides, once, whether this machine can contain a tool: a call runs as an unprivileged user in
 * network, mount and pid namespaces of its own, which takes Linux, util-linux and root. Anything
 * less is refused with one line saying what is missing — a sandbox that only looks like one is
 * worse than none.
 */
export function probeSandbox(host: SandboxHost = machine()): SandboxProbe {
  if (host.platform !== 'linux') return refused(`it runs a call in Linux namespaces, and this platform is ${host.platform}`);
  for (const program of SANDBOX_PROGRAMS) if (!host.hasProgram(program)) return refused(`it needs ${program}, which is not on PATH`);
  if (host.uid !== 0)
    return refused(`it needs root to run a call as an unprivileged user in namespaces of its own, and this process runs as uid ${host.uid ?? 'unknown'}`);
  const failure = host.namespaces();
  if (failure !== undefined) return refused(`a contained process cannot start here (${failure})`);
  return { ok: true, permissionFlag: permissionFlag(host.nodeVersion) };
}

/** This machine, as the probe sees it. */
export function machine(): SandboxHost {
  return {
    platform: process.platform,
    uid: process.getuid?.(),
    nodeVersion: process.version,
    hasProgram: (name) => spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0,
    namespaces: () => {
      // The very set-up a call gets (namespaces, the new root, nobody), running `true`.
      const root = mkdtempSync(join(tmpdir(), 'awaken-sandbox-probe-'));
      try {
        const [program, ...args] = sandboxCommand(root, [], ['true'], { cpuSeconds: 5 }, 2 ** 30);
        const r = spawnSync(program as string, args, { encoding: 'utf8', env: SANDBOX_ENVIRONMENT, timeout: 10_000 });
        if (r.error !== undefined) return r.error.message;
        return r.status === 0 ? undefined : r.stderr.trim().split('\n').at(-1) || `exit ${r.status}`;
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  };
}
