import { originOf, PluginConfigError, type PluginOrigin } from '../app/define.ts';
import type { JsonValue } from '../contract/json.ts';
import type { StopPolicy } from '../core/policies/stop-policy.ts';
import { PLUGIN_CATALOG } from '../plugins/catalog.ts';
import type { RuntimePlugin } from '../runtime/resolve.ts';
import type { PluginEntry } from './transcript.ts';
import { unreachable } from '../contract/never.ts';

/**
 * The plugins of a transcript's header: what a recorder writes for each plugin a run ran with, and
 * where a replay finds the code to run it again — the catalog, or the app it is given.
 */

/** Words that make a config key name a credential (`client_secret`, `accessToken`, `private_key`). */
const CREDENTIAL_WORDS = new Set([
  'secret',
  'secrets',
  'password',
  'passwd',
  'passphrase',
  'credential',
  'credentials',
  'authorization',
  'token',
  'bearer',
  'cookie',
  'private',
]);
/** What a `key` word must follow to name a credential (`api_key`, `signingKey`); a `cache_key` does not. */
const KEY_OWNERS = new Set(['api', 'access', 'secret', 'signing', 'private', 'client', 'encryption', 'master']);

/**
 * Whether a config key names a credential, read as words (`snake_case`, `kebab-case`, `camelCase`):
 * `apiKey`, `db_password`, `access_token` do; `max_tokens`, `tokens_used`, `cache_key` do not.
 */
function credentialKey(key: string): boolean {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
  if (words.some((w) => CREDENTIAL_WORDS.has(w))) return true;
  if (words.length === 1) return words[0] === 'apikey';
  return words.some((w, i) => w === 'key' && i > 0 && KEY_OWNERS.has(words[i - 1] as string));
}
export const REDACTED = '<redacted>';

