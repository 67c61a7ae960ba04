import { execFile } from 'node:child_process';
import { lookup } from 'node:dns/promises';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliFailure } from '../../src/cli/args.ts';
import { EXIT } from '../../src/cli/exit.ts';
import { loadServeConfig } from '../../src/cli/serve-config.ts';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';
import { parseSse } from '../support/server.ts';

/**
 * What a configuration makes `awaken serve` send, attacked over real sockets (docs/server.md →
 * Outbound settings). A sink — a plain HTTP server on a socket — records every connection, request
 * and header that reaches it. The operator's config file names the sink's `127.0.0.1` origin for one
 * remote agent with `SINK_API_KEY`; the admin token's holder then tries, through the config API, to
 * point credentials and connections elsewhere: the server's own tokens, a database URL, a key the
 * file never gave that host, the loopback and private addresses of the machine, and the cloud
 * metadata address, in every spelling. Two principals (alice, bob) run the agent and read the
 * configuration.
 */

const ADMIN = 'admin-token-5d1c9e7a3b2f';
const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdef01';
const SINK_KEY = 'sink-key-value-4f2e8d6c';
const OTHER_KEY = 'other-key-value-9a7b6c5d';
const DB_PASSWORD = 'db-password-3c5e7a9b';
const LITERAL = 'literal-remote-token-8b3d1f0e';
const FILE_LITERAL = 'file-literal-token-2e4c6a8d';
/** Values that must never leave the server, nor show in a read or a log line. */
const NEVER_SENT = [ADMIN, ALICE, BOB, OTHER_KEY, DB_PASSWORD, LITERAL, FILE_LITERAL];
/** The sink's answer to anything: what an echo of the target's response would show. */
const SINK_BODY = JSON.stringify({ internal_note: 'SINK-BODY-MARKER', redis_version: '7.2.4' });

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

const seen: Seen[] = [];
let connections = 0;
let sink: Server;
let port = 0;
let front: ServeProcess;
let dir: string;

beforeAll(async () => {
  sink = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' }).end(SINK_BODY);
    });
  });
  sink.on('connection', () => connections++);
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', () => r()));
  port = (sink.address() as AddressInfo).port;
  dir = mkdtempSync(join(tmpdir(), 'awaken-outbound-'));
  writeFileSync(join(dir, 'boss.yaml'), ['- tool_calls: [ { id: c1, name: agent_run_bound, arguments: { prompt: report } } ]', '- text: Asked.'].join('\n'));
  writeFileSync(
    join(dir, 'awaken.yaml'),
    [
      'server:',
      '  store: memory',
      '  auth: { tokens: [ { principal: alice, token_env: ALICE_API_TOKEN }, { principal: bob, token_env: BOB_API_TOKEN } ] }',
      'providers:',
      '  boss: { kind: scripted, file: boss.yaml }',
      'models:',
      '  boss: { provider: boss, model_name: boss }',
      'agents:',
      '  - { id: boss, model: boss, delegates: [bound], allowed_tools: ["agent_run_*"] }',
      `  - { id: bound, description: The sink the operator configured, endpoint: { backend: a2a, base_url: "http://127.0.0.1:${port}/v1/a2a", auth: { type: bearer, token_env: SINK_API_KEY }, timeout_ms: 5000 } }`,
      `  - { id: filelit, endpoint: { backend: a2a, base_url: "http://127.0.0.1:${port}/other", auth: { type: bearer, token: ${FILE_LITERAL} } } }`,
    ].join('\n'),
  );
  front = await startServe(['--config', join(dir, 'awaken.yaml')], {
    AWAKEN_ADMIN_TOKEN: ADMIN,
    ALICE_API_TOKEN: ALICE,
    BOB_API_TOKEN: BOB,
    SINK_API_KEY: SINK_KEY,
    OTHER_API_KEY: OTHER_KEY,
    DATABASE_URL: `postgres://app:${DB_PASSWORD}@db.internal/app`,
  });
});

afterAll(async () => {
  await front?.stop();
  await new Promise<void>((r) => sink.close(() => r()));
});

