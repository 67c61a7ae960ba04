import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/stores/memory.ts';
import type { Store } from '../../src/runtime/store.ts';
import { bearerCheck } from '../../src/server/http-support.ts';
import { createLogger } from '../../src/server/log.ts';
import { testServer } from '../support/server.ts';

/** A memory store whose `method` fails with a cause, as a store whose connection dropped. */
function failing(method: keyof Store): Store {
  const store = new MemoryStore();
  return new Proxy(store, {
    get(target, name, receiver) {
      if (name === method)
        return () => Promise.reject(new Error('store gone', { cause: Object.assign(new Error('connection reset'), { code: 'ECONNRESET' }) }));
      const v = Reflect.get(target, name, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as Store;
}

function logged(store?: Store): { app: Hono; lines: () => Record<string, unknown>[] } {
  const out: string[] = [];
  const logger = createLogger({ level: 'info', format: 'json', write: (l) => void out.push(l), now: () => 0 });
  const s = testServer([{ text: 'hi' }], { ...(store !== undefined ? { store } : {}), http: { logger } });
  return { app: s.app, lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('the HTTP app tells its logger', () => {
  it('a line per request: method, route pattern, path, status, duration and the thread', async () => {
    const { app, lines } = logged();
    expect((await app.request('/v1/threads/t-404')).status).toBe(404);
    expect(lines()).toEqual([
      {
        time: '1970-01-01T00:00:00.000Z',
        level: 'info',
        msg: 'request',
        method: 'GET',
        route: '/v1/threads/:id',
        path: '/v1/threads/t-404',
        status: 404,
        ms: 0,
        thread: 't-404',
      },
    ]);
  });

  it('a store failing under /health: the failure with its cause, and the request (a 5xx, so at error level)', async () => {
    const { app, lines } = logged(failing('listThreads'));
    expect((await app.request('/health')).status).toBe(503);
    expect(lines().map((l) => [l['level'], l['msg'], l['error'], l['cause'], l['status']])).toEqual([
      ['error', 'store unavailable', 'store gone', 'connection reset (ECONNRESET)', undefined],
      ['error', 'request', undefined, undefined, 503],
    ]);
  });

  it('an unexpected failure behind a 500: "request failed" with its cause, and the request line at error level', async () => {
    const { app, lines } = logged(failing('getThread'));
    const r = await app.request('/v1/threads/t1');
    expect({ status: r.status, body: await r.json() }).toEqual({ status: 500, body: { error: 'internal error', code: 'internal' } });
    expect(lines().map((l) => [l['level'], l['msg'], l['error'], l['cause'], l['status']])).toEqual([
      ['error', 'request failed', 'store gone', 'connection reset (ECONNRESET)', undefined],
      ['error', 'request', undefined, undefined, 500],
    ]);
  });
});

describe('a request line over a socket', () => {
  it('a path with terminal escapes (%1b[31m…) is written escaped in the pretty log', async () => {
    const { listen } = await import('../../src/server/node.ts');
    const out: string[] = [];
    const logger = createLogger({ level: 'info', format: 'pretty', write: (l) => void out.push(l), now: () => 0 });
    const server = await listen(testServer([], { http: { logger } }).app, { port: 0 });
    try {
      expect((await fetch(`${server.url}/v1/threads/%1b[31mred%1b[0m%C2%9b2J`)).status).toBe(400);
    } finally {
      await server.close();
    }
    expect(out.join('')).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(out).toEqual([
      '00:00:00.000 INFO  request method=GET route=/v1/threads/:id path="/v1/threads/\\u001b[31mred\\u001b[0m\\u009b2J" status=400 ms=0 thread="\\u001b[31mred\\u001b[0m\\u009b2J"\n',
    ]);
  });
});

describe('bearerCheck', () => {
  it('missing, wrong (of any length) or ok', async () => {
    const app = new Hono().get('/', (c) => c.text(bearerCheck(c, 'right-token')));
    const ask = async (authorization?: string): Promise<string> =>
      (await app.request('/', authorization !== undefined ? { headers: { authorization } } : {})).text();
    expect(await ask()).toBe('missing');
    expect(await ask('Basic right-token')).toBe('missing');
    expect(await ask('Bearer wrong-token')).toBe('wrong');
    expect(await ask('Bearer short')).toBe('wrong');
    expect(await ask('bearer right-token')).toBe('ok');
    expect(await ask('Bearer   right-token  ')).toBe('ok');
  });
});
