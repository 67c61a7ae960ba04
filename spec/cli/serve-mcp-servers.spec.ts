import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';
import { parseSse } from '../support/server.ts';

/**
 * MCP servers from `awaken serve --config` (docs/plugins/mcp-tools.md → In awaken serve): a stdio
 * server (the SDK's McpServer, started by the server as a child process) whose tools the agents are
 * offered as `<server>__<tool>`, called over a real socket; one that cannot start stops the start
 * naming it.
 */

let server: ServeProcess;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'awaken-serve-mcp-'));
  writeFileSync(
    join(dir, 'script.yaml'),
    ['- tool_calls: [ { id: call_add, name: mcp__calc__add, arguments: { a: 20, b: 22 } } ]', '- text: The sum is 42.'].join('\n'),
  );
  writeFileSync(
    join(dir, 'awaken.yaml'),
    [
      'server: { store: memory }',
      `mcp_servers: { calc: { command: ${JSON.stringify(process.execPath)}, args: [ ${JSON.stringify(join(repo, 'spec/plugins/fixtures/mcp-calc-server.mjs'))} ], cwd: ${JSON.stringify(repo)} } }`,
      'providers: { adder: { kind: scripted, file: script.yaml } }',
      'models: { adder: { provider: adder, model_name: adder } }',
      'agents:',
      '  - { id: adder, model: adder, allowed_tools: ["mcp__calc__*"] }',
    ].join('\n'),
  );
  server = await startServe(['--config', join(dir, 'awaken.yaml')]);
});
afterAll(async () => {
  await server.stop();
});

describe('MCP servers in awaken serve --config', () => {
  it('a stdio server’s tools are the agents’ tools: a call reaches it and comes back with its metadata', async () => {
    const r = await fetch(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ threadId: 'm1', agentId: 'adder', messages: [{ role: 'user', content: 'add 20 and 22' }] }),
    });
    const events = parseSse(await r.text()).map((f) => JSON.parse(f.data) as { event_type: string; id?: string; result?: unknown });
    expect(events.find((e) => e.event_type === 'tool_call_done' && e.id === 'call_add')?.result).toMatchObject({
      status: 'success',
      data: { text: '42', structured: { sum: 42 } },
      metadata: { mcp: { server: 'calc', tool: 'add' } },
    });
    expect(events.at(-1)).toMatchObject({ event_type: 'run_finish', termination: { type: 'natural_end' } });
  });

  it('a server that cannot be started stops the start, naming it', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, ['server: { store: memory }', 'mcp_servers: { ghost: { command: /nonexistent/mcp-server } }'].join('\n'));
    await expect(startServe(['--config', bad])).rejects.toThrow(/mcp_servers: MCP server ghost: /);
  });
});
