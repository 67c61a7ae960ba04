import { HttpAgent } from '@ag-ui/client';
import { describe, expect, it } from 'vitest';
import { listen } from '../../src/server/node.ts';
import { testServer } from '../support/server.ts';

/**
 * A chat reloaded while its run waits on an answer shows the assistant message that asked — its text
 * and its calls, under the id the thread will keep it under — though the message joins the thread
 * only once its calls are settled (until then the thread's tool batch keeps it).
 */

describe('a paused thread, reloaded', () => {
  it('the AI SDK messages route shows the waiting assistant message with its text and its call', async () => {
    const s = testServer([{ text: 'Checking first.', tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }] }, { text: 'Shipped.' }]);
    const server = await listen(s.app, { port: 0 });
    try {
      const agent = new HttpAgent({ url: `${server.url}/v1/ag-ui/run`, threadId: 'paused-1' });
      agent.messages.push({ id: 'u1', role: 'user', content: 'ship it' });
      await agent.runAgent({ runId: 'r1' });
      expect(agent.pendingInterrupts.map((i) => i.id)).toEqual(['s-c1']);
      const ui = (await (await fetch(`${server.url}/v1/ai-sdk/threads/paused-1/messages`)).json()) as {
        role: string;
        parts: { type: string; text?: string; state?: string }[];
      }[];
      expect(ui.map((m) => [m.role, m.parts.map((p) => (p.type === 'text' ? p.text : `${p.type}:${p.state}`))])).toEqual([
        ['user', ['ship it']],
        ['assistant', ['Checking first.', 'tool-approve:approval-requested']],
      ]);
    } finally {
      await server.close();
    }
  });

  it('CopilotKit’s connect snapshots the waiting assistant message with its text and its call', async () => {
    const s = testServer([{ text: 'Checking first.', tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }] }, { text: 'Shipped.' }]);
    const server = await listen(s.app, { port: 0 });
    try {
      const agent = new HttpAgent({ url: `${server.url}/v1/ag-ui/run`, threadId: 'paused-2' });
      agent.messages.push({ id: 'u1', role: 'user', content: 'ship it' });
      await agent.runAgent({ runId: 'r1' });
      const r = await fetch(`${server.url}/v1/copilotkit/agent/agent/connect`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ threadId: 'paused-2', runId: 'c1', messages: [], tools: [], context: [], state: {}, forwardedProps: {} }),
      });
      const frames = (await r.text())
        .split('\n\n')
        .filter((f) => f.startsWith('data: '))
        .map((f) => JSON.parse(f.slice(6)));
      const snapshot = frames.find((f) => f.type === 'MESSAGES_SNAPSHOT') as { messages: { role: string; content: string; toolCalls?: { id: string }[] }[] };
      expect(snapshot.messages.map((m) => [m.role, m.content, (m.toolCalls ?? []).map((c) => c.id)])).toEqual([
        ['user', 'ship it', []],
        ['assistant', 'Checking first.', ['c1']],
      ]);
    } finally {
      await server.close();
    }
  });
});
