import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { testServer } from '../support/server.ts';
import { exchangesOf, sectionOf } from '../support/doc-http.ts';

/**
 * docs/server.md → Thread metadata and run records, run as written: each ```http block is one
 * exchange — `> ` lines the request (method and path, headers, a JSON body), `< ` lines the answer
 * (status, body) — sent in order to a server over a socket (a scripted model, a clock that stands at
 * 2026-01-01), and each answer compared whole with the page. Before them, one run on thread `notes`
 * (two inferences), as the page says.
 */

const DOC = 'docs/server.md';
const HEADING = '## Thread metadata and run records';
const repo = join(import.meta.dirname, '../..');

const section = sectionOf(readFileSync(join(repo, DOC), 'utf8'), HEADING);
const exchanges = exchangesOf(section);

let server: RunningServer;
beforeAll(async () => {
  const usage = (prompt: number, completion: number) => ({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });
  const s = testServer(
    [
      { tool_calls: [{ id: 'e1', name: 'echo', arguments: { text: 'a note' } }], usage: usage(412, 18) },
      { text: 'Noted.', usage: usage(455, 6) },
    ],
    { env: deterministicEnv({ start: Date.UTC(2026, 0, 1) }) },
  );
  server = await listen(s.app, { port: 0 });
  const run = await fetch(`${server.url}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ threadId: 'notes', messages: [{ role: 'user', content: 'note this' }] }),
  });
  await run.text();
});
afterAll(async () => {
  await server.close();
});

describe(`${DOC} → ${HEADING.slice(3)}`, () => {
  it('shows two creates, a patch, a cycle, a missing parent, the summaries and a run record', () => {
    expect(exchanges.map((e) => `${e.method} ${e.path} → ${e.status}`)).toEqual([
      'POST /v1/threads → 201 Created',
      'POST /v1/threads → 201 Created',
      'PATCH /v1/threads/draft → 200 OK',
      'PATCH /v1/threads/root → 400 Bad Request',
      'POST /v1/threads → 400 Bad Request',
      'GET /v1/threads/summaries?limit=2 → 200 OK',
      'GET /v1/runs/run-1 → 200 OK',
    ]);
  });

  it('each exchange answers what the page shows, whole, in order', async () => {
    for (const e of exchanges) {
      const r = await fetch(`${server.url}${e.path}`, { method: e.method, headers: e.headers, ...(e.body !== undefined ? { body: e.body } : {}) });
      expect({ request: `${e.method} ${e.path}`, status: `${r.status} ${r.statusText}`, body: await r.text() }).toEqual({
        request: `${e.method} ${e.path}`,
        status: e.status,
        body: e.answer,
      });
    }
  });

  it('the refusal of a custom over 16 KiB is the line the page shows, for the body it describes', async () => {
    const shown = /A `custom` over 16 KiB[^\n]*\n\n```\n(.*)\n```\n/.exec(section)?.[1];
    const r = await fetch(`${server.url}/v1/threads`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'big', custom: { blob: 'x'.repeat(16_384) } }),
    });
    expect({ status: r.status, body: await r.text() }).toEqual({ status: 413, body: shown });
  });
});
