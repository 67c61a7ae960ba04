import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit.ts';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * The MCP servers of a config file, and a config file's agents as MCP tools: `awaken serve --config`
 * lists the servers it connected in `/v1/capabilities` (over a socket), and `awaken mcp --config
 * awaken.yaml` (docs/plugins/mcp-tools.md) serves the config's agents over stdio, driven here as a
 * real process by the official MCP client. The config has two agents of its own beside the demo, one
 * of them calling a tool of a stdio MCP server the config names.
 */

const bin = join(repo, 'src/cli/awaken.js');
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'awaken-mcp-config-'));
  writeFileSync(
    join(dir, 'adder.yaml'),
    ['- tool_calls: [ { id: call_add, name: mcp__calc__add, arguments: { a: 20, b: 22 } } ]', '- text: The sum is 42.'].join('\n'),
  );
  writeFileSync(join(dir, 'greeter.yaml'), '- text: Hello from the greeter.\n');
  writeFileSync(
    join(dir, 'awaken.yaml'),
    [
      'server: { store: memory }',
      `mcp_servers: { calc: { command: ${JSON.stringify(process.execPath)}, args: [ ${JSON.stringify(join(repo, 'spec/plugins/fixtures/mcp-calc-server.mjs'))} ] } }`,
      'providers:',
      '  adder: { kind: scripted, file: adder.yaml }',
      '  greeter: { kind: scripted, file: greeter.yaml }',
      'models:',
      '  adder: { provider: adder, model_name: adder }',
      '  greeter: { provider: greeter, model_name: greeter }',
      'agents:',
      '  - { id: adder, model: adder, description: Adds numbers with the calc server, allowed_tools: ["mcp__calc__*"] }',
      '  - { id: greeter, model: greeter, description: Says hello }',
    ].join('\n'),
  );
});

describe('awaken serve --config: the config’s MCP servers are in /v1/capabilities', () => {
  let server: ServeProcess;
  beforeAll(async () => {
    server = await startServe(['--config', join(dir, 'awaken.yaml')]);
  });
  afterAll(async () => {
    await server.stop();
  });

  it('lists the server and its tools', async () => {
    const caps = (await (await fetch(`${server.url}/v1/capabilities`)).json()) as { mcp_servers: string[]; tools: string[]; agents: string[] };
    expect(caps.mcp_servers).toEqual(['calc']);
    expect(caps.tools).toEqual(expect.arrayContaining(['mcp__calc__add']));
    expect(caps.agents).toEqual(['adder', 'demo', 'greeter']);
  });
});

describe('awaken mcp --config awaken.yaml, driven by the official MCP client over stdio', () => {
  let client: Client;
  let stderr = '';
  beforeAll(async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [bin, 'mcp', '--config', 'awaken.yaml'],
      cwd: dir,
      stderr: 'pipe',
      env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' } as Record<string, string>,
    });
    transport.stderr?.on('data', (d: Buffer) => void (stderr += d.toString()));
    client = new Client({ name: 'awaken-spec', version: '0.0.0' });
    await client.connect(transport);
  });
  afterAll(async () => {
    await client.close();
  });

  it('lists the config’s agents (and the demo) as tools, each described as the config says', async () => {
    const tools = await client.listTools();
    expect(tools.tools.map((t) => [t.name, t.description, t.inputSchema.required])).toEqual([
      ['adder', 'Adds numbers with the calc server', ['message']],
      ['demo', expect.stringMatching(/\S/), ['message']],
      ['greeter', 'Says hello', ['message']],
    ]);
  });

  it('a call runs the agent on its model, with the tools of the config’s MCP server; each call runs its script from the start', async () => {
    for (let i = 0; i < 2; i++) {
      const result = await client.callTool({ name: 'adder', arguments: { message: 'add 20 and 22' } }, CallToolResultSchema);
      expect({ isError: result.isError, content: result.content, termination: (result.structuredContent as { termination?: unknown }).termination }).toEqual({
        isError: false,
        content: [{ type: 'text', text: 'The sum is 42.' }],
        termination: { type: 'natural_end' },
      });
    }
    const hello = await client.callTool({ name: 'greeter', arguments: { message: 'hi' } }, CallToolResultSchema);
    expect(hello.content).toEqual([{ type: 'text', text: 'Hello from the greeter.' }]);
    expect(stderr).toBe('');
  });
});

describe('awaken mcp --config: a mistake in the file', () => {
  it('is one line naming the file and the field, exit 65, as for awaken serve', () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'agents:\n  - { id: helper, model: demo, bogus_field: 1 }\n');
    const r = spawnSync(process.execPath, [bin, 'mcp', '--config', bad], { cwd: repo, encoding: 'utf8', input: '', timeout: 60_000 });
    expect({ code: r.status, out: r.stdout, err: r.stderr }).toEqual({
      code: EXIT.data,
      out: '',
      err: `awaken mcp: ${bad}: agents[0].bogus_field: unknown field\n`,
    });
  });
});
