import { HttpAgent } from '@ag-ui/client';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { ToolResults } from '../../src/contract/tool.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { listen } from '../../src/server/node.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { echoTool } from '../support/runtime.ts';
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
});