/** A URL's user and password, wherever a string holds one (`https://user:pw@host`). */
const URL_USERINFO = /(\b[a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi;

const isObject = (v: JsonValue | undefined): v is { [key: string]: JsonValue } => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A config as a transcript writes it: every value under a key naming a credential is `"<redacted>"`, at any depth. */
export function redactedConfig(config: JsonValue): JsonValue {
  if (typeof config === 'string') return withoutUserinfo(config);
  if (Array.isArray(config)) return config.map(redactedConfig);
  if (!isObject(config)) return config;
  return Object.fromEntries(Object.entries(config).map(([k, v]) => [k, credentialKey(k) ? REDACTED : redactedConfig(v)]));
}

/** A string with the user and password of every URL in it `<redacted>`. */
const withoutUserinfo = (text: string): string => text.replace(URL_USERINFO, `$1${REDACTED}@`);

/**
 * A recorded config with each credential the recorder redacted taken from `current` (the app's
 * config now) at the same path, where it has one. Only values under credential keys are filled: a
 * `"<redacted>"` anywhere else is what the config held.
 */
export function fillRedacted(recorded: JsonValue, current: JsonValue | undefined): JsonValue {
  // A URL whose user and password were redacted: the current one, when it is the same URL but for them.
  if (typeof recorded === 'string')
    return typeof current === 'string' && recorded.includes(`${REDACTED}@`) && withoutUserinfo(current) === recorded ? current : recorded;
  if (Array.isArray(recorded)) return recorded.map((v, i) => fillRedacted(v, Array.isArray(current) ? current[i] : undefined));
  if (!isObject(recorded)) return recorded;
  const now = isObject(current) ? current : undefined;
  return Object.fromEntries(
    Object.entries(recorded).map(([k, v]) => {
      const there = now !== undefined && Object.hasOwn(now, k) ? now[k] : undefined;
      if (v === REDACTED && credentialKey(k)) return [k, there ?? v];
      return [k, fillRedacted(v, there)];
    }),
  );
}

/** How a header names a plugin: by id, with the factory and (redacted) config a `pluginFactory` made it from. */
export function pluginEntryOf(plugin: RuntimePlugin): PluginEntry {
  const origin = originOf(plugin);
  return origin === undefined ? { id: plugin.name } : { id: plugin.name, factory: origin.factory, config: redactedConfig(origin.config) };
}

/** The code of an app a replay may run: its plugins (found by factory or name) and stop policies (by id). */
export interface AppCode {
  readonly plugins: readonly RuntimePlugin[];
  readonly stopPolicies?: readonly StopPolicy[];
}

/** Where a replay finds a header's code beside the catalog. */
export interface CodeOptions {
  /** Custom stop policies named in the header, by id (they are code, not data). */
  readonly stopPolicies?: ReadonlyMap<string, StopPolicy>;
  /** Instances of catalog plugins to replay with in place of the catalog's (the same plugin on another port, e.g. an observability sink). */
  readonly plugins?: ReadonlyMap<string, RuntimePlugin>;
  /** The app the run came from: its factories make the plugins a header records with a factory, its plugins and stop policies are found by id. */
  readonly app?: AppCode;
}

/** The code a header names that a replay was not given: a plugin (made by `factory`, if the header says so) or a stop policy. */
export type MissingCode = { readonly kind: 'plugin'; readonly id: string; readonly factory?: string } | { readonly kind: 'stop_policy'; readonly id: string };

/** The one line a replay fails with when `missing` is not given. */
export function missingMessage(missing: MissingCode): string {
  switch (missing.kind) {
    case 'plugin':
      return missing.factory !== undefined
        ? `plugin '${missing.id}' (factory '${missing.factory}') is not in the app`
        : `plugin '${missing.id}' is neither built in nor in the app`;
    case 'stop_policy':
      return `custom stop policy '${missing.id}' is neither given nor in the app`;
    default:
      return unreachable(missing);
  }
}

/** A header's plugin as found: given as it is, or to be made by an app's factory from the recorded config. */
type Found =
  | { readonly plugin: RuntimePlugin }
  | { readonly entry: { readonly id: string; readonly factory: string; readonly config: JsonValue }; readonly origin: PluginOrigin };

export type FoundCode =
  | { readonly ok: true; readonly plugins: readonly Found[]; readonly stopPolicies: readonly StopPolicy[] }
  | { readonly ok: false; readonly missing: MissingCode };

/**
 * Finds the code of a header's plugins and stop policies, in order, without running any of it. A
 * plugin with a factory: the app's plugin that factory made (the one of that name first). Without:
 * the catalog's (or the instance given in its place), else the app's plugin of that name. A stop
 * policy: the one given by id, else the app's.
 */
export function findCode(plugins: readonly PluginEntry[], stopPolicies: readonly string[], options: CodeOptions): FoundCode {
  const app = options.app?.plugins ?? [];
  const found: Found[] = [];
  for (const entry of plugins) {
    if ('factory' in entry) {
      const made = app.flatMap((p) => {
        const origin = originOf(p);
        return origin?.factory === entry.factory ? [{ name: p.name, origin }] : [];
      });
      const from = made.find((p) => p.name === entry.id) ?? made[0];
      if (from === undefined) return { ok: false, missing: { kind: 'plugin', id: entry.id, factory: entry.factory } };
      found.push({ entry, origin: from.origin });
      continue;
    }
    const builtIn = PLUGIN_CATALOG.get(entry.id);
    const plugin = builtIn !== undefined ? (options.plugins?.get(entry.id) ?? builtIn) : app.find((p) => p.name === entry.id);
    if (plugin === undefined) return { ok: false, missing: { kind: 'plugin', id: entry.id } };
    found.push({ plugin });
  }
  const policies: StopPolicy[] = [];
  for (const id of stopPolicies) {
    const policy = options.stopPolicies?.get(id) ?? options.app?.stopPolicies?.find((p) => p.id === id);
    if (policy === undefined) return { ok: false, missing: { kind: 'stop_policy', id } };
    policies.push(policy);
  }
  return { ok: true, plugins: found, stopPolicies: policies };
}

/**
 * The plugins found, each made: a factory's from the recorded config with its credentials filled
 * from the app's own config. A factory that refuses the config, throws, or makes a plugin of
 * another name than the header's id is named in the message returned instead.
 */
export function makePlugins(
  found: readonly Found[],
): { readonly ok: true; readonly plugins: readonly RuntimePlugin[] } | { readonly ok: false; readonly message: string } {
  const plugins: RuntimePlugin[] = [];
  for (const f of found) {
    if ('plugin' in f) {
      plugins.push(f.plugin);
      continue;
    }
    const { entry, origin } = f;
    const named = `plugin '${entry.id}' (factory '${entry.factory}')`;
    let made: RuntimePlugin;
    try {
      made = origin.make(fillRedacted(entry.config, origin.config));
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      return {
        ok: false,
        message: e instanceof PluginConfigError ? `${named} refuses the recorded config: ${message}` : `${named} failed to make the plugin: ${message}`,
      };
    }
    if (made.name !== entry.id) return { ok: false, message: `${named} made a plugin named '${made.name}'` };
    plugins.push(made);
  }
  return { ok: true, plugins };
}
