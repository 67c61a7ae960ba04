import { describe, expect, it } from 'vitest';
import { approvalTool } from '../support/runtime.ts';
import { ALICE_TOKEN, addTodoTool, BOB_TOKEN, bodyJson, testServer, twoPrincipals } from '../support/server.ts';

/**
 * CopilotKit's per-thread reads (seed 001 §9.17; `/info`'s `threadEndpoints.inspect`, which its
 * inspector reads to load a thread): `GET /v1/copilotkit/threads/:id/messages` — the server's history,
 * tool calls flat as `{id, name, args}`, a paused thread's waiting message with its text — and
 * `GET /v1/copilotkit/threads/:id/state` — the keys its agent shares. Another principal's thread is
 * as one that does not exist.
 */

describe('CopilotKit thread reads', () => {
  it('messages and shared state of the caller’s thread; Bob gets 404 for Alice’s, as for none', async () => {
    const s = testServer(
      [
        { text: 'Adding.', tool_calls: [{ id: 't1', name: 'add_todo', arguments: { item: 'milk' } }] },
        { text: 'Added.' },
        { text: 'Checking first.', tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }] },
      ],
      { tools: [addTodoTool, approvalTool], spec: { client_state: ['todos'] } },
    );
    const p = await twoPrincipals(s);
    try {
      for (const text of ['add milk', 'ship it']) {
        const r = await p.call(ALICE_TOKEN, 'POST', '/v1/runs', { threadId: 'alice-1', agentId: 'agent', messages: [{ role: 'user', content: text }] });
        await r.text();
      }
      const messages = await bodyJson(p.call(ALICE_TOKEN, 'GET', '/v1/copilotkit/threads/alice-1/messages'));
      expect(
        (messages.messages as { role: string; content: string; toolCalls?: unknown[]; toolCallId?: string }[]).map(
          ({ role, content, toolCalls, toolCallId }) => ({
            role,
            content,
            ...(toolCalls !== undefined ? { toolCalls } : {}),
            ...(toolCallId !== undefined ? { toolCallId } : {}),
          }),
        ),
      ).toEqual([
        { role: 'user', content: 'add milk' },
        { role: 'assistant', content: 'Adding.', toolCalls: [{ id: 't1', name: 'add_todo', args: { item: 'milk' } }] },
        { role: 'tool', content: '{"saw":[]}', toolCallId: 't1' },
        { role: 'assistant', content: 'Added.' },
        { role: 'user', content: 'ship it' },
        { role: 'assistant', content: 'Checking first.', toolCalls: [{ id: 'c1', name: 'approve', args: { what: 'ship' } }] },
      ]);
      expect(await bodyJson(p.call(ALICE_TOKEN, 'GET', '/v1/copilotkit/threads/alice-1/state'))).toEqual({ state: { todos: ['milk'] } });

      const none = async (path: string) => {
        const r = await p.call(BOB_TOKEN, 'GET', path);
        return { status: r.status, body: await r.json() };
      };
      for (const read of ['messages', 'state']) {
        const theirs = await none(`/v1/copilotkit/threads/alice-1/${read}`);
        const nobodys = await none(`/v1/copilotkit/threads/nobody-1/${read}`);
        expect(theirs).toEqual({ status: 404, body: { error: 'thread not found: alice-1', code: 'thread_not_found' } });
        expect(nobodys).toEqual({ status: 404, body: { error: 'thread not found: nobody-1', code: 'thread_not_found' } });
      }
      expect((await p.call(ALICE_TOKEN, 'GET', '/v1/copilotkit/threads/bad%20id/messages')).status).toBe(400);
      const info = await bodyJson(p.call(ALICE_TOKEN, 'GET', '/v1/copilotkit/info'));
      expect(info.threadEndpoints).toEqual({ list: true, inspect: true, mutations: true, realtimeMetadata: false });
    } finally {
      await p.close();
    }
  });
});
