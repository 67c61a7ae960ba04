import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import { afterEach, describe, expect, it } from 'vitest';

const repo = resolve(import.meta.dirname, '../..');

interface Turn {
  readonly stopReason: string;
  readonly updates: { sessionUpdate: string; [key: string]: unknown }[];
  readonly permissions: unknown[];
}

/** `awaken acp` as a child process, driven by the SDK's own client over its stdio. */
async function prompt(child: ChildProcess, text: string, answer: string): Promise<Turn> {
  const updates: Turn['updates'] = [];
  const permissions: unknown[] = [];
  let cancel: () => Promise<void> = async () => undefined;
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin!), Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>);
  const stopReason = await acp
    .client({ name: 'awaken-spec' })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
      permissions.push(params);
      if (answer !== 'cancel') return { outcome: { outcome: 'selected', optionId: answer } };
      // The user cancels the turn instead: the client cancels the session and the pending request.
      await cancel();
      return { outcome: { outcome: 'cancelled' } };
    })
    .onNotification(acp.methods.client.session.update, ({ params }) => void updates.push(params.update as Turn['updates'][number]))
    .connectWith(stream, async (agent) => {
      const init = await agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
      });
      expect(init.protocolVersion).toBe(acp.PROTOCOL_VERSION);
      const session = await agent.request(acp.methods.agent.session.new, { cwd: '/', mcpServers: [] });
      cancel = () => agent.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId });
      return (await agent.request(acp.methods.agent.session.prompt, { sessionId: session.sessionId, prompt: [{ type: 'text', text }] })).stopReason;
    });
  return { stopReason, updates, permissions };
}

describe('awaken acp (stdio), driven by the official ACP client', () => {
  let child: ChildProcess | undefined;
  const start = (script: string): ChildProcess => {
    child = spawn(process.execPath, [join(repo, 'src/cli/awaken.js'), 'acp', '--model', `scripted:${script}`], {
      cwd: repo,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    return child;
  };
  afterEach(() => {
    child?.stdin?.end();
    child?.kill();
    child = undefined;
  });

  it('streams the turn as session updates and ends it with end_turn', async () => {
    const turn = await prompt(start('fixtures/scripts/demo-weather.yaml'), 'weather in Tokyo?', 'approve');
    expect(turn.stopReason).toBe('end_turn');
    const text = turn.updates.map((u) => (u.sessionUpdate === 'agent_message_chunk' ? (u['content'] as { text: string }).text : '')).join('');
    expect(text).toBe('It is cloudy in Tokyo.');
    expect(turn.updates.map((u) => u.sessionUpdate)).toEqual(expect.arrayContaining(['agent_thought_chunk', 'tool_call', 'tool_call_update']));
    expect(turn.updates.filter((u) => u.sessionUpdate === 'tool_call_update').at(-1)).toMatchObject({ toolCallId: 'call_1', status: 'completed' });
  });

  it('asks permission for a suspended call; approving resumes it and the run finishes', async () => {
    const turn = await prompt(start('fixtures/scripts/demo-confirm.json'), 'delete it', 'approve');
    expect(turn.permissions).toHaveLength(1);
    expect(turn.permissions[0]).toMatchObject({ toolCall: { toolCallId: 'call_1', title: 'Confirm: delete the branch?' } });
    expect(turn.updates.filter((u) => u.sessionUpdate === 'tool_call_update').at(-1)).toMatchObject({ toolCallId: 'call_1', status: 'completed' });
    expect(turn.stopReason).toBe('end_turn');
  });

  it('rejecting the permission cancels the call', async () => {
    const turn = await prompt(start('fixtures/scripts/demo-confirm.json'), 'delete it', 'deny');
    expect(turn.permissions).toHaveLength(1);
    expect(turn.updates.filter((u) => u.sessionUpdate === 'tool_call_update').at(-1)).toMatchObject({ toolCallId: 'call_1', status: 'failed' });
    expect(turn.stopReason).toBe('end_turn');
  });

  it('session/cancel while a permission is pending ends the turn cancelled', async () => {
    const turn = await prompt(start('fixtures/scripts/demo-confirm.json'), 'delete it', 'cancel');
    expect(turn.permissions).toHaveLength(1);
    expect(turn.stopReason).toBe('cancelled');
  });
});
