import { buildResumeArray, HttpAgent } from '@ag-ui/client';
import { DefaultChatTransport, validateUIMessages, type UIMessage } from 'ai';
import { describe, expect, it, vi } from 'vitest';
import { listen } from '../../src/server/node.ts';
import { Messages } from '../../src/contract/message.ts';
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
      await agent.runAgent({
        runId: 'client-run-2',
        resume: buildResumeArray(agent.pendingInterrupts, { 's-c1': { status: 'resolved', payload: { approved: true } } }),
      });
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
      const first = await fetch(
        `${server.url}/v1/ai-sdk/chat`,
        json({ id: 'r1', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'go' }] }] }),
      );
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
      expect(ui[1].parts).toContainEqual(expect.objectContaining({ type: 'tool-slow', toolCallId: 'c1', state: 'output-available', output: { tag: 't' } }));
      await validateUIMessages({ messages: ui });
    } finally {
      await server.close();
    }
  });

  it('AG-UI: thread and agent routes, interrupt, messages', async () => {
    const g = gatedTool();
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'slow', arguments: { tag: 'x' } }] }, { text: 'by agent route' }], { tools: [g.tool] });
    const input = (threadId: string) =>
      json({ threadId, runId: 'r', messages: [{ id: `u-${threadId}`, role: 'user', content: 'go' }], tools: [], context: [], state: {}, forwardedProps: {} });
    const running = await s.app.request('/v1/ag-ui/threads/ag-t/runs', input('ag-t'));
    expect(running.status).toBe(200);
    expect((await s.app.request('/v1/ag-ui/threads/other/runs', input('ag-t'))).status).toBe(400);
    const interrupt = await s.app.request('/v1/ag-ui/threads/ag-t/interrupt', { method: 'POST', headers: { 'content-type': 'application/json' } });
    expect(interrupt.status).toBe(202);
    g.open();
    const text = await running.text();
    expect(text).toContain('"type":"RUN_FINISHED"');
    expect(text).toContain('"cancelled"');
    expect((await s.app.request('/v1/ag-ui/threads/ag-t/interrupt', { method: 'POST', headers: { 'content-type': 'application/json' } })).status).toBe(404);
    const byAgent = await s.app.request('/v1/ag-ui/agents/agent/runs', input('ag-2'));
    expect(await byAgent.text()).toContain('by agent route');
    expect((await s.app.request('/v1/ag-ui/agents/nobody/runs', input('ag-3'))).status).toBe(404);
    const messages = await bodyJson(s.app.request('/v1/ag-ui/threads/ag-2/messages'));
    expect(messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', 'go'],
      ['assistant', 'by agent route'],
    ]);
    expect((await s.app.request('/v1/ag-ui/threads/none/messages')).status).toBe(404);
  });
});

