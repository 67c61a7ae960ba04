import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';

/** The attacks each sandboxed language makes (`attacks.mjs`, `attacks.sh`, `attacks.py`), as docs/sandbox.md's table names them. */
export const ATTACKS = [
  ['environment', "read the server's environment"],
  ['secretFile', 'read a secret file'],
  ['writeOutside', 'write outside its folder'],
  ['spawnProcess', 'start a process that outlives the call'],
  ['serverPort', "connect to the server's own port"],
  ['postgres', 'connect to PostgreSQL on 127.0.0.1:5432'],
  ['unixSocket', 'connect to a Unix socket on the machine'],
  ['sleepForever', 'wait forever'],
  ['loopForever', 'loop forever'],
  ['allocate', 'allocate 4 GB'],
  ['print', 'print 100 MB'],
] as const;

export type Attack = (typeof ATTACKS)[number][0];

export const LANGUAGES = ['Node tool', 'shell script', 'Python skill script'] as const;
export type Language = (typeof LANGUAGES)[number];

const here = import.meta.dirname;
export const ATTACK_FILES: Readonly<Record<Language, string>> = {
  'Node tool': join(here, 'attacks.mjs'),
  'shell script': join(here, 'attacks.sh'),
  'Python skill script': join(here, 'attacks.py'),
};

/** What the attacks aim at: a secret in the server's environment, a secret file only root reads, a place outside the call's folder, a port. */
export interface Targets {
  readonly secret: string;
  readonly secretFile: string;
  readonly outside: string;
  readonly port: number;
  /** A Unix socket a server on the machine listens on (the spec's, `listenOn`): a socket file that is there. */
  readonly socket: string;
  /** The seconds a spawned `sleep` is asked to last: a number no other process on the machine sleeps for. */
  readonly seconds: number;
}

/** A folder others can enter holding a file only its owner (root) reads, and the path a call must not be able to write. */
export function targets(port: number): Targets {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-sandbox-targets-'));
  chmodSync(dir, 0o755);
  const secretFile = join(dir, 'secret.txt');
  writeFileSync(secretFile, 'the secret');
  chmodSync(secretFile, 0o600);
  return {
    secret: `s-${process.pid}-${Date.now()}`,
    secretFile,
    outside: join(dir, 'escaped.txt'),
    port,
    socket: join(dir, 'server.sock'),
    seconds: 7_000 + (process.pid % 1_000),
  };
}

/**
 * A folder of skills others may read, holding skill `attacks` whose script `scripts/attacks.py` is
 * the Python attacks: what `skills.dirs` names and `skill_script` runs.
 */
export function skillsFolder(): string {
  const root = mkdtempSync(join(tmpdir(), 'awaken-sandbox-skills-'));
  chmodSync(root, 0o755);
  mkdirSync(join(root, 'attacks', 'scripts'), { recursive: true });
  writeFileSync(join(root, 'attacks', 'SKILL.md'), '---\nname: attacks\ndescription: Tries to get out of the sandbox.\n---\nRun scripts/attacks.py.\n');
  copyFileSync(ATTACK_FILES['Python skill script'], join(root, 'attacks', 'scripts', 'attacks.py'));
  return root;
}

/** Listens on the targets' Unix socket, as a local database would: a call must not reach it. */
export async function listenOn(socket: string): Promise<NetServer> {
  const server = createNetServer((c) => c.end('you reached the machine'));
  await new Promise<void>((r) => server.listen(socket, r));
  return server;
}

/** The arguments every attack tool takes. */
export const ATTACK_ARGS = z.object({
  attack: z.string(),
  name: z.string().optional(),
  path: z.string().optional(),
  port: z.number().optional(),
  seconds: z.number().optional(),
  socket: z.string().optional(),
});

/** An attack's arguments. */
export const argsOf = (attack: Attack, t: Targets): Record<string, string | number> => ({
  attack,
  ...(attack === 'environment' ? { name: 'AWAKEN_SANDBOX_SPEC_SECRET' } : {}),
  ...(attack === 'secretFile' ? { path: t.secretFile } : {}),
  ...(attack === 'writeOutside' ? { path: t.outside } : {}),
  ...(attack === 'serverPort' ? { port: t.port } : {}),
  ...(attack === 'spawnProcess' ? { seconds: t.seconds } : {}),
  ...(attack === 'unixSocket' ? { socket: t.socket } : {}),
});

/** A message as the page shows it: the paths and the port of this run replaced by names. */
export const shown = (message: string, t: Targets): string =>
  message
    .replaceAll(t.secretFile, '<secret file>')
    .replaceAll(t.outside, '<outside>')
    .replaceAll(t.socket, '<socket>')
    .replaceAll(String(t.port), '<port>')
    .replaceAll(ATTACK_FILES['shell script'], 'attacks.sh');

/** docs/sandbox.md's table: for each attack and language, what the model reads. */
export function pageTable(page: string): Record<string, Record<Language, string>> {
  const rows: Record<string, Record<Language, string>> = {};
  const start = page.indexOf('| attack | Node tool | shell script | Python skill script |');
  for (const line of page.slice(start).split('\n').slice(2)) {
    if (!line.startsWith('|')) break;
    const cells = line.split(' | ').map((c) => c.replace(/^\| ?|\s*\|$/g, '').replace(/^`|`$/g, ''));
    const [name, node, shell, python] = cells as [string, string, string, string];
    rows[name] = { 'Node tool': node, 'shell script': shell, 'Python skill script': python };
  }
  return rows;
}
