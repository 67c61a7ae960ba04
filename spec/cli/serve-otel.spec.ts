import { createServer, type Server } from 'node:http';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * `awaken serve --otel URL` (docs/observability.md): a real server exports its runs as OpenTelemetry
 * spans over OTLP/HTTP to a collector — here a small HTTP server that keeps what it is sent — and
 * every agent is observed without naming the plugin.
 */

interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly startTimeUnixNano: string;
  readonly endTimeUnixNano: string;
  readonly attributes: readonly { key: string; value: Record<string, unknown> }[];
}

let collector: Server;
let server: ServeProcess;
const received: OtlpSpan[] = [];
const contentTypes: string[] = [];

beforeAll(async () => {
  collector = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      contentTypes.push(String(req.headers['content-type']));
      const parsed = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
      for (const r of parsed.resourceSpans) for (const s of r.scopeSpans) received.push(...s.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', () => r()));
  const port = (collector.address() as { port: number }).port;
  server = await startServe(['--store', 'memory', '--model', 'scripted:fixtures/scripts/demo-weather.yaml', '--otel', `http://127.0.0.1:${port}/v1/traces`]);
});
afterAll(async () => {
  await server?.stop();
  collector?.close();
});

const attr = (s: OtlpSpan | undefined, key: string): unknown => {
  const v = s?.attributes.find((a) => a.key === key)?.value;
  return v === undefined ? undefined : (v['stringValue'] ?? v['intValue'] ?? v['arrayValue']);
};

describe('awaken serve --otel', () => {
  it('exports a run as invoke_agent with its chat and execute_tool spans (GenAI attributes, one trace, parents by id) to the collector', async () => {
    const r = await fetch(`${server.url}/v1/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ threadId: 'otel-1', messages: [{ role: 'user', content: 'weather in Tokyo?' }] }) });
    expect(await r.text()).toContain('cloudy in Tokyo');
    await expect.poll(() => received.length, { timeout: 15_000 }).toBe(4);
    expect(contentTypes.every((t) => t.startsWith('application/json'))).toBe(true);
    const root = received.find((s) => s.name === 'invoke_agent demo');
    const chats = received.filter((s) => s.name.startsWith('chat '));
    const tool = received.find((s) => s.name === 'execute_tool get_weather');
    expect(chats).toHaveLength(2);
    for (const s of [...chats, tool]) {
      expect(s?.traceId).toBe(root?.traceId);
      expect(s?.parentSpanId).toBe(root?.spanId);
    }
    expect(root?.parentSpanId ?? '').toBe('');
    expect(attr(chats[0], 'gen_ai.operation.name')).toBe('chat');
    expect(attr(chats[0], 'gen_ai.request.model')).toBe(chats[0]?.name.slice('chat '.length));
    expect(String(attr(chats[0], 'gen_ai.usage.input_tokens'))).toBe('42');
    expect(attr(tool, 'gen_ai.tool.name')).toBe('get_weather');
    expect(attr(tool, 'gen_ai.tool.call.id')).toBe('call_1');
    expect(attr(root, 'gen_ai.conversation.id')).toBe('otel-1');
    expect(BigInt(root?.endTimeUnixNano ?? '0')).toBeGreaterThanOrEqual(BigInt(tool?.endTimeUnixNano ?? '1'));
  });

  it('refuses a URL it cannot use, naming the flag or the config field', () => {
    const r = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), 'serve', '--store', 'memory', '--port', '0', '--otel', 'not a url'], { cwd: repo, encoding: 'utf8' });
    expect({ status: r.status, stderr: r.stderr.trim() }).toEqual({ status: 64, stderr: expect.stringContaining('--otel: not a URL: "not a url"') });
    const config = join(mkdtempSync(join(tmpdir(), 'awaken-otel-config-')), 'awaken.yaml');
    writeFileSync(config, 'server:\n  store: memory\n  otel: ftp://collector/v1/traces\n');
    const c = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), 'serve', '--config', config, '--port', '0'], { cwd: repo, encoding: 'utf8' });
    expect(c.status).toBe(65);
    expect(c.stderr).toContain('server.otel');
  });
});
