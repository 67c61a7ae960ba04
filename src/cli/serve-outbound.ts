import { CONFIG_API_PRIVATE_HINT } from '../server/config-routes.ts';
import { credentialUsesOf, credentialValuesOf, SERVER_CREDENTIAL_ENVS, urlFieldsOf } from '../server/config-guard.ts';
import { OutboundGuard } from '../runtime/outbound.ts';
import type { ServeConfig } from './serve-config.ts';

/** What `awaken serve` lets its configuration reach and send (docs/server.md → Outbound settings). */
export interface ServeOutbound {
  /** Every configured URL is reached through it: the file's origins are the operator's. */
  readonly guard: OutboundGuard;
  /** Where each credential variable may go: the URLs the file pairs it with. */
  readonly credentialOrigins: Readonly<Record<string, readonly string[]>>;
  /** The variables of the server's own credentials (never sent). */
  readonly ownCredentialEnvs: readonly string[];
  /** The credentials the file names (literal tokens, and the values of its `*_env` variables): no log line shows them. */
  readonly secrets: readonly string[];
}

/**
 * The outbound settings of a serve: the file's URLs (providers', remote agents', MCP servers') are
 * the operator's, so their loopback and private addresses are reached; a URL written through the
 * config API reaches them only with `server.outbound.config_api_private`. Link-local and metadata
 * addresses are never reached.
 */
export function serveOutbound(file: ServeConfig | undefined, env: NodeJS.ProcessEnv): ServeOutbound {
  const docs: ['providers' | 'agents' | 'mcp-servers', unknown][] = [
    ...Object.values(file?.providers ?? {}).map((p) => ['providers', p] as ['providers', unknown]),
    ...(file?.agents ?? []).map((a) => ['agents', a] as ['agents', unknown]),
    ...Object.values(file?.mcp_servers ?? {}).map((m) => ['mcp-servers', m] as ['mcp-servers', unknown]),
  ];
  const uses = docs.flatMap(([ns, doc]) => credentialUsesOf(ns, doc));
  const credentialOrigins: Record<string, string[]> = {};
  for (const use of uses) (credentialOrigins[use.variable] ??= []).push(use.url);
  return {
    guard: new OutboundGuard({
      privateAddresses: file?.server.outbound?.config_api_private === true ? 'all' : 'trusted',
      trusted: docs.flatMap(([ns, doc]) => urlFieldsOf(ns, doc).map((u) => u.url)),
      privateHint: CONFIG_API_PRIVATE_HINT,
    }),
    credentialOrigins,
    ownCredentialEnvs: [...SERVER_CREDENTIAL_ENVS, ...(file?.server.auth?.tokens ?? []).map((t) => t.token_env)],
    secrets: docs.flatMap(([ns, doc]) => credentialValuesOf(ns, doc, env)),
  };
}
