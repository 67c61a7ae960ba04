import type { JsonValue } from '../contract/json.ts';
import { originOf } from '../runtime/outbound.ts';
import { credentialKey, hideUrlCredentials, REDACTED } from './log.ts';

/**
 * What a configuration may make the server send, and what a read of it may show (docs/server.md →
 * Outbound settings). A `*_env` field names the variable whose value is sent as a credential to the
 * URL beside it: a provider's `api_key_env` (to its `base_url`), a remote agent's
 * `endpoint.auth.token_env` (to its `endpoint.base_url`). The value goes only where the operator
 * configured that variable to go — the server's config file, and the providers' own hosts — so a
 * config write cannot point a credential at a host of its choosing; the server's own credentials
 * (the admin token, the API tokens) are never sent.
 */

/** The variables of the server's own credentials: read to let requests in, never sent out. */
export const SERVER_CREDENTIAL_ENVS: readonly string[] = ['AWAKEN_ADMIN_TOKEN', 'AWAKEN_API_TOKEN'];

/** Where the model providers' own key variables go (their APIs' origins). */
export const PROVIDER_KEY_ORIGINS: Readonly<Record<string, string>> = {
  OPENAI_API_KEY: 'https://api.openai.com',
  ANTHROPIC_API_KEY: 'https://api.anthropic.com',
  GOOGLE_GENERATIVE_AI_API_KEY: 'https://generativelanguage.googleapis.com',
  MISTRAL_API_KEY: 'https://api.mistral.ai',
};

/** The key an anthropic provider without `api_key_env` sends (to Anthropic's API without a `base_url`). */
export const DEFAULT_ANTHROPIC_KEY_ENV = 'ANTHROPIC_API_KEY';

/** A config namespace whose documents name URLs or credentials. */
export type GuardedNamespace = 'agents' | 'providers' | 'mcp-servers';

/** A `*_env` field of a document: the variable it names and the URL its value is sent to. */
export interface CredentialUse {
  readonly field: string;
  readonly variable: string;
  readonly url: string;
}

const objectAt = (value: unknown, key: string): Record<string, unknown> | undefined => {
  const v = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>)[key] : undefined;
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
};
const stringAt = (value: Record<string, unknown> | undefined, key: string): string | undefined =>
  typeof value?.[key] === 'string' ? (value[key] as string) : undefined;

/** The `*_env` fields of one document (field paths relative to it: `api_key_env`, `endpoint.auth.token_env`). */
export function credentialUsesOf(ns: GuardedNamespace, doc: unknown): CredentialUse[] {
  const d = typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>) : {};
  if (ns === 'providers') {
    const named = stringAt(d, 'api_key_env');
    const url = stringAt(d, 'base_url') ?? (d['kind'] === 'anthropic' ? PROVIDER_KEY_ORIGINS[DEFAULT_ANTHROPIC_KEY_ENV] : undefined);
    // Without api_key_env an anthropic provider sends ANTHROPIC_API_KEY (the key `providerOf` gives
    // it, as the SDK would): the field that decides where it goes is then `base_url`.
    const variable = named ?? (d['kind'] === 'anthropic' ? DEFAULT_ANTHROPIC_KEY_ENV : undefined);
    return variable !== undefined && url !== undefined ? [{ field: named !== undefined ? 'api_key_env' : 'base_url', variable, url }] : [];
  }
  if (ns === 'agents') {
    const endpoint = objectAt(d, 'endpoint');
    const variable = stringAt(objectAt(endpoint, 'auth'), 'token_env');
    const url = stringAt(endpoint, 'base_url');
    return variable !== undefined && url !== undefined ? [{ field: 'endpoint.auth.token_env', variable, url }] : [];
  }
  return [];
}

/** The URLs one document makes the server reach, with their field paths. */
export function urlFieldsOf(ns: GuardedNamespace, doc: unknown): { readonly field: string; readonly url: string }[] {
  const d = typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>) : {};
  const at = (field: string, url: string | undefined) => (url !== undefined ? [{ field, url }] : []);
  if (ns === 'providers') return at('base_url', stringAt(d, 'base_url'));
  if (ns === 'agents') return at('endpoint.base_url', stringAt(objectAt(d, 'endpoint'), 'base_url'));
  return at('url', stringAt(d, 'url'));
}

