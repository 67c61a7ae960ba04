import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { listen } from '../../src/server/node.ts';
import { testServer } from '../support/server.ts';
import { report, SCALE, SEED } from './chaos.ts';

/**
 * Hostile input on every route (issue: the server under faults): generated methods, paths with
 * malformed ids and percent-encoding, cursors, headers, content types and bodies, over a real socket.
 * Every answer is a 4xx or a 2xx — never a 5xx, never a crash — and the server stays healthy.
 */
const ROUTES = [
  '/v1/runs',
  '/v1/runs/r1',
  '/v1/runs/r1/inputs',
  '/v1/runs/r1/decision',
  '/v1/runs/r1/cancel',
  '/v1/threads',
  '/v1/threads/t1',
  '/v1/threads/t1/messages',
  '/v1/threads/t1/stream',
  '/v1/threads/t1/mailbox',
  '/v1/ai-sdk/chat',
  '/v1/ai-sdk/chat/t1/stream',
  '/v1/ai-sdk/threads/t1/messages',
  '/v1/ag-ui/run',
  '/v1/ag-ui/threads/t1/runs',
  '/v1/ag-ui/agents/agent/runs',
  '/v1/ag-ui/threads/t1/interrupt',
  '/v1/ag-ui/threads/t1/messages',
  '/v1/a2a/message:send',
  '/v1/a2a/message:stream',
  '/v1/a2a/tasks',
  '/v1/a2a/tasks/x',
  '/v1/a2a/tasks/x:cancel',
  '/v1/a2a/tasks/x:subscribe',
  '/v1/a2a/jsonrpc',
  '/v1/mcp',
  '/v1/capabilities',
  '/v1/config/agents',
  '/v1/config/agents/x',
  '/.well-known/agent-card.json',
  '/health',
  '/health/ready',
];
const id = fc.oneof(
  fc.constantFrom('%', '%zz', '%2e%2e', '..%2f..%2fetc', '%00', '__proto__', 'a'.repeat(300), '.hidden', 'x%20y', '%E0%A4%A', '😀', 'constructor'),
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
);
const path = fc.oneof(
  fc.constantFrom(...ROUTES),
  fc.tuple(fc.constantFrom(...ROUTES), id).map(([r, x]) => r.replace(/\b(r1|t1|x|agent)\b/, x)),
  fc
    .tuple(
      fc.constantFrom(...ROUTES),
      fc.constantFrom('since', 'cursor', 'offset', 'limit', 'status', 'thread_id', 'pageSize', 'pageToken', 'historyLength', 'visibility'),
      fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('-1', '1e999', 'NaN', '99999999999999999999', '%zz')),
    )
    .map(([r, k, v]) => `${r}?${k}=${encodeURIComponent(v).replace('%25zz', '%zz')}`),
);
const body = fc.oneof(
  fc.json(),
  fc.string({ maxLength: 200 }),
  fc.jsonValue().map((v) => JSON.stringify({ messages: v })),
  fc.jsonValue().map((v) => JSON.stringify({ messages: [{ role: 'user', content: v }], threadId: v, id: v })),
  fc.jsonValue().map((v) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: v, params: v })),
  fc.jsonValue().map((v) => JSON.stringify({ message: { messageId: v, role: 'ROLE_USER', parts: v } })),
  fc.constantFrom('{', '[', 'null', '"', '{"messages":[{"role":"user","content":"x"}],"threadId":"../../x"}', '\u0000'),
);
const type = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/a2a+json',
  '',
  'application/json;;;',
);
const headers = fc.record(
  {
    'last-event-id': fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('-1', '1e3', '999999999999999999')),
    accept: fc.constantFrom('text/event-stream', 'application/json', '*/*', 'application/json, text/event-stream'),
    'mcp-session-id': fc.string({ maxLength: 10 }).filter((x) => /^[\x21-\x7e]*$/.test(x)),
    'a2a-version': fc.constantFrom('0.3', '1.0', 'x'),
  },
  { requiredKeys: [] },
);

describe('generated malformed requests on every route', () => {
  it(`${10_000 * SCALE} of them: no 5xx, no crash, still healthy`, async () => {
    const s = testServer([]);
    const server = await listen(s.app, { port: 0 });
    const statuses = new Map<number, number>();
    let fivexx = 0;
    try {
      await fc.assert(
        fc.asyncProperty(path, body, type, headers, fc.constantFrom('POST', 'PUT', 'DELETE', 'GET', 'PATCH', 'HEAD'), async (p, b, t, h, method) => {
          const abort = new AbortController();
          const timer = setTimeout(() => abort.abort(), 200);
          try {
            const r = await fetch(`${server.url}${p}`, {
              method,
              headers: { ...h, ...(t === '' ? {} : { 'content-type': t }) },
              ...(method === 'GET' || method === 'HEAD' ? {} : { body: b }),
              signal: abort.signal,
            });
            statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
            if (r.status >= 500) fivexx++;
            await r.body?.cancel();
            expect(r.status, `${method} ${p}`).toBeLessThan(500);
          } catch (e) {
            // A stream that stays open (a valid follow) is cut by the timer: not a failure.
            if (!(e instanceof Error && e.name === 'AbortError')) throw e;
          } finally {
            clearTimeout(timer);
          }
        }),
        { numRuns: 10_000 * SCALE, seed: SEED },
      );
      expect((await fetch(`${server.url}/health`)).status).toBe(200);
      report('malformed requests', {
        tried: 10_000 * SCALE,
        fivexx,
        statuses: [...statuses]
          .sort((a, b) => a[0] - b[0])
          .map(([k, v]) => `${k}:${v}`)
          .join(','),
      });
    } finally {
      await server.close();
    }
  }, 600_000);
});
