import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Message, type Task, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { buildResumeArray, HttpAgent } from '@ag-ui/client';
import { DefaultChatTransport, type UIMessage } from 'ai';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolResults } from '../../src/contract/tool.ts';
import type { DeterministicEnv } from '../../src/runtime/env.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { listen } from '../../src/server/node.ts';
import { recoverRuns } from '../../src/server/recovery.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { PostgresBus } from '../../src/stores/postgres-bus.ts';
import { PostgresStore } from '../../src/stores/postgres.ts';
import { SqliteStore } from '../../src/stores/sqlite.ts';
import type { Store } from '../../src/runtime/store.ts';
import { dropPrefix, PG_URL } from '../support/postgres.ts';
import { HeadlessChat } from '../support/ai-chat.ts';
import { approvalTool, echoTool, namedEnv } from '../support/runtime.ts';
import { bodyJson, json, readFrames, testServer, type SseFrame, type TestServer } from '../support/server.ts';

/**
 * Durable HITL (issue: the server under faults): a run waiting for a decision outlives the process
 * that parked it. Shut down, killed (its lease left to expire) or restarted, its decision still
 * resumes it — on the same thread log, under the same run id — and only a run that was executing
 * when its process died is marked interrupted.
 */

const go = (threadId: string, text = 'deploy it') => json({ threadId, messages: [{ role: 'user', content: text }] });
const data = (f: SseFrame) => JSON.parse(f.data) as { event_type: string; run_id?: string; target_id?: string; termination?: { type: string; value?: string } };
const APPROVE = [{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'deploy' } }] }];
const sqliteFile = (): string => join(mkdtempSync(join(tmpdir(), 'awaken-hitl-')), 'awaken.db');

/** Starts a run that parks on an approval; returns its id and the last `seq` of its stream. */
async function parkOn(s: TestServer, threadId: string): Promise<{ runId: string; lastSeq: number }> {
  const r = await s.app.request('/v1/runs', go(threadId));
  expect(r.status).toBe(200);
  const runId = r.headers.get('x-awaken-run-id') as string;
  const frames = (await r.text()).split('\n\n').filter((x) => x.startsWith('id:'));
  const last = frames.at(-1) ?? '';
  expect(last).toContain('"suspended"');
  return { runId, lastSeq: Number(/^id: ?(\d+)/.exec(last)?.[1]) };
}

/** A server restarted on the same SQLite file, as `awaken serve` starts: unfinished runs recovered first. */
async function restartOn(path: string, script: Parameters<typeof testServer>[0], tools = [echoTool, approvalTool]): Promise<TestServer> {
  const store = new SqliteStore(path);
  await recoverRuns(store, Date.now());
  return testServer(script, { store, tools, env: namedEnv('restarted') });
}

