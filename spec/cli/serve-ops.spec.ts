import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseServeArgs, shutdownGraceMs } from '../../src/cli/serve-command.ts';
import { EXIT } from '../../src/cli/exit.ts';
import { ServeConfigSchema } from '../../src/cli/serve-config.ts';
import { startCollector } from '../support/otlp-collector.ts';
import { repo, startServe } from '../support/serve-process.ts';
import { json, parseSse, readFrames } from '../support/server.ts';

/**
 * The operating settings of `awaken serve` (docs/cli.md → Operating `awaken serve`, docs/server.md →
 * Operating the server) on a real process: each key does what the docs say, the flag is as `--help`
 * prints it, and every refusal the docs show is the whole output.
 */

const bin = join(repo, 'src/cli/awaken.js');
const read = (doc: string): string => readFileSync(join(repo, doc), 'utf8');
/** The block of `doc` that follows `marker` (the next ``` fence after it). */
function blockAfter(doc: string, marker: string): string {
  const text = read(doc);
  const at = text.indexOf(marker);
  expect(at, `${doc}: ${marker}`).toBeGreaterThan(-1);
  return (/```[a-z]*\n([\s\S]*?)```/.exec(text.slice(at))?.[1] ?? '').replace(/\s+$/, '');
}
const configFile = (text: string): string => {
  const file = join(mkdtempSync(join(tmpdir(), 'awaken-ops-')), 'awaken.yaml');
  writeFileSync(file, text);
  return file;
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The samples of a Prometheus text exposition: `name{labels}` → value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([a-z_:][a-z0-9_:]*(?:\{[^}]*\})?) (\S+)$/i.exec(line);
    if (m !== null) out.set(m[1] as string, Number(m[2]));
  }
  return out;
}

describe('docs/cli.md → Operating `awaken serve`', () => {
  it('shows --otel-content as awaken serve --help prints it', () => {
    const help = spawnSync(process.execPath, [bin, 'serve', '--help'], { cwd: repo, encoding: 'utf8' });
    expect(help.status).toBe(0);
    const documented = blockAfter('docs/cli.md', 'The flag, as `awaken serve --help` prints it');
    expect(documented).toContain('--otel-content');
    expect(help.stdout).toContain(`${documented}\n`);
  });

  it('gives each key its default: the documented file plans what no file plans', () => {
    const text = blockAfter('docs/cli.md', 'The keys, each with its default');
    expect(Object.keys((parseYaml(text) as { server: object }).server)).toEqual([
      'max_concurrent_requests',
      'replay_buffer_capacity',
      'shutdown',
      'otel_content',
    ]);
    const documented = parseServeArgs(['--config', configFile(text)], {});
    const none = parseServeArgs([], {});
    if (documented === 'help' || none === 'help') throw new Error('help');
    expect({
      max: documented.maxConcurrentRequests,
      ring: documented.replayBufferCapacity,
      shutdownMs: documented.shutdownMs,
      content: documented.otelContent,
    }).toEqual({
      max: 100,
      ring: 1024,
      shutdownMs: 15_000,
      content: false,
    });
    expect({ max: none.maxConcurrentRequests, shutdownMs: none.shutdownMs, content: none.otelContent }).toEqual({
      max: 100,
      shutdownMs: 15_000,
      content: false,
    });
    // The ring's default is the registry's own (RegistryOptions.replayBufferCapacity, 1024).
    expect(none.replayBufferCapacity).toBeUndefined();
    // The runs in flight get two thirds of the bound: 10 s of the default 15.
    expect(shutdownGraceMs(none.shutdownMs)).toBe(10_000);
  });

  it('docs/server.md, its config example: the keys have the same values there, and the schema takes it', () => {
    const keys = (parseYaml(blockAfter('docs/cli.md', 'The keys, each with its default')) as { server: Record<string, unknown> }).server;
    const example = parseYaml(blockAfter('docs/server.md', '### `--config awaken.yaml`')) as { server: Record<string, unknown> };
    expect(ServeConfigSchema.safeParse(example).success).toBe(true);
    expect(Object.fromEntries(Object.keys(keys).map((k) => [k, example.server[k]]))).toEqual(keys);
  });

  it('takes --recovery and server.recovery (default resume); a flag wins over the file', () => {
    const plan = (args: string[]) => {
      const p = parseServeArgs(args, {});
      if (p === 'help') throw new Error('help');
      return p.recovery;
    };
    expect(plan([])).toBe('resume');
    expect(plan(['--recovery', 'interrupt'])).toBe('interrupt');
    expect(plan(['--config', configFile('server:\n  recovery: interrupt\n')])).toBe('interrupt');
    expect(plan(['--config', configFile('server:\n  recovery: interrupt\n'), '--recovery', 'resume'])).toBe('resume');
  });

  it('takes --otel-content and server.otel_content', () => {
    const plan = (args: string[]) => {
      const p = parseServeArgs(args, {});
      if (p === 'help') throw new Error('help');
      return p.otelContent;
    };
    expect(plan(['--otel-content'])).toBe(true);
    expect(plan(['--config', configFile('server:\n  otel_content: true\n')])).toBe(true);
    expect(plan(['--config', configFile('server:\n  otel_content: false\n')])).toBe(false);
    expect(plan(['--config', configFile('server:\n  otel_content: false\n'), '--otel-content'])).toBe(true);
  });

  it('prints each refusal it shows, whole, exit 65; docs/server.md shows the same sse_buffer_size line', () => {
    const configs: Record<string, string> = {
      'server.max_concurrent_requests': 'server:\n  max_concurrent_requests: 0\n',
      'server.shutdown.timeout': 'server:\n  shutdown: { timeout: 30 }\n',
      'server.sse_buffer_size': 'server:\n  sse_buffer_size: 64\n',
    };
    const lines = blockAfter('docs/cli.md', 'A value that is not one of these').split('\n');
    expect(lines).toHaveLength(3);
    for (const line of lines) {
      const field = /^awaken serve: \.\/awaken\.yaml: ([\w.]+): /.exec(line)?.[1] as string;
      const cwd = mkdtempSync(join(tmpdir(), 'awaken-ops-doc-'));
      writeFileSync(join(cwd, 'awaken.yaml'), configs[field] as string);
      const r = spawnSync(process.execPath, [bin, 'serve', '--config', './awaken.yaml', '--store', 'memory', '--port', '0'], {
        cwd,
        encoding: 'utf8',
        env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' },
      });
      expect({ code: r.status, out: r.stdout, err: r.stderr }).toEqual({ code: EXIT.data, out: '', err: `${line}\n` });
    }
    expect(
      read('docs/server.md')
        .split('\n')
        .map((l) => l.trim()),
    ).toContain(lines[2]);
  });
});

