import { Hono, type Context, type MiddlewareHandler } from 'hono';
import type { ServerParts } from './http-support.ts';
import { METRICS_CONTENT_TYPE, ServerMetrics } from './prometheus.ts';
import { currentPrincipal } from './principal.ts';

/** What the operating surface of the HTTP API is told (docs/server.md → Operating the server). */
export interface OpsOptions {
  /**
   * Requests handled at once (`server.max_concurrent_requests`); one more is answered 503
   * `overloaded` with `Retry-After: 1`. A streamed response stops counting once it has started, and
   * the health checks and `/metrics` never count. Absent: no limit.
   */
  readonly maxConcurrentRequests?: number;
  /** Told of every event stream opened (+1) and ended (−1): the OpenTelemetry gauge of streams. */
  readonly onStreams?: (delta: number) => void;
}

/** The routes the limit never refuses: what a load balancer and a scraper must reach on a busy server. */
const EXEMPT = new Set(['/health', '/health/ready', '/health/live', '/metrics']);

/**
 * The metrics of one HTTP app: made by whichever of `opsMiddleware` and `opsRoutes` comes first for
 * its parts (the app passes both the same object), and fed by its registry's runs.
 */
const metricsOf = new WeakMap<ServerParts, ServerMetrics>();

function metricsFor(parts: ServerParts): ServerMetrics {
  let metrics = metricsOf.get(parts);
  if (metrics === undefined) {
    const mailbox = parts.mailbox;
    metrics = new ServerMetrics({ activeRuns: () => parts.registry.liveRuns, ...(mailbox !== undefined ? { mailboxJobs: () => mailbox.claimedJobs } : {}) });
    parts.registry.watch(metrics.observe);
    metricsOf.set(parts, metrics);
  }
  return metrics;
}

/** `body`, passed on as it is read, with `onEnd` called once when it ends, fails or its reader goes away. */
function untilEnd(body: ReadableStream<Uint8Array>, onEnd: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    onEnd();
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            end();
            controller.close();
          } else controller.enqueue(value);
        } catch (e) {
          end();
          controller.error(e);
        }
      },
      cancel(reason) {
        end();
        return reader.cancel(reason);
      },
    },
    // Read from the source only as the client reads: its own bound on unread bytes stays in force.
    { highWaterMark: 0 },
  );
}

/** The Node response a request is answered on (`@hono/node-server` passes it as `env.outgoing`), if any. */
function nodeResponseOf(c: Context): { once(event: 'close', listener: () => void): unknown } | undefined {
  const outgoing = (c.env as { outgoing?: unknown } | undefined)?.outgoing;
  return typeof outgoing === 'object' && outgoing !== null && typeof (outgoing as { once?: unknown }).once === 'function'
    ? (outgoing as { once(event: 'close', listener: () => void): unknown })
    : undefined;
}

const isEventStream = (res: Response): boolean => res.body !== null && (res.headers.get('content-type') ?? '').toLowerCase().startsWith('text/event-stream');

/** Whether a health check's 503 says the store did not answer (`{components: {store: 'error'}}`). */
async function storeDown(res: Response): Promise<boolean> {
  try {
    const body = (await res.clone().json()) as { components?: { store?: string } };
    return body.components?.store === 'error';
  } catch {
    return false;
  }
}

/**
 * What runs before every route: the limit on concurrent requests (503 `overloaded`, `Retry-After: 1`),
 * the in-flight and event-stream gauges, and the error classes seen in answers.
 */
export function opsMiddleware(parts: ServerParts, options: OpsOptions = {}): MiddlewareHandler {
  const metrics = metricsFor(parts);
  const limit = options.maxConcurrentRequests;
  let inFlight = 0;
  return async (c, next) => {
    const path = c.req.path;
    const counted = !EXEMPT.has(path);
    if (counted) {
      if (limit !== undefined && inFlight >= limit) {
        metrics.error('overloaded');
        return c.json({ error: `the server is handling ${limit} requests (server.max_concurrent_requests): try again shortly`, code: 'overloaded' }, 503, {
          'Retry-After': '1',
        });
      }
      inFlight++;
      metrics.requests(1);
    }
    try {
      await next();
    } finally {
      // The response has started (a stream's goes on): the request no longer counts.
      if (counted) {
        inFlight--;
        metrics.requests(-1);
      }
    }
    await countAnswer(c, path, metrics);
    if (isEventStream(c.res)) {
      metrics.streams(1);
      options.onStreams?.(1);
      let open = true;
      const ended = (): void => {
        if (!open) return;
        open = false;
        metrics.streams(-1);
        options.onStreams?.(-1);
      };
      // On Node the response itself says when it is over (its body written, or its client gone);
      // behind a Fetch handler its body is watched instead.
      const outgoing = nodeResponseOf(c);
      if (outgoing !== undefined) outgoing.once('close', ended);
      else
        c.res = new Response(untilEnd(c.res.body as ReadableStream<Uint8Array>, ended), {
          status: c.res.status,
          statusText: c.res.statusText,
          headers: c.res.headers,
        });
    }
    return undefined;
  };
}

/** The error classes an answer shows: a health check's store failure, any other 5xx. */
async function countAnswer(c: Context, path: string, metrics: ServerMetrics): Promise<void> {
  const status = c.res.status;
  if (status < 500) return;
  if (path === '/health' || path === '/health/ready') {
    if (await storeDown(c.res)) metrics.error('store');
    return;
  }
  metrics.error('http_5xx');
}

/**
 * The routes of the operating surface: `GET /health/live` (200, empty: the process answers — no
 * store is asked), and `GET /metrics` (Prometheus text). With access control on, `/metrics` is the
 * operator's: the admin token reads it (no API token's principal does, 403).
 */
export function opsRoutes(parts: ServerParts, _options: OpsOptions = {}): Hono {
  const metrics = metricsFor(parts);
  const app = new Hono();
  app.get('/health/live', (c) => c.body(null, 200));
  app.get('/metrics', async (c) => {
    // Past authentication: a principal is an API token's (or the authenticate hook's), not the operator.
    if (currentPrincipal() !== undefined) return c.json({ error: '/metrics needs the admin token', code: 'forbidden', field: 'authorization' }, 403);
    return c.body(await metrics.text(), 200, { 'content-type': METRICS_CONTENT_TYPE });
  });
  return app;
}
