import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit.ts';
import { cli } from '../support/cli.ts';
import { repo } from '../support/serve-process.ts';

/**
 * `awaken acp --app FILE`: the app's agent (its first, or `--agent`) as an ACP agent over stdio,
 * driven as a real process by the official ACP client; the first from a folder outside this
 * repository holding a copy of a `.ts` app (so `awaken-ts` can only be the running CLI's own copy).
 */
const APP = 'spec/cli/fixtures/apps/helper.ts';
const folders: string[] = [];
afterAll(() => {
  for (const f of folders) rmSync(f, { recursive: true, force: true });
});

interface Turn {
  readonly stopReason: string;
  readonly text: string;
  readonly permissions: number;
  readonly tools: readonly unknown[];
}

/** One session of one prompt, answering a permission request with `answer`. */
async function prompt(child: ChildProcess, text: string, answer: string): Promise<Turn> {
  const updates: { sessionUpdate: string; [key: string]: unknown }[] = [];
  let permissions = 0;
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin!), Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>);
  const stopReason = await acp
    .client({ name: 'awaken-spec' })
    .onRequest(acp.methods.client.session.requestPermission, () => {
      permissions++;
      return { outcome: { outcome: 'selected', optionId: answer } };
    })
    .onNotification(acp.methods.client.session.update, ({ params }) => void updates.push(params.update as (typeof updates)[number]))
    .connectWith(stream, async (agent) => {
      await agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
      });
      const session = await agent.request(acp.methods.agent.session.new, { cwd: '/', mcpServers: [] });
      return (await agent.request(acp.methods.agent.session.prompt, { sessionId: session.sessionId, prompt: [{ type: 'text', text }] })).stopReason;
    });
  return {
    stopReason,
    text: updates.map((u) => (u.sessionUpdate === 'agent_message_chunk' ? (u['content'] as { text: string }).text : '')).join(''),
    permissions,
    // The tool calls' states as they changed (an update without a status carries the arguments).
    tools: updates.filter((u) => u.sessionUpdate === 'tool_call_update' && u['status'] !== undefined).map((u) => [u['toolCallId'], u['status']]),
  };
}

describe('awaken acp --app', () => {
  let child: ChildProcess | undefined;
  const start = (args: readonly string[], cwd: string = repo): ChildProcess => {
    child = spawn(process.execPath, [join(repo, 'src/cli/awaken.js'), 'acp', ...args], {
      cwd,
      stdio: ['pipe', 'pipe', 'inherit'],
      env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' },
    });
    return child;
  };
  afterEach(() => {
    child?.stdin?.end();
    child?.kill();
    child = undefined;
  });

  it('serves the first agent of a .ts app outside the repository: its tool runs, the turn ends with end_turn', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-app-acp-'));
    folders.push(dir);
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    copyFileSync(join(repo, APP), join(dir, 'app.ts'));
    expect(await prompt(start(['--app', 'app.ts'], dir), 'say hi', 'approve')).toEqual({
      stopReason: 'end_turn',
      text: 'Done: HI.',
      permissions: 0,
      tools: [['c1', 'completed']],
    });
  });

  it("--agent: the app's agent whose AI SDK tool asks for approval; approving runs it", async () => {
    expect(await prompt(start(['--app', APP, '--agent', 'careful']), 'delete old', 'approve')).toEqual({
      stopReason: 'end_turn',
      text: 'Deleted old.',
      permissions: 1,
      tools: [['c1', 'completed']],
    });
  });

  it("a call the app's tool scheduled for a moment later: no permission asked, shown pending, woken by awaken acp at its time, the turn ends", async () => {
    expect(await prompt(start(['--app', 'spec/cli/fixtures/apps/scheduled.ts', '--agent', 'reminder']), 'remind me', 'approve')).toEqual({
      stopReason: 'end_turn',
      text: 'Reminded.',
      permissions: 0,
      tools: [
        ['c1', 'pending'],
        ['c1', 'completed'],
      ],
    });
  });

  it('refuses --model beside --app, an agent the app does not have, a wrong app (65) and a missing one (66), each in one line', async () => {
    expect(await cli('acp', '--app', APP, '--model', 'scripted:fixtures/scripts/demo-weather.yaml')).toEqual({
      code: EXIT.usage,
      out: '',
      err: "awaken acp: --model sets the demo agent's model; with --app the app's models answer; see awaken acp --help\n",
    });
    expect(await cli('acp', '--app', APP, '--agent', 'ghost')).toEqual({
      code: EXIT.usage,
      out: '',
      err: `awaken acp: no agent 'ghost' in ${APP} (its agents: helper, careful, greeter)\n`,
    });
    expect(await cli('acp', '--app', 'spec/cli/fixtures/apps/tool-twice.ts')).toEqual({
      code: EXIT.data,
      out: '',
      err: "awaken acp: spec/cli/fixtures/apps/tool-twice.ts: tools[1]: tool 'shout' is named twice (tools[0])\n",
    });
    expect(await cli('acp', '--app', 'gone.ts')).toEqual({ code: EXIT.noInput, out: '', err: 'awaken acp: cannot read gone.ts: no such file\n' });
    expect(await cli('acp', '--model', 'scripted:fixtures/scripts/demo-weather.yaml', '--agent', 'helper')).toEqual({
      code: EXIT.usage,
      out: '',
      err: 'awaken acp: --agent names an agent of the app: give --app FILE (without it the agent is demo); see awaken acp --help\n',
    });
    expect(await cli('acp')).toEqual({
      code: EXIT.usage,
      out: '',
      err: 'awaken acp: --model is required (scripted:FILE or transcript:FILE), or --app FILE; see awaken acp --help\n',
    });
  });
});
