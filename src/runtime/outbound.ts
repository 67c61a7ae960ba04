import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { addressClass, CLASS_WORDS, NEVER_REACHED } from './address-class.ts';

/**
 * The outbound guard: every URL a configuration names (a provider's `base_url`, a remote agent's
 * `endpoint.base_url`, an MCP server's `url`) is checked by it before anything is sent, and reached
 * only through its `fetch`. Link-local, cloud metadata and non-unicast addresses are never reached;
 * loopback and private ones only for the origins the operator configured (`trusted`) or when the
 * guard allows them everywhere. Only `http:` and `https:` are reached.
 *
 * Host names are resolved before deciding, and the decision is made again on the addresses the
 * connection is made to (the `lookup` of each socket): a name that resolves to 169.254.169.254, or
 * that changes its answer between a check and a request, is refused. Redirects are followed here,
 * each hop checked, and a request taken to another origin keeps only the headers that describe it
 * (`CROSS_ORIGIN_HEADERS`): no credential goes along, whatever header carries it.
 */

/** Why a URL is not reached. */
export class OutboundRefusal extends Error {
  readonly code = 'outbound_refused';
  readonly url: string;
  readonly reason: string;
  constructor(url: string, reason: string) {
    super(`outbound request to ${url} refused: ${reason}`);
    this.name = 'OutboundRefusal';
    this.url = url;
    this.reason = reason;
  }
}

export type Verdict = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** A resolver as `dns.lookup` with `all: true` (injected by tests: a name resolving to a metadata address). */
export type Resolver = (hostname: string) => Promise<readonly LookupAddress[]>;

export interface OutboundOptions {
  /** Loopback and private addresses: reachable for every URL (`all`), or only for `trusted` origins (default `all`). */
  readonly privateAddresses?: 'all' | 'trusted';
  /** Origins (`scheme://host:port`) the operator configured: their loopback and private addresses are reachable. */
  readonly trusted?: Iterable<string>;
  /** Said after the refusal of a loopback or private address (how to allow it). */
  readonly privateHint?: string;
  readonly resolve?: Resolver;
}

const systemResolve: Resolver = (hostname) =>
  new Promise((done, fail) => dnsLookup(hostname, { all: true, verbatim: true }, (e, addresses) => (e !== null ? fail(e) : done(addresses))));

/** Status codes a redirect answers with. */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/**
 * The headers a request keeps when a redirect takes it to another origin: those that describe the
 * request, nothing else. A credential can travel in any header (`authorization`, `x-api-key`,
 * `x-goog-api-key`, `api-key`, …): dropping all but these keeps every one of them with the origin
 * the operator sent it to.
 */
const CROSS_ORIGIN_HEADERS = new Set(['accept', 'accept-encoding', 'accept-language', 'content-language', 'content-type', 'content-length', 'user-agent']);

export class OutboundGuard {
  readonly #all: boolean;
  readonly #trusted: Set<string>;
  readonly #hint: string;
  readonly #resolve: Resolver;
  readonly #http = new HttpAgent({ keepAlive: true });
  readonly #https = new HttpsAgent({ keepAlive: true });

  constructor(options: OutboundOptions = {}) {
    this.#all = (options.privateAddresses ?? 'all') === 'all';
    this.#trusted = new Set([...(options.trusted ?? [])].flatMap((u) => (originOf(u) !== undefined ? [originOf(u) as string] : [])));
    this.#hint = options.privateHint ?? '';
    this.#resolve = options.resolve ?? systemResolve;
  }

