import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressBytes, addressClass, NEVER_REACHED } from '../../src/runtime/address-class.ts';
import { OutboundGuard, OutboundRefusal, type Resolver } from '../../src/runtime/outbound.ts';

const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((b) => b.join('.'));
const hex16 = (b: readonly number[]): string =>
  Array.from({ length: 8 }, (_, i) => (((b[2 * i] as number) << 8) | (b[2 * i + 1] as number)).toString(16)).join(':');
/** How the WHATWG URL parser writes an IPv6 host (compressed, lower case, in brackets). */
const urlHost = (ip: string): string => new URL(`http://[${ip}]/`).hostname;

describe('address classes (the outbound guard’s view of an IP address)', () => {
  it.each([
    ['169.254.169.254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['169.254.0.1', 'link_local'],
    ['fe80::1', 'link_local'],
    ['febf:ffff::1', 'link_local'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['0.0.0.0', 'loopback'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['::', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fec0::1', 'private'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['[::ffff:a9fe:a9fe]', 'metadata'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::169.254.169.254', 'metadata'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['64:ff9b:1::a9fe:a9fe', 'metadata'],
    // RFC 6052 under a /48 local-use prefix: the address sits in bytes 6, 7, 9 and 10.
    ['64:ff9b:1:a9fe:a9:fe00::', 'metadata'],
    ['64:ff9b:1:a9:fe:a9fe::', 'metadata'],
    ['::ffff:0:a9fe:a9fe', 'metadata'],
    ['[::ffff:0:169.254.169.254]', 'metadata'],
    // Teredo: the client's address inverted (169.254.169.254 → 5601:5601).
    ['2001:0:4136:e378:8000:63bf:5601:5601', 'metadata'],
    ['2002:a9fe:a9fe::1', 'metadata'],
    ['2002:0a00:0001::1', 'private'],
    ['224.0.0.1', 'not_unicast'],
    ['255.255.255.255', 'not_unicast'],
    ['ff02::1', 'not_unicast'],
    ['172.32.0.1', 'public'],
    ['8.8.8.8', 'public'],
    ['2606:4700::1111', 'public'],
  ])('%s is %s', (ip, kind) => {
    expect(addressClass(ip)).toBe(kind);
  });

  it('a host name or garbage is no address', () => {
    expect(addressClass('metadata.google.internal')).toBeUndefined();
    expect(addressClass('1.2.3')).toBeUndefined();
    expect(addressClass('')).toBeUndefined();
  });

  it('an IPv4 address carried in IPv6 (mapped, in either spelling, and in brackets) is of its class (property)', () => {
    fc.assert(
      fc.property(v4, (a) => {
        const kind = addressClass(a);
        return (
          addressClass(`::ffff:${a}`) === kind &&
          addressClass(urlHost(`::ffff:${a}`)) === kind &&
          addressClass(`[::ffff:${a}]`) === kind &&
          addressClass(`64:ff9b::${a}`) === kind
        );
      }),
    );
  });

  it('every address of fe80::/10 is link-local and of 169.254/16 never reached, however written (property)', () => {
    const bytes = fc.array(fc.nat(255), { minLength: 16, maxLength: 16 });
    fc.assert(
      fc.property(bytes, (b) => {
        const ll = [0xfe, 0x80 | ((b[1] as number) & 0x3f), ...b.slice(2)];
        return addressClass(hex16(ll)) === 'link_local' && addressClass(urlHost(hex16(ll))) === 'link_local';
      }),
    );
    fc.assert(fc.property(fc.nat(255), fc.nat(255), (c, d) => NEVER_REACHED.has(addressClass(`169.254.${c}.${d}`) ?? 'public')));
  });

  it('IPv6 bytes read the same from the full and the compressed spelling (property)', () => {
    const bytes = fc.array(fc.nat(255), { minLength: 16, maxLength: 16 });
    fc.assert(
      fc.property(
        bytes,
        (b) => Buffer.from(addressBytes(hex16(b)) ?? []).equals(Buffer.from(b)) && Buffer.from(addressBytes(urlHost(hex16(b))) ?? []).equals(Buffer.from(b)),
      ),
    );
  });
});

/** A resolver answering from a table (a name resolving to the metadata address needs no DNS server). */
const table =
  (answers: Record<string, string | (() => string)>): Resolver =>
  async (host) => {
    const a = answers[host];
    if (a === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    const address = typeof a === 'function' ? a() : a;
    return [{ address, family: address.includes(':') ? 6 : 4 }];
  };

describe('OutboundGuard.check: the verdict on a URL a configuration names', () => {
  const hint = ': reached only for URLs of the config file';
  const guard = new OutboundGuard({
    privateAddresses: 'trusted',
    trusted: ['http://127.0.0.1:8080/v1'],
    privateHint: hint,
    resolve: table({ 'metadata.test': '169.254.169.254', 'db.test': '10.0.0.5', 'public.test': '93.184.216.34', 'v6meta.test': '::ffff:a9fe:a9fe' }),
  });

  it.each([
    ['http://169.254.169.254/latest/meta-data', '169.254.169.254 is a cloud metadata address: never reached'],
    ['http://[::ffff:169.254.169.254]/', '[::ffff:a9fe:a9fe] is a cloud metadata address: never reached'],
    ['http://[fe80::1]:8080/', '[fe80::1] is a link-local address: never reached'],
    ['http://2852039166/', '169.254.169.254 is a cloud metadata address: never reached'],
    ['http://metadata.test/', 'metadata.test resolves to 169.254.169.254, a cloud metadata address: never reached'],
    ['http://v6meta.test/', 'v6meta.test resolves to ::ffff:a9fe:a9fe, a cloud metadata address: never reached'],
    ['http://127.0.0.1:5432/', `127.0.0.1 is a loopback address${hint}`],
    ['http://[::1]:6379/', `[::1] is a loopback address${hint}`],
    ['http://db.test/', `db.test resolves to 10.0.0.5, a private address${hint}`],
    ['file:///etc/passwd', 'only http: and https: URLs are reached (not file:)'],
    ['gopher://127.0.0.1:6379/', 'only http: and https: URLs are reached (not gopher:)'],
    ['http://nowhere.test/', 'cannot resolve nowhere.test (ENOTFOUND)'],
  ])('%s is refused: %s', async (url, reason) => {
    expect(await guard.check(url)).toEqual({ ok: false, reason });
  });

  it('a public host, and a loopback origin the operator configured, are reached', async () => {
    expect(await guard.check('https://public.test/v1')).toEqual({ ok: true });
    expect(await guard.check('http://127.0.0.1:8080/other')).toEqual({ ok: true });
    expect(await new OutboundGuard({ resolve: table({ 'db.test': '10.0.0.5' }) }).check('http://db.test/')).toEqual({ ok: true });
  });
});

interface Seen {
  readonly url: string;
  readonly method: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

describe('OutboundGuard.fetch over a socket', () => {
  const seen: Seen[] = [];
  let connections = 0;
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        seen.push({ url: req.url ?? '', method: req.method ?? '', headers: req.headers, body });
        if (req.url === '/to-metadata') return void res.writeHead(302, { location: 'http://169.254.169.254/latest' }).end();
        if (req.url === '/to-other-origin') return void res.writeHead(307, { location: `http://localhost:${port}/landed` }).end();
        if (req.url === '/gzip') return void res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'text/plain' }).end(gzipSync('unzipped'));
        if (req.url === '/stream') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: one\n\n');
          setTimeout(() => res.end('data: two\n\n'), 20);
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ method: req.method, body }));
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('sends the method, headers and body, and answers a Response (JSON, a stream read as it comes, gzip decoded)', async () => {
    const guard = new OutboundGuard();
    const r = await guard.fetch(`http://127.0.0.1:${port}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer t' },
      body: '{"a":1}',
    });
    expect({ status: r.status, json: await r.json(), url: r.url }).toEqual({
      status: 200,
      json: { method: 'POST', body: '{"a":1}' },
      url: `http://127.0.0.1:${port}/echo`,
    });
    expect(seen.at(-1)?.headers).toMatchObject({ authorization: 'Bearer t', 'content-type': 'application/json' });
    const stream = await guard.fetch(`http://127.0.0.1:${port}/stream`);
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: one\n\n');
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: two\n\n');
    expect((await reader.read()).done).toBe(true);
    expect(await (await guard.fetch(`http://127.0.0.1:${port}/gzip`)).text()).toBe('unzipped');
  });

  it('a name that resolves to a refused address at connect time (DNS rebinding after the check) never connects', async () => {
    let answers = 0;
    const rebinding = new OutboundGuard({ resolve: table({ 'rebind.test': () => (answers++ === 0 ? '127.0.0.1' : '169.254.169.254') }) });
    expect(await rebinding.check(`http://rebind.test:${port}/`)).toEqual({ ok: true });
    const before = connections;
    const e = await rebinding.fetch(`http://rebind.test:${port}/secret`).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(OutboundRefusal);
    expect((e as Error).message).toBe(
      `outbound request to http://rebind.test:${port}/secret refused: rebind.test resolves to 169.254.169.254, a cloud metadata address: never reached`,
    );
    expect(connections).toBe(before);
  });

  it('a loopback origin the operator did not configure is refused before connecting; redirects are checked at every hop', async () => {
    const before = { connections, seen: seen.length };
    const strict = new OutboundGuard({ privateAddresses: 'trusted', privateHint: ' (not configured)' });
    await expect(strict.fetch(`http://127.0.0.1:${port}/x`)).rejects.toThrow(
      `outbound request to http://127.0.0.1:${port}/x refused: 127.0.0.1 is a loopback address (not configured)`,
    );
    await expect(strict.fetch(`http://localhost:${port}/x`)).rejects.toThrow(
      /^outbound request to http:\/\/localhost:\d+\/x refused: localhost resolves to (127\.0\.0\.1|::1), a loopback address \(not configured\)$/,
    );
    expect({ connections, seen: seen.length }).toEqual(before);
    const guard = new OutboundGuard();
    await expect(guard.fetch(`http://127.0.0.1:${port}/to-metadata`)).rejects.toThrow(
      'outbound request to http://169.254.169.254/latest refused: 169.254.169.254 is a cloud metadata address: never reached',
    );
  });

  it('a redirect to another origin does not carry the credential there, in whatever header it travels; what describes the request goes on', async () => {
    const keys = {
      authorization: 'Bearer secret-value-123',
      'x-api-key': 'secret-value-456',
      'x-goog-api-key': 'secret-value-789',
      'api-key': 'secret-value-abc',
      cookie: 'session=secret-value-def',
    };
    const r = await new OutboundGuard().fetch(`http://127.0.0.1:${port}/to-other-origin`, {
      headers: { ...keys, accept: 'application/json', 'user-agent': 'awaken-spec' },
    });
    expect(r.status).toBe(200);
    expect(seen.at(-2)).toMatchObject({ url: '/to-other-origin', headers: keys });
    expect(seen.at(-1)?.url).toBe('/landed');
    for (const name of Object.keys(keys)) expect(seen.at(-1)?.headers[name]).toBeUndefined();
    expect(seen.at(-1)?.headers).toMatchObject({ accept: 'application/json', 'user-agent': 'awaken-spec' });
  });

  it('an abort rejects with the signal’s reason; a refused connection as fetch does', async () => {
    const ctl = new AbortController();
    const pending = new OutboundGuard().fetch(`http://127.0.0.1:${port}/stream`, { signal: ctl.signal }).then((r) => r.text());
    setTimeout(() => ctl.abort(new Error('stop')), 5);
    await expect(pending).rejects.toThrow('stop');
    const e = await new OutboundGuard().fetch('http://127.0.0.1:1/').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(TypeError);
    expect(((e as Error).cause as { code?: string }).code).toBe('ECONNREFUSED');
  });
});
