import { type Dirent, readdirSync, watch, type FSWatcher } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { AppLoadError, appVersion, loadApp, type LoadedApp } from '../app/load.ts';
import type { AgentRuntime } from '../runtime/agent-runtime.ts';
import type { Logger } from '../server/log.ts';
import { CliFailure } from './args.ts';

/**
 * A runtime that forwards every call to whichever runtime `current` gives at the time of the call:
 * what a server holds under `awaken dev`, so a reload changes the runtime of new runs without the
 * registry, the HTTP app or the mailbox being rebuilt. A run's handle is its runtime's own: a run in
 * flight finishes on the code it started with.
 */
export function forwardingRuntime(current: () => AgentRuntime): AgentRuntime {
  return new Proxy({} as AgentRuntime, {
    get: (_target, prop) => {
      const runtime = current();
      const value: unknown = Reflect.get(runtime, prop, runtime);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(runtime) : value;
    },
    has: (_target, prop) => Reflect.has(current(), prop),
  });
}

const WATCHED = new Set(['.ts', '.mts', '.tsx', '.js', '.mjs', '.jsx', '.json', '.yaml', '.yml']);

/** `root` and the folders below it, without node_modules and dot folders (at most 1000). */
function foldersOf(root: string): string[] {
  const out = [root];
  for (let i = 0; i < out.length && out.length < 1000; i++) {
    let entries: Dirent[];
    try {
      entries = readdirSync(out[i] as string, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) if (e.isDirectory() && e.name !== 'node_modules' && !e.name.startsWith('.')) out.push(join(out[i] as string, e.name));
  }
  return out;
}

export interface ReloadHooks {
  readonly logger: Logger;
  /** The app checked against the config beside it (throws a `CliFailure`). */
  readonly check: (loaded: LoadedApp) => void;
  /** A runtime of the app, or why none can be built (one line). */
  readonly build: (loaded: LoadedApp) => { readonly ok: true; readonly value: AgentRuntime } | { readonly ok: false; readonly error: string };
  /** Makes the app and its runtime current: how many parked runs were let go (they resume on it), how many runs are in flight. */
  readonly swap: (
    loaded: LoadedApp,
    runtime: AgentRuntime,
  ) => Promise<{ readonly released: number; readonly inFlight: number; readonly before: LoadedApp | undefined }>;
}

/**
 * Watches an app's folder (without node_modules and dot folders) and loads the app again when one of
 * its source files changes: a version that loads, checks and builds becomes current (new runs, and
 * waiting runs when their decision comes, run on it); one that does not is logged in one line
 * (file and line, or field) and the last good version keeps serving. Changes within 150 ms are one
 * reload; reloads never overlap.
 */
export function watchApp(first: LoadedApp, hooks: ReloadHooks): { close(): void } {
  let version = first.version;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let closed = false;
  const reload = async (): Promise<void> => {
    if (closed) return;
    // A save that changed nothing (an editor touching the file) is not a new version.
    if (appVersion(first.file) === version) return;
    let loaded: LoadedApp;
    try {
      loaded = await loadApp(first.file);
      hooks.check(loaded);
    } catch (e) {
      if (!(e instanceof AppLoadError || e instanceof CliFailure)) throw e;
      hooks.logger.error(`reload failed: ${e.message}; still serving ${version}`);
      return;
    }
    const built = hooks.build(loaded);
    if (!built.ok) {
      hooks.logger.error(`reload failed: ${built.error}; still serving ${version}`);
      return;
    }
    const { released, inFlight } = await hooks.swap(loaded, built.value);
    hooks.logger.info(
      `reloaded ${loaded.file} (${version} → ${loaded.version}): new runs use it; ${inFlight} run(s) in flight finish on ${version}; ${released} waiting run(s) resume on it when answered`,
    );
    version = loaded.version;
  };
  // One watcher a folder, not one recursive watcher: Node 20's recursive watch on Linux walks
  // node_modules and loses a file an editor replaces by renaming (an atomic save); a folder's own
  // watcher sees the new entry. Folders made later are watched after the next change.
  const watchers = new Map<string, FSWatcher>();
  const watchFolders = (): void => {
    for (const dir of foldersOf(dirname(first.file))) {
      if (watchers.has(dir)) continue;
      try {
        const watcher = watch(dir, (_event, name) => schedule(name === null ? null : String(name)));
        // A folder removed while watched (EPERM on some systems) ends its watcher, not the server.
        watcher.on('error', () => {
          watcher.close();
          watchers.delete(dir);
        });
        watchers.set(dir, watcher);
      } catch (e) {
        if (dir === dirname(first.file)) hooks.logger.warn(`cannot watch ${dir} (${e instanceof Error ? e.message : String(e)}): the app is not reloaded`);
      }
    }
  };
  const schedule = (name: string | null): void => {
    if (closed || (name !== null && (name === 'node_modules' || name.startsWith('.') || (extname(name) !== '' && !WATCHED.has(extname(name)))))) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      watchFolders();
      running = running
        .then(reload)
        .catch((e: unknown) => hooks.logger.error(`reload failed: ${e instanceof Error ? e.message : String(e)}; still serving ${version}`));
    }, 150);
  };
  watchFolders();
  return {
    close: () => {
      closed = true;
      clearTimeout(timer);
      for (const w of watchers.values()) w.close();
    },
  };
}
