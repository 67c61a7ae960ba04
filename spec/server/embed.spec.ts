import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { defineApp, scriptedProvider } from 'awaken-ts';
import { AwakenOptionsError, createAwaken, type AwakenOptions } from 'awaken-ts/server';
import { withBasePath } from '../../src/inspector/routes.ts';
import { basePathOf } from '../../src/server/embed.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { silentLogger } from '../../src/server/log.ts';
import { gzipSync } from 'node:zlib';
import { BASE, inExpress, readUntil, TOKENS, twoAgents } from '../support/embedded.ts';

/**
 * `createAwaken` in process (docs/embedding.md, ADR 0043): its options checked — an unknown key or a
 * wrong value is an `AwakenOptionsError` naming the field — the mount path kept to, and `close()`.
 * Over real sockets, in Express and Hono: embed-express.spec.ts, embed-hono.spec.ts.
 */

/** The error `createAwaken` rejects with, as `[field, message]`. */
async function refusal(options: unknown): Promise<[string, string]> {
  const e = await createAwaken(options as AwakenOptions).then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(AwakenOptionsError);
  const error = e as AwakenOptionsError;
  expect(error.code).toBe('invalid_option');
  return [error.field, error.message];
}

describe('createAwaken options', () => {
  it('refuses an unknown option, naming it', async () => {
    expect(await refusal({ app: twoAgents(), store: 'memory', mountPath: '/api' })).toEqual(['mountPath', 'createAwaken: mountPath: unknown field']);
    expect(await refusal({ app: twoAgents(), store: 'memory', auth: { tokens: {}, admin: 'x' } })).toEqual([
      'auth.admin',
      'createAwaken: auth.admin: unknown field',
    ]);
  });

  it('refuses a missing app or store, and a store spelling it does not know', async () => {
    expect(await refusal({ store: 'memory' })).toEqual(['app', 'createAwaken: app: an app is required: defineApp({ agents, … })']);
    expect(await refusal({ app: twoAgents() })).toEqual([
      'store',
      'createAwaken: store: a store spelling (memory, sqlite:PATH, file:DIR, postgres://…) or a store is required',
    ]);
    expect(await refusal({ app: twoAgents(), store: 'postgres://[bad' })).toEqual(['store', 'createAwaken: store: Invalid URL']);
    expect(await refusal({ app: twoAgents(), store: 'redis://x' })).toEqual([
      'store',
      "createAwaken: store: unknown store 'redis://x': use memory, sqlite:PATH, file:DIR or postgres://…",
    ]);
  });

  it('refuses an app field that is wrong, naming it under app', async () => {
    const [field] = await refusal({ app: { agents: [{ id: 'a', model: 'nowhere', system_prompt: '' }], colour: 'blue' }, store: 'memory' });
    expect(field).toBe('app.colour');
  });

  it('refuses a client tool timeout that is not a positive whole number of milliseconds', async () => {
    expect(await refusal({ app: twoAgents(), store: 'memory', clientToolTimeoutMs: 0 })).toEqual([
      'clientToolTimeoutMs',
      'createAwaken: clientToolTimeoutMs: Too small: expected number to be >0',
    ]);
    const awaken = await createAwaken({ app: twoAgents(), store: 'memory', clientToolTimeoutMs: 60_000 });
    await awaken.close();
  });

  it('ends a client’s call it never answers after clientToolTimeoutMs, with the error the model reads, and the run goes on', async () => {
    const app = defineApp({
      agents: [{ id: 'painter', model: 'painter', system_prompt: 'You paint.' }],
      models: { painter: { provider: 'script', model_name: 'script' } },
      providers: {
        script: scriptedProvider([{ tool_calls: [{ id: 'call_color', name: 'pick_color', arguments: {} }] }, { text: 'No color came back; I picked blue.' }]),
      },
    });
    const awaken = await createAwaken({ app, store: 'memory', clientToolTimeoutMs: 300 });
    try {
      const run = await awaken.fetch(
        new Request('http://localhost/v1/ag-ui/run', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            threadId: 'never-answers',
            runId: 'r1',
            messages: [{ id: 'u1', role: 'user', content: 'pick a color' }],
            tools: [{ name: 'pick_color', description: 'asks the page for a color', parameters: { type: 'object', properties: {} } }],
          }),
        }),
      );
      expect(run.status).toBe(200);
      expect(await run.text()).toContain('"type":"RUN_FINISHED"');
      const messages = async (): Promise<{ role: string; content: { text?: string }[]; tool_call_id?: string }[]> =>
        ((await (await awaken.fetch(new Request('http://localhost/v1/threads/never-answers/messages'))).json()) as { messages: never[] }).messages;
      // Waiting at first: the client has the whole timeout to answer.
      expect((await messages()).map((m) => m.role)).toEqual(['user']);
      await expect.poll(async () => (await messages()).at(-1)?.content[0]?.text, { timeout: 10_000 }).toBe('No color came back; I picked blue.');
      expect((await messages()).map((m) => [m.role, m.content[0]?.text])).toEqual([
        ['user', 'pick a color'],
        ['assistant', undefined],
        ['tool', "the client did not send this call's result within 300 ms"],
        ['assistant', 'No color came back; I picked blue.'],
      ]);
    } finally {
      await awaken.close();
    }
  });

  it('refuses a mount path that is not one, a short token, an origin that is not one', async () => {
    expect(await refusal({ app: twoAgents(), store: 'memory', basePath: 'api' })).toEqual([
      'basePath',
      "createAwaken: basePath: 'api' is not a mount path: /segment[/segment…] of letters, digits and . _ ~ -",
    ]);
    expect((await refusal({ app: twoAgents(), store: 'memory', basePath: '/api/../x' }))[0]).toBe('basePath');
    expect(await refusal({ app: twoAgents(), store: 'memory', auth: { tokens: { short: 'alice' } } })).toEqual([
      'auth.tokens',
      'createAwaken: auth.tokens: a token is at least 16 characters',
    ]);
    expect(await refusal({ app: twoAgents(), store: 'memory', corsOrigins: ['example.com'] })).toEqual([
      'corsOrigins',
      "createAwaken: corsOrigins: not an origin: 'example.com' (expected scheme://host[:port], or *)",
    ]);
  });

  it('refuses an empty token list (tokens read from unset variables would leave every thread open)', async () => {
    expect(await refusal({ app: twoAgents(), store: 'memory', auth: { tokens: {} } })).toEqual([
      'auth.tokens',
      'createAwaken: auth.tokens: at least one token is required (without auth, leave auth out)',
    ]);
    expect(await refusal({ app: twoAgents(), store: 'memory', auth: { tokens: new Map() } })).toEqual([
      'auth.tokens',
      'createAwaken: auth.tokens: at least one token is required (without auth, leave auth out)',
    ]);
  });

  it('refuses a host beyond this machine without tokens, as awaken serve refuses a public address; insecure or tokens allow it', async () => {
    expect(await refusal({ app: twoAgents(), store: 'memory', allowedHosts: ['localhost', 'app.example.com', '*'] })).toEqual([
      'auth',
      'createAwaken: auth: allowedHosts names app.example.com, * without tokens: anyone reaching it could read and drive every thread; give auth.tokens, or insecure: true',
    ]);
    for (const extra of [
      { allowedHosts: ['app.example.com'], insecure: true },
      { allowedHosts: ['app.example.com'], auth: { tokens: { [TOKENS.alice]: 'alice' } } },
      { allowedHosts: ['127.0.0.2', 'LOCALHOST'] },
    ] as const) {
      const awaken = await createAwaken({ app: twoAgents(), store: 'memory', ...extra });
      expect(awaken.basePath).toBe('');
      await awaken.close();
    }
  });

  it('normalises a mount path: a trailing slash dropped, the root as empty', () => {
    expect([basePathOf(undefined), basePathOf(''), basePathOf('/'), basePathOf('/api/awaken/'), basePathOf('/v1.2/a_b~c-d')]).toEqual([
      '',
      '',
      '',
      '/api/awaken',
      '/v1.2/a_b~c-d',
    ]);
  });
});

