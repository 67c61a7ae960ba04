import { Hono, type MiddlewareHandler } from 'hono';
import type { ServerParts } from './http-support.ts';

/** What the operating surface of the HTTP API is told (limits, the metrics registry). */
export interface OpsOptions {}

/** What runs before every route: the limit on concurrent requests and the request gauges. */
export function opsMiddleware(_parts: ServerParts, _options: OpsOptions = {}): MiddlewareHandler {
  return async (_c, next) => {
    await next();
  };
}

/** The routes of the operating surface: liveness and the Prometheus metrics. */
export function opsRoutes(_parts: ServerParts, _options: OpsOptions = {}): Hono {
  return new Hono();
}
