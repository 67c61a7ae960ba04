import { afterEach, describe, expect, it } from 'vitest';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { testServer } from '../support/server.ts';

/**
 * MCP sessions (`/v1/mcp`, `Mcp-Session-Id`) under API tokens, over a socket: a session answers only
 * the principal that opened it. Another principal holding its id (leaked from a log, a proxy) gets
 * what an unknown session gets — 404 — on every method: a call, the GET stream, a replay with
 * Last-Event-ID, DELETE; and the session goes on for its owner.
 */
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789';
const ADMIN = 'admin-token-0123456789';
const UNKNOWN = { jsonrpc: '2.0', error: { code: -32001, message: 'session not found' }, id: null };
const BASE = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };

let open: RunningServer | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

/** Opens a session by hand as a token's principal; returns its id and a POST within it. */
async function session(url: string, token: string) {
  const auth = { authorization: `Bearer ${token}` };
  const init = await fetch(url, {
    method: 'POST',
    headers: { ...BASE, ...auth },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  expect(init.status).toBe(200);
  const id = init.headers.get('mcp-session-id') ?? '';
  await init.text();
  const post = (body: unknown) => fetch(url, { method: 'POST', headers: { ...BASE, ...auth, 'mcp-session-id': id }, body: JSON.stringify(body) });
  expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
  return { id, post };
}

describe('MCP sessions belong to the principal that opened them', () => {
  it("another principal with a session's id gets 404 on POST, GET stream, replay and DELETE; the owner goes on", async () => {
    const s = testServer([{ text: 'for alice only' }, { text: 'again for alice' }], {
      http: {
        auth: {
          tokens: new Map([
            [ALICE, 'alice'],
            [BOB, 'bob'],
          ]),
        },
        adminToken: ADMIN,
      },
    });
    const server = await listen(s.app, { port: 0 });
    open = server;
    const url = `${server.url}/v1/mcp`;
    const alice = await session(url, ALICE);
    const answer = await (await alice.post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'agent', arguments: { message: 'hi' } } })).text();
    expect(answer).toContain('for alice only');
    const primed = /^id: (\S+)$/m.exec(answer)?.[1] as string;
    expect(primed).toBeDefined();

    const as = (token: string, init: RequestInit & { headers?: Record<string, string> }) =>
      fetch(url, { ...init, headers: { ...init.headers, authorization: `Bearer ${token}`, 'mcp-session-id': alice.id } });
    const refused = async (r: Response, what: string) => {
      expect(r.status, what).toBe(404);
      expect(await r.json(), what).toEqual(UNKNOWN);
    };
    for (const token of [BOB, ADMIN]) {
      await refused(
        await as(token, {
          method: 'POST',
          headers: BASE,
          body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'agent', arguments: { message: 'hijack' } } }),
        }),
        'call',
      );
      await refused(await as(token, { method: 'POST', headers: BASE, body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' }) }), 'list');
      await refused(await as(token, { method: 'GET', headers: { accept: 'text/event-stream', 'last-event-id': primed } }), 'replay');
      await refused(await as(token, { method: 'GET', headers: { accept: 'text/event-stream' } }), 'stream');
      await refused(await as(token, { method: 'DELETE' }), 'delete');
    }
    // Nothing ran for them: one model request, alice's.
    expect(s.llm.requests).toHaveLength(1);

    // The session is alice's still, whole.
    const again = await (await alice.post({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'agent', arguments: { message: 'again' } } })).text();
    expect(again).toContain('again for alice');
    const closed = await fetch(url, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ALICE}`, 'mcp-session-id': alice.id, 'mcp-protocol-version': '2025-11-25' },
    });
    expect(closed.status).toBe(200);
    await refused(
      await fetch(url, {
        method: 'POST',
        headers: { ...BASE, authorization: `Bearer ${ALICE}`, 'mcp-session-id': alice.id },
        body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list' }),
      }),
      'after delete',
    );
  });
});
