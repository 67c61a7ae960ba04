import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { importUserModule } from '../app/load.ts';
import type { Plugin } from '../core/phase/plugin.ts';
import { appOption } from './app-option.ts';
import { CliFailure } from './args.ts';
import { cannotRead } from './cannot-read.ts';
import { EXIT } from './exit.ts';

const isPlugin = (x: unknown): x is Plugin =>
  typeof x === 'object' && x !== null && typeof (x as Plugin).name === 'string' && typeof (x as Plugin).register === 'function';

/**
 * A user's plugin module (`awaken fuzz --plugin`, `awaken bench --plugin`): its default export or
 * `plugin` (a plugin, or a function making one), and the module itself for what else it exports.
 * A missing file, a module that does not load, and a module without a plugin are one-line failures.
 */
export async function loadPluginModule(file: string): Promise<{ readonly plugin: Plugin; readonly module: Record<string, unknown> }> {
  const absolute = resolve(file);
  let isDirectory: boolean;
  try {
    isDirectory = statSync(absolute).isDirectory();
  } catch (e) {
    throw cannotRead(file, e);
  }
  if (isDirectory) throw cannotRead(file, { code: 'EISDIR' });
  let module: Record<string, unknown>;
  try {
    // Through the apps' loader: a plugin file in TypeScript, or outside any project, loads as an app does.
    module = await importUserModule(absolute);
  } catch (e) {
    throw new CliFailure(`cannot load ${file}: ${e instanceof Error ? e.message : String(e)}`, EXIT.data);
  }
  let plugin: unknown = module['default'] ?? module['plugin'];
  if (typeof plugin === 'function') plugin = (plugin as () => unknown)();
  if (!isPlugin(plugin))
    throw new CliFailure(`${file} exports no plugin (a default export or \`plugin\`: { name, register(registrar) }, or a function making one)`, EXIT.data);
  return { plugin, module };
}

/**
 * The plugin named `name` of the app module `file` (`awaken fuzz --app FILE --plugin NAME`), and the
 * module for what else it exports (`fuzz`). A file that is not there, an app that does not load or
 * check, and a name the app has no plugin under are one-line failures.
 */
export async function loadAppPlugin(file: string, name: string): Promise<{ readonly plugin: Plugin; readonly module: Record<string, unknown> }> {
  const loaded = await appOption(file);
  const plugin = loaded.app.plugins.find((p) => p.name === name);
  if (plugin === undefined)
    throw new CliFailure(`no plugin '${name}' in ${loaded.file} (its plugins: ${loaded.app.plugins.map((p) => p.name).join(', ') || 'none'})`, EXIT.usage);
  return { plugin, module: loaded.module };
}
