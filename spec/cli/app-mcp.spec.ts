import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit.ts';
import { cli } from '../support/cli.ts';
import { repo } from '../support/serve-process.ts';

/**
 * `awaken mcp --app FILE`: the app's agents as MCP tools over stdio, driven as a real process by the
 * official MCP client — from a folder outside this repository holding a copy of a `.ts` app (so
 * `awaken-ts` can only be the running CLI's own copy); `--agent` serves one of them; a `--config`
 * beside the app adds its agents, which run on the app's models and plugins.
 */
const APP = 'spec/cli/fixtures/apps/helper.ts';
const folders: string[] = [];
const clients: Client[] = [];
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  for (const f of folders) rmSync(f, { recursive: true, force: true });
});

/** `awaken mcp ARGS…` in `cwd`, connected; what it writes to stderr is collected. */
async function connect(args: readonly string[], cwd: string = repo): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(repo, 'src/cli/awaken.js'), 'mcp', ...args],
    cwd,
    stderr: 'pipe',
    env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' } as Record<string, string>,
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => void (stderr += d.toString()));
  const client = new Client({ name: 'awaken-spec', version: '0.0.0' });
  clients.push(client);
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

const answer = async (client: Client, name: string, message: string) => {
  const r = await client.callTool({ name, arguments: { message } }, CallToolResultSchema);
  return { isError: r.isError, content: r.content, termination: (r.structuredContent as { termination?: unknown }).termination };
};
const answered = (text: string) => ({ isError: false, content: [{ type: 'text', text }], termination: { type: 'natural_end' } });

describe('awaken mcp --app', () => {
  it("serves every agent of a .ts app outside the repository as a tool; each call runs the agent's script from its start", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-app-mcp-'));
    folders.push(dir);
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    copyFileSync(join(repo, APP), join(dir, 'app.ts'));
    const { client, stderr } = await connect(['--app', 'app.ts'], dir);
    const tools = await client.listTools();
    // Each described by its description, else by its system prompt.
    expect(tools.tools.map((t) => [t.name, t.description, t.inputSchema.required])).toEqual([
      ['careful', 'You ask before you delete.', ['message']],
      ['greeter', 'Says hello', ['message']],
      ['helper', 'Shouts what it is asked to', ['message']],
    ]);
    for (let i = 0; i < 2; i++) expect(await answer(client, 'helper', 'say hi')).toEqual(answered('Done: HI.'));
    expect(await answer(client, 'greeter', 'hi')).toEqual(answered('Hello from the greeter.'));
    expect(stderr()).toBe('');
  });

  it('--agent serves that agent alone', async () => {
    const { client } = await connect(['--app', APP, '--agent', 'greeter']);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['greeter']);
    expect(await answer(client, 'greeter', 'hi')).toEqual(answered('Hello from the greeter.'));
  });

  it("with --config, the file's agents beside the app's: they run on the app's model, with its plugin", async () => {
    const { client } = await connect(['--app', APP, '--config', 'spec/cli/fixtures/apps/awaken.yaml']);
    expect((await client.listTools()).tools.map((t) => [t.name, t.description])).toEqual([
      ['careful', 'You ask before you delete.'],
      ['greeter', 'Says hello'],
      ['helper', 'Shouts what it is asked to'],
      ['second', 'The second helper'],
    ]);
    expect(await answer(client, 'second', 'say hi')).toEqual(answered('Done: HI.'));
  });

  it('refuses --model beside --app, an agent the app does not have, a wrong app (65) and a missing one (66), each in one line', async () => {
    expect(await cli('mcp', '--app', APP, '--model', 'scripted:fixtures/scripts/demo-weather.yaml')).toEqual({
      code: EXIT.usage,
      out: '',
      err: "awaken mcp: --model sets the demo agent's model; with --app the app's models answer; see awaken mcp --help\n",
    });
    expect(await cli('mcp', '--app', APP, '--agent', 'ghost')).toEqual({
      code: EXIT.usage,
      out: '',
      err: `awaken mcp: no agent 'ghost' in ${APP} (its agents: helper, careful, greeter)\n`,
    });
    expect(await cli('mcp', '--app', 'spec/cli/fixtures/apps/unknown-model.ts')).toEqual({
      code: EXIT.data,
      out: '',
      err: "awaken mcp: spec/cli/fixtures/apps/unknown-model.ts: agents[0].model: no model 'gpt-4o' (models: default)\n",
    });
    expect(await cli('mcp', '--app', 'gone.ts')).toEqual({ code: EXIT.noInput, out: '', err: 'awaken mcp: cannot read gone.ts: no such file\n' });
    const clash = join(mkdtempSync(join(tmpdir(), 'awaken-app-mcp-clash-')), 'clash.yaml');
    folders.push(join(clash, '..'));
    writeFileSync(clash, 'models:\n  default: { provider: script, model_name: other }\n');
    expect(await cli('mcp', '--app', APP, '--config', clash)).toEqual({
      code: EXIT.data,
      out: '',
      err: `awaken mcp: ${clash}: models.default: 'default' is also defined in ${APP} (models.default)\n`,
    });
  });
});
