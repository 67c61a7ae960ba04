import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, JSONRPCMessageSchema, type JSONRPCMessage, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';

const repo = resolve(import.meta.dirname, '../..');

/** `awaken mcp` as a child process, driven by the SDK's own client over stdio. */
async function connect(model: string, flags: readonly string[] = []): Promise<{ client: Client; frames: JSONRPCMessage[] }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(repo, 'src/cli/awaken.js'), 'mcp', ...flags, '--model', model],
    cwd: repo,
    stderr: 'pipe',
  });
  const frames: JSONRPCMessage[] = [];
  const client = new Client({ name: 'awaken-spec', version: '0.0.0' });
  await client.connect(transport);
  // Tap every frame the server sends from here on.
  const onmessage = transport.onmessage;
  transport.onmessage = (m) => {
    frames.push(m);
    onmessage?.(m);
  };
  return { client, frames };
}

describe('awaken mcp (stdio), driven by the official MCP client', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  it('lists the agent as a tool, streams progress while it runs and answers with the run', async () => {
    // The answer is paced (spec/cli/fixtures/weather-paced.yaml), so the progress of the first step
    // reaches the client well before the result, however loaded the machine.
    const { client, frames } = await connect('scripted:spec/cli/fixtures/weather-paced.yaml');
    close = () => client.close();
    expect(client.getServerVersion()?.name).toBe('awaken-mcp');
    const tools = await client.listTools();
    expect(tools.tools.map((t) => [t.name, t.inputSchema.required])).toEqual([['demo', ['message']]]);
    const progress: Progress[] = [];
    const result = await client.callTool({ name: 'demo', arguments: { message: 'weather in Tokyo?' } }, CallToolResultSchema, {
      onprogress: (p) => void progress.push(p),
    });
    expect(result.isError).toBe(false);
    expect(result.content).toEqual([{ type: 'text', text: 'It is cloudy in Tokyo.' }]);
    expect(result.structuredContent).toMatchObject({ termination: { type: 'natural_end' } });
    // Every progress notification is on the wire before the result. (The SDK client dispatches
    // notifications a microtask late, so the last ones of the read that also carries the response can
    // miss `onprogress`: what it delivered is a prefix of what was sent.)
    const sent = frames.flatMap((f) => ('method' in f && f.method === 'notifications/progress' ? [f.params as unknown as Progress] : []));
    const resultAt = frames.findIndex((f) => 'result' in f && JSON.stringify(f.result).includes('cloudy in Tokyo'));
    expect(frames.findLastIndex((f) => 'method' in f && f.method === 'notifications/progress')).toBeLessThan(resultAt);
    expect(sent.map((p) => p.message)).toEqual(
      expect.arrayContaining(['starting agent run', 'step 1', 'calling tool: get_weather', 'tool get_weather succeeded', 'step 2']),
    );
    expect(sent.map((p) => p.progress)).toEqual(sent.map((_, i) => i + 1));
    expect(sent.slice(0, progress.length).map((p) => p.message)).toEqual(progress.map((p) => p.message));
    expect(progress.map((p) => p.message)).toEqual(
      expect.arrayContaining(['starting agent run', 'step 1', 'calling tool: get_weather', 'tool get_weather succeeded']),
    );
    for (const f of frames) expect(JSONRPCMessageSchema.safeParse(f).success).toBe(true);
  });

  it('bad arguments and an empty message are tool errors, not crashes (started as `awaken mcp --stdio`)', async () => {
    const { client } = await connect('scripted:fixtures/scripts/demo-weather.yaml', ['--stdio']);
    close = () => client.close();
    const missing = await client.callTool({ name: 'demo', arguments: {} });
    expect(missing.isError).toBe(true);
    expect(JSON.stringify(missing.content)).toContain('message');
    const empty = await client.callTool({ name: 'demo', arguments: { message: ' ' } });
    expect(empty).toMatchObject({ isError: true, content: [{ type: 'text', text: 'message must not be empty' }] });
    await expect(client.ping()).resolves.toEqual({});
  });

  it('a run that suspends is an error result naming the suspension', async () => {
    const { client } = await connect('scripted:fixtures/scripts/demo-confirm.json');
    close = () => client.close();
    const r = await client.callTool({ name: 'demo', arguments: { message: 'delete it' } }, CallToolResultSchema);
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({ termination: { type: 'suspended' } });
  });

  it('a line that is not JSON-RPC is answered (-32700, -32600), and the session goes on', async () => {
    const child = spawn(process.execPath, [join(repo, 'src/cli/awaken.js'), 'mcp', '--model', 'scripted:fixtures/scripts/demo-weather.yaml'], {
      cwd: repo,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    close = async () => {
      child.stdin.end();
      await new Promise((r) => child.once('exit', r));
    };
    const lines: unknown[] = [];
    let buffer = '';
    child.stdout.on('data', (d: Buffer) => {
      buffer += d.toString('utf8');
      for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
        lines.push(JSON.parse(buffer.slice(0, at)));
        buffer = buffer.slice(at + 1);
      }
    });
    child.stdin.write('this is not json\n');
    child.stdin.write('{"hello":"world","id":5}\n');
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' })}\n`);
    await expect.poll(() => lines.length, { timeout: 10_000 }).toBe(3);
    expect(lines[0]).toMatchObject({ jsonrpc: '2.0', error: { code: -32700 } });
    expect(lines[0]).not.toHaveProperty('id');
    expect(lines[1]).toMatchObject({ jsonrpc: '2.0', id: 5, error: { code: -32600 } });
    expect(lines[2]).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    for (const l of lines) expect(JSONRPCMessageSchema.safeParse(l).success).toBe(true);
  });
});
