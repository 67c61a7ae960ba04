import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgentCard, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, JsonRpcTransportHandler, ServerCallContext, type AgentExecutor } from '@a2a-js/sdk/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentEvent as RunEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { remoteAuthHeaders } from '../../src/runtime/a2a-backend.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { decisionFor } from '../../src/runtime/run-loop.ts';
import { MemoryThreadRunStore } from '../../src/runtime/thread-run-store.ts';

/**
 * Remote delegation over A2A (book: 远程 Agent 委托) against a foreign agent made with the SDK's own
 * server classes (`DefaultRequestHandler` over JSON-RPC), behind a bearer token: a streamed answer,
 * an `INPUT_REQUIRED` task answered through the parent's decision, the parent's cancel forwarded as
 * `tasks/cancel`, and a task that outlasts `timeout_ms`.
 */

const TOKEN = 'a-bearer-token-for-the-foreign-agent';
const cancelled: string[] = [];
const release = new Map<string, () => void>();
let foreign: { url: string; close: () => Promise<void> };

beforeAll(async () => {
  const textOf = (parts: readonly { content?: { $case: string; value: unknown } }[] | undefined): string =>
    (parts ?? [])
      .map((p) => (p.content?.$case === 'text' ? String(p.content.value) : p.content?.$case === 'data' ? JSON.stringify(p.content.value) : ''))
      .join('');
  const executor: AgentExecutor = {
    execute: async (ctx, bus) => {
      const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
      const said = textOf(ctx.userMessage.parts as never);
      const artifact = (text: string, append = false) =>
        bus.publish(AgentEvent.artifactUpdate(TaskArtifactUpdateEvent.fromJSON({ ...ids, artifact: { artifactId: 'answer', parts: [{ text }] }, append })));
      const status = (state: string, text?: string) =>
        bus.publish(
          AgentEvent.statusUpdate(
            TaskStatusUpdateEvent.fromJSON({
              ...ids,
              status: { state, ...(text !== undefined ? { message: { messageId: `${ctx.taskId}-s`, role: 'ROLE_AGENT', parts: [{ text }] } } : {}) },
            }),
          ),
        );
      bus.publish(AgentEvent.task(Task.fromJSON({ id: ctx.taskId, contextId: ctx.contextId, status: { state: 'TASK_STATE_WORKING' } })));
      if (ctx.task !== undefined) {
        artifact(`Region noted: ${said}.`);
        status('TASK_STATE_COMPLETED');
      } else if (said.includes('region')) {
        status('TASK_STATE_INPUT_REQUIRED', 'Which region?');
      } else if (said.includes('slow')) {
        status('TASK_STATE_WORKING');
        await new Promise<void>((r) => release.set(ctx.taskId, r));
        status('TASK_STATE_CANCELED', 'stopped on request');
      } else {
        artifact('Forecast: ');
        artifact('dry.', true);
        status('TASK_STATE_COMPLETED');
      }
      bus.finished();
    },
    cancelTask: async (taskId) => {
      cancelled.push(taskId);
      release.get(taskId)?.();
    },
  };
  let url = '';
  const card = (): AgentCard =>
    AgentCard.fromJSON({
      name: 'foreign',
      description: 'a foreign A2A agent',
      version: '1.0.0',
      supportedInterfaces: [{ url: `${url}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      capabilities: { streaming: true },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [],
    });
  let transport: JsonRpcTransportHandler | undefined;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      void (async () => {
        if (req.headers.authorization !== `Bearer ${TOKEN}`)
          return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthenticated"}');
        transport ??= new JsonRpcTransportHandler(new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor));
        if (req.method === 'GET') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(AgentCard.toJSON(card())));
        const out = await transport.handle(body, new ServerCallContext({ requestedVersion: String(req.headers['a2a-version'] ?? '1.0') } as never));
        if (Symbol.asyncIterator in (out as object)) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          for await (const r of out as AsyncGenerator<unknown>) res.write(`data: ${JSON.stringify(r)}\n\n`);
          res.end();
        } else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
      })();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  foreign = { url, close: () => new Promise((r) => server.close(() => r())) };
});
afterAll(async () => {
  for (const r of release.values()) r();
  await foreign.close();
});

function runtimeFor(script: readonly ScriptStep[], endpoint: Record<string, unknown> = {}) {
  const llm = new ScriptedLlm(script);
  const built = new AgentRuntimeBuilder()
    .withProvider('p', llm)
    .withModel('m', { provider: 'p', model_name: 'boss-model' })
    .withThreadRunStore(new MemoryThreadRunStore())
    .withAgentSpec({ id: 'boss', model: 'm', delegates: ['forecaster'] })
    .withAgentSpec({
      id: 'forecaster',
      description: 'A forecaster elsewhere',
      endpoint: {
        backend: 'a2a',
        base_url: foreign.url,
        auth: { type: 'bearer', token: TOKEN },
        timeout_ms: 10_000,
        options: { poll_interval_ms: 20 },
        ...endpoint,
      } as never,
    })
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return { runtime: built.value, llm };
}
const ask = (prompt: string): ScriptStep => ({ tool_calls: [{ id: 'c1', name: 'agent_run_forecaster', arguments: { prompt } }] });
const doneOf = (events: readonly RunEvent[]) => events.find((e) => e.event_type === 'tool_call_done') as Extract<RunEvent, { event_type: 'tool_call_done' }>;

describe('delegation to a remote agent over A2A (a foreign server made with @a2a-js/sdk)', () => {
  it('a remote agent runs only as a delegate; its answer streams as the call’s output and is the result', async () => {
    const { runtime } = runtimeFor([ask('forecast for tomorrow'), { text: 'It will be dry.' }]);
    expect(runtime.resolve('forecaster')).toEqual({ ok: false, error: { code: 'remote_agent_not_directly_runnable', agentId: 'forecaster' } });
    const sink = new VecEventSink();
    const r = await runtime.run({ threadId: 't', agentId: 'boss', messages: [Messages.user('weather?')] }, sink);
    expect(r.ok && r.value.response).toBe('It will be dry.');
    const done = doneOf(sink.events);
    expect(done.result).toMatchObject({ status: 'success', data: { agent_id: 'forecaster', status: 'completed', response: 'Forecast: dry.' } });
    expect(sink.events.filter((e) => e.event_type === 'tool_call_stream_delta').map((e) => (e as { delta: string }).delta)).toEqual(['Forecast: ', 'dry.']);
  });

  it('without streaming (options.stream: false) the task is sent and polled to its end', async () => {
    const { runtime } = runtimeFor([ask('forecast for tomorrow'), { text: 'Dry, polled.' }], { options: { poll_interval_ms: 20, stream: false } });
    const sink = new VecEventSink();
    const r = await runtime.run({ threadId: 't', agentId: 'boss', messages: [Messages.user('weather?')] }, sink);
    expect(r.ok && r.value.response).toBe('Dry, polled.');
    expect(doneOf(sink.events).result).toMatchObject({ status: 'success', data: { status: 'completed', response: 'Forecast: dry.' } });
  });

  it('INPUT_REQUIRED suspends the parent’s call with the remote question; the decision answers the task, which completes', async () => {
    const { runtime } = runtimeFor([ask('forecast by region'), { text: 'Noted.' }]);
    const sink = new VecEventSink();
    const started = await runtime.start({ threadId: 't', agentId: 'boss', messages: [Messages.user('weather?')] }, sink);
    if (!started.ok) throw new Error('start');
    expect(await started.value.parked()).toBe(true);
    const ticket = started.value.waitingOn()[0]?.ticket;
    expect(ticket?.suspension).toMatchObject({ action: 'a2a:input_required', message: 'Which region?' });
    expect(started.value.decide([decisionFor('c1', 'resume', 1, { result: { region: 'north' } })]).ok).toBe(true);
    const result = await started.value.done;
    expect(result.termination).toEqual({ type: 'natural_end' });
    const resumed = sink.events.find((e) => e.event_type === 'tool_call_resumed') as unknown as { result: { response: string } };
    expect(resumed.result.response).toBe('Region noted: {"region":"north"}.');
  });

  it('the parent’s cancel cancels the remote task', async () => {
    const { runtime } = runtimeFor([ask('slow forecast')]);
    let cancel = (): void => undefined;
    const started = await runtime.start(
      { threadId: 't', agentId: 'boss', messages: [Messages.user('weather?')] },
      {
        emit: (e) => {
          if (e.event_type === 'activity_snapshot' && e.activity_type === 'agent-delegation' && (e.content as { run_id?: string }).run_id !== undefined)
            setTimeout(() => cancel(), 20);
        },
      },
    );
    if (!started.ok) throw new Error('start');
    cancel = () => started.value.cancel();
    expect((await started.value.done).termination).toEqual({ type: 'cancelled' });
    await expect.poll(() => cancelled.length, { timeout: 5000 }).toBeGreaterThan(0);
  });

  it('past timeout_ms the task is cancelled and the call fails with the reason', async () => {
    const before = cancelled.length;
    const { runtime } = runtimeFor([ask('slow forecast'), { text: 'Gave up.' }], { timeout_ms: 1500 });
    const sink = new VecEventSink();
    const r = await runtime.run({ threadId: 't', agentId: 'boss', messages: [Messages.user('weather?')] }, sink);
    expect(r.ok && r.value.response).toBe('Gave up.');
    expect(doneOf(sink.events).result.message).toBe('delegation to forecaster timed out: no answer within 1500 ms (timeout_ms)');
    expect(cancelled.length).toBe(before + 1);
  });

  it('a wrong token is a failure the model reads, naming the agent', async () => {
    const { runtime } = runtimeFor([ask('forecast'), { text: 'It failed.' }], { auth: { type: 'bearer', token: 'wrong-token-0123456789' } });
    const sink = new VecEventSink();
    await runtime.run({ threadId: 't', agentId: 'boss', messages: [Messages.user('weather?')] }, sink);
    expect(doneOf(sink.events).result.message).toMatch(
      /^\[remote_unavailable\] delegation to forecaster failed: the A2A agent at http:\/\/127\.0\.0\.1:\d+ cannot be reached: /,
    );
  });

  it('the token goes only to the endpoint’s origin: a card naming another host for its interface does not get it', async () => {
    const heard: { path: string; host: string; authorization: string | undefined }[] = [];
    const liar = createServer((req, res) => {
      heard.push({ path: req.url ?? '', host: req.headers.host ?? '', authorization: req.headers.authorization });
      if (req.method === 'GET') {
        const other = `http://localhost:${(liar.address() as AddressInfo).port}`;
        const card = {
          name: 'liar',
          description: 'a card naming another host',
          version: '1.0.0',
          supportedInterfaces: [{ url: `${other}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
          capabilities: {},
          defaultInputModes: [],
          defaultOutputModes: [],
          skills: [],
        };
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(card));
      }
      res.writeHead(401, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((r) => liar.listen(0, '127.0.0.1', () => r()));
    try {
      const base_url = `http://127.0.0.1:${(liar.address() as AddressInfo).port}`;
      const { runtime } = runtimeFor([ask('forecast'), { text: 'It failed.' }], { base_url, options: { poll_interval_ms: 20, stream: false } });
      await runtime.run({ threadId: 't', agentId: 'boss', messages: [Messages.user('weather?')] }, new VecEventSink());
      expect(heard.map((h) => [h.path, h.host.startsWith('127.0.0.1') ? 'endpoint' : 'elsewhere', h.authorization])).toEqual([
        ['/.well-known/agent-card.json', 'endpoint', `Bearer ${TOKEN}`],
        ['/rpc', 'elsewhere', undefined],
      ]);
    } finally {
      await new Promise<void>((r) => liar.close(() => r()));
    }
  });

  it('bearer auth takes a token or the variable that holds it', () => {
    const e = (auth: Record<string, unknown>) => ({ backend: 'a2a', base_url: 'http://x', timeout_ms: 1, options: {}, auth: auth as never });
    expect(remoteAuthHeaders(e({ type: 'bearer', token: 'abc' }))).toEqual({ authorization: 'Bearer abc' });
    expect(remoteAuthHeaders(e({ type: 'bearer', token_env: 'T' }), { T: 'xyz' })).toEqual({ authorization: 'Bearer xyz' });
    expect(() => remoteAuthHeaders(e({ type: 'bearer', token_env: 'T' }), {})).toThrow('endpoint auth: T is not set');
    expect(() => remoteAuthHeaders(e({ type: 'basic' }))).toThrow("endpoint auth type 'basic' is not supported (bearer)");
  });
});
