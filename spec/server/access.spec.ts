import { describe, expect, it } from 'vitest';
import { checkOrigins } from '../../src/server/access.ts';
import { listen } from '../../src/server/node.ts';
import { allowedHostsOf, parseServeArgs } from '../../src/cli/serve-command.ts';
import { bodyJson, json, testServer } from '../support/server.ts';

/** CORS and Host checks of the whole HTTP API (what a browser page on another origin meets). */

const ROUTES = [
  '/v1/ai-sdk/chat',
  '/v1/ag-ui/run',
  '/v1/runs',
  '/v1/threads/t1/stream',
  '/v1/threads/t1/messages',
  '/v1/mcp',
  '/v1/a2a/message:send',
  '/v1/a2a/jsonrpc',
  '/.well-known/agent-card.json',
  '/health',
  '/v1/config/agents',
];

const preflight = (origin: string, headers = 'content-type'): RequestInit => ({
  method: 'OPTIONS',
  headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': headers },
});

describe('CORS on every route a browser calls', () => {
  it.each(ROUTES)('preflight of %s from a loopback page: 204 with the CORS headers', async (route) => {
    const s = testServer([]);
    const r = await s.app.request(route, preflight('http://localhost:5173', 'content-type,last-event-id,mcp-session-id'));
    expect(r.status).toBe(204);
    expect(r.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(r.headers.get('access-control-allow-methods')).toContain('POST');
    expect(r.headers.get('access-control-allow-headers')).toBe('content-type,last-event-id,mcp-session-id');
    expect(r.headers.get('vary')).toContain('Origin');
  });

  it('a configured origin is allowed; any other is refused with a 403 naming the origin, preflight or not', async () => {
    const s = testServer([{ text: 'hi' }], { http: { corsOrigins: ['https://app.example'] } });
    expect((await s.app.request('/v1/ai-sdk/chat', preflight('https://app.example'))).headers.get('access-control-allow-origin')).toBe('https://app.example');
    for (const init of [
      preflight('https://evil.example'),
      { ...json({ id: 'x', messages: [] }), headers: { 'content-type': 'application/json', origin: 'https://evil.example' } },
    ]) {
      const r = await s.app.request('/v1/ai-sdk/chat', init);
      expect(r.status).toBe(403);
      expect(r.headers.get('access-control-allow-origin')).toBeNull();
      expect(await r.json()).toEqual({ error: 'origin not allowed: https://evil.example', code: 'origin_not_allowed', field: 'origin' });
    }
    expect((await s.app.request('/health', { headers: { origin: 'null' } })).status).toBe(403);
  });

  it('a configured public origin asking for the private network (Chromium) is told yes in the preflight', async () => {
    const s = testServer([], { http: { corsOrigins: ['https://app.example'] } });
    const r = await s.app.request('/v1/ai-sdk/chat', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-private-network': 'true' },
    });
    expect(r.status).toBe(204);
    expect(r.headers.get('access-control-allow-private-network')).toBe('true');
    const plain = await s.app.request('/v1/ai-sdk/chat', preflight('https://app.example'));
    expect(plain.headers.get('access-control-allow-private-network')).toBeNull();
  });

  it('by default only loopback pages may call; * allows any origin', async () => {
    const strict = testServer([]);
    expect((await strict.app.request('/health', { headers: { origin: 'http://127.0.0.1:8080' } })).status).toBe(200);
    expect((await strict.app.request('/health', { headers: { origin: 'http://[::1]:8080' } })).status).toBe(200);
    expect((await strict.app.request('/health', { headers: { origin: 'http://192.168.1.5:8080' } })).status).toBe(403);
    const open = testServer([], { http: { corsOrigins: ['*'] } });
    const r = await open.app.request('/health', { headers: { origin: 'http://192.168.1.5:8080' } });
    expect(r.status).toBe(200);
    expect(r.headers.get('access-control-allow-origin')).toBe('http://192.168.1.5:8080');
  });

  it('a streamed response over a real socket carries the CORS headers and exposes the run id', async () => {
    const s = testServer([{ text: 'streamed' }]);
    const server = await listen(s.app, { port: 0 });
    try {
      const r = await fetch(`${server.url}/v1/ai-sdk/chat`, {
        ...json({ id: 'cors-1', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] }),
        headers: { 'content-type': 'application/json', origin: 'http://localhost:5173' },
      });
      expect(r.status).toBe(200);
      expect(r.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
      expect(r.headers.get('access-control-expose-headers')).toContain('x-awaken-run-id');
      expect(await r.text()).toContain('streamed');
    } finally {
      await server.close();
    }
  });
});

describe('Host checks (DNS rebinding) on every route', () => {
  it('a Host that is neither loopback nor allowed gets a 403 naming the host; an allowed one passes', async () => {
    const s = testServer([], { http: { allowedHosts: ['agents.internal'] } });
    const evil = await s.app.request('/v1/threads', { headers: { host: 'evil.example' } });
    expect(evil.status).toBe(403);
    expect(await bodyJson(evil)).toMatchObject({ code: 'host_not_allowed', field: 'host' });
    expect((await s.app.request('/v1/threads', { headers: { host: 'agents.internal:3000' } })).status).toBe(200);
    expect((await s.app.request('/v1/threads', { headers: { host: 'localhost:3000' } })).status).toBe(200);
    expect((await s.app.request('/v1/mcp', { method: 'POST', headers: { host: 'evil.example' } })).status).toBe(403);
  });

  it('awaken serve allows the bound host, and any host when bound to every interface with none configured', () => {
    expect(allowedHostsOf({ host: '127.0.0.1', allowedHosts: [] })).toEqual(['127.0.0.1']);
    expect(allowedHostsOf({ host: 'box.lan', allowedHosts: ['api.example'] })).toEqual(['api.example', 'box.lan']);
    expect(allowedHostsOf({ host: '0.0.0.0', allowedHosts: [] })).toEqual(['*']);
    expect(allowedHostsOf({ host: '0.0.0.0', allowedHosts: ['api.example'] })).toEqual(['api.example']);
  });
});

describe('awaken serve: --cors-origin, --allowed-host, --model', () => {
  it('repeatable flags, normalised origins, and a clear error for a value that is not an origin', () => {
    const plan = parseServeArgs(
      ['--cors-origin', 'https://app.example/', '--cors-origin=http://localhost:5173', '--allowed-host', 'api.example', '--model', 'scripted:x.yaml'],
      {},
    );
    expect(plan).toMatchObject({ corsOrigins: ['https://app.example', 'http://localhost:5173'], allowedHosts: ['api.example'], model: 'scripted:x.yaml' });
    expect(() => parseServeArgs(['--cors-origin', 'app.example'], {})).toThrow(
      "--cors-origin: not an origin: 'app.example' (expected scheme://host[:port], or *)",
    );
    expect(checkOrigins(['ftp://x'])).toBe("not an origin: 'ftp://x' (expected scheme://host[:port], or *)");
    expect(() => parseServeArgs(['--model'], {})).toThrow('--model needs a value');
  });
});
