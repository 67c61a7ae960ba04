import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { repo } from '../support/serve-process.ts';

/**
 * The ACP SDK client (`@agentclientprotocol/sdk` 2.4.0, an editor's side) against a real
 * `awaken acp` process over its stdio: one session, three prompts (a tool call, a permission
 * approved, one rejected) on one thread — `session/load` replays the whole conversation — and a
 * second session cancelled while its permission is pending. Every line the agent writes is checked
 * against the ACP v1 JSON Schema (the SDK client does not validate responses).
 */

type Update = { sessionUpdate: string; [key: string]: unknown };

const schema = createRequire(import.meta.url)('@agentclientprotocol/sdk/schema/v1/schema.json') as Record<string, unknown>;
const ajv = new Ajv2020({ strict: false, validateFormats: false });
ajv.addSchema({ ...schema, $id: 'acp' });
const validator = (name: string) => ajv.getSchema(`acp#/$defs/${name}`) as ((v: unknown) => boolean) & { errors?: unknown };
const FOR_METHOD: Record<string, string> = { 'session/update': 'SessionNotification', 'session/request_permission': 'RequestPermissionRequest' };
const FOR_RESPONSE: Record<string, string> = {
  initialize: 'InitializeResponse',
  'session/new': 'NewSessionResponse',
  'session/prompt': 'PromptResponse',
  'session/load': 'LoadSessionResponse',
};

let child: ChildProcess | undefined;
afterEach(() => {
  child?.stdin?.end();
  child?.kill();
  child = undefined;
});

const textOf = (updates: readonly Update[], kind: string): string =>
  updates.map((u) => (u.sessionUpdate === kind ? ((u['content'] as { text?: string }).text ?? '') : '')).join('');

