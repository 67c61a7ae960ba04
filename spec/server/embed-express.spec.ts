import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwaken } from 'awaken-ts/server';
import { testServer } from '../support/server.ts';
import { BASE, embeddedSuite, inExpress, jsonOf, TOKENS, twoAgents, type Hosted } from '../support/embedded.ts';

/**
 * Awaken's Node handler in a real Express 5 application on a real socket (docs/embedding.md →
 * Express): `app.use('/api/awaken', awaken.node)` — Express takes the mount off `req.url`, the
 * handler reads `originalUrl` — with and without `express.json()` before it (the body then already
 * read: taken from `req.body`), two agents, two API tokens, the real clients through it
 * (spec/support/embedded.ts); and a body refused, by awaken or by the parser, in the API's JSON as
 * `awaken serve` gives it.
 */

embeddedSuite('an Express 5 app', () => inExpress({ parsed: false }));
embeddedSuite('an Express 5 app behind express.json()', () => inExpress({ parsed: true }));

/** What `awaken serve`'s HTTP API answers a request (the same app, in process). */
async function served(path: string, init: RequestInit): Promise<[number, unknown]> {
  const r = await testServer([]).app.request(path, init);
  return [r.status, await jsonOf(r)];
}

describe.each([
  ['without a body parser', { parsed: false }],
  ['behind express.json()', { parsed: true, jsonLimit: '1mb' }],
] as const)('a body refused, %s', (_name, options) => {
  let h: Hosted;
  beforeAll(async () => {
    h = await inExpress(options);
  });
  afterAll(async () => {
    await h.stop();
  });
  const post = (body: string): RequestInit => ({
    method: 'POST',
    headers: { authorization: `Bearer ${TOKENS.alice}`, 'content-type': 'application/json' },
    body,
  });
  const mounted = async (path: string, init: RequestInit): Promise<[number, unknown]> => {
    const r = await fetch(`${h.url}${path}`, init);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    return [r.status, await jsonOf(r)];
  };

  it('malformed JSON: the 400 awaken serve gives', async () => {
    const body = '{"messages": [';
    expect(await mounted('/v1/runs', post(body))).toEqual(await served('/v1/runs', post(body)));
    expect(await mounted('/v1/runs', post(body))).toEqual([
      400,
      { error: 'malformed JSON: Unexpected end of JSON input', code: 'invalid_json', field: '(body)' },
    ]);
  });

  it('a field the API does not know: the 400 naming it', async () => {
    const body = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], colour: 'blue' });
    expect(await mounted('/v1/runs', post(body))).toEqual(await served('/v1/runs', post(body)));
    expect(await mounted('/v1/runs', post(body))).toEqual([400, { error: 'colour: unknown field', code: 'invalid_request', field: 'colour' }]);
  });
  // Last: a body refused unread leaves its connection to be closed, not used again.
  it('a body over the limit: the 413 awaken serve gives', async () => {
    const body = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(1024 * 1024 + 10) }] });
    expect(await mounted('/v1/runs', post(body))).toEqual(await served('/v1/runs', post(body)));
    expect(await mounted('/v1/runs', post(body))).toEqual([413, { error: 'request body larger than 1048576 bytes', code: 'body_too_large', field: '(body)' }]);
  });
});

describe('express.json() with its own, smaller limit before the mount', () => {
  let h: Hosted;
  beforeAll(async () => {
    h = await inExpress({ parsed: true, jsonLimit: '1kb' });
  });
  afterAll(async () => {
    await h.stop();
  });

  it("refuses what the parser refused in the API's JSON (awaken.nodeErrors), naming the parser's limit", async () => {
    const r = await fetch(`${h.url}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS.alice}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(2000) }] }),
    });
    expect([r.status, await jsonOf(r)]).toEqual([413, { error: 'request body larger than 1024 bytes', code: 'body_too_large', field: '(body)' }]);
  });

  it('refuses a charset or a content encoding the parser does not take in the API’s JSON, naming the header', async () => {
    const send = (headers: Record<string, string>) =>
      fetch(`${h.url}/v1/threads`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKENS.alice}`, 'content-type': 'application/json', ...headers },
        body: '{}',
      });
    const charset = await send({ 'content-type': 'application/json; charset=latin1' });
    expect([charset.status, await jsonOf(charset)]).toEqual([
      415,
      { error: 'unsupported charset "LATIN1"', code: 'unsupported_media_type', field: 'content-type' },
    ]);
    const encoding = await send({ 'content-encoding': 'compress' });
    expect([encoding.status, await jsonOf(encoding)]).toEqual([
      415,
      { error: 'unsupported content encoding "compress"', code: 'unsupported_media_type', field: 'content-encoding' },
    ]);
  });

  it("leaves the host's errors elsewhere to the host", async () => {
    const r = await fetch(`${h.origin}/elsewhere`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
  });
});

describe('a parser that keeps the raw bytes (express.json with verify → req.rawBody)', () => {
  it('gives the API those bytes', async () => {
    const awaken = await createAwaken({ app: twoAgents(), store: 'memory', basePath: BASE });
    const app = express();
    app.use(express.json({ verify: (req, _res, buf) => void ((req as { rawBody?: Buffer }).rawBody = Buffer.from(buf)) }));
    app.use(BASE, awaken.node);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const r = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}${BASE}/v1/threads`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"id":"kept-raw","title":"caf\\u00e9"}',
      });
      expect([r.status, await jsonOf(r)]).toMatchObject([201, { id: 'kept-raw', title: 'café' }]);
    } finally {
      await awaken.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('a path outside the mount', () => {
  it('goes on to the next Express handler', async () => {
    const h = await inExpress({ parsed: false });
    try {
      expect((await fetch(`${h.origin}${BASE}-not/v1/threads`)).status).toBe(404);
      expect(await (await fetch(`${h.origin}/`)).text()).toBe('the host app');
    } finally {
      await h.stop();
    }
  });
});
