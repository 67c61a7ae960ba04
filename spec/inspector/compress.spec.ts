import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptsGzip, withGzip } from '../../src/server/compress.ts';
import { SSE_HEADERS } from '../../src/server/http-support.ts';
import { startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * gzip on `awaken serve` (src/server/compress.ts): a whole answer — a recorded transcript, a JSON
 * listing — goes out gzip-compressed to a client that takes it, and decodes to the same bytes; an
 * SSE stream goes out as it is, frame by frame; `Vary: Accept-Encoding` on what could be compressed.
 * Read with node:http, which (unlike fetch) hands over the bytes as sent.
 */
interface Raw {
  readonly status: number;
  readonly headers: IncomingMessage['headers'];
  readonly body: Buffer;
}

function raw(url: string, headers: Record<string, string> = {}, method = 'GET', body?: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('gzip on awaken serve', () => {
  const record = mkdtempSync(join(tmpdir(), 'awaken-gzip-record-'));
  let server: ServeProcess;
  let runId: string;
  beforeAll(async () => {
    const conf = mkdtempSync(join(tmpdir(), 'awaken-gzip-config-'));
    // A long answer, so the transcript has text worth compressing.
    const answer = Array.from({ length: 60 }, (_, i) => `Line ${i}: the quick brown fox jumps over the lazy dog.`).join('\n');
    writeFileSync(join(conf, 'script.json'), JSON.stringify([{ text: answer }, { text: 'short' }, { text: 'again' }]));
    writeFileSync(join(conf, 'awaken.yaml'), ['server:', '  store: memory', '  model: scripted:script.json', ''].join('\n'));
    server = await startServe(['--config', join(conf, 'awaken.yaml'), '--record', record]);
    const r = await raw(
      `${server.url}/v1/runs`,
      { 'content-type': 'application/json', 'accept-encoding': 'gzip' },
      'POST',
      JSON.stringify({ threadId: 'zipped', messages: [{ role: 'user', content: 'talk' }] }),
    );
    expect(r.status).toBe(200);
    runId = r.headers['x-awaken-run-id'] as string;
    for (let waited = 0; readdirSync(record).filter((f) => f.endsWith('.jsonl')).length === 0; waited += 50) {
      if (waited > 10_000) throw new Error('no transcript recorded within 10 s');
      await new Promise((r) => setTimeout(r, 50));
    }
  }, 60_000);
  afterAll(async () => {
    await server.stop();
  });

  it('a recorded transcript served gzip is a fraction of its size and decodes to the same bytes; without Accept-Encoding it goes out as it is', async () => {
    const name = readdirSync(record).find((f) => f.endsWith('.jsonl')) as string;
    const onDisk = readFileSync(join(record, name));
    const url = `${server.url}/v1/inspector/transcripts/${encodeURIComponent(name)}`;
    const zipped = await raw(url, { 'accept-encoding': 'gzip, deflate, br' });
    expect(zipped.status).toBe(200);
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers['vary']).toMatch(/accept-encoding/i);
    expect(zipped.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    expect(Number(zipped.headers['content-length'])).toBe(zipped.body.byteLength);
    expect(zipped.body.byteLength).toBeLessThan(onDisk.byteLength / 3);
    expect(gunzipSync(zipped.body).equals(onDisk)).toBe(true);
    const plain = await raw(url);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers['vary']).toMatch(/accept-encoding/i);
    expect(plain.body.equals(onDisk)).toBe(true);
    // Refused by weight: as it is.
    expect((await raw(url, { 'accept-encoding': 'gzip;q=0, identity' })).headers['content-encoding']).toBeUndefined();
  });

  it('a JSON answer of the API is compressed; a small one is not worth it', async () => {
    const listing = await raw(`${server.url}/v1/threads/zipped/messages?visibility=all`, { 'accept-encoding': 'gzip' });
    expect(listing.headers['content-encoding']).toBe('gzip');
    const messages = JSON.parse(gunzipSync(listing.body).toString('utf8')) as { messages: unknown[] };
    expect(messages.messages.length).toBeGreaterThan(1);
    const health = await raw(`${server.url}/health`, { 'accept-encoding': 'gzip' });
    expect(health.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(health.body.toString('utf8'))).toMatchObject({ status: 'healthy' });
    const notFound = await raw(`${server.url}/v1/nothing-here`, { 'accept-encoding': 'gzip' });
    expect(notFound.status).toBe(404);
    expect(JSON.parse(notFound.body.toString('utf8'))).toMatchObject({ code: 'not_found' });
    expect(runId).toMatch(/./);
  });

  it('an SSE stream is not compressed and streams frame by frame: the frames come while the stream is still open', async () => {
    const run = await raw(
      `${server.url}/v1/runs`,
      { 'content-type': 'application/json', 'accept-encoding': 'gzip' },
      'POST',
      JSON.stringify({ threadId: 'zipped', messages: [{ role: 'user', content: 'more' }] }),
    );
    expect(run.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(run.headers['content-encoding']).toBeUndefined();
    expect(run.body.toString('utf8')).toContain('data: ');
    // The thread's stream stays open after its runs: what arrives before an end is what was streamed.
    const frames = await new Promise<{ headers: IncomingMessage['headers']; text: string; ended: boolean }>((resolve, reject) => {
      const req = request(`${server.url}/v1/threads/zipped/stream?since=0`, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
        let text = '';
        let ended = false;
        res.on('end', () => (ended = true));
        res.on('data', (c: Buffer) => {
          text += c.toString('utf8');
          if (text.includes('run_finish') || text.includes('event: resync')) {
            resolve({ headers: res.headers, text, ended });
            req.destroy();
          }
        });
      });
      req.on('error', (e) => ((e as { code?: string }).code === 'ECONNRESET' ? undefined : reject(e)));
      req.end();
      setTimeout(() => reject(new Error('no frame within 10 s')), 10_000);
    });
    expect(frames.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(frames.headers['content-encoding']).toBeUndefined();
    expect(frames.ended).toBe(false);
    expect(frames.text).toMatch(/^(id|event): /m);
  });
});

describe('gzip, in process', () => {
  it('reads Accept-Encoding by its weights', () => {
    expect(acceptsGzip(undefined)).toBe(false);
    expect(acceptsGzip('gzip')).toBe(true);
    expect(acceptsGzip('deflate, GZIP;q=0.5')).toBe(true);
    expect(acceptsGzip('gzip;q=0')).toBe(false);
    expect(acceptsGzip('*')).toBe(true);
    expect(acceptsGzip('*;q=0.1, gzip;q=0')).toBe(false);
    expect(acceptsGzip('br, deflate')).toBe(false);
    expect(acceptsGzip('identity')).toBe(false);
  });

  it('leaves alone what is encoded already, marked as streamed, not a whole type, or below the threshold; keeps the route’s headers', async () => {
    const big = 'x'.repeat(5_000);
    const inner = new Hono();
    inner.get('/json', (c) => c.json({ big }, 200, { 'x-awaken-run-id': 'r1', vary: 'Origin' }));
    inner.get('/encoded', (c) => c.body(big, 200, { 'content-type': 'text/plain', 'content-encoding': 'identity' }));
    inner.get('/no-transform', (c) => c.body(big, 200, { 'content-type': 'application/json', 'cache-control': 'no-transform' }));
    inner.get('/sse', (c) => c.body(`data: ${big}\n\n`, 200, { ...SSE_HEADERS }));
    inner.get('/binary', (c) => c.body(big, 200, { 'content-type': 'application/octet-stream' }));
    inner.get('/small', (c) => c.json({ small: true }));
    const app = withGzip(inner, { threshold: 1024 });
    const gz = { headers: { 'accept-encoding': 'gzip' } };
    const json = await app.request('/json', gz);
    expect(json.headers.get('content-encoding')).toBe('gzip');
    expect(json.headers.get('x-awaken-run-id')).toBe('r1');
    expect(json.headers.get('vary')).toBe('Origin, Accept-Encoding');
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
    expect(JSON.parse(gunzipSync(Buffer.from(await json.arrayBuffer())).toString('utf8'))).toEqual({ big });
    for (const path of ['/encoded', '/no-transform', '/sse', '/binary', '/small']) {
      const r = await app.request(path, gz);
      expect(r.headers.get('content-encoding') ?? 'none', path).toBe(path === '/encoded' ? 'identity' : 'none');
      expect((await r.text()).length, path).toBeGreaterThan(0);
    }
    expect((await app.request('/small', gz)).headers.get('vary')).toBe('Accept-Encoding');
    expect((await app.request('/sse', gz)).headers.get('vary')).toBeNull();
    expect((await app.request('/json', { method: 'HEAD', headers: { 'accept-encoding': 'gzip' } })).headers.get('content-encoding')).toBeNull();
  });
});
