import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, type Stats, statSync } from 'node:fs';
import { register } from 'node:module';
import { dirname, extname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { appExportOf, AppFieldError, appOf, type App } from './app.ts';

/** A loaded app module: the app, the file, and the version of its code that is loaded. */
export interface LoadedApp {
  readonly app: App;
  /** The module as the user named it (relative to the working directory when inside it). */
  readonly file: string;
  /** `sha256:` and 12 hex digits over the app's own source files (its folder, without node_modules). */
  readonly version: string;
  /** The module's exports (what else it offers: `fuzz` for `awaken fuzz --app`). */
  readonly module: Readonly<Record<string, unknown>>;
}

/** Why an app cannot be used: one line naming the file (and line or field), and whether it could not be read at all. */
export class AppLoadError extends Error {
  /** `missing`: the file is not there (exit 66); `bad`: it is there and wrong (exit 65). */
  readonly kind: 'missing' | 'bad';
  constructor(kind: 'missing' | 'bad', message: string) {
    super(message);
    this.name = 'AppLoadError';
    this.kind = kind;
  }
}

const ROOT = new URL('../../', import.meta.url);
const FROM_SOURCE = import.meta.url.endsWith('.ts');
const OWN = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as {
  name: string;
  version: string;
  exports: Record<string, Record<string, string>>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
};

/** The package's entry points in this copy: `awaken-ts`, `awaken-ts/testing`, … → their files (the sources in a checkout). */
function ownEntries(): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const [subpath, conditions] of Object.entries(OWN.exports)) {
    const target = typeof conditions === 'string' ? conditions : FROM_SOURCE ? (conditions['awaken-source'] ?? conditions['import']) : conditions['import'];
    if (target === undefined) continue;
    entries[subpath === '.' ? OWN.name : `${OWN.name}/${subpath.slice(2)}`] = new URL(target, ROOT).href;
  }
  return entries;
}

/**
 * The module hooks, run on the loader's thread: an import of `awaken-ts` (or a subpath) from an app
 * is this running copy's, so the app's plugins and tools are the objects this runtime knows (one
 * WeakMap of plugin origins, one zod); an installed copy of another version is refused, naming
 * both. A package the app's folder does not have is looked for beside this copy (a plugin file
 * outside any project imports zod or fast-check). The files of an app loaded again carry its
 * generation (`?awaken-app=N`), so an edited file is read again and node_modules are shared.
 */
const HOOKS = `
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
let own = {}; let root = ''; let version = ''; let name = ''; let lent = new Set();
export function initialize(data) { own = data.own; root = data.root; version = data.version; name = data.name; lent = new Set(data.lent); }
const packageName = (specifier) => specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');
function packageOf(url) {
  let dir = dirname(fileURLToPath(url));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) { try { const p = JSON.parse(readFileSync(file, 'utf8')); if (p.name === name) return { dir, version: p.version }; } catch {} }
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}
export async function resolve(specifier, context, next) {
  const generation = context.parentURL === undefined ? undefined : /[?&]awaken-app=(\\d+)/.exec(context.parentURL)?.[1];
  if (specifier === name || specifier.startsWith(name + '/')) {
    const url = own[specifier];
    if (url === undefined) throw Object.assign(new Error('awaken-ts has no entry point ' + JSON.stringify(specifier)), { code: 'ERR_PACKAGE_PATH_NOT_EXPORTED' });
    if (generation !== undefined) {
      let theirs;
      try { theirs = await next(specifier, context); } catch {}
      const copy = theirs !== undefined && theirs.url.startsWith('file:') && !theirs.url.startsWith(root) ? packageOf(theirs.url) : undefined;
      if (copy !== undefined && copy.version !== version) {
        throw Object.assign(new Error('imports awaken-ts ' + copy.version + ' (' + copy.dir + ') but this awaken is ' + version + ' (' + fileURLToPath(root).replace(/[\\/]$/, '') + '): install the same version beside the app, or run the app with its own awaken (npx awaken)'), { code: 'AWAKEN_OTHER_COPY' });
      }
    }
    return { url, shortCircuit: true, format: 'module' };
  }
  let resolved;
  try {
    resolved = await next(specifier, context);
  } catch (e) {
    if (generation === undefined || e?.code !== 'ERR_MODULE_NOT_FOUND' || !lent.has(packageName(specifier))) throw e;
    return next(specifier, { ...context, parentURL: root + 'package.json' });
  }
  const ours = resolved.url.startsWith(root + 'src/') || resolved.url.startsWith(root + 'dist/');
  if (generation !== undefined && resolved.url.startsWith('file:') && !resolved.url.includes('/node_modules/') && !ours && !/[?&]awaken-app=/.test(resolved.url)) {
    return { ...resolved, url: resolved.url + (resolved.url.includes('?') ? '&' : '?') + 'awaken-app=' + generation };
  }
  return resolved;
}
`;

