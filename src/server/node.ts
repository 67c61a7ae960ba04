import { serve, type ServerType } from '@hono/node-server';
import type { Hono } from 'hono';
import type { Server } from 'node:http';

export interface RunningServer {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** What a connection may cost the server: how long it may take, how many may be open. */
export interface ConnectionLimits {
  /** How long a connection may take to send a request's headers: a client that trickles them gets 408 and is closed. */
  readonly headersTimeoutMs: number;
  /** How long it may take to send the whole request (its body included); the response is not bounded. */
  readonly requestTimeoutMs: number;
  /** Connections open at once: one more is closed as it is accepted. */
  readonly maxConnections: number;
}

/** Node's own limits are a minute for headers (checked every 30 s: a trickling client held ~90 s), 5 minutes a request, no cap. */
export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = Object.freeze({ headersTimeoutMs: 10_000, requestTimeoutMs: 60_000, maxConnections: 1000 });

/** How often refused connections are reported at most. */
const REFUSED_REPORT_MS = 10_000;

export interface ListenOptions extends Partial<ConnectionLimits> {
  readonly port: number;
  readonly hostname?: string;
  /** Told how many connections the cap refused: at once for the first, then at most every 10 s. */
  readonly onRefused?: (count: number) => void;
}

/** Serves a Hono app on a real socket (`port: 0` picks a free one), within `DEFAULT_CONNECTION_LIMITS` unless told otherwise. */
export function listen(app: Hono, options: ListenOptions): Promise<RunningServer> {
  const limits = { ...DEFAULT_CONNECTION_LIMITS, ...definedOf(options) };
  return new Promise((resolvePromise, reject) => {
    let server: ServerType | undefined;
    try {
      server = serve(
        {
          fetch: app.fetch,
          port: options.port,
          hostname: options.hostname ?? '127.0.0.1',
          // The timeouts are checked this often (Node: every 30 s), so a slow client is cut near its bound.
          serverOptions: {
            headersTimeout: limits.headersTimeoutMs,
            requestTimeout: limits.requestTimeoutMs,
            connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
          },
        },
        (info) => {
          const host = options.hostname === undefined || options.hostname === '0.0.0.0' ? '127.0.0.1' : options.hostname;
          resolvePromise({
            url: `http://${host}:${info.port}`,
            port: info.port,
            close: () =>
              new Promise<void>((done) => {
                const s = server as ServerType & { closeAllConnections?: () => void };
                s.close(() => done());
                s.closeAllConnections?.();
              }),
          });
        },
      );
      const http = server as Server;
      http.maxConnections = limits.maxConnections;
      if (options.onRefused !== undefined) onDrops(http, options.onRefused);
      server.on('error', reject);
    } catch (e) {
      reject(e);
    }
  });
}

/** The limits given, without the ones left undefined. */
function definedOf(options: ListenOptions): Partial<ConnectionLimits> {
  return Object.fromEntries(
    Object.entries({ headersTimeoutMs: options.headersTimeoutMs, requestTimeoutMs: options.requestTimeoutMs, maxConnections: options.maxConnections }).filter(
      ([, v]) => v !== undefined,
    ),
  );
}

/** Counts the connections the cap drops, reporting the first at once and the rest at most every `REFUSED_REPORT_MS`. */
function onDrops(server: Server, report: (count: number) => void): void {
  let pending = 0;
  let quiet = true;
  const flush = (): void => {
    if (pending === 0) {
      quiet = true;
      return;
    }
    report(pending);
    pending = 0;
    setTimeout(flush, REFUSED_REPORT_MS).unref();
  };
  server.on('drop', () => {
    pending++;
    if (quiet) {
      quiet = false;
      flush();
    }
  });
}