const as = (token: string, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` },
});
// A config write's answer: the entry written, or why it was refused.
type Written = { value?: { endpoint?: { auth?: unknown } }; id?: string; error?: string; code?: string; field?: string };
const put = async (path: string, body: unknown, token = ADMIN): Promise<{ status: number; body: Written }> => {
  const r = await fetch(
    `${front.url}/v1/config/${path}`,
    as(token, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  );
  return { status: r.status, body: (await r.json()) as Written };
};
const read = async (path: string, token: string): Promise<string> => (await fetch(`${front.url}/v1/config/${path}`, as(token))).text();
const remote = (base_url: string, auth: Record<string, string>) => ({ backend: 'a2a', base_url, auth: { type: 'bearer', ...auth }, timeout_ms: 5000 });
const sinkText = (): string => JSON.stringify(seen);
const HINT =
  "config writes reach loopback and private addresses only at the origins of the server's config file, or with server.outbound.config_api_private: true";

describe('credentials in config writes (a remote agent’s token_env, a provider’s api_key_env)', () => {
  it('a write may not point a credential at a host the operator did not configure it for; runs of alice and bob send the key only where the config file sends it', async () => {
    const elsewhere = `http://localhost:${port}/v1/a2a`;
    const refused = (_variable: string, error: string) => ({
      status: 400,
      body: { error: `endpoint.auth.token_env: ${error}`, code: 'invalid_request', field: 'endpoint.auth.token_env' },
    });
    expect(await put('agents/bound', { id: 'bound', endpoint: remote(elsewhere, { token_env: 'AWAKEN_ADMIN_TOKEN' }) })).toEqual(
      refused('AWAKEN_ADMIN_TOKEN', "'AWAKEN_ADMIN_TOKEN' holds a credential of this server: it is never sent"),
    );
    expect(await put('agents/bound', { id: 'bound', endpoint: remote(elsewhere, { token_env: 'ALICE_API_TOKEN' }) })).toEqual(
      refused('ALICE_API_TOKEN', "'ALICE_API_TOKEN' holds a credential of this server: it is never sent"),
    );
    expect(await put('agents/bound', { id: 'bound', endpoint: remote(elsewhere, { token_env: 'DATABASE_URL' }) })).toEqual(
      refused('DATABASE_URL', "'DATABASE_URL' is not an allowed key variable (allowed: *_API_KEY)"),
    );
    expect(await put('agents/bound', { id: 'bound', endpoint: remote(elsewhere, { token_env: 'OTHER_API_KEY' }) })).toEqual(
      refused('OTHER_API_KEY', `'OTHER_API_KEY' is sent only to the origins the server's config names for it (none), not to http://localhost:${port}`),
    );
    expect(await put('agents/bound', { id: 'bound', endpoint: remote(elsewhere, { token_env: 'SINK_API_KEY' }) })).toEqual(
      refused(
        'SINK_API_KEY',
        `'SINK_API_KEY' is sent only to the origins the server's config names for it (http://127.0.0.1:${port}), not to http://localhost:${port}`,
      ),
    );
    expect(await put('providers/elsewhere', { kind: 'openai-compatible', base_url: `http://127.0.0.1:${port}/v1`, api_key_env: 'ANTHROPIC_API_KEY' })).toEqual({
      status: 400,
      body: {
        error: `api_key_env: 'ANTHROPIC_API_KEY' is sent only to the origins the server's config names for it (https://api.anthropic.com), not to http://127.0.0.1:${port}`,
        code: 'invalid_request',
        field: 'api_key_env',
      },
    });
    // Where the config file sends it, a write may send it too.
    expect(
      (await put('agents/bound', { id: 'bound', description: 'Rewritten', endpoint: remote(`http://127.0.0.1:${port}/v1/a2a`, { token_env: 'SINK_API_KEY' }) }))
        .status,
    ).toBe(200);

    for (const token of [ALICE, BOB]) {
      const r = await fetch(
        `${front.url}/v1/runs`,
        as(token, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ agentId: 'boss', messages: [{ role: 'user', content: 'report' }] }),
        }),
      );
      expect(
        parseSse(await r.text())
          .map((f) => JSON.parse(f.data))
          .at(-1),
      ).toMatchObject({ event_type: 'run_finish', termination: { type: 'natural_end' } });
    }
    // The sink heard each run ask for the card, with the key the operator gave it, at the origin the operator named.
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(new Set(seen.map((s) => `${s.headers.host} ${s.headers.authorization}`))).toEqual(new Set([`127.0.0.1:${port} Bearer ${SINK_KEY}`]));
    for (const secret of NEVER_SENT) expect(sinkText()).not.toContain(secret);
  });

  it('the config file is held to the same rules: one line naming the field, exit 65', async () => {
    const file = (yaml: string): string => {
      const f = join(dir, 'bad.yaml');
      writeFileSync(f, yaml);
      return f;
    };
    const agent = (endpoint: string) => file(`server: { store: memory }\nagents:\n  - { id: far, endpoint: ${endpoint} }\n`);
    // As a user meets it (never a synchronous spawn: this process goes on serving its sockets meanwhile)…
    const admin = agent('{ backend: a2a, base_url: "https://reports.example/v1/a2a", auth: { type: bearer, token_env: AWAKEN_ADMIN_TOKEN } }');
    const run = await new Promise<{ code: number | null; err: string }>((done) => {
      const child = execFile(
        process.execPath,
        [join(repo, 'src/cli/awaken.js'), 'serve', '--config', admin, '--port', '0'],
        { cwd: repo, encoding: 'utf8', env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' }, timeout: 30_000 },
        (_e, _out, err) => done({ code: child.exitCode, err }),
      );
    });
    expect(run).toEqual({
      code: EXIT.data,
      err: `awaken serve: ${admin}: agents[0].endpoint.auth.token_env: 'AWAKEN_ADMIN_TOKEN' holds a credential of this server: it is never sent\n`,
    });
    // …and each other line as the loader words it (the command prints it after "awaken serve: ").
    const refusal = (path: string): { exit: number; message: string } | undefined => {
      try {
        loadServeConfig(path);
        return undefined;
      } catch (e) {
        return e instanceof CliFailure ? { exit: e.exit, message: e.message.replace(`${path}: `, '') } : undefined;
      }
    };
    expect(refusal(agent('{ backend: a2a, base_url: "https://reports.example/v1/a2a", auth: { type: bearer, token_env: REPORTS_TOKEN } }'))).toEqual({
      exit: EXIT.data,
      message:
        "agents[0].endpoint.auth.token_env: 'REPORTS_TOKEN' is not an allowed key variable (allowed: *_API_KEY; server.api_key_env_allow sets the patterns)",
    });
    expect(refusal(agent('{ backend: a2a, base_url: "http://169.254.169.254/v1/a2a" }'))).toEqual({
      exit: EXIT.data,
      message: 'agents[0].endpoint.base_url: 169.254.169.254 is a cloud metadata address: never reached',
    });
    expect(refusal(file('server: { store: memory }\nmcp_servers: { meta: { url: "http://[::ffff:169.254.169.254]/mcp" } }\n'))).toEqual({
      exit: EXIT.data,
      message: 'mcp_servers.meta.url: [::ffff:a9fe:a9fe] is a cloud metadata address: never reached',
    });
    expect(refusal(file('server: { store: memory }\nproviders: { meta: { kind: openai-compatible, base_url: "http://[fe80::1]/v1" } }\n'))).toEqual({
      exit: EXIT.data,
      message: 'providers.meta.base_url: [fe80::1] is a link-local address: never reached',
    });
    expect(refusal(file('server: { store: memory, outbound: { allow_private: true } }\n'))).toEqual({
      exit: EXIT.data,
      message: 'server.outbound.allow_private: unknown field',
    });
    // Loopback and private addresses are the operator's to name in the file.
    expect(
      refusal(file('server: { store: memory }\nproviders: { local: { kind: openai-compatible, base_url: "http://127.0.0.1:11434/v1" } }\n')),
    ).toBeUndefined();
  }, 60_000);
});

