import type { IncomingMessage, ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import { getRequestListener } from '@hono/node-server';
import type { Hono } from 'hono';
import { z } from 'zod';
import { appOf, AppFieldError, type App } from '../app/app.ts';
import { addApp } from '../app/compose.ts';
import type { AppDefinition } from '../app/define.ts';
import { RunRecoverySchema, type RunRecovery } from '../contract/agent-spec.ts';
import { fieldIssues } from '../contract/issue-line.ts';
import { inspectorRoutes } from '../inspector/routes.ts';
import { AgentRuntimeBuilder } from '../runtime/agent-runtime.ts';
import { realEnv } from '../runtime/env.ts';
import type { Store } from '../runtime/store.ts';
import { openBus, openStore } from '../stores/index.ts';
import { checkOrigins, LOOPBACK } from './access.ts';
import { withGzip } from './compress.ts';
import { createHttpApp } from './http.ts';
import { silentLogger, type Logger } from './log.ts';
import { Mailbox } from './mailbox.ts';
import { agentDigestOf } from './agent-digest.ts';
import { DEFAULT_RECOVERY, recoverRuns, resumeLeftRunning, runsLeftRunning } from './recovery.ts';
import { RunRegistry } from './run-registry.ts';

/**
 * Awaken inside an application of one's own (docs/embedding.md, ADR 0043): the HTTP API, the
 * protocol routes and the studio, under a mount path, as a Fetch handler and a Node handler. It
 * does what `awaken serve` does before it listens — the store checked, runs a previous process left
 * unfinished marked, the cluster bus attached, leases and the mailbox started — and `close()` what
 * it does when it stops; the socket is the host application's.
 */
export interface AwakenOptions {
  /** The agents, tools, plugins, models and providers (`defineApp`). */
  readonly app: AppDefinition;
  /** Where threads and runs are kept: `memory`, `sqlite:PATH`, `file:DIR`, `postgres://…`, or a store. */
  readonly store: string | Store;
  /** The path the handler is mounted at (`/api/awaken`); every route, link and address is under it. Default: the root. */
  readonly basePath?: string;
  /** API tokens, each the principal it stands for: with them, every route but health, the public card and the studio page needs one. */
  readonly auth?: { readonly tokens: Readonly<Record<string, string>> | ReadonlyMap<string, string> };
  /** Origins beyond the loopback ones whose pages may call the API (`*`: any). */
  readonly corsOrigins?: readonly string[];
  /** Host names beyond the loopback ones a request may name in `Host` (`*`: any). */
  readonly allowedHosts?: readonly string[];
  /** Where a line per request and every failure go (default: nowhere). */
  readonly logger?: Logger;
  /** A new run on a busy thread: `reject` (409, default) or `supersede`. */
  readonly policy?: 'reject' | 'supersede';
  /** Largest request body accepted, in bytes (default 1 MiB). */
  readonly bodyLimit?: number;
  /** Whether whole answers are gzip-compressed for clients that take it (default true). */
  readonly gzip?: boolean;
  /** Whether `X-Forwarded-Host` / `-Proto` name the public address (the A2A card): only behind a proxy that sets them. */
  readonly trustProxy?: boolean;
  /** The version the A2A card and the MCP server announce. */
  readonly version?: string;
  /** Serve a host beyond this machine (`allowedHosts`) without tokens: anyone who reaches it can read and drive every thread. */
  readonly insecure?: boolean;
  /**
   * A run a previous process left running (it was killed, it crashed): `resume` it from its last
   * durable point (default) or `interrupt` it (it ends with the error `interrupted: …`); an agent's
   * own `recovery` wins for its runs (docs/server.md).
   */
  readonly recovery?: RunRecovery;
  /** How long a run waits on a call the client runs before the call ends with an error the model reads (default 24 h). */
  readonly clientToolTimeoutMs?: number;
}

/** What `createAwaken` gives: the handlers to mount, and how to stop. */
export interface Awaken {
  /** The mount path, normalised (`''` for the root). */
  readonly basePath: string;
  /** A Fetch-API handler: the request's URL keeps the mount path (as Hono's `c.req.raw` and a plain `fetch` server give it). */
  fetch(request: Request): Promise<Response>;
  /**
   * A Node handler (`node:http`, Express middleware): a body a parser before it already read
   * (`express.json()`) is taken from `req.body`; under Express the mount is read from `originalUrl`.
   * A request outside the mount path goes to `next` when there is one, else is a 404.
   */
  node(req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void): Promise<void>;
  /**
   * An Express error handler for what a body parser before the mount refused (malformed JSON, a body
   * over its limit): answered in the API's JSON, as the API answers its own; anything else goes on.
   */
  nodeErrors(error: unknown, req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void;
  /** Stops: runs in flight cancelled (given `graceMs`, default 10 s, to end), the mailbox stopped, the store closed when it opened it. */
  close(options?: { readonly graceMs?: number }): Promise<void>;
}

/** A `createAwaken` option that is wrong: the field it names, and why. */
export class AwakenOptionsError extends Error {
  readonly code = 'invalid_option';
  readonly field: string;
  constructor(field: string, message: string) {
    super(`createAwaken: ${field}: ${message}`);
    this.name = 'AwakenOptionsError';
    this.field = field;
  }
}

/** A mount path: segments of URL-safe characters, no dot segment, no trailing slash. */
const BASE_PATH = /^(?:\/(?!\.{1,2}(?:\/|$))[A-Za-z0-9._~-]+)*$/;

const TokensSchema = z.union([z.record(z.string(), z.string().min(1)), z.instanceof(Map)]);

const OptionsSchema = z
  .object({
    app: z.custom<AppDefinition>((v) => typeof v === 'object' && v !== null, { message: 'an app is required: defineApp({ agents, … })' }),
    store: z.union([z.string().min(1), z.custom<Store>((v) => typeof v === 'object' && v !== null && typeof (v as Store).listThreads === 'function')], {
      message: 'a store spelling (memory, sqlite:PATH, file:DIR, postgres://…) or a store is required',
    }),
    basePath: z.string().optional(),
    auth: z.object({ tokens: TokensSchema }).strict().optional(),
    corsOrigins: z.array(z.string()).optional(),
    allowedHosts: z.array(z.string().min(1)).optional(),
    logger: z
      .custom<Logger>(
        (v) => typeof v === 'object' && v !== null && ['debug', 'info', 'warn', 'error'].every((k) => typeof (v as Record<string, unknown>)[k] === 'function'),
        { message: 'a logger has debug, info, warn and error' },
      )
      .optional(),
    policy: z.enum(['reject', 'supersede']).optional(),
    bodyLimit: z.number().int().positive().optional(),
    gzip: z.boolean().optional(),
    trustProxy: z.boolean().optional(),
    version: z.string().optional(),
    insecure: z.boolean().optional(),
    recovery: RunRecoverySchema.optional(),
    clientToolTimeoutMs: z.number().int().positive().optional(),
  })
  .strict();

/** The mount path as the handlers use it: `''`, or `/a/b` (a trailing slash dropped); anything else is an `AwakenOptionsError`. */
export function basePathOf(given: string | undefined): string {
  const base = (given ?? '').replace(/\/+$/, '');
  if (!BASE_PATH.test(base))
    throw new AwakenOptionsError('basePath', `'${given ?? ''}' is not a mount path: /segment[/segment…] of letters, digits and . _ ~ -`);
  return base;
}

/** The options checked: an unknown key, or a value of the wrong kind, is an `AwakenOptionsError` naming it. */
function checked(options: unknown): AwakenOptions {
  const parsed = OptionsSchema.safeParse(options);
  if (!parsed.success) {
    const [first] = fieldIssues(parsed.error);
    const field = first === undefined || first.path.length === 0 ? '(options)' : first.path.map(String).join('.');
    throw new AwakenOptionsError(field, first?.message ?? 'invalid');
  }
  return parsed.data as AwakenOptions;
}

/** The tokens as the API takes them; a short one is refused (a token is a secret: 16 characters at least, as `awaken serve` asks). */
function tokensOf(tokens: Readonly<Record<string, string>> | ReadonlyMap<string, string>): Map<string, string> {
  const map = new Map(tokens instanceof Map ? tokens : Object.entries(tokens));
  // An empty list (tokens read from variables that are not set) would leave every thread open.
  if (map.size === 0) throw new AwakenOptionsError('auth.tokens', 'at least one token is required (without auth, leave auth out)');
  for (const [token, principal] of map) {
    if (typeof token !== 'string' || token.length < 16) throw new AwakenOptionsError('auth.tokens', 'a token is at least 16 characters');
    if (typeof principal !== 'string' || principal === '') throw new AwakenOptionsError('auth.tokens', 'a principal is a non-empty name');
  }
  return map;
}

/** The app checked: a field that is wrong is an `AwakenOptionsError` naming it under `app`. */
function checkedApp(definition: AppDefinition): App {
  try {
    return appOf(definition);
  } catch (e) {
    if (e instanceof AppFieldError) throw new AwakenOptionsError(`app.${e.field}`, e.message.slice(e.field.length + 2));
    throw e;
  }
}

/** The store a spelling names; one it cannot open (an unknown kind, a URL that is not one) is an `AwakenOptionsError` naming `store`. */
function storeOf(spelling: string): Store {
  let opened: Store | string;
  try {
    opened = openStore(spelling);
  } catch (e) {
    opened = e instanceof Error ? e.message : String(e);
  }
  if (typeof opened === 'string') throw new AwakenOptionsError('store', opened);
  return opened;
}

/** The API's body limit when none is given (as `createHttpApp`'s). */
const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** A loopback host name, as the access control reads one (`localhost`, 127.x, ::1). */
const isLoopbackHost = (host: string): boolean => LOOPBACK.has(host.toLowerCase()) || host.startsWith('127.');

/** Whether a path is the mount path or under it. */
const underBase = (path: string, base: string): boolean => base === '' || path === base || path.startsWith(`${base}/`);

/** The request as the API's routes read it: the same request, its path without the mount path. */
function withoutBase(request: Request, base: string, pathname: string): Request {
  if (base === '') return request;
  const url = new URL(request.url);
  url.pathname = pathname.slice(base.length) || '/';
  const bodyless = request.method === 'GET' || request.method === 'HEAD';
  return new Request(url, {
    method: request.method,
    headers: request.headers,
    signal: request.signal,
    ...(bodyless ? {} : { body: request.body, duplex: 'half' }),
  } as RequestInit);
}

/** The answer to a request outside the mount path, in the API's shape. */
const outside = (request: Request, base: string): Response =>
  Response.json(
    { error: `no route: ${request.method} ${new URL(request.url).pathname} (this handler serves under ${base})`, code: 'not_found' },
    { status: 404 },
  );

/** What a Node body parser's refusal is in the API's words (`type` of body-parser errors). */
const PARSER_ERRORS: Readonly<Record<string, { readonly status: 400 | 413 | 415; readonly code: string; readonly field: string }>> = {
  'entity.parse.failed': { status: 400, code: 'invalid_json', field: '(body)' },
  'entity.too.large': { status: 413, code: 'body_too_large', field: '(body)' },
  'charset.unsupported': { status: 415, code: 'unsupported_media_type', field: 'content-type' },
  'encoding.unsupported': { status: 415, code: 'unsupported_media_type', field: 'content-encoding' },
};

type NodeRequest = IncomingMessage & { originalUrl?: string; body?: unknown; rawBody?: unknown };

/**
 * The body a parser already read, as bytes to give the API again: the parser's raw bytes when it kept
 * them (`rawBody`), else `req.body` as JSON (a string or bytes as they are). Undefined when the
 * stream is still there to read.
 */
function parsedBody(req: NodeRequest): Buffer | undefined {
  if (!req.readableEnded || req.body === undefined) return undefined;
  if (Buffer.isBuffer(req.rawBody)) return req.rawBody;
  if (Buffer.isBuffer(req.body)) return req.body;
  if (typeof req.body === 'string') return Buffer.from(req.body);
  return Buffer.from(JSON.stringify(req.body));
}

/** The path of a request target as the Fetch handler reads it (dot segments resolved, an absolute form reduced to its path). */
const pathOf = (target: string): string => {
  try {
    return new URL(target, 'http://localhost').pathname;
  } catch {
    return target.split('?')[0] ?? '/';
  }
};

/** The Fetch and Node handlers of a Hono app mounted at `base`; `bodyLimit`: the API's own limit, kept to for a body a parser already read. */
export function handlersOf(app: Hono, base: string, bodyLimit: number = DEFAULT_BODY_LIMIT): Pick<Awaken, 'fetch' | 'node' | 'nodeErrors'> {
  const fetch = async (request: Request): Promise<Response> => {
    const pathname = new URL(request.url).pathname;
    if (!underBase(pathname, base)) return outside(request, base);
    return app.fetch(withoutBase(request, base, pathname));
  };
  // Node's request and response to Fetch and back, as `awaken serve` listens: answers streamed as
  // they are written, the request's signal aborted when its client goes, a stream's reader then
  // cancelled (which only unsubscribes: the run goes on). The global Request and Response are the
  // host's own: nothing of theirs is replaced.
  const listener = getRequestListener((request) => fetch(request), { overrideGlobalObjects: false });
  const node = async (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void): Promise<void> => {
    const incoming = req as NodeRequest;
    const full = incoming.originalUrl ?? incoming.url ?? '/';
    const pathname = pathOf(full);
    if (!underBase(pathname, base) && next !== undefined) return next();
    const body = parsedBody(incoming);
    // A parser may have inflated what came compressed, or read more than the API takes: the headers
    // then no longer say the body's size, so the API's limit is kept to here, on the bytes.
    if (body !== undefined && body.length > bodyLimit) {
      res.writeHead(413, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: `request body larger than ${bodyLimit} bytes`, code: 'body_too_large', field: '(body)' }));
      return;
    }
    // The listener reads `rawBody` when it is there, and the URL while it makes the request (at once).
    if (body !== undefined) incoming.rawBody = body;
    const mounted = incoming.url;
    incoming.url = full;
    const done = listener(incoming, res);
    incoming.url = mounted;
    await done;
  };
  const nodeErrors = (error: unknown, req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void => {
    const type = typeof error === 'object' && error !== null ? (error as { type?: unknown }).type : undefined;
    const known = typeof type === 'string' ? PARSER_ERRORS[type] : undefined;
    const full = (req as NodeRequest).originalUrl ?? req.url ?? '/';
    if (known === undefined || res.headersSent || !underBase(pathOf(full), base)) {
      next(error);
      return;
    }
    const message =
      known.code === 'invalid_json'
        ? `malformed JSON: ${(error as Error).message}`
        : known.code === 'body_too_large'
          ? `request body larger than ${String((error as { limit?: unknown }).limit ?? 'the limit')} bytes`
          : (error as Error).message;
    res.writeHead(known.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: message, code: known.code, field: known.field }));
  };
  return { fetch, node, nodeErrors };
}