describe('the Fetch handler', () => {
  it('answers under its mount path only: elsewhere a 404 that says where it serves', async () => {
    const awaken = await createAwaken({ app: twoAgents(), store: 'memory', basePath: '/api/awaken/' });
    try {
      expect(awaken.basePath).toBe('/api/awaken');
      const health = await awaken.fetch(new Request('http://localhost/api/awaken/health'));
      expect([health.status, await health.json()]).toEqual([200, { status: 'healthy', components: { store: 'ok', runtime: 'ok' } }]);
      const outside = await awaken.fetch(new Request('http://localhost/health'));
      expect([outside.status, await outside.json()]).toEqual([
        404,
        { error: 'no route: GET /health (this handler serves under /api/awaken)', code: 'not_found' },
      ]);
      const prefix = await awaken.fetch(new Request('http://localhost/api/awakened/health'));
      expect(prefix.status).toBe(404);
      // A route the A2A binding does not have names the path as it was asked for, mount and all.
      const a2a = await awaken.fetch(new Request('http://localhost/api/awaken/v1/a2a/concierge/nothing'));
      expect([a2a.status, ((await a2a.json()) as { error: { message: string } }).error.message]).toEqual([
        404,
        'no A2A route: GET /api/awaken/v1/a2a/concierge/nothing',
      ]);
      const mcp = await awaken.fetch(
        new Request('http://localhost/api/awaken/v1/mcp', {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'spec', version: '1' } },
          }),
        }),
      );
      expect([mcp.status, /"serverInfo":\{"name":"awaken-mcp"/.test(await mcp.text())]).toEqual([200, true]);
      const run = await awaken.fetch(
        new Request('http://localhost/api/awaken/v1/threads', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ id: 't-1' }),
        }),
      );
      expect([run.status, ((await run.json()) as { id: string }).id]).toEqual([201, 't-1']);
    } finally {
      await awaken.close();
    }
  });

  it('at the root by default, as awaken serve answers', async () => {
    const awaken = await createAwaken({ app: twoAgents(), store: 'memory' });
    try {
      expect(awaken.basePath).toBe('');
      const card = (await (await awaken.fetch(new Request('http://localhost/.well-known/agent-card.json'))).json()) as {
        supportedInterfaces: { url: string }[];
      };
      expect(card.supportedInterfaces.map((i) => i.url)).toEqual(['http://localhost/v1/a2a/concierge', 'http://localhost/v1/a2a/concierge/jsonrpc']);
    } finally {
      await awaken.close();
    }
  });
});