describe('each operating key is honoured by a real server', () => {
  it('replay_buffer_capacity: 3 keeps 3 frames — a client 3 behind resumes exactly, one 4 behind gets a resync', async () => {
    const config = configFile(`server:\n  store: memory\n  model: scripted:${join(repo, 'fixtures/scripts/demo-weather.yaml')}\n  replay_buffer_capacity: 3\n`);
    const s = await startServe(['--config', config]);
    try {
      const run = await fetch(`${s.url}/v1/runs`, json({ threadId: 'ring', messages: [{ role: 'user', content: 'weather in Tokyo?' }] }));
      const frames = parseSse(await run.text());
      const last = Number(frames.at(-1)?.id);
      expect(last).toBeGreaterThan(6);
      const exact = await readFrames(await fetch(`${s.url}/v1/threads/ring/stream?since=${last - 3}`), (f) => f.length >= 3, 3000);
      expect(exact.map((f) => [f.event, f.id])).toEqual([undefined, undefined, undefined].map((e, i) => [e, String(last - 2 + i)]));
      const behind = await readFrames(await fetch(`${s.url}/v1/threads/ring/stream?since=${last - 4}`), (f) => f.length >= 1, 3000);
      expect(behind[0]?.event).toBe('resync');
    } finally {
      await s.stop();
    }
  }, 60_000);

  it('max_concurrent_requests: 1 answers a second request 503 overloaded while one is handled; /health/live and /metrics answer', async () => {
    const config = configFile('server:\n  store: memory\n  max_concurrent_requests: 1\n');
    const s = await startServe(['--config', config]);
    const url = new URL(s.url);
    const socket = connect(Number(url.port), url.hostname);
    try {
      await new Promise<void>((r) => socket.once('connect', () => r()));
      // A request whose body has not all come yet is being handled.
      const body = JSON.stringify({ id: 'slow-body' });
      let answer = '';
      socket.on('data', (d: Buffer) => (answer += d.toString()));
      socket.write(
        `POST /v1/threads HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 3)}`,
      );
      let inFlight = 0;
      for (let i = 0; i < 200 && inFlight !== 1; i++) {
        inFlight = samples(await (await fetch(`${s.url}/metrics`)).text()).get('awaken_http_requests_in_flight') ?? 0;
        if (inFlight !== 1) await sleep(20);
      }
      expect(inFlight).toBe(1);
      const refused = await fetch(`${s.url}/v1/threads`);
      expect({ status: refused.status, retryAfter: refused.headers.get('retry-after'), body: await refused.json() }).toEqual({
        status: 503,
        retryAfter: '1',
        body: { error: 'the server is handling 1 requests (server.max_concurrent_requests): try again shortly', code: 'overloaded' },
      });
      expect((await fetch(`${s.url}/health/live`)).status).toBe(200);
      socket.write(body.slice(3));
      for (let i = 0; i < 200 && !answer.includes('\r\n\r\n'); i++) await sleep(10);
      expect(answer).toMatch(/^HTTP\/1\.1 201 /);
      expect((await fetch(`${s.url}/v1/threads`)).status).toBe(200);
      expect(samples(await (await fetch(`${s.url}/metrics`)).text()).get('awaken_errors_total{class="overloaded"}')).toBe(1);
    } finally {
      socket.destroy();
      await s.stop();
    }
  }, 60_000);

  it('shutdown.timeout_secs: 3 bounds SIGTERM: a run that does not stop is marked interrupted after 2 s and the process exits within the bound', async () => {
    const config = configFile('server:\n  store: memory\n  shutdown: { timeout_secs: 3 }\n');
    const s = await startServe(['--config', config, '--app', join(repo, 'spec/cli/fixtures/apps/stubborn.ts')]);
    const run = await fetch(`${s.url}/v1/runs`, json({ threadId: 'stubborn', messages: [{ role: 'user', content: 'go' }] }));
    const frames = readFrames(run, (f) => f.some((x) => x.data.includes('"tool_call_ready"')), 10_000);
    await frames;
    const exited = new Promise<number | null>((r) => s.child.once('exit', (code) => r(code)));
    const signalled = Date.now();
    s.child.kill('SIGTERM');
    const code = await exited;
    const took = Date.now() - signalled;
    expect(code).toBe(0);
    expect(took).toBeGreaterThanOrEqual(1_900);
    expect(took).toBeLessThan(3_500);
    expect(s.log()).toMatch(/shutting down: no new runs; cancelling the runs in flight timeout_s=3\n/);
    expect(s.log()).toContain('run still going at shutdown: marked interrupted, its thread released');
  }, 60_000);
});

