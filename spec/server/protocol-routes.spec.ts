import { buildResumeArray, HttpAgent } from '@ag-ui/client';
import { DefaultChatTransport, type UIMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { listen } from '../../src/server/node.ts';
import { HeadlessChat } from '../support/ai-chat.ts';
import { bodyJson, gatedTool, json, testServer } from '../support/server.ts';

/** The official clients against `awaken serve`'s protocol routes, over a real socket. */

const textOf = (m: UIMessage | undefined): string => (m?.parts ?? []).flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');

describe('AI SDK v6 route: AbstractChat + DefaultChatTransport', () => {
  it('chats, answers an approval, and the run resumes on the same thread', async () => {
    const s = testServer([{ text: 'Hello!' }, { tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'deploy' } }] }, { text: 'Deployed.' }]);
    const server = await listen(s.app, { port: 0 });
    try {
      const chat = new HeadlessChat('chat-1', new DefaultChatTransport<UIMessage>({ api: `${server.url}/v1/ai-sdk/chat` }));
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

describe('secondary protocol routes', () => {
  it('AI SDK: reattach streams the run in flight from its start (204 when none); messages as UIMessages', async () => {
    const g = gatedTool();
    const s = testServer([{ text: 'Working', tool_calls: [{ id: 'c1', name: 'slow', arguments: { tag: 't' } }] }, { text: 'Done.' }], { tools: [g.tool] });
    const server = await listen(s.app, { port: 0 });
    try {
      const transport = new DefaultChatTransport<UIMessage>({ api: `${server.url}/v1/ai-sdk/chat` });
      expect(await transport.reconnectToStream({ chatId: 'r1' })).toBeNull();
      const first = await fetch(`${server.url}/v1/ai-sdk/chat`, json({ id: 'r1', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'go' }] }] }));
      const stream = await transport.reconnectToStream({ chatId: 'r1' });
      expect(stream).not.toBeNull();
      g.open();
      const chunks: { type: string }[] = [];
      const reader = (stream as ReadableStream<{ type: string }>).getReader();
      for (;;) {
        const next = await reader.read();
        if (next.done) break;
        chunks.push(next.value);
      }
      expect(chunks[0]?.type).toBe('start');
      expect(chunks.at(-1)?.type).toBe('finish');
      await first.body?.cancel();
      const ui = await bodyJson(fetch(`${server.url}/v1/ai-sdk/threads/r1/messages`));
      expect(ui.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'assistant']);
      expect(ui[1].parts).toContainEqual(expect.objectContaining({ type: 'dynamic-tool', toolName: 'slow', state: 'output-available' }));
    } finally {
      await server.close();
    }
  });

  it('AG-UI: thread and agent routes, interrupt, messages', async () => {
    const g = gatedTool();
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'slow', arguments: { tag: 'x' } }] }, { text: 'by agent route' }], { tools: [g.tool] });
    const input = (threadId: string) => json({ threadId, runId: 'r', messages: [{ id: `u-${threadId}`, role: 'user', content: 'go' }], tools: [], context: [], state: {}, forwardedProps: {} });
    const running = await s.app.request('/v1/ag-ui/threads/ag-t/runs', input('ag-t'));
    expect(running.status).toBe(200);
    expect((await s.app.request('/v1/ag-ui/threads/other/runs', input('ag-t'))).status).toBe(400);
    const interrupt = await s.app.request('/v1/ag-ui/threads/ag-t/interrupt', { method: 'POST' });
    expect(interrupt.status).toBe(202);
    g.open();
    const text = await running.text();
    expect(text).toContain('"type":"RUN_FINISHED"');
    expect(text).toContain('"cancelled"');
    expect((await s.app.request('/v1/ag-ui/threads/ag-t/interrupt', { method: 'POST' })).status).toBe(404);
    const byAgent = await s.app.request('/v1/ag-ui/agents/agent/runs', input('ag-2'));
    expect(await byAgent.text()).toContain('by agent route');
    expect((await s.app.request('/v1/ag-ui/agents/nobody/runs', input('ag-3'))).status).toBe(404);
    const messages = await bodyJson(s.app.request('/v1/ag-ui/threads/ag-2/messages'));
    expect(messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([['user', 'go'], ['assistant', 'by agent route']]);
    expect((await s.app.request('/v1/ag-ui/threads/none/messages')).status).toBe(404);
  });
});
