import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import { Hono, type MiddlewareHandler } from 'hono';

const gzipBytes = promisify(gzipCallback);

/**
 * gzip for the HTTP API's whole answers (docs/server.md): JSON, NDJSON transcripts, the inspector
 * page's files. A streamed answer is never compressed — a compressor holds bytes back until it has
 * enough, so an SSE frame would wait for the next ones — and neither is one already encoded.
 */
export interface GzipOptions {
  /** Answers smaller than this many bytes go out as they are (default 1024: below it gzip saves next to nothing). */
  readonly threshold?: number;
}

/**
 * The content types of answers the server sends whole. `text/event-stream` is not one of them, and
 * neither is anything unknown: a type not listed here goes out as it is.
 */
const WHOLE =
  /^\s*(?:application\/(?:json|x-ndjson|javascript|xml)|application\/[\w.-]+\+json|text\/(?:html|plain|css|javascript|csv|markdown|xml)|image\/svg\+xml)\s*(?:;|$)/i;

/** Whether an `Accept-Encoding` header takes gzip: named with a weight above 0, or `*` so and gzip not refused. */
export function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  let gzip: number | undefined;
  let any: number | undefined;
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    const weight = Number.isFinite(q) ? q : 0;
    if (name.trim() === 'gzip' || name.trim() === 'x-gzip') gzip = weight;
    else if (name.trim() === '*') any = weight;
  }
  return gzip !== undefined ? gzip > 0 : any !== undefined && any > 0;
}

/**
 * Whether an answer is one to compress: a whole one (its type says so, and nothing marks it as
 * streamed — `X-Accel-Buffering: no`, `Cache-Control: no-transform`, a `Transfer-Encoding`), with a
 * body, not encoded yet, not a partial one.
 */
function wholeAnswer(method: string, res: Response): boolean {
  if (method === 'HEAD' || res.body === null || res.status < 200 || res.status === 204 || res.status === 206 || res.status === 304) return false;
  const h = res.headers;
  if (h.has('content-encoding') || h.has('transfer-encoding')) return false;
  if (!WHOLE.test(h.get('content-type') ?? '')) return false;
  if ((h.get('x-accel-buffering') ?? '').toLowerCase() === 'no') return false;
  return !/(?:^|,)\s*no-transform\s*(?:,|$)/i.test(h.get('cache-control') ?? '');
}

function addVary(headers: Headers): void {
  const vary = headers.get('vary');
  if (vary === null || vary.trim() === '') headers.set('vary', 'Accept-Encoding');
  else if (vary.trim() !== '*' && !/(?:^|,)\s*accept-encoding\s*(?:,|$)/i.test(vary)) headers.set('vary', `${vary}, Accept-Encoding`);
}

/** The middleware: gzip a whole answer of at least `threshold` bytes when the client takes gzip; `Vary: Accept-Encoding` on every answer it could have compressed. */
export function gzip(options: GzipOptions = {}): MiddlewareHandler {
  const threshold = options.threshold ?? 1024;
  return async (c, next) => {
    await next();
    const res = c.res;
    if (!wholeAnswer(c.req.method, res)) return;
    const headers = new Headers(res.headers);
    addVary(headers);
    // Through `undefined` first: Hono would otherwise copy the old answer's headers onto the new one.
    c.res = undefined;
    if (!acceptsGzip(c.req.header('accept-encoding'))) {
      c.res = new Response(res.body, { status: res.status, statusText: res.statusText, headers });
      return;
    }
    // Read whole: the types above are answers the route built in memory.
    const body = new Uint8Array(await res.arrayBuffer());
    let out: Uint8Array = body;
    if (body.byteLength >= threshold) {
      out = await gzipBytes(body);
      headers.set('content-encoding', 'gzip');
      const etag = headers.get('etag');
      if (etag !== null && !etag.startsWith('W/')) headers.set('etag', `W/${etag}`);
    }
    headers.set('content-length', String(out.byteLength));
    c.res = new Response(out, { status: res.status, statusText: res.statusText, headers });
  };
}

/**
 * The app behind gzip: a route answers in `app` as before (its middleware, error handler and
 * not-found answer), and its answer passes through `gzip` on the way out.
 */
export function withGzip(app: Hono, options: GzipOptions = {}): Hono {
  const outer = new Hono();
  outer.use('*', gzip(options));
  outer.all('*', (c) => app.fetch(c.req.raw, c.env));
  // Reading an answer to compress it can fail (its stream broke): the API's JSON, not a text page.
  outer.onError((_e, c) => c.json({ error: 'the answer could not be sent', code: 'internal' }, 500));
  return outer;
}