describe('@agentclientprotocol/sdk client against awaken acp', () => {
  it('one session keeps its thread over three prompts (approve, reject); another is cancelled while asking', async () => {
    child = spawn(process.execPath, [join(repo, 'src/cli/awaken.js'), 'acp', '--model', 'scripted:fixtures/scripts/demo-conversation.yaml'], {
      cwd: repo,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    // Every line the agent writes, checked against the schema: requests and notifications by method,
    // responses by the request they answer.
    const sentMethods = new Map<string | number, string>();
    const problems: string[] = [];
    const tap = new PassThrough();
    let pending = '';
    child.stdout?.on('data', (d: Buffer) => {
      pending += d.toString('utf8');
      for (let at = pending.indexOf('\n'); at >= 0; at = pending.indexOf('\n')) {
        const line = pending.slice(0, at);
        pending = pending.slice(at + 1);
        const m = JSON.parse(line) as { id?: string | number; method?: string; params?: unknown; result?: unknown; error?: unknown };
        const name =
          m.method !== undefined ? FOR_METHOD[m.method] : m.id !== undefined && m.error === undefined ? FOR_RESPONSE[sentMethods.get(m.id) ?? ''] : undefined;
        if (m.method !== undefined && name === undefined) problems.push(`unexpected method ${m.method}`);
        if (name !== undefined) {
          const validate = validator(name);
          if (!validate(m.method !== undefined ? m.params : m.result)) problems.push(`${name}: ${JSON.stringify(validate.errors).slice(0, 300)}`);
        }
      }
      tap.write(d);
    });
    child.stdout?.on('end', () => tap.end());
    const outgoing = new PassThrough();
    outgoing.on('data', (d: Buffer) => {
      for (const line of d
        .toString('utf8')
        .split('\n')
        .filter((l) => l !== '')) {
        const m = JSON.parse(line) as { id?: string | number; method?: string };
        if (m.id !== undefined && m.method !== undefined) sentMethods.set(m.id, m.method);
      }
    });
    outgoing.pipe(child.stdin as NodeJS.WritableStream);

    const updates = new Map<string, Update[]>();
    const permissions: { sessionId: string; toolCallId: string }[] = [];
    let answer: 'approve' | 'deny' | 'cancel' = 'approve';
    let cancel: () => Promise<void> = async () => undefined;
    const errors = vi.spyOn(console, 'error');
    try {
      const stream = acp.ndJsonStream(Writable.toWeb(outgoing), Readable.toWeb(tap) as ReadableStream<Uint8Array>);
      await acp
        .client({ name: 'awaken-clients' })
        .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
          permissions.push({ sessionId: params.sessionId, toolCallId: params.toolCall.toolCallId });
          if (answer !== 'cancel')
            return {
              outcome: {
                outcome: 'selected',
                optionId: answer === 'approve' ? 'approve' : (params.options.find((o) => o.kind.startsWith('reject'))?.optionId ?? 'deny'),
              },
            };
          await cancel();
          return { outcome: { outcome: 'cancelled' } };
        })
        .onNotification(acp.methods.client.session.update, ({ params }) => {
          updates.set(params.sessionId, [...(updates.get(params.sessionId) ?? []), params.update as Update]);
        })
        .connectWith(stream, async (agent) => {
          const init = await agent.request(acp.methods.agent.initialize, {
            protocolVersion: acp.PROTOCOL_VERSION,
            clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
          });
          expect(init.agentCapabilities?.loadSession).toBe(true);
          const { sessionId } = await agent.request(acp.methods.agent.session.new, { cwd: '/', mcpServers: [] });
          const prompt = async (text: string): Promise<string> =>
            (await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] })).stopReason;

          expect(await prompt('weather in Oslo?')).toBe('end_turn');
          expect(textOf(updates.get(sessionId) ?? [], 'agent_message_chunk')).toBe('It is sunny in Oslo, 10 °C.');
          answer = 'approve';
          expect(await prompt('delete the branch')).toBe('end_turn');
          answer = 'deny';
          expect(await prompt('delete the tag')).toBe('end_turn');
          expect(permissions.map((p) => p.toolCallId)).toEqual(['call_delete_branch', 'call_delete_tag']);
          const turns = updates.get(sessionId) ?? [];
          expect(textOf(turns, 'agent_message_chunk')).toBe(
            'It is sunny in Oslo, 10 °C.Let me confirm that first.Done: the branch is deleted.Understood, I left the tag alone.',
          );
          const finals = new Map(turns.filter((u) => u.sessionUpdate === 'tool_call_update').map((u) => [u['toolCallId'], u['status']] as const));
          expect(Object.fromEntries(finals)).toEqual({ call_weather: 'completed', call_delete_branch: 'completed', call_delete_tag: 'failed' });

          // The session kept its thread: loading it replays the three turns, in order.
          updates.delete(sessionId);
          await agent.request(acp.methods.agent.session.load, { sessionId, cwd: '/', mcpServers: [] });
          const replayed = updates.get(sessionId) ?? [];
          expect(textOf(replayed, 'user_message_chunk')).toBe('weather in Oslo?delete the branchdelete the tag');
          expect(replayed.filter((u) => u.sessionUpdate === 'tool_call').map((u) => [u['toolCallId'], u['title'], u['status']])).toEqual([
            ['call_weather', 'get_weather', 'completed'],
            ['call_delete_branch', 'confirm_action', 'completed'],
            ['call_delete_tag', 'confirm_action', 'completed'],
          ]);
          expect(textOf(replayed, 'agent_message_chunk')).toContain('Understood, I left the tag alone.');

          // Another session, cancelled while its permission is pending.
          const other = await agent.request(acp.methods.agent.session.new, { cwd: '/', mcpServers: [] });
          expect(other.sessionId).not.toBe(sessionId);
          cancel = () => agent.notify(acp.methods.agent.session.cancel, { sessionId: other.sessionId });
          answer = 'cancel';
          await agent.request(acp.methods.agent.session.prompt, { sessionId: other.sessionId, prompt: [{ type: 'text', text: 'weather in Oslo?' }] });
          const stop = (
            await agent.request(acp.methods.agent.session.prompt, { sessionId: other.sessionId, prompt: [{ type: 'text', text: 'delete the branch' }] })
          ).stopReason;
          expect(stop).toBe('cancelled');
        });
      expect(problems).toEqual([]);
      expect(errors).not.toHaveBeenCalled();
    } finally {
      errors.mockRestore();
    }
  });
});
