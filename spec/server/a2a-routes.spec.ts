import { AgentCard, Message, TaskState, type StreamResponse } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import { createHttpApp } from '../../src/server/http.ts';
import { listen } from '../../src/server/node.ts';
import { bodyJson, gatedTool, parseSse, testServer } from '../support/server.ts';

/** `awaken serve`'s A2A routes, driven by the official @a2a-js/sdk client over a real socket. */

const userMessage = (text: string, extra: Record<string, unknown> = {}) => Message.fromJSON({ messageId: `m-${text.length}-${Math.random()}`.replace('.', ''), role: 'ROLE_USER', parts: [{ text }], ...extra });
const a2a = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('A2A over HTTP+JSON, judged by @a2a-js/sdk', () => {
  it('discovers the card, streams a task to completion, then reads the task', async () => {
    const s = testServer([{ text: ['Hello ', 'from A2A.'] }]);
    const server = await listen(s.app, { port: 0 });
    try {
      const client = await new ClientFactory().createFromUrl(server.url);
      const frames: StreamResponse[] = [];
      for await (const ev of client.sendMessageStream({ message: userMessage('hi'), tenant: '' } as never)) frames.push(ev);
      const states = frames.flatMap((f) => (f.payload?.$case === 'task' || f.payload?.$case === 'statusUpdate' ? [TaskState[f.payload.value.status?.state ?? 0]] : []));
      expect(states[0]).toBe('TASK_STATE_SUBMITTED');
      expect(states.at(-1)).toBe('TASK_STATE_COMPLETED');
      const text = frames.flatMap((f) => (f.payload?.$case === 'artifactUpdate' ? (f.payload.value.artifact?.parts ?? []) : [])).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
      expect(text).toBe('Hello from A2A.');
      const first = frames[0]?.payload;
      const taskId = first?.$case === 'task' ? first.value.id : '';
      const task = await bodyJson(fetch(`${server.url}/v1/a2a/agent/tasks/${taskId}`));
      expect(task).toMatchObject({ id: taskId, status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ artifactId: 'response', parts: [{ text: 'Hello from A2A.' }] }] });
      expect(task.history.map((m: { role: string }) => m.role)).toEqual(['ROLE_USER', 'ROLE_AGENT']);
    } finally {
      await server.close();
    }
  });

  it('message:send waits for the task; an input-required task is answered by a message on it', async () => {
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'pay' } }] }, { text: 'Paid.' }]);
    const first = await bodyJson(s.app.request('/v1/a2a/message:send', a2a({ message: { messageId: 'u1', role: 'ROLE_USER', parts: [{ text: 'pay the bill' }] } })));
    expect(first.task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const taskId = first.task.id;
    const contextId = first.task.contextId;
    const second = await bodyJson(s.app.request('/v1/a2a/message:send', a2a({ message: { messageId: 'u2', role: 'ROLE_USER', taskId, contextId, parts: [{ data: { approved: true } }] } })));
    expect(second.task).toMatchObject({ id: taskId, contextId, status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ parts: [{ text: 'Paid.' }] }] });
  });

  it('refuses bad requests in A2A’s error shape, and an unsupported A2A-Version', async () => {
    const s = testServer([]);
    const bad = await s.app.request('/v1/a2a/message:send', a2a({ message: { messageId: 'x', role: 'ROLE_AGENT', parts: [{ text: 'hi' }] } }));
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: 400, status: 'INVALID_ARGUMENT', details: [{ fieldViolations: [{ field: 'message.role' }] }] } });
    const twoKinds = await bodyJson(s.app.request('/v1/a2a/message:send', a2a({ message: { messageId: 'x', role: 'ROLE_USER', parts: [{ text: 'a', data: {} }] } })));
    expect(twoKinds.error.details[0].fieldViolations[0].field).toBe('message.parts[0]');
    const version = await s.app.request('/v1/a2a/message:send', a2a({}, { 'a2a-version': '0.3' }));
    expect(version.status).toBe(400);
    expect((await bodyJson(version)).error.status).toBe('FAILED_PRECONDITION');
    const missing = await s.app.request('/v1/a2a/tasks/nope');
    expect(missing.status).toBe(404);
    expect((await bodyJson(missing)).error.details[0].reason).toBe('TASK_NOT_FOUND');
    expect((await s.app.request('/v1/a2a/nobody/message:send', a2a({}))).status).toBe(404);
    expect((await s.app.request('/v1/a2a/tasks/nope:cancel', { method: 'POST' })).status).toBe(409);
  });

  it('the extended card needs the bearer token; the public card says how to get it', async () => {
    const s = testServer([]);
    expect((await s.app.request('/v1/a2a/extendedAgentCard')).status).toBe(400);
    const app = createHttpApp({ runtime: s.runtime, store: s.store, registry: s.registry }, { adminToken: 'card-token' });
    const card = await bodyJson(app.request('/.well-known/agent-card.json', { headers: { host: 'agents.example:8080' } }));
    expect(AgentCard.toJSON(AgentCard.fromJSON(card))).toEqual(card);
    expect(card.capabilities.extendedAgentCard).toBe(true);
    expect(card.supportedInterfaces[0].url).toBe('http://agents.example:8080/v1/a2a/agent');
    expect((await app.request('/v1/a2a/extendedAgentCard')).status).toBe(401);
    expect((await app.request('/v1/a2a/extendedAgentCard', { headers: { authorization: 'Bearer nope-token' } })).status).toBe(401);
    const extended = await app.request('/v1/a2a/agent/extendedAgentCard', { headers: { authorization: 'Bearer card-token' } });
    expect(extended.status).toBe(200);
    expect((await bodyJson(extended)).skills.map((k: { id: string }) => k.id)).toEqual(['agent']);
  });

  it('returnImmediately, task listing with paging and filters, and subscribing to a running task', async () => {
    const g = gatedTool();
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'slow', arguments: { tag: 't' } }] }, { text: 'Finished.' }, { text: 'Second.' }], { tools: [g.tool] });
    const immediate = await bodyJson(s.app.request('/v1/a2a/message:send', a2a({ message: { messageId: 'i1', role: 'ROLE_USER', parts: [{ text: 'go' }] }, configuration: { returnImmediately: true } })));
    expect(immediate.task.status.state).toBe('TASK_STATE_WORKING');
    const taskId = immediate.task.id;
    const sub = await s.app.request(`/v1/a2a/tasks/${taskId}:subscribe`, { method: 'POST' });
    expect(sub.status).toBe(200);
    g.open();
    const frames = parseSse(await sub.text()).map((f) => JSON.parse(f.data));
    expect(Object.keys(frames[0])).toEqual(['task']);
    expect(frames.at(-1).statusUpdate.status.state).toBe('TASK_STATE_COMPLETED');
    expect((await s.app.request(`/v1/a2a/tasks/${taskId}:subscribe`, { method: 'POST' })).status).toBe(409);
    await bodyJson(s.app.request('/v1/a2a/message:send', a2a({ message: { messageId: 'i2', role: 'ROLE_USER', parts: [{ text: 'again' }] } })));
    const all = await bodyJson(s.app.request('/v1/a2a/tasks?pageSize=1'));
    expect(all).toMatchObject({ totalSize: 2, pageSize: 1, nextPageToken: '1' });
    const next = await bodyJson(s.app.request(`/v1/a2a/tasks?pageSize=1&pageToken=${all.nextPageToken}&historyLength=1`));
    expect(next.tasks).toHaveLength(1);
    expect(next.nextPageToken).toBe('');
    expect((await bodyJson(s.app.request(`/v1/a2a/tasks?contextId=${immediate.task.contextId}`))).totalSize).toBe(1);
    expect((await bodyJson(s.app.request('/v1/a2a/tasks?status=TASK_STATE_WORKING'))).totalSize).toBe(0);
    expect((await s.app.request('/v1/a2a/tasks?pageToken=zz')).status).toBe(400);
  });
});