describe('credentials in config reads and log lines', () => {
  it('no principal reads a literal token; only the admin token reads the names of the variables; no log line shows a token a write gave', async () => {
    const written = await put('agents/literal', { id: 'literal', endpoint: remote(`http://127.0.0.1:${port}/literal`, { token: LITERAL }) });
    expect(written.status).toBe(200);
    expect(written.body.value!.endpoint!.auth).toEqual({ type: 'bearer', token: '[redacted]' });
    for (const token of [ALICE, BOB]) {
      const all = JSON.parse(await read('agents', token)) as { items: { id: string; value: { endpoint?: { auth?: unknown } } }[] };
      expect(Object.fromEntries(all.items.filter((i) => i.value.endpoint !== undefined).map((i) => [i.id, i.value.endpoint?.auth]))).toEqual({
        bound: { type: 'bearer', token_env: '[redacted]' },
        filelit: { type: 'bearer', token: '[redacted]' },
        literal: { type: 'bearer', token: '[redacted]' },
      });
      expect(JSON.parse(await read('agents/literal', token)).value.endpoint.auth).toEqual({ type: 'bearer', token: '[redacted]' });
      expect(await read('agents', token)).not.toContain('SINK_API_KEY');
    }
    const admin = JSON.parse(await read('agents', ADMIN)) as { items: { id: string; value: { endpoint?: { auth?: unknown } } }[] };
    expect(admin.items.find((i) => i.id === 'bound')?.value.endpoint?.auth).toEqual({ type: 'bearer', token_env: 'SINK_API_KEY' });
    expect(admin.items.find((i) => i.id === 'literal')?.value.endpoint?.auth).toEqual({ type: 'bearer', token: '[redacted]' });
    // A token a write gave reaches no log line, wherever a client puts it.
    await fetch(`${front.url}/v1/threads/${LITERAL}`, as(BOB));
    await fetch(`${front.url}/v1/threads?note=${LITERAL}`, as(ALICE));
    await new Promise((r) => setTimeout(r, 100));
    expect(front.log()).toContain('/v1/threads/[redacted]');
    for (const secret of NEVER_SENT) expect(front.log()).not.toContain(secret);
  });
});