describe('a run waiting for a decision survives its process', () => {
  it('shutdown leaves it waiting; after a restart the decision resumes it on the same thread log, under the same run id', async () => {
    const path = sqliteFile();
    const a = testServer(APPROVE, { store: new SqliteStore(path) });
    const { runId, lastSeq } = await parkOn(a, 't');
    await a.registry.shutdown({ graceMs: 1_000 });
    expect(await a.store.getRun(runId)).toMatchObject({ status: 'waiting' });
    expect(await a.store.getLease('t')).toBeUndefined();
    await a.store.close();

    const b = await restartOn(path, [{ text: 'Deployed.' }]);
    expect(await b.store.getRun(runId)).toMatchObject({ status: 'waiting' });
    expect(await bodyJson(b.app.request('/v1/threads/t'))).toMatchObject({ active_run_id: runId, active_run_status: 'waiting' });
    // The thread is paused on it, as it was before the restart.
    const refused = await b.app.request('/v1/runs', go('t', 'something else'));
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ code: 'thread_paused', run_id: runId });

    const follower = readFrames(
      await b.app.request('/v1/threads/t/stream', { headers: { 'last-event-id': String(lastSeq) } }),
      (fs) => fs.some((f) => data(f).event_type === 'run_finish'),
      5_000,
    );
    const decided = await b.app.request(`/v1/runs/${runId}/decision`, json({ toolCallId: 'c1', action: 'resume', payload: { ok: true } }));
    expect(decided.status).toBe(202);
    const frames = await follower;
    const events = frames.map(data);
    expect(events[0]).toMatchObject({ event_type: 'run_start', run_id: runId });
    expect(events).toContainEqual(expect.objectContaining({ event_type: 'tool_call_resumed', target_id: 'c1' }));
    expect(events.at(-1)).toMatchObject({ event_type: 'run_finish', run_id: runId, termination: { type: 'natural_end' } });
    // The thread's sequence goes on exactly after the frame the client held before the restart.
    expect(Number(frames[0]?.id)).toBe(lastSeq + 1);
    expect(frames.map((f) => Number(f.id))).toEqual(frames.map((_, i) => lastSeq + 1 + i));

    await expect.poll(async () => (await b.store.getRun(runId))?.status).toBe('done');
    const messages = (await bodyJson(b.app.request('/v1/threads/t/messages'))).messages as { role: string; content: unknown }[];
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(JSON.stringify(messages[2]?.content)).toContain('deploy');
    expect(await b.store.loadRunState(runId)).toBeUndefined();
    await b.registry.shutdown();
    await b.store.close();
  });

  it('an instance that stops renewing leaves its parked run waiting; another instance takes it up when the decision comes', async () => {
    const store = new MemoryStore();
    const TTL = 10_000;
    const a = testServer(APPROVE, { store, registry: { leases: { owner: 'A', ttlMs: TTL } } });
    const b = testServer([{ text: 'Deployed by B.' }], { store, env: namedEnv('b'), registry: { leases: { owner: 'B', ttlMs: TTL } } });
    const { runId } = await parkOn(a, 'k');
    expect(await store.getLease('k')).toMatchObject({ owner: 'A', run_id: runId });
    // A is gone (it never renews again): B's sweep leaves the run waiting and frees the lease.
    (b.runtime.env as DeterministicEnv).advance(TTL + 1);
    expect(await b.registry.sweepLeases()).toEqual([]);
    expect(await store.getRun(runId)).toMatchObject({ status: 'waiting' });
    expect(await store.getLease('k')).toBeUndefined();
    expect(await bodyJson(b.app.request('/v1/threads/k'))).toMatchObject({ active_run_id: runId, active_run_status: 'waiting' });

    const follower = readFrames(
      await b.app.request('/v1/threads/k/stream'),
      (fs) => fs.some((f) => data(f).event_type === 'run_finish' && data(f).termination?.type === 'natural_end'),
      5_000,
    );
    expect((await b.app.request(`/v1/runs/${runId}/decision`, json({ toolCallId: 'c1', action: 'resume' }))).status).toBe(202);
    const events = (await follower).map(data);
    expect(events.filter((e) => e.event_type === 'run_start').map((e) => e.run_id)).toEqual([runId]);
    await expect.poll(async () => (await store.getRun(runId))?.status).toBe('done');
    await expect.poll(async () => store.getLease('k')).toBeUndefined();
    expect(a.llm.requests).toHaveLength(1);
    expect(b.llm.requests).toHaveLength(1);
    await a.registry.shutdown();
    await b.registry.shutdown();
  });

  it('a run that was executing its resumed call when its process died is marked interrupted, not left waiting', async () => {
    const store = new MemoryStore();
    const TTL = 10_000;
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    const resumedStarted: string[] = [];
    // Suspends; resumed, it runs until the test lets it go (the process "dies" meanwhile).
    const slowAfterDecision = defineTool({
      id: 'approve',
      description: 'needs a decision, then takes a while',
      args: z.object({ what: z.string() }).loose(),
      execute: async (args, ctx) => {
        if (ctx.resume === undefined) {
          return ToolResults.suspended('approve', 'needs approval', {
            suspension: { id: `s-${ctx.callId}`, action: 'confirm' },
            pending: { id: ctx.callId, name: 'approve', arguments: args as never },
            resume_mode: 'replay_tool_call',
          });
        }
        resumedStarted.push(ctx.callId);
        await held;
        return ToolResults.success('approve', { done: true });
      },
    });
    const a = testServer(APPROVE, { store, tools: [slowAfterDecision], registry: { leases: { owner: 'A', ttlMs: TTL } } });
    const b = testServer([], { store, env: namedEnv('b'), registry: { leases: { owner: 'B', ttlMs: TTL } } });
    const { runId } = await parkOn(a, 'x');
    expect((await a.app.request(`/v1/runs/${runId}/decision`, json({ toolCallId: 'c1', action: 'resume' }))).status).toBe(202);
    await expect.poll(() => resumedStarted.length).toBe(1);
    expect(await store.getRun(runId)).toMatchObject({ status: 'running' });
    (b.runtime.env as DeterministicEnv).advance(TTL + 1);
    expect(await b.registry.sweepLeases()).toEqual([runId]);
    expect(await store.getRun(runId)).toMatchObject({
      status: 'done',
      termination: { type: 'error', value: 'interrupted: its instance stopped renewing the thread lease' },
    });
    release();
    await a.registry.shutdown({ graceMs: 1_000 });
  });

  it('a parked run no instance holds can be cancelled (the thread is free again) or discarded by a new run', async () => {
    const path = sqliteFile();
    const a = testServer([...APPROVE, ...APPROVE], { store: new SqliteStore(path) });
    const first = await parkOn(a, 'c');
    const second = await parkOn(a, 'd');
    await a.registry.shutdown({ graceMs: 1_000 });
    await a.store.close();

    const b = await restartOn(path, [{ text: 'fresh start' }, { text: 'after discard' }]);
    const cancelled = await b.app.request(`/v1/runs/${first.runId}/cancel`, json({}));
    expect(cancelled.status).toBe(202);
    expect(await b.store.getRun(first.runId)).toMatchObject({ status: 'done', termination: { type: 'cancelled' } });
    const next = await b.app.request('/v1/runs', go('c', 'start over'));
    expect(next.status).toBe(200);
    expect(await next.text()).toContain('fresh start');

    const discard = await b.app.request('/v1/runs', json({ threadId: 'd', messages: [{ role: 'user', content: 'never mind' }], discardPause: true }));
    expect(discard.status).toBe(200);
    expect(await discard.text()).toContain('after discard');
    expect(await b.store.getRun(second.runId)).toMatchObject({ status: 'done', termination: { type: 'cancelled' } });
    // A decision for a run no longer waiting is refused, not lost silently.
    expect((await b.app.request(`/v1/runs/${second.runId}/decision`, json({ toolCallId: 'c1', action: 'resume' }))).status).toBe(404);
    await b.registry.shutdown();
    await b.store.close();
  });
});

