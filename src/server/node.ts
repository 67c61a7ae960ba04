import { serve, type ServerType } from '@hono/node-server';
import type { Hono } from 'hono';

export interface RunningServer {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Serves a Hono app on a real socket (`port: 0` picks a free one). */
export function listen(app: Hono, options: { readonly port: number; readonly hostname?: string }): Promise<RunningServer> {
  return new Promise((resolvePromise, reject) => {
    let server: ServerType | undefined;
    try {
      server = serve({ fetch: app.fetch, port: options.port, hostname: options.hostname ?? '127.0.0.1' }, (info) => {
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
      });
      server.on('error', reject);
    } catch (e) {
      reject(e);
    }
  });
}
