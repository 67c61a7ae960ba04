import { AgentCard, Message, TaskState, type StreamResponse } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import { createHttpApp } from '../../src/server/http.ts';
import { listen } from '../../src/server/node.ts';
import { bodyJson, gatedTool, parseSse, testServer } from '../support/server.ts';

/** `awaken serve`'s A2A routes, driven by the official @a2a-js/sdk client over a real socket. */

const userMessage = (text: string, extra: Record<string, unknown> = {}) =>
  Message.fromJSON({ messageId: `m-${text.length}-${Math.random()}`.replace('.', ''), role: 'ROLE_USER', parts: [{ text }], ...extra });
const a2a = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

describe('A2A over HTTP+JSON, judged by @a2a-js/sdk', () => {
  it('discovers the card, streams a task to completion, then reads the task', async () => {
    const s = testServer([{ text: ['Hello ', 'from A2A.'] }]);
    const server = await listen(s.app, { port: 0 });
    try {
      const client = await new ClientFactory().createFromUrl(server.url);
      const frames: StreamResponse[] = [];
      for await (const ev of client.sendMessageStream({ message: userMessage('hi'), tenant: '' } as never)) frames.push(ev);
      const states = frames.flatMap((f) =>
        f.payload?.$case === 'task' || f.payload?.$case === 'statusUpdate' ? [TaskState[f.payload.value.status?.state ?? 0]] : [],
      );
      expect(states[0]).toBe('TASK_STATE_SUBMITTED');
      expect(states.at(-1)).toBe('TASK_STATE_COMPLETED');
      const text = frames
        .flatMap((f) => (f.payload?.$case === 'artifactUpdate' ? (f.payload.value.artifact?.parts ?? []) : []))
        .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
        .join('');
      expect(text).toBe('Hello from A2A.');
      const first = frames[0]?.payload;
      const taskId = first?.$case === 'task' ? first.value.id : '';
      const task = await bodyJson(fetch(`${server.url}/v1/a2a/agent/tasks/${taskId}`));
      expect(task).toMatchObject({
        id: taskId,
        status: { state: 'TASK_STATE_COMPLETED' },
        artifacts: [{ artifactId: 'response', parts: [{ text: 'Hello from A2A.' }] }],
      });
      expect(task.history.map((m: { role: string }) => m.role)).toEqual(['ROLE_USER', 'ROLE_AGENT']);
    } finally {
      await server.close();
    }
  });

  it('message:send waits for the task; an input-required task is answered by a message on it', async () => {
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'pay' } }] }, { text: 'Paid.' }]);
    const first = await bodyJson(
      s.app.request('/v1/a2a/message:send', a2a({ message: { messageId: 'u1', role: 'ROLE_USER', parts: [{ text: 'pay the bill' }] } })),
    );
    expect(first.task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const taskId = first.task.id;
    const contextId = first.task.contextId;
    const second = await bodyJson(
      s.app.request('/v1/a2a/message:send', a2a({ message: { messageId: 'u2', role: 'ROLE_USER', taskId, contextId, parts: [{ data: { approved: true } }] } })),
    );
    expect(second.task).toMatchObject({ id: taskId, contextId, status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ parts: [{ text: 'Paid.' }] }] });
  });

  it('refuses bad requests in A2A’s error shape, and an unsupported A2A-Version', async () => {
    const s = testServer([]);
    const bad = await s.app.request('/v1/a2a/message:send', a2a({ message: { messageId: 'x', role: 'ROLE_AGENT', parts: [{ text: 'hi' }] } }));
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: 400, status: 'INVALID_ARGUMENT', details: [{ fieldViolations: [{ field: 'message.role' }] }] } });
    const twoKinds = await bodyJson(
      s.app.request('/v1/a2a/message:send', a2a({ message: { messageId: 'x', role: 'ROLE_USER', parts: [{ text: 'a', data: {} }] } })),
    );
    expect(twoKinds.error.details[0].fieldViolations[0].field).toBe('message.parts[0]');
    const version = await s.app.request('/v1/a2a/message:send', a2a({}, { 'a2a-version': '0.3' }));
    expect(version.status).toBe(400);
    expect((await bodyJson(version)).error.status).toBe('FAILED_PRECONDITION');
    const missing = await s.app.request('/v1/a2a/tasks/nope');
    expect(missing.status).toBe(404);
    expect((await bodyJson(missing)).error.details[0].reason).toBe('TASK_NOT_FOUND');
    expect((await s.app.request('/v1/a2a/nobody/message:send', a2a({}))).status).toBe(404);
    const cancel = await s.app.request('/v1/a2a/tasks/nope:cancel', { method: 'POST', headers: { 'content-type': 'application/json' } });
    expect(cancel.status).toBe(404);
    expect((await bodyJson(cancel)).error.details[0].reason).toBe('TASK_NOT_FOUND');
    // A malformed percent-escape in a task id is the client's mistake, never a 500.
    const badEscape = await s.app.request('/v1/a2a/tasks/%E0%A4%A');
    expect(badEscape.status).toBe(400);
    expect((await bodyJson(badEscape)).error.details[0].fieldViolations[0].field).toBe('path');
    expect((await s.app.request('/v1/a2a/tasks/%zz:cancel', { method: 'POST', headers: { 'content-type': 'application/json' } })).status).toBe(400);
  });

  it('a finished task cannot be canceled or written to; an unknown one is not found', async () => {
    const s = testServer([{ text: 'Done.' }]);
    const done = await bodyJson(s.app.request('/v1/a2a/message:send', a2a({ message: { messageId: 'f1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } })));
    expect(done.task.status.state).toBe('TASK_STATE_COMPLETED');
    const cancel = await s.app.request(`/v1/a2a/tasks/${done.task.id}:cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    expect(cancel.status).toBe(409);
    expect((await bodyJson(cancel)).error.details[0].reason).toBe('TASK_NOT_CANCELABLE');
    const onFinished = await s.app.request(
      '/v1/a2a/message:send',
      a2a({ message: { messageId: 'f2', taskId: done.task.id, role: 'ROLE_USER', parts: [{ text: 'more' }] } }),
    );
    expect(onFinished.status).toBe(409);
    expect((await bodyJson(onFinished)).error.details[0].reason).toBe('UNSUPPORTED_OPERATION');
    const onUnknown = await s.app.request(
      '/v1/a2a/message:send',
      a2a({ message: { messageId: 'f3', taskId: 'no-such-task', role: 'ROLE_USER', parts: [{ text: 'more' }] } }),
    );
    expect(onUnknown.status).toBe(404);
  });

  it('a blocking send that ends input-required says what to answer, as the stream does', async () => {
    const s = testServer([
      { tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'pay' } }] },
      { tool_calls: [{ id: 'c2', name: 'approve', arguments: { what: 'pay' } }] },
    ]);
    const blocking = await bodyJson(
      s.app.request('/v1/a2a/message:send', a2a({ message: { messageId: 'q1', contextId: 'ctx-q', role: 'ROLE_USER', parts: [{ text: 'pay' }] } })),
    );
    expect(blocking.task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const message = blocking.task.status.message;
    expect(message.parts[0].text).toContain('approve pay?');
    expect(message.parts[1].data.pendingToolCalls).toEqual([
      {
        toolCallId: 'c1',
        name: 'approve',
        arguments: { what: 'pay' },
        disposition: 'pending_builtin',
        suspensionId: 's-c1',
        action: 'confirm',
        message: 'approve pay?',
      },
    ]);
    expect((await bodyJson(s.app.request(`/v1/a2a/tasks/${blocking.task.id}`))).status.message).toEqual(message);
    // A new message in the context, not on the task, is refused while the task waits (the skipped
    // question is surfaced); with metadata.discardPause the waiting task is canceled and the turn runs.
    const refused = await s.app.request(
      '/v1/a2a/message:send',
      a2a({ message: { messageId: 'q2', contextId: 'ctx-q', role: 'ROLE_USER', parts: [{ text: 'pay again' }] } }),
    );
    expect(refused.status).toBe(409);
    expect((await bodyJson(refused)).error.details[0]).toMatchObject({ reason: 'THREAD_PAUSED', metadata: { contextId: 'ctx-q', taskId: blocking.task.id } });
    const stream = await s.app.request(
      '/v1/a2a/message:stream',
      a2a({ message: { messageId: 'q3', contextId: 'ctx-q', role: 'ROLE_USER', parts: [{ text: 'pay again' }] }, metadata: { discardPause: true } }),
    );
    const frames = parseSse(await stream.text()).map((f) => JSON.parse(f.data));
    const last = frames.at(-1).statusUpdate;
    expect(last.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(last.status.message).toMatchObject({
      messageId: `${last.taskId}:input-required`,
      taskId: last.taskId,
      parts: [message.parts[0], { data: { pendingToolCalls: [{ toolCallId: 'c2', suspensionId: 's-c2' }] } }],
    });
    expect((await bodyJson(s.app.request(`/v1/a2a/tasks/${blocking.task.id}`))).status.state).toBe('TASK_STATE_CANCELED');
  });

  it('history is history: a resent message starts nothing, a follow-up after a tool turn is a new task', async () => {
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'Echoed.' }, { text: 'Again.' }]);
    const first = await bodyJson(
      s.app.request('/v1/a2a/message:send', a2a({ message: { messageId: 'h1', contextId: 'ctx-h', role: 'ROLE_USER', parts: [{ text: 'echo x' }] } })),
    );
    expect(first.task.status.state).toBe('TASK_STATE_COMPLETED');
    const retry = await bodyJson(
      s.app.request('/v1/a2a/message:send', a2a({ message: { messageId: 'h1', contextId: 'ctx-h', role: 'ROLE_USER', parts: [{ text: 'echo x' }] } })),
    );
    expect(retry.task.id).toBe(first.task.id);
    const followUp = await s.app.request(
      '/v1/a2a/message:send',
      a2a({
        message: {
          messageId: 'h2',
          contextId: 'ctx-h',
          role: 'ROLE_USER',
          parts: [{ text: 'and now?' }, { data: { toolResult: { id: 'c1', outcome: 'succeeded', data: { echoed: 'x' } } } }],
        },
      }),
    );
    expect(followUp.status).toBe(200);
    const second = await bodyJson(followUp);
    expect(second.task.id).not.toBe(first.task.id);
    expect(second.task.status.state).toBe('TASK_STATE_COMPLETED');
    expect((await bodyJson(s.app.request('/v1/a2a/tasks?contextId=ctx-h'))).totalSize).toBe(2);
  });

  it('the extended card needs the bearer token; the public card says how to get it', async () => {
    const s = testServer([]);
    expect((await s.app.request('/v1/a2a/extendedAgentCard')).status).toBe(400);
    const app = createHttpApp({ runtime: s.runtime, store: s.store, registry: s.registry }, { adminToken: 'card-token', allowedHosts: ['agents.example'] });
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
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'slow', arguments: { tag: 't' } }] }, { text: 'Finished.' }, { text: 'Second.' }], {
      tools: [g.tool],
    });
    const immediate = await bodyJson(
      s.app.request(
        '/v1/a2a/message:send',
        a2a({ message: { messageId: 'i1', role: 'ROLE_USER', parts: [{ text: 'go' }] }, configuration: { returnImmediately: true } }),
      ),
    );
    expect(immediate.task.status.state).toBe('TASK_STATE_WORKING');
    const taskId = immediate.task.id;
    const sub = await s.app.request(`/v1/a2a/tasks/${taskId}:subscribe`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    expect(sub.status).toBe(200);
    g.open();
    const frames = parseSse(await sub.text()).map((f) => JSON.parse(f.data));
    expect(Object.keys(frames[0])).toEqual(['task']);
    expect(frames.at(-1).statusUpdate.status.state).toBe('TASK_STATE_COMPLETED');
    expect((await s.app.request(`/v1/a2a/tasks/${taskId}:subscribe`, { method: 'POST', headers: { 'content-type': 'application/json' } })).status).toBe(409);
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

describe('A2A over JSON-RPC, driven by the SDK JSON-RPC client transport', () => {
  const jsonRpcClient = async (url: string, wire: { method: string; body: unknown }[]) => {
    const fetchImpl: typeof fetch = async (input, init) => {
      const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
      if (body !== undefined) wire.push({ method: body.method, body });
      return fetch(input, init);
    };
    const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      preferredTransports: ['JSONRPC'],
    });
    return new ClientFactory(options).createFromUrl(url);
  };

  it('the card advertises both bindings; send, stream, answer input-required, get, list, cancel and subscribe', async () => {
    const g = gatedTool();
    const s = testServer(
      [
        { text: 'Hi over JSON-RPC.' },
        { tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'pay' } }] },
        { text: 'Paid.' },
        { tool_calls: [{ id: 'c2', name: 'slow', arguments: { tag: 't' } }] },
        { text: 'Slow done.' },
      ],
      { tools: [g.tool, (await import('../support/runtime.ts')).approvalTool] },
    );
    const server = await listen(s.app, { port: 0 });
    try {
      const card = await bodyJson(fetch(`${server.url}/.well-known/agent-card.json`));
      expect(card.supportedInterfaces.map((i: { protocolBinding: string; url: string }) => [i.protocolBinding, i.url])).toEqual([
        ['HTTP+JSON', `${server.url}/v1/a2a/agent`],
        ['JSONRPC', `${server.url}/v1/a2a/agent/jsonrpc`],
      ]);
      const wire: { method: string; body: unknown }[] = [];
      const client = await jsonRpcClient(server.url, wire);

      const sent = await client.sendMessage({ message: userMessage('hello'), tenant: '' } as never);
      const task = sent as unknown as { id: string; contextId: string; status?: { state: number } };
      expect(TaskState[task.status?.state ?? 0]).toBe('TASK_STATE_COMPLETED');

      const frames: StreamResponse[] = [];
      for await (const ev of client.sendMessageStream({ message: userMessage('pay it', { contextId: task.contextId }), tenant: '' } as never)) frames.push(ev);
      expect(frames.every((f) => f.payload?.$case !== undefined)).toBe(true);
      const last = frames.at(-1)?.payload;
      expect(last?.$case === 'statusUpdate' ? TaskState[last.value.status?.state ?? 0] : '').toBe('TASK_STATE_INPUT_REQUIRED');
      const waitingId = last?.$case === 'statusUpdate' ? last.value.taskId : '';

      const answered = (await client.sendMessage({
        message: userMessage('yes', { taskId: waitingId, contextId: task.contextId, parts: [{ data: { approved: true } }] }),
        tenant: '',
      } as never)) as unknown as {
        id: string;
        status?: { state: number };
      };
      expect(answered.id).toBe(waitingId);
      expect(TaskState[answered.status?.state ?? 0]).toBe('TASK_STATE_COMPLETED');

      const got = await client.getTask({ id: waitingId, tenant: '' } as never);
      expect(TaskState[got.status?.state ?? 0]).toBe('TASK_STATE_COMPLETED');
      const listed = await client.listTasks({ contextId: task.contextId, tenant: '' } as never);
      expect(listed.tasks.map((t) => t.id).sort()).toEqual([task.id, waitingId].sort());

      const running = (await client.sendMessage({
        message: userMessage('slowly', { contextId: 'ctx-slow' }),
        configuration: { returnImmediately: true },
        tenant: '',
      } as never)) as unknown as { id: string };
      const resubscribed: StreamResponse[] = [];
      const reading = (async () => {
        for await (const ev of client.resubscribeTask({ id: running.id, tenant: '' } as never)) resubscribed.push(ev);
      })();
      await new Promise((r) => setTimeout(r, 50));
      // Cancelling is cooperative: the running tool finishes (its gate opens), then the task stops.
      const canceling = client.cancelTask({ id: running.id, tenant: '' } as never);
      await new Promise((r) => setTimeout(r, 20));
      g.open();
      const canceled = await canceling;
      await reading;
      expect(TaskState[canceled.status?.state ?? 0]).toBe('TASK_STATE_CANCELED');
      expect(resubscribed[0]?.payload?.$case).toBe('task');

      await expect(client.cancelTask({ id: 'no-such-task', tenant: '' } as never)).rejects.toMatchObject({ name: 'TaskNotFoundError' });
      await expect(client.getTask({ id: 'no-such-task', tenant: '' } as never)).rejects.toMatchObject({ name: 'TaskNotFoundError' });
      await expect(client.cancelTask({ id: task.id, tenant: '' } as never)).rejects.toMatchObject({ name: 'TaskNotCancelableError' });
      expect([...new Set(wire.map((w) => w.method))].sort()).toEqual([
        'CancelTask',
        'GetTask',
        'ListTasks',
        'SendMessage',
        'SendStreamingMessage',
        'SubscribeToTask',
      ]);
    } finally {
      g.open();
      await server.close();
    }
  });

  it('answers malformed JSON-RPC with the JSON-RPC error codes', async () => {
    const s = testServer([]);
    const rpc = (body: string) => s.app.request('/v1/a2a/jsonrpc', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect((await bodyJson(rpc('{nope'))).error.code).toBe(-32700);
    expect((await bodyJson(rpc('{"id":1}'))).error.code).toBe(-32600);
    expect(await bodyJson(rpc('{"jsonrpc":"2.0","id":7,"method":"message/send","params":{}}'))).toMatchObject({ id: 7, error: { code: -32601 } });
    const bad = await bodyJson(
      rpc('{"jsonrpc":"2.0","id":8,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]}}}'),
    );
    expect(bad).toMatchObject({ id: 8, error: { code: -32602 } });
    const missing = await bodyJson(rpc('{"jsonrpc":"2.0","id":9,"method":"GetTask","params":{"id":"nope"}}'));
    expect(missing).toMatchObject({ id: 9, error: { code: -32001, data: [{ reason: 'TASK_NOT_FOUND' }] } });
  });
});
