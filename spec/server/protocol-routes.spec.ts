import { buildResumeArray, HttpAgent } from '@ag-ui/client';
import { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, type ChatState, type ChatStatus, type UIMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { listen } from '../../src/server/node.ts';
import { bodyJson, json, testServer } from '../support/server.ts';

/** The official clients against `awaken serve`'s protocol routes, over a real socket. */

class State implements ChatState<UIMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  messages: UIMessage[] = [];
  pushMessage = (m: UIMessage): void => void (this.messages = [...this.messages, m]);
  popMessage = (): void => void (this.messages = this.messages.slice(0, -1));
  replaceMessage = (i: number, m: UIMessage): void => void (this.messages = this.messages.map((x, j) => (j === i ? m : x)));
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

class Chat extends AbstractChat<UIMessage> {
  constructor(id: string, api: string) {
    super({ id, transport: new DefaultChatTransport<UIMessage>({ api }), state: new State(), sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
  }
}

const textOf = (m: UIMessage | undefined): string => (m?.parts ?? []).flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');

describe('AI SDK v6 route: AbstractChat + DefaultChatTransport', () => {
  it('chats, answers an approval, and the run resumes on the same thread', async () => {
    const s = testServer([{ text: 'Hello!' }, { tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'deploy' } }] }, { text: 'Deployed.' }]);
    const server = await listen(s.app, { port: 0 });
    try {
      const chat = new Chat('chat-1', `${server.url}/v1/ai-sdk/chat`);
      await chat.sendMessage({ text: 'hi' });
      expect(chat.error).toBeUndefined();
      expect(textOf(chat.lastMessage)).toBe('Hello!');
      await chat.sendMessage({ text: 'deploy it' });
      const part = chat.lastMessage?.parts.find((p) => p.type.startsWith('tool-')) as { state?: string; approval?: { id: string } } | undefined;
      expect(part?.state).toBe('approval-requested');
      await chat.addToolApprovalResponse({ id: part?.approval?.id ?? '', approved: true });
      await expect.poll(() => chat.status, { timeout: 5000 }).toBe('ready');
      expect(chat.error).toBeUndefined();
      expect(textOf(chat.lastMessage)).toContain('Deployed.');
      // The server kept one copy of each user message (the client resends the whole conversation).
      const stored = await bodyJson(fetch(`${server.url}/v1/threads/chat-1/messages`));
      expect(stored.messages.filter((m: { role: string }) => m.role === 'user')).toHaveLength(2);
      const runs = await bodyJson(fetch(`${server.url}/v1/runs?thread_id=chat-1`));
      expect(runs.items.map((r: { status: string }) => r.status)).toEqual(['done', 'done']);
    } finally {
      await server.close();
    }
  });

  it('a request with nothing new is a 400, not a run', async () => {
    const s = testServer([]);
    const r = await s.app.request('/v1/ai-sdk/chat', json({ id: 'x', messages: [] }));
    expect(r.status).toBe(400);
    expect((await bodyJson(r)).code).toBe('invalid_request');
  });
});

describe('AG-UI route: HttpAgent', () => {
  it('runs, gets the interrupt, resumes it with buildResumeArray', async () => {
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }] }, { text: 'Shipped.' }]);
    const server = await listen(s.app, { port: 0 });
    try {
      const agent = new HttpAgent({ url: `${server.url}/v1/ag-ui/run`, threadId: 'ag-1' });
      agent.messages.push({ id: 'u1', role: 'user', content: 'ship it' });
      await agent.runAgent({ runId: 'client-run-1' });
      expect(agent.pendingInterrupts.map((i) => i.id)).toEqual(['s-c1']);
      await agent.runAgent({ runId: 'client-run-2', resume: buildResumeArray(agent.pendingInterrupts, { 's-c1': { status: 'resolved', payload: { approved: true } } }) });
      expect(agent.pendingInterrupts).toEqual([]);
      const last = agent.messages.at(-1) as { role: string; content?: unknown };
      expect(last.role).toBe('assistant');
      expect(last.content).toBe('Shipped.');
    } finally {
      await server.close();
    }
  });
});
