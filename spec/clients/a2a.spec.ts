import { AgentCard, Message, StreamResponse, Task, TaskState, type StreamResponse as StreamFrame } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoAndSlow, type ServeProcess } from '../support/serve-process.ts';

/**
 * The A2A SDK client (`@a2a-js/sdk` 1.3.0) against a real `awaken serve` process, over each binding
 * the agent card advertises (HTTP+JSON and JSON-RPC): the card, blocking and streaming sends, an
 * input-required task answered, get, list, cancel (running, finished, unknown) and resubscribe.
 * Every body on the wire goes through the SDK's codec and must come back unchanged, and no state
 * or role may decode as UNRECOGNIZED (the client's blind spots).
 */

let server: ServeProcess;
beforeAll(async () => {
  // Two agents: the demo on the conversation script, and a slow one (a run to cancel while it works).
  server = await startDemoAndSlow();
});
afterAll(async () => {
  await server.stop();
});

/** The raw bodies the client received, to be judged by the codec. */
interface Wire {
  readonly bodies: { readonly method: string; readonly body: unknown }[];
  readonly sse: unknown[];
}

function clientFactory(binding: 'HTTP+JSON' | 'JSONRPC', wire: Wire): ClientFactory {
  const fetchImpl: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    const type = response.headers.get('content-type') ?? '';
    const request = typeof init?.body === 'string' ? (JSON.parse(init.body) as { method?: string }) : {};
    if (type.startsWith('text/event-stream') && response.body !== null) {
      const [mine, theirs] = response.body.tee();
      void new Response(theirs).text().then((t) => {
        for (const f of t.split('\n\n')) if (f.startsWith('data: ')) wire.sse.push(JSON.parse(f.slice(6)));
      });
      return new Response(mine, { status: response.status, headers: response.headers });
    }
    const text = await response.text();
    if (text !== '' && type.includes('json')) wire.bodies.push({ method: request.method ?? String(input), body: JSON.parse(text) });
    return new Response(text, { status: response.status, headers: response.headers });
  };
  const transports = binding === 'JSONRPC' ? [new JsonRpcTransportFactory({ fetchImpl })] : [new RestTransportFactory({ fetchImpl })];
  return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports, preferredTransports: [binding] }));
}

const user = (text: string, extra: Record<string, unknown> = {}): Message =>
  Message.fromJSON({ messageId: `m-${Math.random().toString(36).slice(2)}`, role: 'ROLE_USER', parts: [{ text }], ...extra });
const stateOf = (t: Task): string => TaskState[t.status?.state ?? 0] ?? '?';
const textOf = (t: Task): string =>
  (t.artifacts ?? [])
    .flatMap((a) => a.parts)
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .join('');

/** Every body must be canonical A2A 1.0 JSON: the SDK codec gives it back unchanged. */
function expectCanonical(wire: Wire): void {
  for (const frame of wire.sse) {
    const result = (frame as { result?: unknown }).result ?? frame;
    expect(StreamResponse.toJSON(StreamResponse.fromJSON(result))).toEqual(result);
  }
  for (const { body } of wire.bodies) {
    const result = (body as { result?: unknown }).result ?? body;
    if (typeof result !== 'object' || result === null || 'error' in result) continue;
    if ('task' in result) expect(Task.toJSON(Task.fromJSON((result as { task: unknown }).task))).toEqual((result as { task: unknown }).task);
    else if ('id' in result && 'status' in result) expect(Task.toJSON(Task.fromJSON(result))).toEqual(result);
    else if ('supportedInterfaces' in result) expect(AgentCard.toJSON(AgentCard.fromJSON(result))).toEqual(result);
  }
}

const frameState = (f: StreamFrame): string | undefined => {
  const p = f.payload;
  if (p?.$case === 'task' || p?.$case === 'statusUpdate') return TaskState[p.value.status?.state ?? 0];
  return undefined;
};

