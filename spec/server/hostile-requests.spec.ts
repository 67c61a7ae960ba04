import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.ts';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * What a client can no longer do to `awaken serve` over a socket (docs/server.md → Errors, Logs,
 * Access control): crash a request with a deeply nested body, pass off a dropped connection as a
 * server error or as a request it never finished, or make the public agent card advertise its host.
 */

let server: ServeProcess;
let trusting: ServeProcess;
const configDir = mkdtempSync(join(tmpdir(), 'awaken-hostile-'));

beforeAll(async () => {
  writeFileSync(join(configDir, 'plain.yaml'), 'server: { store: memory }\n');
  writeFileSync(join(configDir, 'proxied.yaml'), 'server: { store: memory, trust_proxy: true }\n');
  [server, trusting] = await Promise.all([
    startServe(['--config', join(configDir, 'plain.yaml'), '--log-format', 'json']),
    startServe(['--config', join(configDir, 'proxied.yaml')]),
  ]);
});
afterAll(async () => {
  await Promise.all([server?.stop(), trusting?.stop()]);
});

/** `depth` arrays one inside the other around `1`. */
const nested = (depth: number): string => `${'['.repeat(depth)}1${']'.repeat(depth)}`;
const post = (path: string, body: string): Promise<Response> =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
/** The server's JSON log lines so far. */
const logLines = (): Record<string, unknown>[] =>
  server
    .log()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

const TOO_DEEP = 'the JSON body nests deeper than 128 levels';

describe('a JSON body nested deeper than 128 levels', () => {
  it('is a 400 naming the limit on every route that reads JSON, in each protocol’s error shape; never a 500', async () => {
    // An A2A data part 5,000 deep overflowed the stack (500).
    const a2aBody = (depth: number) => `{"message":{"messageId":"m${depth}","role":"ROLE_USER","parts":[{"data":${nested(depth)}}]}}`;
    const a2a = await post('/v1/a2a/message:send', a2aBody(5000));
    expect(a2a.status).toBe(400);
    expect(await a2a.json()).toEqual({
      error: {
        code: 400,
        status: 'INVALID_ARGUMENT',
        message: `invalid A2A request: (body): ${TOO_DEEP}`,
        details: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: '(body)', description: TOO_DEEP }] }],
      },
    });
    const rpc = await post(
      '/v1/a2a/jsonrpc',
      `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"r1","role":"ROLE_USER","parts":[{"data":${nested(5000)}}]}}}`,
    );
    expect(await rpc.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: `Parse error: ${TOO_DEEP}` } });
    const rest: [string, string][] = [
      ['/v1/runs', `{"messages":[{"role":"user","content":[{"type":"text","text":"x"}],"metadata":${nested(5000)}}]}`],
      ['/v1/ai-sdk/chat', `{"id":"t1","messages":[{"id":"u","role":"user","parts":[{"type":"text","text":"hi"}],"metadata":${nested(200)}}]}`],
      [
        '/v1/ag-ui/run',
        `{"threadId":"t2","runId":"r","messages":[{"id":"u","role":"user","content":"hi"}],"tools":[],"context":[],"state":${nested(129)},"forwardedProps":{}}`,
      ],
      ['/v1/threads', `{"id":${nested(100_000)}}`],
      ['/v1/inspector/replay', `{"transcript":${nested(300)}}`],
    ];
    // The whole body, as docs/server.md (→ Errors) shows it.
    const documented = '{"error":"the JSON body nests deeper than 128 levels","code":"json_too_deep","field":"(body)"}';
    expect(readFileSync(join(repo, 'docs/server.md'), 'utf8')).toContain(`\n\`\`\`\n${documented}\n\`\`\`\n`);
    for (const [path, body] of rest) {
      const r = await post(path, body);
      expect([path, r.status, await r.text()]).toEqual([path, 400, documented]);
    }
    expect(logLines().filter((l) => l['level'] === 'error')).toEqual([]);
  });

  it('a body exactly 128 levels deep is read', async () => {
    // Four levels of envelope ({message: {parts: [{data: …}]}}) around the data part.
    const at = (depth: number) =>
      post(
        '/v1/a2a/message:send',
        `{"message":{"messageId":"d${depth}","role":"ROLE_USER","parts":[{"data":${nested(depth)}}]},"configuration":{"returnImmediately":true}}`,
      );
    expect((await at(124)).status).toBe(200);
    expect((await at(125)).status).toBe(400);
  });
});