  /** Whether `url`'s loopback and private addresses are reachable. */
  #mayReachPrivate(url: URL): boolean {
    return this.#all || this.#trusted.has(url.origin);
  }

  /** The verdict on one address `url` leads to (`via`: the host name it was resolved from). */
  #addressVerdict(url: URL, address: string, via?: string): Verdict {
    const kind = addressClass(address);
    if (kind === undefined) return { ok: false, reason: `${address} is not an IP address` };
    const what = via === undefined ? `${address} is ${CLASS_WORDS[kind]}` : `${via} resolves to ${address}, ${CLASS_WORDS[kind]}`;
    if (NEVER_REACHED.has(kind)) return { ok: false, reason: `${what}: never reached` };
    if ((kind === 'loopback' || kind === 'private') && !this.#mayReachPrivate(url)) return { ok: false, reason: `${what}${this.#hint}` };
    return { ok: true };
  }

  /** What can be decided without the network: the scheme, and a host that is an IP address. */
  checkStatic(raw: string): Verdict {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return { ok: false, reason: 'not a URL' };
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: `only http: and https: URLs are reached (not ${url.protocol})` };
    const host = url.hostname;
    return addressClass(host) !== undefined ? this.#addressVerdict(url, host) : { ok: true };
  }

  /** The verdict on a URL: its scheme, and every address its host resolves to now. */
  async check(raw: string): Promise<Verdict> {
    const first = this.checkStatic(raw);
    if (!first.ok) return first;
    const url = new URL(raw);
    if (addressClass(url.hostname) !== undefined) return first;
    let addresses: readonly LookupAddress[];
    try {
      addresses = await this.#resolve(url.hostname);
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      return { ok: false, reason: `cannot resolve ${url.hostname}${typeof code === 'string' ? ` (${code})` : ''}` };
    }
    if (addresses.length === 0) return { ok: false, reason: `cannot resolve ${url.hostname}` };
    for (const a of addresses) {
      const v = this.#addressVerdict(url, a.address, url.hostname);
      if (!v.ok) return v;
    }
    return { ok: true };
  }

  /** A socket's `lookup` for `url`: the addresses the connection is made to, each checked. */
  #lookupFor(url: URL): LookupFunction {
    return ((
      hostname: string,
      options: LookupOptions,
      callback: (e: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
    ) => {
      this.#resolve(hostname).then(
        (found) => {
          const wanted = options.family === 4 || options.family === 6 ? found.filter((a) => a.family === options.family) : found;
          for (const a of wanted) {
            const v = this.#addressVerdict(url, a.address, hostname);
            if (!v.ok) return callback(new OutboundRefusal(url.href, v.reason), '', 0);
          }
          const first = wanted[0];
          if (first === undefined) return callback(Object.assign(new Error(`cannot resolve ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
          return options.all === true ? callback(null, [...wanted]) : callback(null, first.address, first.family);
        },
        (e: NodeJS.ErrnoException) => callback(e, '', 0),
      );
    }) as LookupFunction;
  }

  /**
   * `fetch` through the guard: the same contract (a `Response`, an abort rejects with the signal's
   * reason), over `node:http`/`node:https` so that the connection's own address lookup is checked.
   * A refused URL rejects with an `OutboundRefusal`; a network failure as `fetch` does (a TypeError
   * with the cause).
   */
  readonly fetch: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const signal = init?.signal ?? request.signal;
    let url = new URL(request.url);
    let method = request.method;
    const headers = new Headers(request.headers);
    let body = request.body === null ? undefined : Buffer.from(await request.arrayBuffer());
    for (let hop = 0; ; hop++) {
      const verdict = this.checkStatic(url.href);
      if (!verdict.ok) throw new OutboundRefusal(url.href, verdict.reason);
      const response = await this.#send(url, method, headers, body, signal ?? undefined);
      const location = response.headers.get('location');
      if (!REDIRECTS.has(response.status) || location === null || request.redirect === 'manual') return response;
      await response.body?.cancel();
      if (request.redirect === 'error') throw new TypeError('fetch failed', { cause: new Error(`redirected to ${location}`) });
      if (hop >= 5) throw new TypeError('fetch failed', { cause: new Error('too many redirects') });
      const next = new URL(location, url);
      if (next.origin !== url.origin) for (const h of [...headers.keys()]) if (!CROSS_ORIGIN_HEADERS.has(h)) headers.delete(h);
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
        headers.delete('content-type');
        headers.delete('content-length');
      }
      url = next;
    }
  };

  #send(url: URL, method: string, headers: Headers, body: Buffer | undefined, signal: AbortSignal | undefined): Promise<Response> {
    const out: Record<string, string> = {};
    headers.forEach((v, k) => {
      if (k !== 'host' && k !== 'connection' && k !== 'accept-encoding') out[k] = v;
    });
    out['accept-encoding'] = 'gzip, deflate, br';
    if (body !== undefined) out['content-length'] = String(body.length);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<Response>((resolve, reject) => {
      if (signal?.aborted === true) return reject(signal.reason);
      const req = send(
        url,
        {
          method,
          headers: out,
          agent: url.protocol === 'https:' ? this.#https : this.#http,
          lookup: this.#lookupFor(url),
          ...(signal !== undefined ? { signal } : {}),
        },
        (res) => {
          try {
            resolve(responseOf(res, method, url, signal));
          } catch (e) {
            res.destroy();
            reject(e);
          }
        },
      );
      req.on('error', (e: Error) => {
        if (signal?.aborted === true) reject(signal.reason);
        else if (e instanceof OutboundRefusal) reject(e);
        else reject(new TypeError('fetch failed', { cause: e }));
      });
      req.end(body);
    });
  }
}

/** A `Response` of a Node response: its headers, and its body decoded as `fetch` does (an abort errors it with the signal's reason). */
function responseOf(res: IncomingMessage, method: string, url: URL, signal: AbortSignal | undefined): Response {
  const status = res.statusCode ?? 0;
  const headers = new Headers();
  for (const [k, v] of Object.entries(res.headers)) {
    if (Array.isArray(v)) for (const one of v) headers.append(k, one);
    else if (v !== undefined) headers.set(k, v);
  }
  const empty = method === 'HEAD' || status === 204 || status === 205 || status === 304;
  let stream: Readable = res;
  const encoding = (headers.get('content-encoding') ?? '').trim().toLowerCase();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? createGunzip()
      : encoding === 'deflate'
        ? createInflate()
        : encoding === 'br'
          ? createBrotliDecompress()
          : undefined;
  if (decoder !== undefined && !empty) {
    stream = res.pipe(decoder);
    res.on('error', (e) => decoder.destroy(e));
    headers.delete('content-encoding');
    headers.delete('content-length');
  }
  if (empty) res.resume();
  if (signal !== undefined && !empty) {
    const abort = (): void => void stream.destroy(signal.reason as Error);
    signal.addEventListener('abort', abort, { once: true });
    stream.once('close', () => signal.removeEventListener('abort', abort));
  }
  const response = new Response(empty ? null : (Readable.toWeb(stream) as ReadableStream<Uint8Array>), {
    status,
    statusText: res.statusMessage ?? '',
    headers,
  });
  Object.defineProperty(response, 'url', { value: url.href });
  return response;
}

/** The origin of a URL, or undefined when it is not one. */
export function originOf(raw: string): string | undefined {
  try {
    const url = new URL(raw);
    return url.origin === 'null' ? undefined : url.origin;
  } catch {
    return undefined;
  }
}

/**
 * The guard a library uses when it is given none: whatever code configures is the operator's, so
 * loopback and private addresses are reached; link-local and metadata addresses never are.
 */
export const operatorOutbound = new OutboundGuard();