describe('the history a client sends back is history (one rule below every protocol route)', () => {
  const partsOf = (m: UIMessage | undefined) => (m?.parts ?? []) as { type: string; state?: string; toolCallId?: string; approval?: { id: string } }[];

  it('AI SDK: a second and third message after a tool turn, an approval, and regenerate() — no 4xx, no renamed part', async () => {
    const s = testServer([
      { tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'one' } }] },
      { text: 'Echoed one.' },
      { text: 'Second answer.' },
      { tool_calls: [{ id: 'c2', name: 'approve', arguments: { what: 'deploy' } }] },
      { text: 'Deployed.' },
      { text: 'Deployed, said again.' },
    ]);
    const server = await listen(s.app, { port: 0 });
    try {
      const chat = new HeadlessChat('hist-1', new DefaultChatTransport<UIMessage>({ api: `${server.url}/v1/ai-sdk/chat` }));
      await chat.sendMessage({ text: 'echo one' });
      expect(chat.error).toBeUndefined();
      expect(partsOf(chat.lastMessage).find((p) => p.type === 'tool-echo')?.state).toBe('output-available');
      // The history now holds an output-available part of a call the server ran: history, not a decision.
      await chat.sendMessage({ text: 'and then?' });
      expect(chat.error).toBeUndefined();
      expect(textOf(chat.lastMessage)).toBe('Second answer.');
      await chat.sendMessage({ text: 'deploy' });
      const approval = partsOf(chat.lastMessage).find((p) => p.type === 'tool-approve');
      expect(approval?.state).toBe('approval-requested');
      await chat.addToolApprovalResponse({ id: approval?.approval?.id ?? '', approved: true });
      await expect.poll(() => chat.status, { timeout: 5000 }).toBe('ready');
      expect(chat.error).toBeUndefined();
      // The resumed call keeps its name: the part is still tool-approve, now with its output.
      const resumed = partsOf(chat.lastMessage).filter((p) => p.toolCallId === 'c2');
      expect(resumed.map((p) => [p.type, p.state])).toEqual([['tool-approve', 'output-available']]);
      expect(textOf(chat.lastMessage)).toContain('Deployed.');
      await chat.regenerate();
      expect(chat.error).toBeUndefined();
      expect(textOf(chat.lastMessage)).toBe('Deployed, said again.');
      const stored = await bodyJson(fetch(`${server.url}/v1/threads/hist-1/messages?limit=200`));
      const texts = stored.messages.map((m: { role: string; content: { text?: string }[] }) => `${m.role}:${m.content.map((b) => b.text ?? '').join('')}`);
      expect(texts.filter((t: string) => t.startsWith('user:'))).toEqual(['user:echo one', 'user:and then?', 'user:deploy']);
      expect(texts).not.toContain('assistant:Deployed.');
      expect(texts.at(-1)).toBe('assistant:Deployed, said again.');
    } finally {
      await server.close();
    }
  });

  it('AI SDK: an approval answered together with a new message resumes the call, then answers the message', async () => {
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }] }, { text: 'Shipped; noted.' }]);
    const first = await s.app.request('/v1/ai-sdk/chat', json({ id: 'both', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'ship' }] }] }));
    await first.text();
    const history = [
      { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'ship' }] },
      {
        id: 'a1',
        role: 'assistant',
        parts: [{ type: 'tool-approve', toolCallId: 'c1', state: 'approval-responded', input: { what: 'ship' }, approval: { id: 's-c1', approved: true } }],
      },
      { id: 'u2', role: 'user', parts: [{ type: 'text', text: 'and tell me when' }] },
    ];
    const second = await s.app.request('/v1/ai-sdk/chat', json({ id: 'both', messages: history }));
    expect(second.status).toBe(200);
    const body = await second.text();
    expect(body).toContain('"type":"tool-output-available","toolCallId":"c1"');
    expect(body).toContain('Shipped; noted.');
    expect(body).not.toContain('"toolName":"tool"');
    const roles = (s.llm.requests[1]?.messages ?? []).map((m) => `${m.role}:${m.id ?? ''}`);
    expect(roles.indexOf('user:u2')).toBeGreaterThan(roles.findIndex((r) => r.startsWith('tool:')));
  });

  it('AG-UI: a second message after a tool turn, an interrupt resumed without renaming, a tool message answering a waiting call', async () => {
    const warnings = vi.spyOn(console, 'warn');
    const s = testServer([
      { tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'one' } }] },
      { text: 'Echoed.' },
      { tool_calls: [{ id: 'c2', name: 'approve', arguments: { what: 'ship' } }] },
      { text: 'Shipped.' },
      { tool_calls: [{ id: 'c3', name: 'approve', arguments: { what: 'again' } }] },
      { text: 'Again.' },
    ]);
    const server = await listen(s.app, { port: 0 });
    try {
      const agent = new HttpAgent({ url: `${server.url}/v1/ag-ui/run`, threadId: 'ag-hist' });
      agent.messages.push({ id: 'u1', role: 'user', content: 'echo one' });
      const started: string[] = [];
      agent.subscribe({ onRunStartedEvent: ({ event }) => void started.push(event.runId) });
      await agent.runAgent({ runId: 'client-a' });
      expect(agent.messages.some((m) => m.role === 'tool')).toBe(true);
      agent.messages.push({ id: 'u2', role: 'user', content: 'ship it' });
      await agent.runAgent({ runId: 'client-b' });
      expect(agent.pendingInterrupts.map((i) => i.toolCallId)).toEqual(['c2']);
      await agent.runAgent({
        runId: 'client-c',
        resume: buildResumeArray(agent.pendingInterrupts, { 's-c2': { status: 'resolved', payload: { approved: true } } }),
      });
      const calls = agent.messages.flatMap((m) => ('toolCalls' in m ? (m.toolCalls ?? []) : []));
      expect(calls.map((c) => [c.id, c.function.name])).toEqual([
        ['c1', 'echo'],
        ['c2', 'approve'],
      ]);
      expect(started).toEqual(['client-a', 'client-b', 'client-c']);
      expect(warnings).not.toHaveBeenCalled();
      // A frontend that answers a waiting call with a tool message instead of resume[]: it is the decision.
      agent.messages.push({ id: 'u3', role: 'user', content: 'again' });
      await agent.runAgent({ runId: 'client-d' });
      expect(agent.pendingInterrupts.map((i) => i.toolCallId)).toEqual(['c3']);
      const input = {
        threadId: 'ag-hist',
        runId: 'client-e',
        state: {},
        tools: [],
        context: [],
        forwardedProps: {},
        messages: [...agent.messages, { id: 't3', role: 'tool', toolCallId: 'c3', content: '{"approved":true}' }],
      };
      const answered = await fetch(`${server.url}/v1/ag-ui/run`, json(input));
      const events = (await answered.text())
        .split('\n\n')
        .filter((f) => f !== '')
        .map((f) => JSON.parse(f.slice(6)) as { type: string; toolCallId?: string; runId?: string });
      expect(events.map((e) => e.type)).toContain('TOOL_CALL_RESULT');
      expect(events.filter((e) => e.type === 'TOOL_CALL_START')).toEqual([]);
      expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', runId: 'client-e', outcome: { type: 'success' } });
    } finally {
      warnings.mockRestore();
      await server.close();
    }
  });

  it('a new message while an approval waits is refused with 409 thread_paused (surfaced, not dropped); discardPause lets it through', async () => {
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }] }, { text: 'Something else, then.' }]);
    const first = [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'ship' }] }];
    await (await s.app.request('/v1/ai-sdk/chat', json({ id: 'paused', messages: first }))).text();
    const asking = [
      ...first,
      {
        id: 'a1',
        role: 'assistant',
        parts: [{ type: 'tool-approve', toolCallId: 'c1', state: 'approval-requested', input: { what: 'ship' }, approval: { id: 's-c1' } }],
      },
    ];
    const next = [...asking, { id: 'u2', role: 'user', parts: [{ type: 'text', text: 'never mind' }] }];
    const refused = await s.app.request('/v1/ai-sdk/chat', json({ id: 'paused', messages: next }));
    expect(refused.status).toBe(409);
    expect(await bodyJson(refused)).toMatchObject({ code: 'thread_paused', run_id: expect.any(String) });
    const through = await s.app.request('/v1/ai-sdk/chat', json({ id: 'paused', messages: next, discardPause: true }));
    expect(through.status).toBe(200);
    expect(await through.text()).toContain('Something else, then.');
    // AG-UI says it in forwardedProps.
    const t = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }] }, { text: 'Other.' }]);
    const input = (runId: string, messages: unknown[], forwardedProps: unknown = {}) =>
      json({ threadId: 'ag-paused', runId, messages, state: {}, tools: [], context: [], forwardedProps });
    await (await t.app.request('/v1/ag-ui/run', input('r1', [{ id: 'u1', role: 'user', content: 'ship' }]))).text();
    const again = [
      { id: 'u1', role: 'user', content: 'ship' },
      { id: 'u2', role: 'user', content: 'never mind' },
    ];
    expect((await t.app.request('/v1/ag-ui/run', input('r2', again))).status).toBe(409);
    expect(await (await t.app.request('/v1/ag-ui/run', input('r3', again, { discardPause: true }))).text()).toContain('Other.');
  });

  it('a message sent the instant a run has sent its terminal frame waits for the run to end instead of a 409', async () => {
    const t = testServer([{ text: 'One.' }, { text: 'Two.' }]);
    const first = await t.registry.start({ threadId: 'fast', messages: [Messages.user('one', { id: 'u1' })] });
    if (!first.ok) throw new Error('start');
    // The client sees the terminal frame and sends its next message at once: the run is not over yet.
    let sent = false;
    const next = await new Promise<Awaited<ReturnType<typeof t.registry.start>>>((resolve) => {
      void t.registry.subscribe('fast', 0, (item) => {
        if (sent || item.kind !== 'frame' || item.event.event_type !== 'run_finish') return;
        sent = true;
        resolve(t.registry.start({ threadId: 'fast', messages: [Messages.user('two', { id: 'u2' })] }));
      });
    });
    expect(next.ok).toBe(true);
    if (!next.ok) return;
    expect((await next.value.done)?.response).toBe('Two.');
  });
});
