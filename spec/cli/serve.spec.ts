import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { main } from '../../src/cli/main.ts';
import { parseServeArgs, serveCommand } from '../../src/cli/serve-command.ts';
import { chunksOf, toSse } from '../../src/providers/cassette.ts';
import { repo, startServe } from '../support/serve-process.ts';
import { bodyJson, parseSse, readFrames } from '../support/server.ts';

const toolChunks = chunksOf(readFileSync(join(repo, 'fixtures/cassettes/openai-compatible-weather-tool.chunks.jsonl'), 'utf8'));

const children: ChildProcess[] = [];
const servers: Server[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const s of servers.splice(0)) s.close();
});

describe('awaken serve', () => {
  it('rejects bad arguments with one line naming the mistake, exit 64', async () => {
    const cases: [string[], string][] = [
      [['--port', 'x'], "awaken serve: --port must be a port number 0..65535, not 'x'; see awaken serve --help\n"],
      [
        ['--store', 'redis://x'],
        "awaken serve: --store: unknown store 'redis://x': use memory, sqlite:PATH, file:DIR or postgres://…; see awaken serve --help\n",
      ],
      [['--policy', 'maybe'], "awaken serve: --policy must be reject or supersede, not 'maybe'; see awaken serve --help\n"],
      [['--polcy', 'reject'], 'awaken serve: unknown option --polcy (did you mean --policy?); see awaken serve --help\n'],
      [['--log-level', 'loud'], "awaken serve: --log-level must be one of debug, info, warn, error, silent, not 'loud'; see awaken serve --help\n"],
    ];
    for (const [argv, message] of cases) {
      let err = '';
      const code = await main(['serve', ...argv], { out: () => undefined, err: (t: string) => void (err += t) });
      expect({ argv, code, err }).toEqual({ argv, code: 64, err: message });
    }
  });

  it('PORT and HOST set the port and interface; a flag wins over them, and they over the config file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-config-'));
    const file = join(dir, 'awaken.yaml');
    writeFileSync(file, 'server:\n  port: 4100\n  host: 127.0.0.2\n');
    expect(parseServeArgs([], {})).toMatchObject({ port: 3000, host: '127.0.0.1' });
    expect(parseServeArgs(['--config', file], {})).toMatchObject({ port: 4100, host: '127.0.0.2' });
    expect(parseServeArgs(['--config', file], { PORT: '8080', HOST: '0.0.0.0' })).toMatchObject({ port: 8080, host: '0.0.0.0' });
    expect(parseServeArgs(['--config', file, '--port=9090', '--host', '::1'], { PORT: '8080', HOST: '0.0.0.0' })).toMatchObject({ port: 9090, host: '::1' });
    expect(() => parseServeArgs([], { PORT: 'eighty' })).toThrow("PORT must be a port number 0..65535, not 'eighty'");
  });

  it('a quiet server collects 1 s after its last run or stream by default; server.idle_gc_ms sets the wait, 0 turns it off', () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-config-'));
    const file = join(dir, 'awaken.yaml');
    expect(parseServeArgs([], {})).toMatchObject({ idleGcMs: 1000 });
    writeFileSync(file, 'server:\n  idle_gc_ms: 0\n');
    expect(parseServeArgs(['--config', file], {})).toMatchObject({ idleGcMs: 0 });
    writeFileSync(file, 'server:\n  idle_gc_ms: -5\n');
    expect(() => parseServeArgs(['--config', file], {})).toThrow('server.idle_gc_ms');
  });

  it('a provider in the config file may read only an allowed key variable (server.api_key_env_allow, default *_API_KEY)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-config-'));
    const file = join(dir, 'awaken.yaml');
    writeFileSync(file, 'providers:\n  p: { kind: anthropic, api_key_env: DATABASE_URL }\n');
    expect(() => parseServeArgs(['--config', file], {})).toThrow(
      `${file}: providers.p.api_key_env: 'DATABASE_URL' is not an allowed key variable (allowed: *_API_KEY; server.api_key_env_allow sets the patterns)`,
    );
    writeFileSync(file, 'server:\n  api_key_env_allow: [DATABASE_*]\nproviders:\n  p: { kind: anthropic, api_key_env: DATABASE_URL }\n');
    expect(parseServeArgs(['--config', file], {})).toMatchObject({ file: { server: { api_key_env_allow: ['DATABASE_*'] } } });
    // The server's own credentials are never sent, whatever the patterns allow.
    writeFileSync(file, 'server:\n  api_key_env_allow: [AWAKEN_*]\nproviders:\n  p: { kind: anthropic, api_key_env: AWAKEN_ADMIN_TOKEN }\n');
    expect(() => parseServeArgs(['--config', file], {})).toThrow(
      `${file}: providers.p.api_key_env: 'AWAKEN_ADMIN_TOKEN' holds a credential of this server: it is never sent`,
    );
    writeFileSync(file, 'server:\n  api_key_env_allow: ["A.B"]\n');
    expect(() => parseServeArgs(['--config', file], {})).toThrow('server.api_key_env_allow[0]: a variable name pattern');
  });

  it('reads --config: server settings (flags win), and agents, models and providers added to the demo agent', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-config-'));
    const file = join(dir, 'awaken.yaml');
    writeFileSync(file, 'server:\n  port: 4100\n  policy: supersede\n  store: memory\n  log: { level: warn, format: json }\n');
    expect(parseServeArgs(['--config', file], {})).toMatchObject({ port: 4100, policy: 'supersede', store: 'memory', logLevel: 'warn', logFormat: 'json' });
    expect(parseServeArgs(['--config', file, '--port', '4200', '--log-format=pretty'], {})).toMatchObject({
      port: 4200,
      policy: 'supersede',
      logFormat: 'pretty',
    });
    writeFileSync(
      join(dir, 'browser.yaml'),
      'server:\n  model: scripted:demo.yaml\n  cors: { origins: ["https://app.example/"] }\n  allowed_hosts: [api.example]\n  max_follower_bytes: 65536\n',
    );
    expect(parseServeArgs(['--config', join(dir, 'browser.yaml')], {})).toMatchObject({
      model: `scripted:${join(dir, 'demo.yaml')}`,
      corsOrigins: ['https://app.example'],
      allowedHosts: ['api.example'],
      maxFollowerBytes: 65536,
    });
    expect(parseServeArgs(['--config', join(dir, 'browser.yaml'), '--cors-origin', 'http://x.example'], {})).toMatchObject({
      corsOrigins: ['http://x.example'],
    });

    const provider = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(
        `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { role: 'assistant', content: 'configured answer' }, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`,
      );
    });
    servers.push(provider);
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', () => r()));
    const port = (provider.address() as { port: number }).port;
    writeFileSync(
      file,
      [
        'server:',
        '  store: memory',
        'providers:',
        `  local: { kind: openai-compatible, base_url: "http://127.0.0.1:${port}/v1", api_key_env: LOCAL_API_KEY }`,
        'models:',
        '  small: { provider: local, model_name: tiny }',
        'agents:',
        '  - { id: helper, model: small, system_prompt: "You help." }',
      ].join('\n'),
    );
    const s = await startServe(['--config', file], { LOCAL_API_KEY: 'k' });
    children.push(s.child);
    const caps = await bodyJson(fetch(`${s.url}/v1/capabilities`));
    expect(caps.agents).toEqual(['demo', 'helper']);
    const r = await fetch(`${s.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ agentId: 'helper', messages: [{ role: 'user', content: 'hi' }] }),
    });
    const frames = parseSse(await r.text());
    expect(frames.some((f) => f.data.includes('configured answer'))).toBe(true);
  }, 60_000);

  it('serves the demo agent on SQLite from the bundled recorded conversation, and its start-up hint gets an answer that agrees with the tool', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-serve-'));
    const s = await startServe(['--store', `sqlite:${join(dir, 'awaken.db')}`]);
    children.push(s.child);
    expect(s.log()).toContain('bundled recorded conversation');
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    // Run exactly the command the start-up log suggests.
    const hint = /try\s+curl -N (\S+) -H 'content-type: application\/json' -d '(.+)'\n/.exec(s.log());
    expect(hint).not.toBeNull();
    const body = JSON.parse(hint?.[2] ?? '{}') as { messages: { content: string }[] };
    const city = /weather in (\w+)/.exec(body.messages[0]?.content ?? '')?.[1] ?? '';
    const r = await fetch(hint?.[1] ?? '', { method: 'POST', headers: { 'content-type': 'application/json' }, body: hint?.[2] ?? '' });
    const events = parseSse(await r.text()).map((f) => JSON.parse(f.data) as { event_type: string; [k: string]: unknown });
    expect(events.at(-1)).toMatchObject({ event_type: 'run_finish', termination: { type: 'natural_end' } });
    const call = events.find((e) => e.event_type === 'tool_call_ready');
    expect(call).toMatchObject({ name: 'get_weather', arguments: { city } });
    const result = events.find((e) => e.event_type === 'tool_call_done') as { result: { data: { condition: string; temperature_c: number } } } | undefined;
    const answer = events.map((e) => (e.event_type === 'text_delta' ? (e['delta'] as string) : '')).join('');
    expect(answer).toContain(city);
    expect(answer).toContain(result?.result.data.condition ?? '?');
    expect(answer).toContain(`${result?.result.data.temperature_c ?? '?'} °C`);
  });

  it('--model scripted:FILE serves a script, run from its start in each thread', async () => {
    const s = await startServe(['--store', 'memory', '--model', 'scripted:fixtures/scripts/demo-weather.yaml']);
    children.push(s.child);
    expect(s.log()).toContain('scripted:fixtures/scripts/demo-weather.yaml, run from its start in each thread');
    for (const thread of ['a', 'b']) {
      const r = await fetch(`${s.url}/v1/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ threadId: thread, messages: [{ role: 'user', content: 'weather?' }] }),
      });
      const text = parseSse(await r.text())
        .map((f) => JSON.parse(f.data) as { event_type: string; delta?: string })
        .map((e) => (e.event_type === 'text_delta' ? e.delta : ''))
        .join('');
      expect(text).toBe('It is cloudy in Tokyo.');
    }
    let err = '';
    const bad = await main(['serve', '--model', 'scripted:/no/such/file.yaml'], { out: () => undefined, err: (t) => void (err += t) });
    expect({ bad, err }).toEqual({
      bad: 66,
      err: 'awaken serve: cannot read /no/such/file.yaml: no such file\n',
    });
  });

  it('--model openai:MODEL serves the demo agent from the OpenAI Responses API (a recorded stream, replayed by a local endpoint)', async () => {
    const chunks = chunksOf(readFileSync(join(repo, 'fixtures/provider/openai/openai-phase.1.chunks.jsonl'), 'utf8'));
    const seen: string[] = [];
    const provider = createServer((req, res) => {
      seen.push(`${req.method ?? ''} ${req.url ?? ''} ${req.headers.authorization ?? ''}`);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(toSse(chunks, 'openai-compatible'));
    });
    servers.push(provider);
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', () => r()));
    const base = `http://127.0.0.1:${(provider.address() as { port: number }).port}/v1`;
    const s = await startServe(['--store', 'memory', '--model', 'openai:gpt-4o-mini'], { OPENAI_API_KEY: 'sk-local-test', OPENAI_BASE_URL: base });
    children.push(s.child);
    expect(s.log()).toContain('model: openai (gpt-4o-mini) through the AI SDK adapter');
    const r = await fetch(`${s.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = parseSse(await r.text())
      .map((f) => JSON.parse(f.data) as { event_type: string; delta?: string })
      .map((e) => (e.event_type === 'text_delta' ? e.delta : ''))
      .join('');
    expect(text).toContain('Got it');
    expect(seen).toEqual(['POST /v1/responses Bearer sk-local-test']);
    const err = (argv: string[], env: NodeJS.ProcessEnv = {}) => {
      let out = '';
      return serveCommand(['--store', 'memory', ...argv], { out: () => undefined, err: (t) => void (out += t) }, '0.0.0', env).then((code) => ({ code, out }));
    };
    expect(await err(['--model', 'mistral:mistral-small-latest'])).toEqual({
      code: 69,
      out: 'awaken serve: mistral:mistral-small-latest needs its API key in MISTRAL_API_KEY\n',
    });
    expect(await err(['--model', 'cohere:command-r'])).toEqual({
      code: 64,
      out: "awaken serve: --model: 'cohere:command-r' names no provider: use openai:MODEL, anthropic:MODEL, google:MODEL, mistral:MODEL, ollama:MODEL, scripted:FILE or transcript:FILE; see awaken serve --help\n",
    });
  });

  it('6. kill -9 mid-run, restart on the same store: committed messages are there, the run is marked, not lost', async () => {
    // A fake OpenAI endpoint: the first request streams a tool call; the second never finishes.
    let requests = 0;
    const provider = createServer((_req, res) => {
      requests++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (requests === 1) res.end(toSse(toolChunks, 'openai-compatible'));
      else
        res.write(
          `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'It is' }, finish_reason: null }] })}\n\n`,
        );
    });
    servers.push(provider);
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', () => r()));
    const port = (provider.address() as { port: number }).port;
    const dir = mkdtempSync(join(tmpdir(), 'awaken-kill-'));
    const store = `sqlite:${join(dir, 'awaken.db')}`;
    const env = { OPENAI_API_KEY: 'test', OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`, OPENAI_MODEL: 'fake' };

    const first = await startServe(['--store', store], env);
    children.push(first.child);
    const r = await fetch(`${first.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ threadId: 'k9', messages: [{ role: 'user', content: 'weather?' }] }),
    });
    const runId = r.headers.get('x-awaken-run-id') as string;
    // Wait until the second inference streams its first text: step 1 (call + result) is committed.
    await readFrames(r, (fs) => fs.some((f) => f.data.includes('"text_delta"')), 15_000);
    first.child.kill('SIGKILL');
    await new Promise((res) => first.child.once('exit', res));

    // Interrupted, not taken up (the default): the fake endpoint never answers a second time.
    const second = await startServe(['--store', store, '--recovery', 'interrupt'], env);
    children.push(second.child);
    expect(second.log()).toContain('marked 1 run(s)');
    const messages = await bodyJson(fetch(`${second.url}/v1/threads/k9/messages`));
    expect(messages.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(messages.messages[1].tool_calls[0]).toMatchObject({ name: 'get_weather', arguments: { city: 'Oslo' } });
    const run = await bodyJson(fetch(`${second.url}/v1/runs/${runId}`));
    expect(run).toMatchObject({ status: 'done', termination: { type: 'error' } });
    expect(run.termination.value).toMatch(/^interrupted/);
    // The thread takes new runs again.
    expect((await fetch(`${second.url}/health`)).status).toBe(200);
  }, 60_000);
});
