import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Plugin } from '../core/phase/plugin.ts';
import { CliFailure } from './args.ts';
import { EXIT } from './exit.ts';

const isPlugin = (x: unknown): x is Plugin => typeof x === 'object' && x !== null && typeof (x as Plugin).name === 'string' && typeof (x as Plugin).register === 'function';

/**
 * A user's plugin module (`awaken fuzz --plugin`, `awaken bench --plugin`): its default export or
 * `plugin` (a plugin, or a function making one), and the module itself for what else it exports.
 * A missing file, a module that does not load, and a module without a plugin are one-line failures.
 */
export async function loadPluginModule(file: string): Promise<{ readonly plugin: Plugin; readonly module: Record<string, unknown> }> {
  const absolute = resolve(file);
  if (!existsSync(absolute)) throw new CliFailure(`cannot read ${file}: ENOENT`, EXIT.noInput);
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(absolute).href)) as Record<string, unknown>;
  } catch (e) {
    throw new CliFailure(`cannot load ${file}: ${e instanceof Error ? e.message : String(e)}`, EXIT.data);
  }
  let plugin: unknown = module['default'] ?? module['plugin'];
  if (typeof plugin === 'function') plugin = (plugin as () => unknown)();
  if (!isPlugin(plugin)) throw new CliFailure(`${file} exports no plugin (a default export or \`plugin\`: { name, register(registrar) }, or a function making one)`, EXIT.data);
  return { plugin, module };
}