describe('a waiting run after a restart, with API tokens', () => {
  const as = (token: string, body?: unknown): RequestInit => ({
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const tokens = new Map([
    ['alice-token-0123456789', 'alice'],
    ['bob-token-0123456789', 'bob'],
  ]);

  it("is its owner's alone: another principal can neither see it waiting nor decide or cancel it", async () => {
    const path = sqliteFile();
    const a = testServer(APPROVE, { store: new SqliteStore(path), http: { auth: { tokens } } });
    const r = await a.app.request('/v1/runs', as('alice-token-0123456789', { threadId: 'own', messages: [{ role: 'user', content: 'ship it' }] }));
    const runId = r.headers.get('x-awaken-run-id') as string;
    await r.text();
    await a.registry.shutdown({ graceMs: 1_000 });
    await a.store.close();

    const store = new SqliteStore(path);
    await recoverRuns(store, Date.now());
    const b = testServer([{ text: 'Shipped.' }], { store, env: namedEnv('restarted'), http: { auth: { tokens } } });
    try {
      expect((await b.app.request('/v1/threads/own', as('bob-token-0123456789'))).status).toBe(404);
      expect((await b.app.request(`/v1/runs/${runId}/decision`, as('bob-token-0123456789', { toolCallId: 'c1', action: 'resume' }))).status).toBe(404);
      expect((await b.app.request(`/v1/runs/${runId}/cancel`, as('bob-token-0123456789', {}))).status).toBe(404);
      expect(await store.getRun(runId)).toMatchObject({ status: 'waiting' });
      expect(await bodyJson(b.app.request('/v1/threads/own', as('alice-token-0123456789')))).toMatchObject({
        active_run_id: runId,
        active_run_status: 'waiting',
      });
      expect((await b.app.request(`/v1/runs/${runId}/decision`, as('alice-token-0123456789', { toolCallId: 'c1', action: 'resume' }))).status).toBe(202);
      await expect.poll(async () => (await store.getRun(runId))?.status).toBe('done');
    } finally {
      await b.registry.shutdown();
      await store.close();
    }
  });
});

/** What a SIGTERM does to a server process: its registry shut down, its socket and store closed. */
async function stopProcess(s: TestServer, server: { close(): Promise<void> }): Promise<void> {
  await s.registry.shutdown({ graceMs: 1_000 });
  await server.close();
  await s.store.close();
}

describe('the official clients answer an approval across a server restart', () => {
  /** A fetch that sends each request to whichever server is up now (the client keeps one URL). */
  function relay(current: () => string): typeof fetch {
    return (input, init) => fetch(String(input instanceof Request ? input.url : input).replace('http://awaken.invalid', current()), init);
  }

  it('AI SDK: useChat asks on one process and is answered by the next', async () => {
    const path = sqliteFile();
    const a = testServer(APPROVE, { store: new SqliteStore(path) });
    let server = await listen(a.app, { port: 0 });
    const chat = new HeadlessChat(
      'chat-r',
      new DefaultChatTransport<UIMessage>({ api: 'http://awaken.invalid/v1/ai-sdk/chat', fetch: relay(() => server.url) }),
    );
    await chat.sendMessage({ text: 'deploy it' });
    const part = chat.lastMessage?.parts.find((p) => p.type.startsWith('tool-')) as { state?: string; approval?: { id: string } } | undefined;
    expect(part?.state).toBe('approval-requested');
    await stopProcess(a, server);
    const b = await restartOn(path, [{ text: 'Deployed after the restart.' }]);
    server = await listen(b.app, { port: 0 });
    try {
      await chat.addToolApprovalResponse({ id: part?.approval?.id ?? '', approved: true });
      await expect.poll(() => chat.status, { timeout: 5000 }).toBe('ready');
      expect(chat.error).toBeUndefined();
      const text = (chat.lastMessage?.parts ?? []).flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
      expect(text).toContain('Deployed after the restart.');
      const runs = await bodyJson(fetch(`${server.url}/v1/runs?thread_id=chat-r`));
      expect(runs.items.map((r: { status: string }) => r.status)).toEqual(['done']);
    } finally {
      await stopProcess(b, server);
    }
  });

  it('AG-UI: HttpAgent gets the interrupt from one process and resumes it on the next', async () => {
    const path = sqliteFile();
    const a = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }] }], { store: new SqliteStore(path) });
    let server = await listen(a.app, { port: 0 });
    const agent = new HttpAgent({ url: `${server.url}/v1/ag-ui/run`, threadId: 'ag-r' });
    agent.messages.push({ id: 'u1', role: 'user', content: 'ship it' });
    await agent.runAgent({ runId: 'client-run-1' });
    expect(agent.pendingInterrupts.map((i) => i.id)).toEqual(['s-c1']);
    await stopProcess(a, server);
    const b = await restartOn(path, [{ text: 'Shipped after the restart.' }]);
    server = await listen(b.app, { port: 0 });
    try {
      agent.url = `${server.url}/v1/ag-ui/run`;
      await agent.runAgent({
        runId: 'client-run-2',
        resume: buildResumeArray(agent.pendingInterrupts, { 's-c1': { status: 'resolved', payload: { approved: true } } }),
      });
      expect(agent.pendingInterrupts).toEqual([]);
      const last = agent.messages.at(-1) as { role: string; content?: unknown };
      expect(last).toMatchObject({ role: 'assistant', content: 'Shipped after the restart.' });
    } finally {
      await stopProcess(b, server);
    }
  });

  it('A2A: an input-required task is shown with its pending call after a restart, and a message on it completes it', async () => {
    const a2a = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const path = sqliteFile();
    const a = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'pay' } }] }], { store: new SqliteStore(path) });
    const first = await bodyJson(
      a.app.request('/v1/a2a/message:send', a2a({ message: { messageId: 'u1', role: 'ROLE_USER', parts: [{ text: 'pay the bill' }] } })),
    );
    expect(first.task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const { id: taskId, contextId } = first.task as { id: string; contextId: string };
    await a.registry.shutdown({ graceMs: 1_000 });
    await a.store.close();

    const b = await restartOn(path, [{ text: 'Paid after the restart.' }]);
    try {
      const shown = await bodyJson(b.app.request(`/v1/a2a/tasks/${taskId}`));
      expect(shown.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
      expect(JSON.stringify(shown.status.message)).toContain('s-c1');
      const second = await bodyJson(
        b.app.request(
          '/v1/a2a/message:send',
          a2a({ message: { messageId: 'u2', role: 'ROLE_USER', taskId, contextId, parts: [{ data: { approved: true } }] } }),
        ),
      );
      expect(second.task).toMatchObject({
        id: taskId,
        contextId,
        status: { state: 'TASK_STATE_COMPLETED' },
        artifacts: [{ parts: [{ text: 'Paid after the restart.' }] }],
      });
    } finally {
      await b.registry.shutdown();
      await b.store.close();
    }
  });
});

