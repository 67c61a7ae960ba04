import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../src/cli/serve-command.ts';
import { cli } from '../support/cli.ts';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * Connections that cost `awaken serve` without asking it anything (docs/server.md → Connections):
 * a client trickling its headers is cut off after `server.headers_timeout_ms` (Node's own bound held
 * it ~90 s), and past `server.max_connections` a new connection is closed as it is accepted.
 * Bounds are times: a fault spec, one file at a time.
 */

let server: ServeProcess;
const dir = mkdtempSync(join(tmpdir(), 'awaken-slow-connections-'));

beforeAll(async () => {
  writeFileSync(join(dir, 'awaken.yaml'), 'server: { store: memory, headers_timeout_ms: 1000, max_connections: 4 }\n');
  server = await startServe(['--config', join(dir, 'awaken.yaml')]);
});
afterAll(async () => {
  await server?.stop();
});

const port = (): number => Number(new URL(server.url).port);
/** When `closed` resolved, or `Infinity` if it did not within `ms` (a connection the server kept). */
const closedWithin = (closed: Promise<number>, ms: number): Promise<number> =>
  Promise.race([closed, new Promise<number>((r) => setTimeout(() => r(Infinity), ms))]);
/** A raw connection, with what the server sent on it and when it was closed. */
function open(): Promise<{ socket: Socket; received: () => string; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    let received = '';
    const socket = connect(port(), '127.0.0.1');
    const closed = new Promise<number>((r) => socket.once('close', () => r(Date.now())));
    socket.on('data', (d: Buffer) => (received += d.toString()));
    socket.on('error', () => undefined);
    socket.once('connect', () => resolve({ socket, received: () => received, closed }));
    socket.once('error', reject);
  });
}

describe('a client that trickles its headers', () => {
  it('is answered 408 and closed once server.headers_timeout_ms has passed, however it keeps sending', async () => {
    const c = await open();
    const started = Date.now();
    c.socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    const drip = setInterval(() => c.socket.writable && c.socket.write('X-Drip: 1\r\n'), 200);
    const closedAt = await closedWithin(c.closed, 10_000);
    clearInterval(drip);
    c.socket.destroy();
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    // The bound is 1 s, checked every 250 ms; generous for a loaded machine (Node's own: ~90 s).
    expect(closedAt - started).toBeLessThan(5_000);
    expect(closedAt - started).toBeGreaterThanOrEqual(900);
  });
});

describe('more connections than server.max_connections', () => {
  it('one more is closed as it is accepted, and is logged; the idle ones time out and the server answers again', async () => {
    const idle = await Promise.all([open(), open(), open(), open()]);
    const extra = await open();
    const opened = Date.now();
    expect((await closedWithin(extra.closed, 5_000)) - opened).toBeLessThan(1_000);
    expect(extra.received()).toBe('');
    // The four idle ones sent nothing: they are cut off by the headers' bound and free their places.
    expect(Math.max(...(await Promise.all(idle.map((c) => closedWithin(c.closed, 10_000))))) - opened).toBeLessThan(5_000);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    expect(server.log()).toMatch(/WARN {2}connections refused: 4 are open \(server\.max_connections\) refused=1\n/);
  });
});

describe('the connection settings', () => {
  it('default to 10 s for the headers, 60 s for a request, 1,000 connections; the headers’ time must be within the request’s', async () => {
    expect(parseServeArgs([], {})).toMatchObject({ connections: { headersTimeoutMs: 10_000, requestTimeoutMs: 60_000, maxConnections: 1000 } });
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'server: { headers_timeout_ms: 5000, request_timeout_ms: 2000 }\n');
    // The line docs/server.md (→ Connections) shows, for its ./awaken.yaml.
    const documented = readFileSync(join(repo, 'docs/server.md'), 'utf8')
      .split('\n')
      .find((l) => l.includes('server.headers_timeout_ms: 5000'))
      ?.trim();
    expect(documented).toBe(
      'awaken serve: ./awaken.yaml: server.headers_timeout_ms: 5000 is longer than server.request_timeout_ms (2000), which the headers are part of',
    );
    expect(await cli('serve', '--config', file)).toEqual({ code: 65, out: '', err: `${documented?.replace('./awaken.yaml', file)}\n` });
    writeFileSync(file, 'server: { max_connections: 0 }\n');
    expect(await cli('serve', '--config', file)).toEqual({
      code: 65,
      out: '',
      err: `awaken serve: ${file}: server.max_connections: Too small: expected number to be >=1\n`,
    });
    // A request bound alone shorter than the default headers' bound takes the headers' with it.
    writeFileSync(file, 'server: { request_timeout_ms: 2000 }\n');
    expect(parseServeArgs(['--config', file], {})).toMatchObject({ connections: { headersTimeoutMs: 2000, requestTimeoutMs: 2000 } });
  });
});
