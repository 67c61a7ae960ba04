import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';
import { parseSse } from '../support/server.ts';

const KEY = 'sk-test-5e3c7a1f9b2d4c6e';
const ADMIN = 'admin-7f1e2d3c4b5a6978';

const running: ServeProcess[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

interface Line {
  readonly level: string;
  readonly msg: string;
  readonly [field: string]: unknown;
}

const linesOf = (log: string): Line[] =>
  log
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);

describe('awaken serve logs', () => {
  it('--log-format json: a line per request, per run start and end, the provider failure with its cause, and no secret anywhere', async () => {
    const config = join(mkdtempSync(join(tmpdir(), 'awaken-log-')), 'awaken.yaml');
    writeFileSync(
      config,
      [
        'server: { store: memory }',
        'providers:',
        // Nothing listens on port 1: every inference is refused.
        '  down: { kind: openai-compatible, base_url: "http://127.0.0.1:1/v1", api_key_env: DOWN_API_KEY }',
        'models:',
        '  m: { provider: down, model_name: tiny }',
        'agents:',
        '  - { id: down, model: m, max_rounds: 2 }',
      ].join('\n'),
    );
    const s = await startServe(['--config', config, '--log-format', 'json'], { DOWN_API_KEY: KEY, AWAKEN_ADMIN_TOKEN: ADMIN });
    running.push(s);
    const r = await fetch(`${s.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
      body: JSON.stringify({ agentId: 'down', threadId: 'log-thread', messages: [{ role: 'user', content: `my key is ${KEY}` }] }),
    });
    const events = parseSse(await r.text()).map((f) => JSON.parse(f.data) as { event_type: string; termination?: { type: string } });
    expect(events.at(-1)).toMatchObject({ event_type: 'run_finish', termination: { type: 'error' } });
    expect((await fetch(`${s.url}/v1/threads/nope/messages`)).status).toBe(404);
    await fetch(`${s.url}/v1/config/providers/x`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ADMIN}x`, 'content-type': 'application/json' },
      body: '{}',
    });
    await new Promise((done) => setTimeout(done, 200));

    const lines = linesOf(s.log());
    // Every line is JSON: nothing else is written to stderr in this format.
    expect(
      s
        .log()
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('{')),
    ).toEqual([]);
    const run = lines.find((l) => l.msg === 'request' && l['route'] === '/v1/runs');
    expect(run).toMatchObject({ level: 'info', method: 'POST', path: '/v1/runs', status: 200, thread: 'log-thread', run: expect.any(String) });
    expect(typeof run?.['ms']).toBe('number');
    expect(lines.find((l) => l.msg === 'request' && l['path'] === '/v1/threads/nope/messages')).toMatchObject({
      status: 404,
      route: '/v1/threads/:id/messages',
      thread: 'nope',
    });
    expect(lines.find((l) => l.msg === 'run started')).toMatchObject({ level: 'info', run: run?.['run'], thread: 'log-thread', agent: 'down' });
    const failed = lines.find((l) => l.msg === 'run failed');
    expect(failed).toMatchObject({ level: 'error', run: run?.['run'], thread: 'log-thread', termination: 'error' });
    expect(String(failed?.['reason'])).toMatch(/ECONNREFUSED|connect|fetch failed/i);
    expect(lines.some((l) => l.msg.startsWith('listening on '))).toBe(true);
    for (const secret of [KEY, ADMIN]) expect(s.log()).not.toContain(secret);
  }, 60_000);

  it('--log-level warn: a healthy server says nothing at all; pretty is the default format', async () => {
    const free = createServer();
    await new Promise<void>((r) => free.listen(0, '127.0.0.1', () => r()));
    const port = (free.address() as { port: number }).port;
    await new Promise((r) => free.close(r));
    const child = spawn(process.execPath, [join(repo, 'src/cli/awaken.js'), 'serve', '--store', 'memory', '--log-level', 'warn', '--port', String(port)], {
      cwd: repo,
      env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' },
    });
    let quiet = '';
    child.stderr.on('data', (d: Buffer) => void (quiet += d.toString()));
    try {
      let up = false;
      for (let i = 0; i < 200 && !up; i++)
        up =
          (await fetch(`http://127.0.0.1:${port}/health`).then(
            (r) => r.ok,
            () => false,
          )) || (await new Promise((r) => setTimeout(r, 50)), false);
      expect(up).toBe(true);
      await fetch(`http://127.0.0.1:${port}/v1/threads`);
      await new Promise((done) => setTimeout(done, 100));
      expect(quiet).toBe('');
    } finally {
      child.kill('SIGKILL');
    }
    const chatty = await startServe(['--store', 'memory']);
    running.push(chatty);
    await fetch(`${chatty.url}/health`);
    await new Promise((done) => setTimeout(done, 100));
    expect(chatty.log()).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}request method=GET route=\/health path=\/health status=200 ms=\d+$/m);
    expect(chatty.log()).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}listening on http:\/\/127\.0\.0\.1:\d+ store=memory policy=reject /m);
  }, 60_000);
});