let hooked: Promise<void> | undefined;

/** Registers the TypeScript loader (unless this process has one) and the hooks above, once. */
function hook(): Promise<void> {
  hooked ??= (async () => {
    // A checkout runs its sources through tsx already (src/cli/awaken.js); the test runner loads them itself.
    if ('__vitest_worker__' in globalThis) return;
    if (!FROM_SOURCE) {
      const tsx = (await import('tsx/esm/api')) as { register: () => unknown };
      tsx.register();
    }
    // Lent to an app whose folder lacks them: this package's own dependencies and peers, nothing else.
    const lent = [...Object.keys(OWN.dependencies ?? {}), ...Object.keys(OWN.peerDependencies ?? {})];
    register(`data:text/javascript,${encodeURIComponent(HOOKS)}`, { data: { own: ownEntries(), root: ROOT.href, version: OWN.version, name: OWN.name, lent } });
  })();
  return hooked;
}

let generation = 0;

/**
 * Imports a user's module (an app, a plugin file) as apps are imported: TypeScript without a build,
 * `awaken-ts` as this copy, its own files read afresh. What it throws is thrown.
 */
export async function importUserModule(absolute: string): Promise<Record<string, unknown>> {
  await hook();
  return (await import(`${pathToFileURL(absolute).href}?awaken-app=${++generation}`)) as Record<string, unknown>;
}

/** The nearest package.json's `type` above `file`, or undefined when there is none. */
function packageType(file: string): string | undefined {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        return ((JSON.parse(readFileSync(pkg, 'utf8')) as { type?: string }).type ?? 'commonjs') as string;
      } catch {
        return 'commonjs';
      }
    }
    if (dirname(dir) === dir) return undefined;
  }
}

const SOURCES = new Set(['.ts', '.mts', '.cts', '.tsx', '.js', '.mjs', '.cjs', '.jsx', '.json', '.yaml', '.yml']);

/** A digest of the app's own source files: its folder and below, without node_modules and dot folders (at most 5000 files). */
export function appVersion(file: string): string {
  const hash = createHash('sha256');
  const files: string[] = [];
  const walk = (dir: string): void => {
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch {
      return;
    }
    for (const name of names) {
      if (files.length >= 5000) return;
      // A lock file changes with every install, not with the app's code.
      if (name === 'node_modules' || name.startsWith('.') || name === 'package-lock.json') continue;
      const path = join(dir, name);
      let stat: Stats;
      try {
        stat = statSync(path);
      } catch {
        continue;
      }
      if (stat.isDirectory()) walk(path);
      else if (SOURCES.has(extname(name))) files.push(path);
    }
  };
  walk(dirname(file));
  for (const f of files) {
    hash.update(relative(dirname(file), f)).update('\0');
    try {
      hash.update(readFileSync(f)).update('\0');
    } catch {
      // A file removed while the app is read: the digest is of what was there.
    }
  }
  return `sha256:${hash.digest('hex').slice(0, 12)}`;
}