/**
 * Why a variable may not be named by a `*_env` field, if it may not: it holds one of the server's
 * own credentials (`own`), or it matches none of the allow-list's patterns.
 */
export function envFieldProblem(variable: string, allow: readonly string[], own: readonly string[], hint = ''): string | undefined {
  if (own.includes(variable)) return `'${variable}' holds a credential of this server: it is never sent`;
  if (!envAllowed(variable, allow)) return `'${variable}' is not an allowed key variable (allowed: ${allow.join(', ')}${hint})`;
  return undefined;
}

/**
 * Whether an environment variable name matches one of the allow-list's patterns (`*` stands for any
 * run of letters, digits and `_`; the rest matches exactly).
 */
export function envAllowed(name: string, patterns: readonly string[]): boolean {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return false;
  return patterns.some((p) =>
    new RegExp(
      `^${p
        .split('*')
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('[A-Za-z0-9_]*')}$`,
    ).test(name),
  );
}

/** Where each credential variable may be sent: the providers' own origins, `OPENAI_BASE_URL`'s, and every pairing of the operator's config. */
export function credentialOriginsOf(configured: readonly CredentialUse[], env: NodeJS.ProcessEnv = {}): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const add = (variable: string, url: string | undefined): void => {
    const origin = url !== undefined ? originOf(url) : undefined;
    if (origin === undefined) return;
    const set = out.get(variable) ?? new Set<string>();
    set.add(origin);
    out.set(variable, set);
  };
  for (const [variable, origin] of Object.entries(PROVIDER_KEY_ORIGINS)) add(variable, origin);
  const openaiBase = env['OPENAI_BASE_URL'];
  if (openaiBase !== undefined && openaiBase !== '') add('OPENAI_API_KEY', openaiBase);
  for (const use of configured) add(use.variable, use.url);
  return out;
}

/** Why a credential may not be sent where a config write sends it, if it may not. */
export function bindingProblem(use: CredentialUse, origins: ReadonlyMap<string, ReadonlySet<string>>): string | undefined {
  const allowed = [...(origins.get(use.variable) ?? [])].sort();
  const target = originOf(use.url) ?? use.url;
  if (allowed.includes(target)) return undefined;
  return `'${use.variable}' is sent only to the origins the server's config names for it (${allowed.length > 0 ? allowed.join(', ') : 'none'}), not to ${target}`;
}

/**
 * A configuration document as a read shows it: every credential value (a field named like one —
 * `token`, `*api_key`, `*secret`, `*password` — and URL passwords and credential query parameters)
 * replaced by `[redacted]`; with `names: false`, the `*_env` variable names too.
 */
export function redactConfig(value: JsonValue, options: { readonly names: boolean }, key = ''): JsonValue {
  if (typeof value === 'string') {
    if (credentialKey(key) || (!options.names && /_env$/i.test(key))) return REDACTED;
    return hideUrlCredentials(value);
  }
  if (Array.isArray(value)) return value.map((v) => redactConfig(v, options));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactConfig(v, options, k)]));
  return value;
}

/** The credentials a document names — its literal ones, and the values its `*_env` variables hold in `env`: what no log line may show. */
export function credentialValuesOf(ns: GuardedNamespace, doc: unknown, env: NodeJS.ProcessEnv): string[] {
  return [
    ...literalSecretsOf(doc),
    ...credentialUsesOf(ns, doc).flatMap((u) => (env[u.variable] !== undefined && env[u.variable] !== '' ? [env[u.variable] as string] : [])),
  ];
}

/** The literal credentials of a document (a remote agent's `endpoint.auth.token`): values no log line may show. */
export function literalSecretsOf(doc: unknown): string[] {
  const out: string[] = [];
  const walk = (v: unknown, key: string, depth: number): void => {
    if (depth > 16) return;
    if (typeof v === 'string') {
      if (credentialKey(key) && v !== '' && v !== REDACTED) out.push(v);
    } else if (Array.isArray(v)) {
      for (const x of v) walk(x, '', depth + 1);
    } else if (typeof v === 'object' && v !== null) for (const [k, x] of Object.entries(v)) walk(x, k, depth + 1);
  };
  walk(doc, '', 0);
  return out;
}