describe('the A2A SDK client answers an input-required task across a restart, over a socket', () => {
  for (const binding of ['HTTP+JSON', 'JSONRPC'] as const) {
    it(`${binding}: the task is input-required with its pending call after the restart, and the client's message on it completes it`, async () => {
      const transports = binding === 'JSONRPC' ? [new JsonRpcTransportFactory()] : [new RestTransportFactory()];
      const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports, preferredTransports: [binding] }));
      const path = sqliteFile();
      const a = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'pay' } }] }], { store: new SqliteStore(path) });
      let server = await listen(a.app, { port: 0 });
      const before: Client = await factory.createFromUrl(server.url);
      const first = (await before.sendMessage({
        message: Message.fromJSON({ messageId: 'u1', role: 'ROLE_USER', parts: [{ text: 'pay the bill' }] }),
        tenant: '',
      } as never)) as Task;
      expect(TaskState[first.status?.state ?? 0]).toBe('TASK_STATE_INPUT_REQUIRED');
      await stopProcess(a, server);

      const b = await restartOn(path, [{ text: 'Paid after the restart.' }]);
      server = await listen(b.app, { port: 0 });
      try {
        const after: Client = await factory.createFromUrl(server.url);
        const shown = await after.getTask({ id: first.id, tenant: '' } as never);
        expect(TaskState[shown.status?.state ?? 0]).toBe('TASK_STATE_INPUT_REQUIRED');
        expect(JSON.stringify(Message.toJSON(shown.status?.message as Message))).toContain('s-c1');
        const answer = Message.fromJSON({
          messageId: 'u2',
          role: 'ROLE_USER',
          taskId: first.id,
          contextId: first.contextId,
          parts: [{ data: { approved: true } }],
        });
        const done = (await after.sendMessage({ message: answer, tenant: '' } as never)) as Task;
        expect({ id: done.id, state: TaskState[done.status?.state ?? 0] }).toEqual({ id: first.id, state: 'TASK_STATE_COMPLETED' });
        const text = (done.artifacts ?? [])
          .flatMap((x) => x.parts)
          .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
          .join('');
        expect(text).toBe('Paid after the restart.');
      } finally {
        await stopProcess(b, server);
      }
    });
  }
});