/**
 * Awaken for an application of one's own: the options checked (an unknown key or a wrong value is an
 * `AwakenOptionsError` naming it), the app built, the store opened and checked. Mount `fetch` or
 * `node` at `basePath`; call `close()` when the application stops.
 */
export async function createAwaken(options: AwakenOptions): Promise<Awaken> {
  const given = checked(options);
  const base = basePathOf(given.basePath);
  const origins = checkOrigins(given.corsOrigins ?? []);
  if (typeof origins === 'string') throw new AwakenOptionsError('corsOrigins', origins);
  const tokens = given.auth === undefined ? undefined : tokensOf(given.auth.tokens);
  // As `awaken serve` refuses a public address without tokens: a host beyond this machine reaches every thread.
  const publicHosts = (given.allowedHosts ?? []).filter((h) => h === '*' || !isLoopbackHost(h));
  if (tokens === undefined && publicHosts.length > 0 && given.insecure !== true) {
    throw new AwakenOptionsError(
      'auth',
      `allowedHosts names ${publicHosts.join(', ')} without tokens: anyone reaching it could read and drive every thread; give auth.tokens, or insecure: true`,
    );
  }
  const app = checkedApp(given.app);
  const spelling = typeof given.store === 'string' ? given.store : undefined;
  const store = spelling === undefined ? (given.store as Store) : storeOf(spelling);
  const closeStore = async (): Promise<void> => {
    // A store given is the caller's to close; one opened from a spelling is closed here.
    if (spelling === undefined) return;
    await store.close().catch(() => undefined);
  };
  const logger = given.logger ?? silentLogger;
  const builder = new AgentRuntimeBuilder().withEnv(realEnv());
  addApp(builder, app);
  // Delegation (docs/delegation.md): a child thread belongs to whoever owns its parent's.
  builder.withDelegation({
    beforeChild: async (child) => {
      const owner = await store.threadOwner(child.parentThreadId);
      if (owner !== undefined && (await store.claimThread(child.thread_id, owner)) !== owner)
        throw new Error(`thread ${child.thread_id} belongs to another principal`);
    },
  });
  builder.withThreadRunStore(store);
  const built = builder.build();
  if (!built.ok) {
    await closeStore();
    const e = built.error;
    throw new AwakenOptionsError('app', 'message' in e ? e.message : 'id' in e ? `${e.code.replace(/_/g, ' ')}: '${e.id}'` : e.code);
  }
  const runtime = built.value;
  try {
    await store.listThreads({ offset: 0, limit: 1 });
  } catch (e) {
    await closeStore();
    throw new AwakenOptionsError('store', `the store does not answer: ${e instanceof Error ? e.message : String(e)}`);
  }
  const bus = spelling === undefined ? undefined : openBus(spelling);
  // A start that fails leaves nothing open: the caller has no close() to call.
  const failed = async (e: unknown): Promise<never> => {
    await bus?.close().catch(() => undefined);
    await closeStore();
    throw e;
  };
  // A PostgreSQL store may be shared by other instances (given as an object, without the bus of a
  // spelling): their runs in flight are not this process's to mark.
  let leftRunning: string[] = [];
  if (store.kind !== 'postgres') {
    // One process per store: what a previous process left unfinished is marked at start, or left
    // running to be taken up (as the run's agent, else `recovery`, says).
    const recovery = given.recovery ?? DEFAULT_RECOVERY;
    const digest = (agentId: string): string | undefined => agentDigestOf(runtime.registries, agentId);
    await recoverRuns(store, runtime.env.clock.now(), { recovery, agents: runtime.registries.agents, digest, logger }).catch(failed);
    leftRunning = await runsLeftRunning(store).catch(failed);
  }
  // Unique to this process, not only to the host and pid: a restarted container keeps both, and must
  // not renew (or be fenced as) its dead predecessor's leases.
  const consumer = `${hostname()}:${process.pid}:${runtime.env.ids.next('instance').slice(-12)}`;
  const registry = new RunRegistry(runtime, store, {
    policy: given.policy ?? 'reject',
    logger,
    leases: { owner: consumer, ttlMs: 10_000, sweepMs: 5_000 },
    recovery: given.recovery ?? DEFAULT_RECOVERY,
    ...(bus !== undefined ? { bus } : {}),
  });
  await registry.attachBus().catch(failed);
  await resumeLeftRunning(registry, leftRunning, logger, { store, now: runtime.env.clock.now() });
  const mailbox = new Mailbox(store, registry, runtime.env, {
    consumer,
    logger,
    ...(given.clientToolTimeoutMs !== undefined ? { clientToolTimeoutMs: given.clientToolTimeoutMs } : {}),
  });
  const api = createHttpApp(
    { runtime, store, registry, mailbox },
    {
      basePath: base,
      ...(given.version !== undefined ? { version: given.version } : {}),
      allowedHosts: given.allowedHosts ?? [],
      corsOrigins: origins,
      ...(tokens !== undefined && tokens.size > 0 ? { auth: { tokens } } : {}),
      ...(given.bodyLimit !== undefined ? { bodyLimit: given.bodyLimit } : {}),
      ...(given.trustProxy === true ? { trustProxy: true } : {}),
      logger,
    },
  );
  // The studio: its page and API, behind the same access control (docs/inspector.md).
  api.route('/', inspectorRoutes({ store, basePath: base }));
  registry.startLeases();
  mailbox.start();
  let closing: Promise<void> | undefined;
  const close = (how: { readonly graceMs?: number } = {}): Promise<void> =>
    (closing ??= (async () => {
      await registry.shutdown({ graceMs: how.graceMs ?? 10_000 });
      await mailbox.stop();
      await bus?.close();
      await closeStore();
    })());
  return { basePath: base, ...handlersOf(given.gzip === false ? api : withGzip(api), base, given.bodyLimit ?? DEFAULT_BODY_LIMIT), close };
}