/** Sends `text` on a raw connection, waits a moment, then drops the connection. */
async function dropAfter(text: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const socket = connect(Number(new URL(server.url).port), '127.0.0.1', () => {
      socket.write(text);
      setTimeout(() => {
        socket.destroy();
        resolve();
      }, 150);
    });
    socket.on('error', reject);
  });
}
const waitFor = async (what: () => boolean): Promise<void> => {
  for (let i = 0; i < 100 && !what(); i++) await new Promise((r) => setTimeout(r, 20));
};

describe('a client that drops its connection in the middle of its body', () => {
  it('is logged as a client that closed (499, info), not as a server error', async () => {
    const head = (path: string, framing: string) => `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${framing}\r\n`;
    const whole = JSON.stringify({ threadId: 'cut-short', messages: [{ role: 'user', content: 'hi' }] });
    const before = logLines().length;
    // Chunked, and a Content-Length not reached (even by a complete JSON text); REST and A2A.
    await dropAfter(`${head('/v1/runs', 'Transfer-Encoding: chunked\r\n')}8\r\n{"messag\r\n`);
    await dropAfter(`${head('/v1/runs', `Content-Length: ${whole.length + 40}\r\n`)}${whole}`);
    await dropAfter(`${head('/v1/a2a/message:send', 'Content-Length: 500\r\n')}{"message":`);
    await waitFor(() => logLines().length >= before + 3);
    const lines = logLines()
      .slice(before)
      .map(({ time: _t, ms: _ms, ...rest }) => rest);
    expect(lines).toEqual([
      { level: 'info', msg: 'request', method: 'POST', path: '/v1/runs', status: 499 },
      { level: 'info', msg: 'request', method: 'POST', route: '/v1/runs', path: '/v1/runs', status: 499 },
      { level: 'info', msg: 'request', method: 'POST', route: '/v1/a2a/*', path: '/v1/a2a/message:send', status: 499 },
    ]);
  });
});

describe('the public agent card behind a proxy', () => {
  const forged = { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' };
  type Card = { supportedInterfaces: { url: string }[]; provider: { url: string } };
  const cardAt = async (url: string, headers: Record<string, string>): Promise<Card> => (await (await fetch(url, { headers })).json()) as Card;
  const urlsOf = (card: Card): string[] => [...card.supportedInterfaces.map((i) => i.url), card.provider.url];

  it('ignores X-Forwarded-Host and -Proto unless server.trust_proxy is set: the card names the host the request reached', async () => {
    for (const path of ['/.well-known/agent-card.json', '/v1/a2a/demo/.well-known/agent-card.json']) {
      const card = await cardAt(`${server.url}${path}`, forged);
      expect(urlsOf(card), path).toEqual([`${server.url}/v1/a2a/demo`, `${server.url}/v1/a2a/demo/jsonrpc`, server.url]);
    }
  });

  it('with server.trust_proxy: true the card is the proxy’s (its first host, http or https only)', async () => {
    const card = await cardAt(`${trusting.url}/.well-known/agent-card.json`, {
      'x-forwarded-host': 'api.example, proxy.internal',
      'x-forwarded-proto': 'https',
    });
    expect(urlsOf(card)).toEqual(['https://api.example/v1/a2a/demo', 'https://api.example/v1/a2a/demo/jsonrpc', 'https://api.example']);
    const odd = await cardAt(`${trusting.url}/.well-known/agent-card.json`, { 'x-forwarded-host': 'a b/c', 'x-forwarded-proto': 'javascript' });
    expect(urlsOf(odd)).toEqual([`${trusting.url}/v1/a2a/demo`, `${trusting.url}/v1/a2a/demo/jsonrpc`, trusting.url]);
  });

  it('server.trust_proxy must be a boolean: one line naming it', async () => {
    const file = join(configDir, 'bad.yaml');
    writeFileSync(file, 'server: { trust_proxy: "yes" }\n');
    expect(await cli('serve', '--config', file)).toEqual({
      code: 65,
      out: '',
      err: `awaken serve: ${file}: server.trust_proxy: Invalid input: expected boolean, received string\n`,
    });
  });
});