describe('the Node handler in node:http', () => {
  it('serves under its mount path, the body read from the stream; elsewhere a 404 in the API’s shape', async () => {
    const awaken = await createAwaken({ app: twoAgents(), store: 'memory', basePath: '/agents' });
    const server = createServer((req, res) => void awaken.node(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const created = await fetch(`${url}/agents/v1/threads`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'plain-node' }),
      });
      expect([created.status, ((await created.json()) as { id: string }).id]).toEqual([201, 'plain-node']);
      const outside = await fetch(`${url}/v1/threads`);
      expect([outside.status, await outside.json()]).toEqual([
        404,
        { error: 'no route: GET /v1/threads (this handler serves under /agents)', code: 'not_found' },
      ]);
    } finally {
      await awaken.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('behind a body parser', () => {
  it("keeps to the API's own body limit when the parser took more (a gzip body inflated past it); what is within it runs", async () => {
    const hosted = await inExpress({ parsed: true, jsonLimit: '10mb' }, { bodyLimit: 2048 });
    try {
      const headers = { authorization: `Bearer ${TOKENS.alice}`, 'content-type': 'application/json' };
      const big = JSON.stringify({ id: 'big', title: 'x'.repeat(400) + ' '.repeat(100_000) });
      const zipped = gzipSync(big);
      expect(zipped.length).toBeLessThan(2048);
      const r = await fetch(`${hosted.url}/v1/threads`, { method: 'POST', headers: { ...headers, 'content-encoding': 'gzip' }, body: zipped });
      expect([r.status, await r.json()]).toEqual([413, { error: 'request body larger than 2048 bytes', code: 'body_too_large', field: '(body)' }]);
      const small = await fetch(`${hosted.url}/v1/threads`, { method: 'POST', headers, body: JSON.stringify({ id: 'small' }) });
      expect([small.status, ((await small.json()) as { id: string }).id]).toEqual([201, 'small']);
    } finally {
      await hosted.stop();
    }
  });

  it("decides what is under the mount on the resolved path: a dot segment that leaves it is the host app's (its 404), not awaken's", async () => {
    const hosted = await inExpress({ parsed: false });
    try {
      const { request } = await import('node:http');
      const status = await new Promise<[number, string]>((done, fail) => {
        const req = request(`${hosted.origin}${BASE}/../`, { method: 'GET' }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => done([res.statusCode ?? 0, text]));
        });
        req.path = `${BASE}/../`;
        req.on('error', fail);
        req.end();
      });
      // Express's own answer (its router does not resolve dot segments): awaken passed the request on.
      expect(status[0]).toBe(404);
      expect(status[1]).toContain('<pre>Cannot GET /api/awaken/../</pre>');
    } finally {
      await hosted.stop();
    }
  });
});

describe('behind a proxy (trustProxy)', () => {
  it("names the proxy's public address and the mount path in the agent card", async () => {
    const awaken = await createAwaken({
      app: twoAgents(),
      store: 'memory',
      basePath: BASE,
      trustProxy: true,
      auth: { tokens: { [TOKENS.alice]: 'alice' } },
      allowedHosts: ['agents.example.com'],
    });
    try {
      const card = (await (
        await awaken.fetch(
          new Request(`http://127.0.0.1${BASE}/.well-known/agent-card.json`, {
            headers: { 'x-forwarded-host': 'agents.example.com', 'x-forwarded-proto': 'https' },
          }),
        )
      ).json()) as { supportedInterfaces: { url: string }[] };
      expect(card.supportedInterfaces.map((i) => i.url)).toEqual([
        `https://agents.example.com${BASE}/v1/a2a/concierge`,
        `https://agents.example.com${BASE}/v1/a2a/concierge/jsonrpc`,
      ]);
    } finally {
      await awaken.close();
    }
  });
});

describe('start-up on a store of its own', () => {
  it('with recovery interrupt, marks a run a previous process left unfinished as interrupted, and says so', async () => {
    const store = new MemoryStore();
    const before = await createAwaken({ app: twoAgents(), store });
    const r = await before.fetch(
      new Request('http://localhost/v1/runs', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ agentId: 'slow', threadId: 'left', messages: [{ role: 'user', content: 'go' }] }),
      }),
    );
    const runId = r.headers.get('x-awaken-run-id') as string;
    await readUntil(r, (t) => t.includes('"text_delta"'));
    // As if that process had died: another starts on the store while the run is unfinished in it
    // (interrupting it: this process still runs it, so it is not to be taken up here).
    const warned: string[] = [];
    const after = await createAwaken({ app: twoAgents(), store, recovery: 'interrupt', logger: { ...silentLogger, warn: (m) => void warned.push(m) } });
    try {
      expect(await store.getRun(runId)).toMatchObject({
        status: 'done',
        termination: { type: 'error', value: 'interrupted: the server stopped while the run was running' },
      });
      expect(warned).toEqual(['marked 1 run(s) left unfinished by a previous process as interrupted']);
    } finally {
      await after.close();
      await before.close({ graceMs: 100 });
    }
  });
});

