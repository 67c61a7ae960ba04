import { execFile, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import type { TestProject } from 'vitest/node';

/**
 * The package as another project gets it, made once per test run and shared by the specs that need
 * it (the specs under spec/package/, spec/docs/your-own-agent.spec.ts): `npm pack` in this
 * repository (which runs `prepare`: a build), then, in a fresh project under the system's temporary
 * folder (nothing resolves from this repository's node_modules), `npm init -y`,
 * `npm pkg set type=module` and one `npm install` of the tarball with exact pins of what the specs
 * use beside it.
 *
 * The global setup only makes the run's folder and removes it at the end; the first spec that asks
 * (`packedProject()`) packs and installs, under a lock the others wait on. So a run of other specs
 * never pays for a build, and the pack runs while the other worker goes on with its specs.
 *
 * While writing such a spec, `AWAKEN_PACKED_ROOT=DIR` keeps the folder between runs: the first run
 * packs into DIR, the next ones use what is there (remove DIR after changing src/).
 */

/** What the project installs beside the tarball: exact versions (the compiler and the AI SDK the specs drive). */
export const BESIDE = ['typescript@5.9.3', '@types/node@20', 'ai@6.0.326', 'zod@4.6.7'] as const;

export interface PackedProject {
  /** The project's folder: package.json, node_modules, the tarball. */
  readonly dir: string;
  /** The tarball's file name, in `dir` (`awaken-ts-0.1.0.tgz`). */
  readonly filename: string;
  readonly size: number;
  readonly unpackedSize: number;
  /** Every file the tarball holds. */
  readonly files: readonly string[];
  /** The commands that made the project, run in `dir` in this order, as a user types them. */
  readonly commands: readonly string[];
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's folder where the packed project is made (once, by the first spec that asks). */
    packedRoot: string;
  }
}

const repo = resolve(import.meta.dirname, '../..');

export default function setup(project: TestProject): (() => void) | undefined {
  const kept = process.env['AWAKEN_PACKED_ROOT'];
  if (kept !== undefined && kept !== '') {
    mkdirSync(kept, { recursive: true });
    project.provide('packedRoot', resolve(kept));
    return undefined;
  }
  const root = mkdtempSync(join(tmpdir(), 'awaken-packed-'));
  project.provide('packedRoot', root);
  return () => rmSync(root, { recursive: true, force: true });
}

const run = promisify(execFile);
const npm = async (args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> =>
  (await run('npm', [...args], { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: { ...process.env, npm_config_update_notifier: 'false', ...env } }))
    .stdout;

/**
 * What a user's install downloads and this machine cannot: better-sqlite3's prebuilt binary (its
 * install script, prebuild-install, fetches it from GitHub, and compiles SQLite from source — a
 * minute and more of CPU — when it cannot). The binary `npm ci` left in this repository is offered
 * to the install as a local prebuild: the tarball prebuild-install would have downloaded, in the
 * folder its per-package setting `npm_config_better_sqlite3_local_prebuilds` names. Its name carries
 * the version, the Node ABI and the platform, and prebuild-install loads the binary before taking
 * it, so one that does not fit is not used: the install compiles, as it does when nothing is here
 * to offer (no binary, or `tar` failed).
 */
async function localPrebuilds(root: string): Promise<NodeJS.ProcessEnv> {
  const pkg = join(repo, 'node_modules/better-sqlite3');
  const binary = join(pkg, 'build/Release/better_sqlite3.node');
  if (!existsSync(binary)) return {};
  try {
    const { version } = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as { version: string };
    const dir = join(root, 'prebuilds');
    mkdirSync(dir, { recursive: true });
    // prebuild-install's platform part: `linux` on glibc, `linuxmusl` on musl.
    const header = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header;
    const libc = process.platform === 'linux' && header?.glibcVersionRuntime === undefined ? 'musl' : '';
    const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}${libc}-${process.arch}.tar.gz`;
    await run('tar', ['-czf', join(dir, name), '-C', pkg, 'build/Release/better_sqlite3.node']);
    return { npm_config_better_sqlite3_local_prebuilds: dir };
  } catch {
    return {};
  }
}

/** Packs and installs into `root/my-agent`; writes `root/packed.json` (or `root/failed.txt` with why). */
async function make(root: string): Promise<void> {
  try {
    // Named as the guide's folder: `npm init -y` names the package after it.
    const dir = join(root, 'my-agent');
    mkdirSync(dir);
    const [info] = JSON.parse(await npm(['pack', '--json', '--pack-destination', dir], repo)) as {
      filename: string;
      size: number;
      unpackedSize: number;
      files: { path: string }[];
    }[];
    if (info === undefined) throw new Error('npm pack said nothing');
    const commands = ['npm init -y', 'npm pkg set type=module', `npm install --no-audit --no-fund ./${info.filename} ${BESIDE.join(' ')}`];
    const prebuilt = await localPrebuilds(root);
    for (const c of commands) await npm(c.split(' ').slice(1), dir, c.startsWith('npm install') ? prebuilt : {});
    const packed: PackedProject = {
      dir,
      filename: info.filename,
      size: info.size,
      unpackedSize: info.unpackedSize,
      files: info.files.map((f) => f.path),
      commands,
    };
    writeFileSync(join(root, 'packed.json'), JSON.stringify(packed));
  } catch (e) {
    const err = e as { message?: string; stderr?: string };
    writeFileSync(join(root, 'failed.txt'), `${err.message ?? String(e)}\n${err.stderr ?? ''}`);
  }
}

/**
 * The packed project of this run: made by the first caller (the others wait for it, up to 15
 * minutes). Throws with npm's own words when packing or installing failed.
 */
export async function packedProject(): Promise<PackedProject> {
  const root = inject('packedRoot');
  if (typeof root !== 'string' || !existsSync(root))
    throw new Error('no packed project folder: run the specs with vitest.config.ts (its specs project has spec/support/packed-setup.ts as a global setup)');
  let mine = false;
  try {
    mkdirSync(join(root, 'lock'));
    mine = true;
  } catch {
    // Another spec is making it: wait below.
  }
  if (mine) await make(root);
  const until = Date.now() + 15 * 60_000;
  for (;;) {
    if (existsSync(join(root, 'packed.json'))) return JSON.parse(readFileSync(join(root, 'packed.json'), 'utf8')) as PackedProject;
    if (existsSync(join(root, 'failed.txt')))
      throw new Error(`the package could not be packed and installed: ${readFileSync(join(root, 'failed.txt'), 'utf8')}`);
    if (Date.now() > until) throw new Error('the packed project was not made within 15 minutes');
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * A folder of its own beside the packed project, for a spec that writes files: the project's
 * package.json and its node_modules (a link), so what it writes and records stays out of the others'
 * way. (The project's own folder is the guide's: docs/your-own-agent.md works in it.)
 */
export function besideProject(packed: PackedProject, name: string): string {
  const dir = join(resolve(packed.dir, '..'), name);
  // A kept root (AWAKEN_PACKED_ROOT) has the last run's folder: start afresh.
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  copyFileSync(join(packed.dir, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(packed.dir, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

/** The URL an `awaken serve` child prints once it listens (its stderr), or a failure with its log after `timeoutMs`. */
export function listeningUrl(child: ChildProcess, timeoutMs = 20_000): Promise<string> {
  let log = '';
  return new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`awaken serve did not start:\n${log}`)), timeoutMs);
    child.stderr?.on('data', (d: Buffer) => {
      log += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(log);
      if (m !== null) {
        clearTimeout(timer);
        resolveUrl(m[1] as string);
      }
    });
  });
}