describe('otel_content and --otel-content on a real server', () => {
  it('make the chat spans carry the messages; without either they do not', async () => {
    const collector = await startCollector();
    const script = `scripted:${join(repo, 'fixtures/scripts/demo-weather.yaml')}`;
    const chatSpan = async (args: string[], thread: string) => {
      const s = await startServe(['--store', 'memory', '--model', script, '--otel', `${collector.url}/v1/traces`, ...args]);
      try {
        const r = await fetch(`${s.url}/v1/runs`, json({ threadId: thread, messages: [{ role: 'user', content: 'weather in Tokyo?' }] }));
        await r.text();
        await expect
          .poll(() => collector.spans().filter((x) => x.name.startsWith('chat ') && x.attributes['gen_ai.conversation.id'] === thread).length, {
            timeout: 15_000,
          })
          .toBeGreaterThan(0);
        return collector.spans().find((x) => x.name.startsWith('chat ') && x.attributes['gen_ai.conversation.id'] === thread);
      } finally {
        await s.stop();
      }
    };
    try {
      expect((await chatSpan(['--otel-content'], 'with-flag'))?.attributes['gen_ai.input.messages']).toContain('weather in Tokyo?');
      expect((await chatSpan(['--config', configFile('server:\n  otel_content: true\n')], 'with-key'))?.attributes['gen_ai.input.messages']).toContain(
        'weather in Tokyo?',
      );
      expect((await chatSpan([], 'without'))?.attributes['gen_ai.input.messages']).toBeUndefined();
    } finally {
      await collector.close();
    }
  }, 90_000);
});

describe('docs/server.md → Operating the server, against a real server', () => {
  it('shows /metrics as it is after one run of the weather script, and the routes as they answer', async () => {
    const s = await startServe(['--store', 'memory', '--model', 'scripted:fixtures/scripts/demo-weather.yaml']);
    try {
      const run = await fetch(`${s.url}/v1/runs`, json({ messages: [{ role: 'user', content: 'weather in Tokyo?' }] }));
      expect(JSON.parse(parseSse(await run.text()).at(-1)?.data ?? '{}')).toMatchObject({ event_type: 'run_finish', termination: { type: 'natural_end' } });
      const metrics = await fetch(`${s.url}/metrics`);
      const text = await metrics.text();
      // Each metric of the excerpt, its HELP, TYPE and samples, exactly as served.
      const excerpt = blockAfter('docs/server.md', '`/metrics` has, among the rest').replace(/^ {2}/gm, '');
      const blocks = excerpt.split('\n\n');
      expect(blocks).toHaveLength(3);
      for (const block of blocks) expect(text).toContain(`${block}\n`);
      const routes = blockAfter('docs/server.md', '## Operating the server').split('\n');
      expect(routes[1]).toBe(`GET /metrics       Prometheus text format (${metrics.headers.get('content-type')})`);
      const live = await fetch(`${s.url}/health/live`);
      expect(routes[0]?.startsWith('GET /health/live   200, empty body')).toBe(true);
      expect({ status: live.status, body: await live.text() }).toEqual({ status: 200, body: '' });
    } finally {
      await s.stop();
    }
  }, 60_000);
});