/** The file and line of the first frame of `e` in the app's folder, as `app.ts:12`. */
function placeOf(e: unknown, absolute: string, shown: string): string {
  const stack = e instanceof Error ? (e.stack ?? '') : '';
  const dir = dirname(absolute);
  for (const m of stack.matchAll(/(file:\/\/[^\s)]+?|\/[^\s():]+?):(\d+):(\d+)/g)) {
    const raw = (m[1] as string).replace(/\?.*$/, '');
    const path = raw.startsWith('file:') ? fileURLToPath(raw) : raw;
    if (path.startsWith(dir + sep) && !path.includes(`${sep}node_modules${sep}`)) return `${path === absolute ? shown : displayPath(path)}:${m[2] as string}`;
  }
  return shown;
}

const displayPath = (path: string): string => {
  const rel = relative(process.cwd(), path);
  return rel.startsWith('..') ? path : rel;
};

/**
 * The first line of what went wrong, without a loader's own prefixes and the file's URL: a syntax
 * error's reason is on the line after the transform's "Transform failed with 1 error:", behind its
 * `file:line:col: ERROR: `.
 */
function reasonOf(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  const lines = message.split('\n').filter((l) => l.trim() !== '');
  const first =
    /^Transform failed with \d+ errors?:?$/.test(lines[0]?.trim() ?? '') && lines[1] !== undefined
      ? lines[1].replace(/^.*?:\d+:\d+: (?:ERROR|error): /, '')
      : (lines[0] ?? message);
  return first.replace(/file:\/\/\S+?\?awaken-app=\d+/g, (u) => displayPath(fileURLToPath(u.replace(/\?.*$/, '')))).trim();
}

/**
 * Loads an app module (TypeScript or JavaScript, no build step): the first time, and again after an
 * edit (each load reads the app's own files afresh; node_modules and this package are shared). A
 * file that is missing, a CommonJS one, one that throws or does not parse, one without an app, and
 * an app with a wrong field are `AppLoadError`s: one line naming the file and the line or field.
 */
export async function loadApp(file: string): Promise<LoadedApp> {
  const absolute = resolve(file);
  const shown = displayPath(absolute);
  if (!existsSync(absolute)) throw new AppLoadError('missing', `cannot read ${file}: no such file`);
  if (statSync(absolute).isDirectory()) throw new AppLoadError('missing', `cannot read ${file}: a directory (name the app's module file)`);
  const ext = extname(absolute);
  if (ext === '.cts' || ext === '.cjs' || ((ext === '.ts' || ext === '.js' || ext === '.tsx') && packageType(absolute) !== 'module')) {
    throw new AppLoadError(
      'bad',
      `${shown}: a CommonJS module: an app is an ES module (add "type": "module" to its package.json, or name it ${ext === '.js' || ext === '.cjs' ? '.mjs' : '.mts'})`,
    );
  }
  const version = appVersion(absolute);
  let module: Record<string, unknown>;
  try {
    module = await importUserModule(absolute);
  } catch (e) {
    throw new AppLoadError('bad', `${placeOf(e, absolute, shown)}: cannot load: ${reasonOf(e)}`);
  }
  const exported = appExportOf(module);
  if (exported === undefined)
    throw new AppLoadError('bad', `${shown}: exports no app (export default defineApp({ agents, tools, plugins, models, providers }))`);
  try {
    return { app: appOf(exported), file: shown, version, module };
  } catch (e) {
    if (e instanceof AppFieldError) throw new AppLoadError('bad', `${shown}: ${e.message}`);
    // The app's own code ran while it was read (a getter, a proxy): what it threw, at its line.
    throw new AppLoadError('bad', `${placeOf(e, absolute, shown)}: cannot read the app: ${reasonOf(e)}`);
  }
}
