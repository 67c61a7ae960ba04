import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { exchangesOf, sectionOf } from '../support/doc-http.ts';
import { echoTool } from '../support/runtime.ts';
import { testServer } from '../support/server.ts';

/**
 * docs/server.md → Client tools, state and context, run as written: each ```http block sent to a
 * server over a socket whose agent (`agent`, with the tool `echo`) shares the key `todos`, and each
 * answer compared whole with the page.
 */

const DOC = 'docs/server.md';
const HEADING = '## Client tools, state and context';
const exchanges = exchangesOf(sectionOf(readFileSync(join(import.meta.dirname, '../..', DOC), 'utf8'), HEADING));

let server: RunningServer;
beforeAll(async () => {
  server = await listen(testServer([{ text: 'never asked' }], { tools: [echoTool], spec: { client_state: ['todos'] } }).app, { port: 0 });
});
afterAll(async () => {
  await server.close();
});

describe(`${DOC} → ${HEADING.slice(3)}`, () => {
  it('shows the two refusals: a client tool with a server tool’s name, a key the agent does not share', () => {
    expect(exchanges.map((e) => `${e.method} ${e.path} → ${e.status}`)).toEqual([
      'POST /v1/ag-ui/run → 400 Bad Request',
      'POST /v1/ag-ui/run → 400 Bad Request',
    ]);
  });

  it('each exchange answers what the page shows, whole', async () => {
    for (const e of exchanges) {
      const r = await fetch(`${server.url}${e.path}`, { method: e.method, headers: e.headers, ...(e.body !== undefined ? { body: e.body } : {}) });
      expect({ status: `${r.status} ${r.statusText}`, body: await r.text() }).toEqual({ status: e.status, body: e.answer });
    }
  });
});
