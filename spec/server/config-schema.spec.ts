import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterEach, describe, expect, it } from 'vitest';
import { OutboundGuard } from '../../src/runtime/outbound.ts';
import { createHttpApp } from '../../src/server/http.ts';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { bodyJson, testServer } from '../support/server.ts';

/** `GET /v1/config/:namespace/$schema`: the JSON Schema of what the namespace's writes take, over a socket. */
const open: RunningServer[] = [];
afterEach(async () => {
  for (const server of open.splice(0)) await server.close();
});

async function serve() {
  const s = testServer([]);
  const app = createHttpApp(
    { runtime: s.runtime, store: s.store, registry: s.registry },
    { adminToken: 't', configGuard: { outbound: new OutboundGuard(), credentialOrigins: { LOCAL_API_KEY: ['http://127.0.0.1:9'] } } },
  );
  const server = await listen(app, { port: 0 });
  open.push(server);
  return server.url;
}

const put = (url: string, path: string, body: unknown): Promise<Response> =>
  fetch(`${url}${path}`, { method: 'PUT', headers: { 'content-type': 'application/json', authorization: 'Bearer t' }, body: JSON.stringify(body) });

/** A validator of a served schema (2020-12; `uri` as the server reads a URL). */
async function validatorOf(url: string, ns: string) {
  const response = await fetch(`${url}/v1/config/${ns}/$schema`);
  expect({ status: response.status, type: response.headers.get('content-type') }).toEqual({ status: 200, type: 'application/json' });
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  ajv.addFormat('uri', (s: string) => URL.canParse(s));
  return ajv.compile((await response.json()) as object);
}

/** Good documents of each namespace, written and read back; and bad ones, which both the schema and the server refuse. */
const DOCS = {
  models: {
    good: { provider: 'local', model_name: 'x', context_window: 8000 },
    bad: [{ provider: 'local' }, { provider: 'local', model_name: 'x', context_window: 0 }, { provider: 'local', model_name: 'x', colour: 'red' }],
  },
  providers: {
    good: { kind: 'openai-compatible', base_url: 'http://127.0.0.1:9/v1', api_key_env: 'LOCAL_API_KEY' },
    bad: [{ kind: 'openai-compatible' }, { kind: 'azure', base_url: 'http://127.0.0.1:9/v1' }, { kind: 'anthropic', base_url: 'not a url' }],
  },
  agents: {
    good: {
      id: 'helper',
      model: 'local-x',
      system_prompt: 'I help.',
      plugin_ids: [],
      context_policy: { max_context_tokens: 4000 },
      sections: { retry: { max_retries: 1 } },
    },
    bad: [
      { id: 'helper', model: 'local-x', bogus_field: 1 },
      { id: 'helper', model: 'local-x', max_rounds: -1 },
      { id: 'helper', model: 'local-x', context_policy: { max_context_tokens: 4000, tokens: 1 } },
      { id: 'helper', model: 'local-x', sections: [] },
      { model: 'local-x' },
    ],
  },
} as const;

describe('GET /v1/config/:namespace/$schema', () => {
  it('a stored document of each namespace is valid against the served schema; a bad one is not, and the server refuses it too', async () => {
    const url = await serve();
    // Written in this order so each resolves: the provider, its model, the agent on it.
    expect((await put(url, '/v1/config/providers/local', DOCS.providers.good)).status).toBe(200);
    expect((await put(url, '/v1/config/models/local-x', DOCS.models.good)).status).toBe(200);
    expect((await put(url, '/v1/config/agents/helper', DOCS.agents.good)).status).toBe(200);
    for (const ns of ['models', 'providers', 'agents'] as const) {
      const validate = await validatorOf(url, ns);
      const ids = ns === 'agents' ? ['agent', 'helper'] : ns === 'models' ? ['local-x', 'm'] : ['local'];
      for (const id of ids) {
        const stored = (await bodyJson(fetch(`${url}/v1/config/${ns}/${id}`, { headers: { authorization: 'Bearer t' } }))).value;
        expect({ ns, id, valid: validate(stored), errors: validate.errors ?? null }).toEqual({ ns, id, valid: true, errors: null });
      }
      for (const doc of DOCS[ns].bad) {
        expect({ ns, doc, valid: validate(doc) }).toEqual({ ns, doc, valid: false });
        const path = ns === 'agents' ? '/v1/config/agents/helper' : `/v1/config/${ns}/other`;
        const written = await put(url, path, doc);
        expect({ ns, doc, status: written.status, code: (await bodyJson(written)).code }).toEqual({ ns, doc, status: 400, code: 'invalid_request' });
      }
    }
  });

  it('an MCP server document: a URL and an optional description, nothing else', async () => {
    const url = await serve();
    const validate = await validatorOf(url, 'mcp-servers');
    expect([{ url: 'http://127.0.0.1:9/mcp' }, { url: 'https://tools.example/mcp', description: 'Tools' }].map((d) => validate(d))).toEqual([true, true]);
    expect([{}, { url: 'nope' }, { url: 'http://127.0.0.1:9/mcp', command: 'sh' }].map((d) => validate(d))).toEqual([false, false, false]);
  });

  it('is a read: open as the config reads are; an unknown namespace is 404', async () => {
    const url = await serve();
    const schema = await bodyJson(fetch(`${url}/v1/config/models/$schema`));
    expect(schema).toEqual({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        provider: { type: 'string', minLength: 1 },
        model_name: { type: 'string', minLength: 1 },
        context_window: { type: 'integer', exclusiveMinimum: 0, maximum: Number.MAX_SAFE_INTEGER },
        max_output_tokens: { type: 'integer', exclusiveMinimum: 0, maximum: Number.MAX_SAFE_INTEGER },
      },
      required: ['provider', 'model_name'],
      additionalProperties: false,
    });
    // Fields with defaults are what a writer may leave out: only `id` is required of an agent.
    expect((await bodyJson(fetch(`${url}/v1/config/agents/$schema`))).required).toEqual(['id']);
    const unknown = await fetch(`${url}/v1/config/nope/$schema`);
    expect({ status: unknown.status, body: await unknown.json() }).toEqual({
      status: 404,
      body: { error: 'unknown config namespace: nope (agents, models, providers, mcp-servers)', code: 'not_found' },
    });
  });
});
