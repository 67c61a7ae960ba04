import { afterEach, describe, expect, it } from 'vitest';
import { OutboundGuard } from '../../src/runtime/outbound.ts';
import { createHttpApp, type HttpOptions } from '../../src/server/http.ts';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { bodyJson, parseSse, testServer } from '../support/server.ts';

/** `POST /v1/config/:namespace` (book: Config 与 Capabilities → create), over a socket. */
const open: RunningServer[] = [];
afterEach(async () => {
  for (const server of open.splice(0)) await server.close();
});

async function serve(options: HttpOptions = {}, script: Parameters<typeof testServer>[0] = []) {
  const s = testServer(script);
  const server = await listen(createHttpApp({ runtime: s.runtime, store: s.store, registry: s.registry }, { adminToken: 't', ...options }), { port: 0 });
  open.push(server);
  return { ...s, url: server.url };
}

/** A request with the admin token `t` unless told another (`null`: none). */
const send = (url: string, method: string, path: string, body?: unknown, token: string | null = 't'): Promise<Response> =>
  fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token !== null ? { authorization: `Bearer ${token}` } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
const answer = async (r: Promise<Response>) => {
  const response = await r;
  return { status: response.status, body: await response.json() };
};

describe('POST /v1/config/:namespace creates an entry', () => {
  it('an agent: 201 with the stored document and where to read it; it runs at once; the same id again is 409', async () => {
    const s = await serve({}, [{ text: 'from the created agent' }]);
    const created = await send(s.url, 'POST', '/v1/config/agents', { id: 'helper', model: 'm', system_prompt: 'I help.' });
    expect(created.status).toBe(201);
    const body = await bodyJson(created);
    expect(body.id).toBe('helper');
    expect(body.value).toMatchObject({ id: 'helper', model: 'm', system_prompt: 'I help.', max_rounds: 16 });
    // Location is relative to the request (right under any mount path): it names the entry's read.
    const location = new URL(created.headers.get('location') ?? '', `${s.url}/v1/config/agents`);
    expect(location.href).toBe(`${s.url}/v1/config/agents/helper`);
    expect(await answer(fetch(location))).toEqual({ status: 200, body: { id: 'helper', value: body.value } });

    const run = await send(s.url, 'POST', '/v1/runs', { agentId: 'helper', messages: [{ role: 'user', content: 'hi' }] });
    expect(JSON.parse(parseSse(await run.text()).at(-1)?.data ?? '{}')).toMatchObject({ termination: { type: 'natural_end' } });
    expect(s.llm.requests[0]?.messages[0]).toMatchObject({ role: 'system', content: [{ type: 'text', text: 'I help.' }] });

    expect(await answer(send(s.url, 'POST', '/v1/config/agents', { id: 'helper', model: 'm', system_prompt: 'Another.' }))).toEqual({
      status: 409,
      body: { error: 'agents entry already exists: helper (PUT /v1/config/agents/helper replaces it)', code: 'config_conflict', field: 'id' },
    });
    // The server's own agent is an entry too: creating it is a conflict, and nothing changed.
    expect((await send(s.url, 'POST', '/v1/config/agents', { id: 'agent', model: 'm' })).status).toBe(409);
    expect((await bodyJson(fetch(`${s.url}/v1/config/agents/helper`))).value.system_prompt).toBe('I help.');
  });

  it('the other namespaces take the id beside the document, and store the document as PUT does', async () => {
    const s = await serve({ configGuard: { outbound: new OutboundGuard(), credentialOrigins: { LOCAL_API_KEY: ['http://127.0.0.1:9'] } } });
    const provider = { kind: 'openai-compatible', base_url: 'http://127.0.0.1:9/v1', api_key_env: 'LOCAL_API_KEY' };
    const created = await send(s.url, 'POST', '/v1/config/providers', { id: 'local', ...provider });
    expect({ status: created.status, location: created.headers.get('location'), body: await bodyJson(created) }).toEqual({
      status: 201,
      location: 'providers/local',
      body: { id: 'local', value: provider },
    });
    expect(await answer(send(s.url, 'POST', '/v1/config/models', { id: 'local-m', provider: 'local', model_name: 'x' }))).toEqual({
      status: 201,
      body: { id: 'local-m', value: { provider: 'local', model_name: 'x' } },
    });
    // What POST stored is what PUT would have: the same document read back, and PUT over it is 200.
    expect((await bodyJson(fetch(`${s.url}/v1/config/providers/local`, { headers: { authorization: 'Bearer t' } }))).value).toEqual(provider);
    expect((await send(s.url, 'PUT', '/v1/config/models/local-m', { provider: 'local', model_name: 'y' })).status).toBe(200);
    expect((await bodyJson(fetch(`${s.url}/v1/capabilities`))).models).toEqual(['local-m', 'm']);
  });

  it('two creates of one id at once: one is 201, the other 409, and the first one stands', async () => {
    // An MCP server is connected by its write (a wait on the network): both requests are in flight together.
    const remote = testServer([]);
    const remoteServer = await listen(remote.app, { port: 0 });
    open.push(remoteServer);
    const s = await serve({ configGuard: { outbound: new OutboundGuard() } });
    const doc = (description: string) => ({ id: 'remote', url: `${remoteServer.url}/v1/mcp`, description });
    const answers = await Promise.all([
      send(s.url, 'POST', '/v1/config/mcp-servers', doc('first')),
      send(s.url, 'POST', '/v1/config/mcp-servers', doc('second')),
    ]);
    const bodies = await Promise.all(answers.map((a) => a.json()));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
    const winner = answers.findIndex((a) => a.status === 201);
    expect(bodies[1 - winner]).toEqual({
      error: 'mcp-servers entry already exists: remote (PUT /v1/config/mcp-servers/remote replaces it)',
      code: 'config_conflict',
      field: 'id',
    });
    expect((await bodyJson(fetch(`${s.url}/v1/config/mcp-servers/remote`))).value.description).toBe(winner === 0 ? 'first' : 'second');
  });

  it('a bad document is a 400 naming the field, as PUT names it; nothing is stored', async () => {
    const s = await serve();
    const cases: [string, unknown, unknown][] = [
      ['agents', { model: 'm' }, { error: 'id: required', code: 'invalid_request', field: 'id' }],
      ['models', { id: 7, provider: 'scripted', model_name: 'x' }, { error: 'id: must be a string', code: 'invalid_request', field: 'id' }],
      ['models', { id: 'bad id!', provider: 'scripted', model_name: 'x' }, { error: 'invalid config id', code: 'invalid_id', field: 'id' }],
      ['agents', { id: 'x', model: 'm', bogus_field: 1 }, { error: 'bogus_field: unknown field', code: 'invalid_request', field: 'bogus_field' }],
      [
        'agents',
        { id: 'x', model: 'm', endpoint: { backend: 'a2a', base_url: 'https://reports.example.com/v1/a2a', tokn: 'x' } },
        { error: 'endpoint.tokn: unknown field', code: 'invalid_request', field: 'endpoint.tokn' },
      ],
      [
        'models',
        { id: 'x', provider: 'scripted' },
        { error: 'model_name: Invalid input: expected string, received undefined', code: 'invalid_request', field: 'model_name' },
      ],
      [
        'models',
        { id: 'x', provider: 'scripted', model_name: 'x', context_window: -1 },
        { error: 'context_window: Too small: expected number to be >0', code: 'invalid_request', field: 'context_window' },
      ],
      ['mcp-servers', { id: 'x', url: 'not a url' }, { error: 'url: Invalid URL', code: 'invalid_request', field: 'url' }],
      ['agents', [], { error: '(body): Invalid input: expected object, received array', code: 'invalid_request', field: '(body)' }],
    ];
    for (const [ns, doc, expected] of cases)
      expect({ ns, doc, ...(await answer(send(s.url, 'POST', `/v1/config/${ns}`, doc))) }).toEqual({ ns, doc, status: 400, body: expected });
    // The same document through PUT is refused with the same answer.
    expect(await answer(send(s.url, 'PUT', '/v1/config/models/x', { provider: 'scripted', model_name: 'x', context_window: -1 }))).toEqual({
      status: 400,
      body: cases[6]?.[2],
    });
    // A document that does not resolve (its model is unknown) is refused as a PUT of it is.
    expect(await answer(send(s.url, 'POST', '/v1/config/agents', { id: 'x', model: 'ghost' }))).toMatchObject({
      status: 400,
      body: { code: 'config_rejected' },
    });
    // A credential the server would send where it may not: refused naming the field, before any network.
    expect(
      await answer(
        send(s.url, 'POST', '/v1/config/providers', {
          id: 'p',
          kind: 'openai-compatible',
          base_url: 'https://elsewhere.example/v1',
          api_key_env: 'AWAKEN_ADMIN_TOKEN',
        }),
      ),
    ).toEqual({
      status: 400,
      body: { error: "api_key_env: 'AWAKEN_ADMIN_TOKEN' holds a credential of this server: it is never sent", code: 'invalid_request', field: 'api_key_env' },
    });
    expect((await bodyJson(fetch(`${s.url}/v1/config/agents`))).items.map((i: { id: string }) => i.id)).toEqual(['agent']);
    expect((await bodyJson(fetch(`${s.url}/v1/config/models`))).items.map((i: { id: string }) => i.id)).toEqual(['m']);
    // An unknown namespace is a 404, as for every config route.
    expect(await answer(send(s.url, 'POST', '/v1/config/nope', { id: 'x' }))).toEqual({
      status: 404,
      body: { error: 'unknown config namespace: nope (agents, models, providers, mcp-servers)', code: 'not_found' },
    });
  });

  it('needs the admin token as PUT does (401), and is refused (409) where writes are', async () => {
    const s = await serve();
    expect(await answer(send(s.url, 'POST', '/v1/config/agents', { id: 'x', model: 'm' }, null))).toEqual({
      status: 401,
      body: { error: 'admin authentication required: Authorization: Bearer <token>', code: 'unauthorized' },
    });
    expect(await answer(send(s.url, 'POST', '/v1/config/agents', { id: 'x', model: 'm' }, 'wrong'))).toEqual({
      status: 401,
      body: { error: 'invalid admin bearer token', code: 'unauthorized' },
    });
    // With API tokens, one of a principal gets past the door but is no admin.
    const withTokens = await serve({ auth: { tokens: new Map([['alice-token-0123456789', 'alice']]) } });
    expect((await send(withTokens.url, 'POST', '/v1/config/agents', { id: 'x', model: 'm' }, 'alice-token-0123456789')).status).toBe(401);
    const none = await serve({ adminToken: '' });
    expect(await answer(send(none.url, 'POST', '/v1/config/agents', { id: 'x', model: 'm' }))).toEqual({
      status: 401,
      body: { error: 'admin authentication is not configured (set AWAKEN_ADMIN_TOKEN)', code: 'unauthorized' },
    });
    const refused = await serve({ configWritesRefused: 'the app is the configuration here: edit it and the server reloads' });
    const write = { error: 'the app is the configuration here: edit it and the server reloads', code: 'config_writes_refused' };
    expect(await answer(send(refused.url, 'POST', '/v1/config/agents', { id: 'x', model: 'm' }))).toEqual({ status: 409, body: write });
    expect(await answer(send(refused.url, 'PUT', '/v1/config/agents/x', { id: 'x', model: 'm' }))).toEqual({ status: 409, body: write });
    // A POST that is not JSON is refused before anything is read (the server's rule for every POST).
    const text = await fetch(`${s.url}/v1/config/agents`, {
      method: 'POST',
      headers: { authorization: 'Bearer t', 'content-type': 'text/plain' },
      body: '{"id":"x","model":"m"}',
    });
    expect(text.status).toBe(415);
    expect((await bodyJson(fetch(`${s.url}/v1/config/agents`))).items.map((i: { id: string }) => i.id)).toEqual(['agent']);
  });
});

