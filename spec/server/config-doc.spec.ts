import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';
import { exchangesOf, sectionOf } from '../support/doc-http.ts';

/**
 * docs/server.md → Config and capabilities, run as written: each ```http block is one exchange —
 * `> ` lines the request (method and path, headers, a JSON body), `< ` lines the answer (status,
 * headers, body) — sent in order to a real `awaken serve` with an admin token, and each answer
 * compared whole with the page: its status line, the headers the page shows, its body's text.
 */

const DOC = 'docs/server.md';
const ADMIN = 'admin-token-0123456789';

const exchanges = exchangesOf(sectionOf(readFileSync(join(repo, DOC), 'utf8'), '## Config and capabilities'));

let server: ServeProcess;
beforeAll(async () => {
  server = await startServe(['--store', 'memory'], { AWAKEN_ADMIN_TOKEN: ADMIN });
});
afterAll(async () => {
  await server.stop();
});

describe(`${DOC} → Config and capabilities`, () => {
  it('shows a create, its conflict, a bad document, a schema, the agents and an unknown agent', () => {
    expect(exchanges.map((e) => `${e.method} ${e.path} → ${e.status}`)).toEqual([
      'POST /v1/config/agents → 201 Created',
      'POST /v1/config/agents → 409 Conflict',
      'POST /v1/config/models → 400 Bad Request',
      'GET /v1/config/models/$schema → 200 OK',
      'GET /v1/agents → 200 OK',
      'GET /v1/agents/ghost → 404 Not Found',
    ]);
  });

  it('each exchange answers what the page shows, whole, in order', async () => {
    expect(exchanges.length).toBeGreaterThan(0);
    for (const e of exchanges) {
      const headers = Object.fromEntries(Object.entries(e.headers).map(([k, v]) => [k, v.replace('$AWAKEN_ADMIN_TOKEN', ADMIN)]));
      const r = await fetch(`${server.url}${e.path}`, { method: e.method, headers, ...(e.body !== undefined ? { body: e.body } : {}) });
      const shown = Object.fromEntries(Object.keys(e.answerHeaders).map((k) => [k, r.headers.get(k)]));
      expect({ request: `${e.method} ${e.path}`, status: `${r.status} ${r.statusText}`, headers: shown, body: await r.text() }).toEqual({
        request: `${e.method} ${e.path}`,
        status: e.status,
        headers: e.answerHeaders,
        body: e.answer,
      });
    }
  });
});
