import { HttpAgent } from '@ag-ui/client';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { ToolResults } from '../../src/contract/tool.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { listen } from '../../src/server/node.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { approvalTool, echoTool } from '../support/runtime.ts';
import { bodyJson, json, parseSse, testServer } from '../support/server.ts';

/**
 * An AG-UI run's stream ends with the thread as stored (`MESSAGES_SNAPSHOT` before `RUN_FINISHED`,
 * docs/adr/0069): the official client then holds the server's history, ids included.
 */

describe('AG-UI: a run ends with MESSAGES_SNAPSHOT of the thread', () => {
  it('a batch of two calls: the client holds each result once, under the ids the thread keeps, and no second copy of the call', async () => {
    const s = testServer(
      [
        {
          tool_calls: [
            { id: 'c1', name: 'echo', arguments: { text: 'one' } },
            { id: 'c2', name: 'echo', arguments: { text: 'two' } },
          ],
        },
        { text: 'Both echoed.' },
      ],
      { tools: [echoTool] },
    );
    const server = await listen(s.app, { port: 0 });
    try {
      const agent = new HttpAgent({ url: `${server.url}/v1/ag-ui/run`, threadId: 'snap-1' });
      agent.messages.push({ id: 'u1', role: 'user', content: 'echo twice' });
      await agent.runAgent({ runId: 'r1' });
      const stored = await bodyJson(fetch(`${server.url}/v1/ag-ui/threads/snap-1/messages`));
      expect(agent.messages).toEqual(stored);
      expect(agent.messages.map((m) => [m.role, m.id])).toEqual([
        ['user', 'u1'],
        ['assistant', 'message-2'],
        ['tool', 'message-3'],
        ['tool', 'message-4'],
        ['assistant', 'message-6'],
      ]);
    } finally {
      await server.close();
    }
  });

  it('the snapshot is the frame just before RUN_FINISHED, after every message is closed', async () => {
    const s = testServer([{ text: 'Hello.' }]);
    const res = await s.app.request('/v1/ag-ui/run', json({ threadId: 'snap-2', runId: 'r1', messages: [{ id: 'u1', role: 'user', content: 'hi' }] }));
    const events = parseSse(await res.text()).map((f) => JSON.parse(f.data) as { type: string; messages?: unknown });
    expect(events.map((e) => e.type).slice(-4)).toEqual(['STEP_FINISHED', 'STATE_SNAPSHOT', 'MESSAGES_SNAPSHOT', 'RUN_FINISHED']);
    expect(events.at(-2)?.messages).toEqual([
      { id: 'u1', role: 'user', content: 'hi' },
      { id: 'message-2', role: 'assistant', content: 'Hello.' },
    ]);
  });

  it('when the thread cannot be read at the end, the run still ends, with RUN_FINISHED and no snapshot', async () => {
    let failReads = false;
    const store = new MemoryStore();
    const loadThread = store.loadThread.bind(store);
    store.loadThread = (id: string) => (failReads ? Promise.reject(new Error('the disk went away')) : loadThread(id));
    // The tool runs after the request's history was read: from then on, reads fail.
    const breaker = defineTool({
      id: 'breaker',
      description: 'Breaks the store',
      args: z.object({}),
      execute: () => {
        failReads = true;
        return ToolResults.success('breaker', { broke: true });
      },
    });
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'breaker', arguments: {} }] }, { text: 'Done.' }], { tools: [breaker], store });
    const res = await s.app.request('/v1/ag-ui/run', json({ threadId: 'snap-3', runId: 'r1', messages: [{ id: 'u1', role: 'user', content: 'go' }] }));
    const types = parseSse(await res.text()).map((f) => (JSON.parse(f.data) as { type: string }).type);
    expect(types.slice(-2)).toEqual(['STATE_SNAPSHOT', 'RUN_FINISHED']);
    expect(types).not.toContain('MESSAGES_SNAPSHOT');
    failReads = false;
    expect((await loadThread('snap-3'))?.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
  });

  it('a run paused in a batch: the client holds every call of it, the result of the one that settled, and after the resume the stored thread', async () => {
    const s = testServer(
      [
        {
          tool_calls: [
            { id: 'c0', name: 'echo', arguments: { text: 'first' } },
            { id: 'c1', name: 'approve', arguments: { what: 'deploy' } },
          ],
        },
        { text: 'Deployed.' },
      ],
      { tools: [echoTool, approvalTool] },
    );
    const server = await listen(s.app, { port: 0 });
    try {
      const agent = new HttpAgent({ url: `${server.url}/v1/ag-ui/run`, threadId: 'snap-4' });
      agent.messages.push({ id: 'u1', role: 'user', content: 'echo, then deploy' });
      await agent.runAgent({ runId: 'r1' });
      expect(agent.messages).toEqual([
        { id: 'u1', role: 'user', content: 'echo, then deploy' },
        {
          id: 'message-2',
          role: 'assistant',
          content: '',
          toolCalls: [
            { id: 'c0', type: 'function', function: { name: 'echo', arguments: '{"text":"first"}' } },
            { id: 'c1', type: 'function', function: { name: 'approve', arguments: '{"what":"deploy"}' } },
          ],
        },
        { id: 'settled:c0', role: 'tool', content: '{"echoed":"first"}', toolCallId: 'c0' },
      ]);
      const interrupt = agent.pendingInterrupts[0];
      expect(interrupt?.toolCallId).toBe('c1');
      await agent.runAgent({ runId: 'r1', resume: [{ interruptId: interrupt?.id ?? '', status: 'resolved', payload: { approved: true } }] });
      const stored = await bodyJson(fetch(`${server.url}/v1/ag-ui/threads/snap-4/messages`));
      expect(agent.messages).toEqual(stored);
      expect(agent.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
    } finally {
      await server.close();
    }
  });

  it('a thread larger than the slow-client bound still ends with its snapshot and RUN_FINISHED, for a client that reads', async () => {
    const s = testServer([{ text: 'Read it.' }], { registry: { maxFollowerBytes: 4096 } });
    const long = 'x'.repeat(20_000);
    const res = await s.app.request('/v1/ag-ui/run', json({ threadId: 'snap-5', runId: 'r1', messages: [{ id: 'u1', role: 'user', content: long }] }));
    const events = parseSse(await res.text()).map((f) => JSON.parse(f.data) as { type: string; messages?: { content: string }[] });
    expect(events.map((e) => e.type).slice(-2)).toEqual(['MESSAGES_SNAPSHOT', 'RUN_FINISHED']);
    expect(events.at(-2)?.messages?.[0]?.content).toBe(long);
  });

  it('a shutdown while the thread is read for the snapshot still ends the stream with RUN_FINISHED', async () => {
    let armed = false;
    const store = new MemoryStore();
    const loadThread = store.loadThread.bind(store);
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'arm', arguments: {} }] }, { text: 'Done.' }], {
      store,
      tools: [
        defineTool({ id: 'arm', description: 'Arms the slow read', args: z.object({}), execute: () => ((armed = true), ToolResults.success('arm', {})) }),
      ],
    });
    store.loadThread = async (id: string) => {
      if (!armed) return loadThread(id);
      armed = false;
      void s.registry.shutdown({ graceMs: 0 });
      await new Promise((r) => setTimeout(r, 200));
      return loadThread(id);
    };
    const res = await s.app.request('/v1/ag-ui/run', json({ threadId: 'snap-6', runId: 'r1', messages: [{ id: 'u1', role: 'user', content: 'go' }] }));
    const types = parseSse(await res.text()).map((f) => (JSON.parse(f.data) as { type: string }).type);
    expect(types.at(-1)).toBe('RUN_FINISHED');
  });

  it('a user’s image is in the snapshot as the content part the client sent, not dropped to its text', async () => {
    const s = testServer([{ text: 'A cat.' }]);
    const content = [
      { type: 'text', text: 'what is this?' },
      { type: 'image', source: { type: 'url', value: 'https://example.com/cat.png' } },
    ];
    const res = await s.app.request('/v1/ag-ui/run', json({ threadId: 'snap-7', runId: 'r1', messages: [{ id: 'u1', role: 'user', content }] }));
    const events = parseSse(await res.text()).map((f) => JSON.parse(f.data) as { type: string; messages?: unknown[] });
    expect(events.find((e) => e.type === 'MESSAGES_SNAPSHOT')?.messages?.[0]).toEqual({ id: 'u1', role: 'user', content });
  });

  it('a run whose inference failed: the snapshot goes before its RUN_ERROR', async () => {
    const s = testServer([{ error: 'the model is down' }]);
    const res = await s.app.request('/v1/ag-ui/run', json({ threadId: 'snap-8', runId: 'r1', messages: [{ id: 'u1', role: 'user', content: 'hi' }] }));
    const types = parseSse(await res.text()).map((f) => (JSON.parse(f.data) as { type: string }).type);
    expect(types.slice(-2)).toEqual(['MESSAGES_SNAPSHOT', 'RUN_ERROR']);
  });
});