describe('start-up on a store of its own, by default', () => {
  /** A run of `agentId` its process left running, at the start of its first step. */
  const leftRunning = (store: MemoryStore, runId: string, agentId: string): Promise<void> =>
    store.checkpoint({
      threadId: `thread-of-${runId}`,
      runId,
      agentId,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }],
      status: 'running',
      steps: 0,
      threadState: { revision: 1, extensions: {} },
      runState: { revision: 1, extensions: { '__runtime.run_lifecycle': { run_id: runId, status: 'running', updated_at: 0, step_count: 0 } } },
      updatedAt: 0,
    });

  it('takes up a run a previous process left running, unless its agent says recovery: interrupt', async () => {
    const store = new MemoryStore();
    await leftRunning(store, 'kept', 'writer');
    await leftRunning(store, 'ended', 'payments');
    const app = defineApp({
      agents: [
        { id: 'writer', model: 'small' },
        { id: 'payments', model: 'small', recovery: 'interrupt' },
      ],
      models: { small: { provider: 'offline', model_name: 'offline' } },
      providers: { offline: scriptedProvider([{ text: 'Done.' }]) },
    });
    const warned: string[] = [];
    const awaken = await createAwaken({ app, store, logger: { ...silentLogger, warn: (m) => void warned.push(m) } });
    try {
      expect(warned).toEqual(['marked 1 run(s) left unfinished by a previous process as interrupted', 'resumed 1 of 1 run(s) a previous process left running']);
      expect(await store.getRun('ended')).toMatchObject({
        status: 'done',
        termination: { type: 'error', value: 'interrupted: the server stopped while the run was running' },
      });
      for (let i = 0; i < 100 && (await store.getRun('kept'))?.status === 'running'; i++) await new Promise((r) => setTimeout(r, 20));
      expect(await store.getRun('kept')).toMatchObject({ status: 'done', termination: { type: 'natural_end' } });
    } finally {
      await awaken.close({ graceMs: 100 });
    }
  });
});

describe('close()', () => {
  it('stops: a run asked for afterwards is refused as the server shutting down; a store given is left open for its owner', async () => {
    const store = new MemoryStore();
    const awaken = await createAwaken({ app: twoAgents(), store });
    await awaken.close();
    await awaken.close();
    const r = await awaken.fetch(
      new Request('http://localhost/v1/runs', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
      }),
    );
    expect([r.status, ((await r.json()) as { code: string }).code]).toEqual([503, 'shutting_down']);
    expect((await store.listThreads({ offset: 0, limit: 1 })).total).toBe(0);
  });
});

describe("the studio page's mount path", () => {
  it('is a meta tag after the charset (nothing inline for the policy to allow), escaped', () => {
    expect(withBasePath('<!doctype html><html><head><meta charset="utf-8" /><title>x</title>', '/api/awaken')).toBe(
      '<!doctype html><html><head><meta charset="utf-8" /><meta name="awaken-base-path" content="/api/awaken" /><title>x</title>',
    );
    expect(withBasePath('<!doctype html><title>x</title>', '')).toBe('<!doctype html><meta name="awaken-base-path" content="" /><title>x</title>');
    expect(withBasePath('<head>', '/"><script>')).toBe('<head><meta name="awaken-base-path" content="/&quot;&gt;&lt;script&gt;" />');
  });
});