describe('two instances on PostgreSQL', () => {
  const prefix = `dh${process.pid}`;
  const opened: { close(): Promise<void> }[] = [];
  afterAll(async () => {
    for (const o of opened.reverse()) await o.close().catch(() => undefined);
    await dropPrefix(prefix);
  });
  async function instance(
    name: string,
    script: Parameters<typeof testServer>[0],
    wrap: (store: Store) => Store = (x) => x,
  ): Promise<TestServer & { readonly bus: PostgresBus }> {
    const store = PostgresStore.withPrefix(PG_URL, prefix);
    const bus = new PostgresBus(PG_URL, { prefix });
    opened.push(store, bus);
    const s = testServer(script, { store: wrap(store), env: namedEnv(name), registry: { bus, leases: { owner: name } } });
    await s.registry.attachBus();
    return { ...s, bus };
  }

  it('a decision sent to the other instance reaches the run parked on a live one over the bus: the 202 comes once it resumed there', async () => {
    const a = await instance('a', [...APPROVE, { text: 'approved on A' }]);
    const b = await instance('b', []);
    const { runId } = await parkOn(a, 'dh');
    const decided = await b.app.request(`/v1/runs/${runId}/decision`, json({ toolCallId: 'c1', action: 'resume' }));
    expect(decided.status).toBe(202);
    // Delivered: A stored the run running again (or already done) before B answered.
    expect((await b.store.getRun(runId))?.status).not.toBe('waiting');
    await expect.poll(async () => (await b.store.getRun(runId))?.status, { timeout: 10_000 }).toBe('done');
    expect(a.llm.requests).toHaveLength(2);
    expect(b.llm.requests).toHaveLength(0);
    await a.registry.shutdown();
    await b.registry.shutdown();
  });

  it('a decision relayed to a dead holder is not reported delivered when a third instance takes the lease over: it is delivered once the lease is free', async () => {
    const a = await instance('a2', APPROVE);
    const b = await instance('b2', [{ text: 'decided on B' }]);
    // C sweeps; the test holds its release of the lease it took over, so B sees a new holder meanwhile.
    let open: () => void = () => undefined;
    const gate = new Promise<void>((r) => (open = r));
    const c = await instance(
      'c2',
      [],
      (store) =>
        new Proxy(store, {
          get(target, key) {
            if (key === 'releaseLease') return async (threadId: string, runId: string) => (await gate, target.releaseLease(threadId, runId));
            const v = Reflect.get(target, key, target) as unknown;
            return typeof v === 'function' ? (v as (...xs: unknown[]) => unknown).bind(target) : v;
          },
        }),
    );
    const { runId } = await parkOn(a, 'dh3');
    await a.bus.close(); // A is gone: it neither hears the bus nor renews its lease
    const decided = b.app.request(`/v1/runs/${runId}/decision`, json({ toolCallId: 'c1', action: 'resume' }));
    (c.runtime.env as DeterministicEnv).advance(20_000);
    const swept = c.registry.sweepLeases();
    await expect.poll(async () => (await c.store.getLease('dh3'))?.owner).toBe('c2');
    await new Promise((r) => setTimeout(r, 150));
    open();
    expect(await swept).toEqual([]);
    expect((await decided).status).toBe(202);
    await expect.poll(async () => (await b.store.getRun(runId))?.status, { timeout: 10_000 }).toBe('done');
    expect(b.llm.requests).toHaveLength(1);
    await b.registry.shutdown();
    await c.registry.shutdown();
  });
});