describe('URLs in config writes: one outbound guard', () => {
  it('link-local and metadata addresses are refused in every spelling; loopback and private ones the config file did not name too; nothing connects', async () => {
    const [first] = await lookup('localhost', { all: true, verbatim: true });
    const before = { connections, requests: seen.length };
    const cases: [string, string][] = [
      ['http://169.254.169.254/latest/meta-data/', '169.254.169.254 is a cloud metadata address: never reached'],
      ['http://[::ffff:169.254.169.254]/', '[::ffff:a9fe:a9fe] is a cloud metadata address: never reached'],
      ['http://[fe80::1]/mcp', '[fe80::1] is a link-local address: never reached'],
      ['file:///etc/passwd', 'only http: and https: URLs are reached (not file:)'],
      ['http://127.0.0.1:5432/', `127.0.0.1 is a loopback address: ${HINT}`],
      ['http://127.0.0.1:6379/', `127.0.0.1 is a loopback address: ${HINT}`],
      [`http://[::1]:${port}/mcp`, `[::1] is a loopback address: ${HINT}`],
      [`http://localhost:${port}/mcp`, `localhost resolves to ${first?.address}, a loopback address: ${HINT}`],
      ['http://10.1.2.3/mcp', `10.1.2.3 is a private address: ${HINT}`],
    ];
    for (const [url, reason] of cases) {
      expect({ url, ...(await put('mcp-servers/probe', { url })) }).toEqual({
        url,
        status: 400,
        body: { error: `url: ${reason}`, code: 'outbound_refused', field: 'url' },
      });
    }
    expect(await put('agents/meta', { id: 'meta', endpoint: remote('http://169.254.169.254/v1/a2a', { token: 'x-literal-token' }) })).toEqual({
      status: 400,
      body: { error: 'endpoint.base_url: 169.254.169.254 is a cloud metadata address: never reached', code: 'outbound_refused', field: 'endpoint.base_url' },
    });
    expect(await put('providers/meta', { kind: 'openai-compatible', base_url: 'http://[::ffff:a9fe:a9fe]/v1' })).toEqual({
      status: 400,
      body: { error: 'base_url: [::ffff:a9fe:a9fe] is a cloud metadata address: never reached', code: 'outbound_refused', field: 'base_url' },
    });
    expect({ connections, requests: seen.length }).toEqual(before);
  });

  it('an MCP server the guard lets through is connected at once — the answer says so — and a failure never echoes what the target answered', async () => {
    const before = seen.length;
    const r = await put('mcp-servers/probe', { url: `http://127.0.0.1:${port}/mcp` });
    expect(r).toEqual({
      status: 400,
      body: { error: `cannot reach MCP server 'probe' at http://127.0.0.1:${port}/mcp: it did not answer as an MCP server`, code: 'config_rejected' },
    });
    expect(seen.length).toBeGreaterThan(before);
    expect(JSON.stringify(r.body)).not.toContain('SINK-BODY-MARKER');
    expect(JSON.stringify(r.body)).not.toContain('redis_version');
  });

  it('no key goes where the operator did not send it: a provider the SDK would give ANTHROPIC_API_KEY by default is held to that key’s origin, and a redirect to another origin carries no key header', async () => {
    const ANTHROPIC_KEY = 'anthropic-key-value-6e1f3a9c';
    const landed: IncomingHttpHeaders[] = [];
    const hopped: IncomingHttpHeaders[] = [];
    const far = createServer((req, res) => {
      landed.push(req.headers);
      req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise<void>((r) => far.listen(0, '127.0.0.1', () => r()));
    const farPort = (far.address() as AddressInfo).port;
    // The host the operator configured answers with a redirect to another origin.
    const hop = createServer((req, res) => {
      hopped.push(req.headers);
      req.resume().on('end', () => res.writeHead(307, { location: `http://127.0.0.1:${farPort}/v1/messages` }).end());
    });
    await new Promise<void>((r) => hop.listen(0, '127.0.0.1', () => r()));
    const hopPort = (hop.address() as AddressInfo).port;
    const config = join(dir, 'keys.yaml');
    writeFileSync(
      config,
      [
        'server: { store: memory }',
        'providers:',
        `  hopper: { kind: anthropic, base_url: "http://127.0.0.1:${hopPort}/v1", api_key_env: SINK_API_KEY }`,
        'models:',
        '  hopper: { provider: hopper, model_name: claude-test }',
        'agents:',
        '  - { id: hopped, model: hopper }',
      ].join('\n'),
    );
    const open = await startServe(['--config', config], { AWAKEN_ADMIN_TOKEN: ADMIN, ANTHROPIC_API_KEY: ANTHROPIC_KEY, SINK_API_KEY: SINK_KEY });
    try {
      const write = async (path: string, body: unknown): Promise<{ status: number; body: unknown }> => {
        const r = await fetch(
          `${open.url}/v1/config/${path}`,
          as(ADMIN, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
        );
        return { status: r.status, body: await r.json() };
      };
      // Without api_key_env the SDK reads ANTHROPIC_API_KEY itself: a write is held to where that key goes.
      expect(await write('providers/evil', { kind: 'anthropic', base_url: `http://127.0.0.1:${farPort}/v1` })).toEqual({
        status: 400,
        body: {
          error: `base_url: 'ANTHROPIC_API_KEY' is sent only to the origins the server's config names for it (https://api.anthropic.com), not to http://127.0.0.1:${farPort}`,
          code: 'invalid_request',
          field: 'base_url',
        },
      });
      const r = await fetch(`${open.url}/v1/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ agentId: 'hopped', messages: [{ role: 'user', content: 'hi' }] }),
      });
      await r.text();
      // The configured host got its key; the redirect was followed, without it.
      expect(hopped.length).toBeGreaterThanOrEqual(1);
      expect(hopped[0]?.['x-api-key']).toBe(SINK_KEY);
      expect(landed.length).toBeGreaterThanOrEqual(1);
      for (const key of [SINK_KEY, ANTHROPIC_KEY]) expect(JSON.stringify(landed)).not.toContain(key);
      expect(JSON.stringify(hopped)).not.toContain(ANTHROPIC_KEY);
    } finally {
      await open.stop();
      await new Promise<void>((r) => far.close(() => r()));
      await new Promise<void>((r) => hop.close(() => r()));
    }
  }, 60_000);

  it('server.outbound.config_api_private: true lets config writes reach loopback and private addresses (never link-local ones)', async () => {
    const config = join(dir, 'private.yaml');
    writeFileSync(config, 'server: { store: memory, outbound: { config_api_private: true } }\n');
    const open = await startServe(['--config', config], { AWAKEN_ADMIN_TOKEN: ADMIN });
    try {
      const write = async (url: string): Promise<Written> =>
        (
          await fetch(
            `${open.url}/v1/config/agents/far`,
            as(ADMIN, {
              method: 'PUT',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ id: 'far', endpoint: remote(url, { token: 'a-literal-token' }) }),
            }),
          )
        ).json() as Promise<Written>;
      expect((await write(`http://localhost:${port}/v1/a2a`)).id).toBe('far');
      expect(await write('http://169.254.169.254/v1/a2a')).toEqual({
        error: 'endpoint.base_url: 169.254.169.254 is a cloud metadata address: never reached',
        code: 'outbound_refused',
        field: 'endpoint.base_url',
      });
    } finally {
      await open.stop();
    }
  }, 60_000);
});
