import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { repo } from '../support/serve-process.ts';

// A module hook, registered before the command starts, that appends every module URL Node loads to
// the file $AWAKEN_MODULE_LOG names (hooks run on a thread of their own: a file is how they report).
const HOOK = `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  appendFileSync(process.env.AWAKEN_MODULE_LOG, url + '\\n');
  return next(url, context);
}`;
const REGISTER = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOK)}`)});`;

/** `node src/cli/awaken.js …` with every loaded module recorded: what it printed and what it loaded. */
function loadedBy(args: readonly string[]): { code: number | null; out: string; err: string; modules: readonly string[] } {
  const log = join(mkdtempSync(join(tmpdir(), 'awaken-startup-')), 'modules.txt');
  const r = spawnSync(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(REGISTER)}`, join(repo, 'src/cli/awaken.js'), ...args], {
    cwd: repo,
    encoding: 'utf8',
    env: { ...process.env, AWAKEN_MODULE_LOG: log },
    timeout: 60_000,
  });
  return {
    code: r.status,
    out: r.stdout,
    err: r.stderr,
    modules: readFileSync(log, 'utf8')
      .split('\n')
      .filter((u) => u !== ''),
  };
}

/**
 * The modules of the checkout a run loaded (paths from the repository's root) and the packages it
 * loaded from node_modules (by name); Node's own modules (node:…) are left out.
 */
function summary(modules: readonly string[]): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  for (const url of modules.filter((u) => u.startsWith('file:'))) {
    const path = fileURLToPath(url);
    const inModules = /[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(path);
    if (inModules !== null) packages.add((inModules[1] as string).replace(/\\/g, '/'));
    else files.add(path.slice(repo.length + 1).replace(/\\/g, '/'));
  }
  return { files: [...files].sort(), packages: [...packages].sort() };
}

// What `awaken --version` and `awaken --help` may load: the command's entry, its argument parser
// and exit codes, and the usage texts — no runtime, protocol, server, store, hono, zod or ai. tsx (and
// its esbuild) is the loader that runs the TypeScript sources in a checkout; the package runs
// compiled files without it.
const LIGHT = {
  files: ['src/cli/args.ts', 'src/cli/awaken.js', 'src/cli/exit.ts', 'src/cli/main.ts', 'src/cli/serve-usage.ts', 'src/cli/usages.ts'],
  packages: ['esbuild', 'tsx'],
};

/** What `main` prints in this process for `argv` (the same function the process runs). */
async function printedBy(argv: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (t) => void (out += t), err: (t) => void (err += t) });
  return { code, out, err };
}

describe('awaken starts without loading what its command does not need', () => {
  const version = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string }).version;

  it.each([['--version'], ['-v'], ['version']])('awaken %s prints the version and loads only the light modules', (flag) => {
    const r = loadedBy([flag]);
    expect({ code: r.code, out: r.out, err: r.err }).toEqual({ code: 0, out: `${version}\n`, err: '' });
    expect(summary(r.modules)).toEqual(LIGHT);
  });

  it.each([['--help'], ['-h'], ['help']])("awaken %s prints every command's usage and loads only the light modules", async (flag) => {
    const r = loadedBy([flag]);
    expect({ code: r.code, out: r.out, err: r.err }).toEqual(await printedBy([flag]));
    expect(r.out.startsWith('usage: awaken <command>\n')).toBe(true);
    expect(summary(r.modules)).toEqual(LIGHT);
  });

  it('an unknown command is answered from the light modules too', async () => {
    const r = loadedBy(['serv']);
    expect({ code: r.code, out: r.out, err: r.err }).toEqual(await printedBy(['serv']));
    expect(r.err).toBe(
      "awaken: unknown command 'serv' (did you mean serve?); commands: run, record, replay, inspect, encode, conformance, judge, fuzz, bench, mcp, acp, serve, dev, version, help; see awaken help\n",
    );
    expect(summary(r.modules)).toEqual(LIGHT);
  });

  it('docs/cli.md names the modules they load', () => {
    const section = readFileSync(join(repo, 'docs/cli.md'), 'utf8').split('## Start-up\n')[1]?.split('\n## ')[0] ?? '';
    const named = /load five modules of the package — (.*?) \(in `dist\/cli\/`/s.exec(section)?.[1] ?? '';
    const modules = [...named.matchAll(/`([^`]+)`/g)].map((m) => `src/cli/${m[1]}.ts`);
    expect(modules.sort()).toEqual(LIGHT.files.filter((f) => f !== 'src/cli/awaken.js'));
  });

  it('a command loads its own module when it runs: awaken inspect --help loads the inspector, not the server', () => {
    const r = loadedBy(['inspect', '--help']);
    expect(r.code).toBe(0);
    const { files } = summary(r.modules);
    expect(files).toContain('src/cli/inspect-command.ts');
    expect(files.filter((f) => f.startsWith('src/server/') || f === 'src/cli/serve-command.ts')).toEqual([]);
  });
});
