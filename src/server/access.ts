import type { Context, MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';
import { bearerOf, sameSecret } from './http-support.ts';
import { asPrincipal } from './principal.ts';

/** Who may call the HTTP API from where (docs/server.md → Browsers, CORS and Host checks). */
export interface AccessOptions {
  /**
   * Origins whose pages may call the API (`scheme://host[:port]`), or `*` for any. Pages on a
   * loopback origin (`localhost`, `127.0.0.1`, `[::1]`, any port) always may.
   */
  readonly corsOrigins?: readonly string[];
  /**
   * Host names (besides the loopback ones) a request may name in `Host`; `*` turns the check off.
   * The check keeps a DNS-rebinding page from reaching a server bound to loopback.
   */
  readonly allowedHosts?: readonly string[];
}

/** The loopback host names (of a `Host` header, or of an address to bind). */
export const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** The host name of a `Host` header or an origin, lower-cased, without the port. */
function hostnameOf(value: string): string | undefined {
  try {
    return new URL(value.includes('://') ? value : `http://${value}`).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

/** An origin in its normal form (`scheme://host[:port]`, default port left out), or `undefined`. */
function originOf(value: string): string | undefined {
  if (value === '*') return '*';
  try {
    const u = new URL(value);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : undefined;
  } catch {
    return undefined;
  }
}

/** The configured origins in normal form; a value that is not an origin is an error naming it. */
export function checkOrigins(origins: readonly string[]): string[] | string {
  const out: string[] = [];
  for (const o of origins) {
    const normal = originOf(o.trim().replace(/\/+$/, ''));
    if (normal === undefined) return `not an origin: '${o}' (expected scheme://host[:port], or *)`;
    out.push(normal);
  }
  return out;
}

/** The headers browsers may read from a response (run and thread ids, the MCP session, the AI SDK stream marker). */
const EXPOSED = ['x-awaken-run-id', 'x-awaken-thread-id', 'mcp-session-id', 'mcp-protocol-version', 'x-vercel-ai-ui-message-stream'];

/** A refusal in the shape of the route: JSON-RPC for MCP, `{error, code, field}` elsewhere. */
function refuse(c: Context, message: string, code: string, field: string, status: 401 | 403 | 415 = 403): Response {
  if (c.req.path === '/v1/mcp' || c.req.path.startsWith('/v1/mcp/')) return c.json({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }, status);
  return c.json({ error: message, code, field }, status);
}

/** `application/json` or `application/<something>+json`, parameters allowed. */
const isJson = (type: string | undefined): boolean => type !== undefined && /^application\/([\w.-]+\+)?json\s*(;|$)/i.test(type.trim());

/**
 * The Host and Origin checks and CORS of the whole HTTP API, one middleware for every route:
 * - `Host`, when sent, must be a loopback name or an allowed host (403 otherwise);
 * - a request with an `Origin` that is neither allowed nor the server's own is refused (403), so a
 *   page from another site cannot drive the API even where a browser would send the request;
 * - a POST that is not JSON and has no `X-Awaken-Request` header is refused (415): the requests a
 *   page may send cross-site without a preflight cannot fire a state change;
 * - an allowed origin gets the CORS headers, and its preflight (`OPTIONS` on any route) a 204 — with
 *   `Access-Control-Allow-Private-Network` when Chromium asks for it.
 */
export function accessControl(options: AccessOptions = {}): MiddlewareHandler {
  const anyHost = (options.allowedHosts ?? []).includes('*');
  const hosts = new Set([...LOOPBACK, ...(options.allowedHosts ?? []).map((h) => h.toLowerCase())]);
  const configured = checkOrigins(options.corsOrigins ?? []);
  if (typeof configured === 'string') throw new Error(configured);
  const anyOrigin = configured.includes('*');
  const origins = new Set(configured);
  const allowed = (origin: string, host: string | undefined): boolean => {
    const normal = originOf(origin);
    if (normal === undefined || normal === '*') return false;
    if (anyOrigin || origins.has(normal)) return true;
    const name = hostnameOf(normal);
    if (name !== undefined && LOOPBACK.has(name)) return true;
    // The server's own origin (a page it is proxied with) is not cross-origin.
    return host !== undefined && new URL(normal).host.toLowerCase() === host.toLowerCase();
  };
  const corsHeaders = cors({
    origin: (origin, c) => (allowed(origin, c.req.header('host')) ? origin : null),
    allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    exposeHeaders: EXPOSED,
    maxAge: 600,
  });
  return async (c, next) => {
    // A request without Host (HTTP/1.0, an in-process call) is no browser's: nothing to rebind.
    const host = c.req.header('host');
    const name = host === undefined ? undefined : hostnameOf(host);
    if (!anyHost && host !== undefined && (name === undefined || !hosts.has(name))) return refuse(c, `host not allowed: ${host}`, 'host_not_allowed', 'host');
    const origin = c.req.header('origin');
    if (origin !== undefined && !allowed(origin, host)) return refuse(c, `origin not allowed: ${origin}`, 'origin_not_allowed', 'origin');
    // A cross-site form or a no-cors fetch can POST only text/plain, form bodies or no body at all,
    // without a preflight: a POST must say it is JSON (or carry a header no such request can).
    if (c.req.method === 'POST' && !isJson(c.req.header('content-type')) && c.req.header('x-awaken-request') === undefined) {
      return refuse(c, 'a POST must be application/json (a body-less one may send X-Awaken-Request instead)', 'unsupported_media_type', 'content-type', 415);
    }
    // A page on a public origin calling a server on this machine: Chromium asks first (Private
    // Network Access); an allowed origin is told yes.
    if (origin !== undefined && c.req.method === 'OPTIONS' && c.req.header('access-control-request-private-network') === 'true') {
      c.header('Access-Control-Allow-Private-Network', 'true');
    }
    return corsHeaders(c, next);
  };
}

/** Who may call the API at all (docs/server.md → Access control). */
export interface AuthOptions {
  /** API tokens and the principal each one stands for (`Authorization: Bearer <token>`). */
  readonly tokens?: ReadonlyMap<string, string>;
  /** Names the principal of a request another way (a session, a proxy's header); `undefined`: not authenticated. */
  readonly authenticate?: (request: Request) => string | undefined | Promise<string | undefined>;
  /** The admin token (config writes): it also authenticates, as the operator, who sees every thread. */
  readonly adminToken?: string;
}

/**
 * Routes open without credentials: health and liveness, the public A2A agent card (preflights never
 * carry any). `/metrics` is not among them: with tokens configured it is the admin token's.
 */
const PUBLIC = new Set(['/health', '/health/ready', '/health/live', '/.well-known/agent-card.json']);

/**
 * The inspector page's files (docs/inspector.md): public like a login page — it holds no data, and
 * asks for a token to read any (its API, `/v1/inspector/…`, is not public).
 */
const isPublic = (path: string): boolean => PUBLIC.has(path) || path === '/inspector' || path.startsWith('/inspector/');

/**
 * Authentication of every route, when any token or an `authenticate` hook is configured: a request
 * without a valid credential gets 401 (in the route's shape), one with an API token acts as that
 * token's principal for everything it does and starts (`asPrincipal`) — threads are then its own
 * (`principalStore`) — and the admin token acts as the operator. Nothing configured: open, as before.
 */
export function authentication(options: AuthOptions = {}): MiddlewareHandler {
  const tokens = [...(options.tokens ?? new Map<string, string>())];
  const enabled = tokens.length > 0 || options.authenticate !== undefined;
  return async (c, next) => {
    if (!enabled || c.req.method === 'OPTIONS' || ((c.req.method === 'GET' || c.req.method === 'HEAD') && isPublic(c.req.path))) return next();
    const given = bearerOf(c);
    if (given !== undefined && options.adminToken !== undefined && options.adminToken !== '' && sameSecret(given, options.adminToken)) return next();
    let principal = given === undefined ? undefined : tokens.find(([token]) => sameSecret(given, token))?.[1];
    if (principal === undefined && options.authenticate !== undefined) principal = await options.authenticate(c.req.raw);
    if (principal === undefined) {
      c.header('WWW-Authenticate', 'Bearer');
      return refuse(
        c,
        given === undefined ? 'authentication required: Authorization: Bearer <token>' : 'invalid bearer token',
        'unauthorized',
        'authorization',
        401,
      );
    }
    return asPrincipal(principal, () => next());
  };
}
