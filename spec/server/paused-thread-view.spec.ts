import { HttpAgent } from '@ag-ui/client';
import { describe, expect, it } from 'vitest';
import { listen } from '../../src/server/node.ts';
import { testServer } from '../support/server.ts';

/**
 * A chat reloaded while its run waits on an answer shows the assistant message that asked as the
 * stream showed it — its text and its calls — though the message joins the thread only once its calls
 * are settled (until then the thread's tool batch keeps its text).
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
});