describe('GET /v1/config/:namespace pages its entries', () => {
  it('the list envelope {namespace, items, offset, limit, total, has_more}, sorted by id; a bad offset or limit is a 400 naming it', async () => {
    const s = await serve();
    for (const id of ['zeta', 'alpha', 'mid'])
      expect((await send(s.url, 'POST', '/v1/config/models', { id, provider: 'scripted', model_name: id })).status).toBe(201);
    const ids = async (query: string) => {
      const { items, ...rest } = await bodyJson(fetch(`${s.url}/v1/config/models${query}`));
      return { ids: items.map((i: { id: string }) => i.id), ...rest };
    };
    expect(await ids('')).toEqual({ ids: ['alpha', 'm', 'mid', 'zeta'], namespace: 'models', offset: 0, limit: 50, total: 4, has_more: false });
    expect(await ids('?offset=1&limit=2')).toEqual({ ids: ['m', 'mid'], namespace: 'models', offset: 1, limit: 2, total: 4, has_more: true });
    expect(await ids('?offset=9')).toEqual({ ids: [], namespace: 'models', offset: 9, limit: 50, total: 4, has_more: false });
    expect(await answer(fetch(`${s.url}/v1/config/models?limit=all`))).toEqual({
      status: 400,
      body: { error: 'limit must be an integer', code: 'invalid_query', field: 'limit' },
    });
  });
});