describe.each(['HTTP+JSON', 'JSONRPC'] as const)('@a2a-js/sdk client over %s against awaken serve', (binding) => {
  it('card, blocking send, streaming send to input-required, the answer, get and list', async () => {
    const wire: Wire = { bodies: [], sse: [] };
    const client: Client = await clientFactory(binding, wire).createFromUrl(server.url);
    const card = await client.getAgentCard();
    expect(card.supportedInterfaces.map((i) => i.protocolBinding)).toEqual(['HTTP+JSON', 'JSONRPC']);
    const context = `a2a-${binding === 'JSONRPC' ? 'rpc' : 'rest'}`;

    const first = (await client.sendMessage({ message: user('weather in Oslo?', { contextId: context }), tenant: '' } as never)) as Task;
    expect(stateOf(first)).toBe('TASK_STATE_COMPLETED');
    expect(textOf(first)).toBe('It is sunny in Oslo, 10 °C.');

    const frames: StreamFrame[] = [];
    for await (const f of client.sendMessageStream({ message: user('delete the branch', { contextId: context }), tenant: '' } as never)) frames.push(f);
    expect(frames.every((f) => f.payload?.$case !== undefined)).toBe(true);
    expect(
      frames
        .map(frameState)
        .filter((s) => s !== undefined)
        .every((s) => s !== 'UNRECOGNIZED'),
    ).toBe(true);
    const last = frames.at(-1)?.payload;
    expect(last?.$case).toBe('statusUpdate');
    const waiting = last?.$case === 'statusUpdate' ? last.value : undefined;
    expect(TaskState[waiting?.status?.state ?? 0]).toBe('TASK_STATE_INPUT_REQUIRED');
    const ask = waiting?.status?.message?.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
    expect(ask).toContain('Confirm: delete the branch?');

    const answered = (await client.sendMessage({
      message: Message.fromJSON({ messageId: 'yes-1', role: 'ROLE_USER', taskId: waiting?.taskId, contextId: context, parts: [{ data: { approved: true } }] }),
      tenant: '',
    } as never)) as Task;
    expect(answered.id).toBe(waiting?.taskId);
    expect(stateOf(answered)).toBe('TASK_STATE_COMPLETED');
    expect(textOf(answered)).toBe('Done: the branch is deleted.');

    const got = await client.getTask({ id: answered.id, historyLength: 10, tenant: '' } as never);
    expect(stateOf(got)).toBe('TASK_STATE_COMPLETED');
    expect(got.history.map((m) => m.role).every((r) => r === 1 || r === 2)).toBe(true);
    const listed = await client.listTasks({ contextId: context, tenant: '' } as never);
    expect(listed.tasks.map((t) => t.id).sort()).toEqual([first.id, answered.id].sort());
    expectCanonical(wire);
  });

  it('cancel: a running task (its resubscribed stream ends canceled), a finished one (not cancelable), an unknown one (not found)', async () => {
    const wire: Wire = { bodies: [], sse: [] };
    const slow: Client = await clientFactory(binding, wire).createFromUrl(`${server.url}/v1/a2a/slow/`);
    expect((await slow.getAgentCard()).name).toBe('slow');
    const running = (await slow.sendMessage({ message: user('take your time'), configuration: { returnImmediately: true }, tenant: '' } as never)) as Task;
    expect(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']).toContain(stateOf(running));
    const followed: StreamFrame[] = [];
    const following = (async () => {
      for await (const f of slow.resubscribeTask({ id: running.id, tenant: '' } as never)) followed.push(f);
    })();
    await new Promise((r) => setTimeout(r, 300));
    const canceled = await slow.cancelTask({ id: running.id, tenant: '' } as never);
    await following;
    expect(stateOf(canceled)).toBe('TASK_STATE_CANCELED');
    expect(followed[0]?.payload?.$case).toBe('task');
    expect(frameState(followed.at(-1) as StreamFrame)).toBe('TASK_STATE_CANCELED');
    await expect(slow.cancelTask({ id: running.id, tenant: '' } as never)).rejects.toMatchObject({ name: 'TaskNotCancelableError' });
    await expect(slow.cancelTask({ id: 'no-such-task', tenant: '' } as never)).rejects.toMatchObject({ name: 'TaskNotFoundError' });
    await expect(slow.getTask({ id: 'no-such-task', tenant: '' } as never)).rejects.toMatchObject({ name: 'TaskNotFoundError' });
    expectCanonical(wire);
  });
});
