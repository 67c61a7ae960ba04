import type { AddressInfo } from 'node:net';
import { Message as A2aMessage, type Task, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { buildResumeArray, HttpAgent } from '@ag-ui/client';
import { DefaultChatTransport, type UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastAssistantText } from './ag-ui-client.ts';
import { HeadlessChat } from './ai-chat.ts';
import { join } from 'node:path';
import { serve as serveNode, type ServerType } from '@hono/node-server';
import express from 'express';
import { Hono } from 'hono';
import { defineApp, scriptedProvider } from 'awaken-ts';
import { createAwaken, type Awaken, type AwakenOptions } from 'awaken-ts/server';
import { confirmAction, getWeather } from '../../src/cli/demo.ts';
import { repo } from './serve-process.ts';

/**
 * Awaken embedded in a host application on a real socket, as docs/embedding.md mounts it: an app of
 * two agents — `concierge` on the three-turn conversation the real clients drive
 * (fixtures/scripts/demo-conversation.yaml: a tool call, an approval, a denial) and `slow`, whose
 * answer takes two seconds (a run to cancel or decide while it works) — behind two API tokens, one
 * principal each.
 */
export const TOKENS = { alice: 'alice-token-0123456789', bob: 'bob-token-0123456789ab' } as const;

export const BASE = '/api/awaken';

/** The app, made anew for each host: a scripted provider follows each of its threads through the script. */
export const twoAgents = () =>
  defineApp({
    agents: [
      { id: 'concierge', model: 'concierge', system_prompt: 'You answer the front desk.', allowed_tools: ['get_weather', 'confirm_action'] },
      { id: 'slow', model: 'slow', system_prompt: 'A slow agent.' },
    ],
    tools: [getWeather, confirmAction],
    models: { concierge: { provider: 'conversation', model_name: 'conversation' }, slow: { provider: 'slow', model_name: 'slow' } },
    providers: {
      conversation: scriptedProvider(join(repo, 'fixtures/scripts/demo-conversation.yaml')),
      slow: scriptedProvider(join(repo, 'fixtures/scripts/slow-answer.yaml')),
    },
  });

export interface Hosted {
  /** The host's origin (`http://127.0.0.1:PORT`). */
  readonly origin: string;
  /** Where awaken answers: the origin and the mount path. */
  readonly url: string;
  readonly awaken: Awaken;
  stop(): Promise<void>;
}

const embeddedOptions = (extra: Partial<AwakenOptions>): AwakenOptions => ({
  app: twoAgents(),
  store: 'memory',
  basePath: BASE,
  auth: { tokens: { [TOKENS.alice]: 'alice', [TOKENS.bob]: 'bob' } },
  ...extra,
});

function closeServer(server: ServerType): Promise<void> {
  return new Promise((done) => {
    const s = server as ServerType & { closeAllConnections?: () => void };
    s.close(() => done());
    s.closeAllConnections?.();
  });
}

/** An Express 5 application with its own routes, awaken at `BASE` (behind `express.json()` when `parsed`). */
export async function inExpress(options: { readonly parsed: boolean; readonly jsonLimit?: string }, extra: Partial<AwakenOptions> = {}): Promise<Hosted> {
  const awaken = await createAwaken(embeddedOptions(extra));
  const app = express();
  if (options.parsed) app.use(express.json({ limit: options.jsonLimit ?? '100kb' }));
  app.get('/', (_req, res) => void res.send('the host app'));
  app.use(BASE, awaken.node);
  app.use(BASE, awaken.nodeErrors);
  const server = await new Promise<ServerType>((done) => {
    const s = app.listen(0, '127.0.0.1', () => done(s));
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    url: `${origin}${BASE}`,
    awaken,
    stop: async () => {
      await awaken.close({ graceMs: 1000 });
      await closeServer(server);
    },
  };
}

/** A Hono application with its own routes, awaken's Fetch handler on every path under `BASE`, given the request as sent. */
export async function inHono(extra: Partial<AwakenOptions> = {}): Promise<Hosted> {
  const awaken = await createAwaken(embeddedOptions(extra));
  const app = new Hono();
  app.get('/', (c) => c.text('the host app'));
  app.all(`${BASE}/*`, (c) => awaken.fetch(c.req.raw));
  const server = await new Promise<ServerType>((done) => {
    const s = serveNode({ fetch: app.fetch, port: 0, hostname: '127.0.0.1', overrideGlobalObjects: false }, () => done(s));
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    url: `${origin}${BASE}`,
    awaken,
    stop: async () => {
      await awaken.close({ graceMs: 1000 });
      await closeServer(server);
    },
  };
}

/** A fetch that sends a principal's token with every request (what the clients are given). */
export const asPrincipal =
  (token: string): typeof fetch =>
  (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };

/** The JSON of a response (what a 4xx body is). */
export const jsonOf = async (r: Response): Promise<unknown> => JSON.parse(await r.text()) as unknown;

/** Reads an SSE response until `done(text so far)` says so, or the body ends; then lets the body go. */
export async function readUntil(r: Response, done: (text: string) => boolean): Promise<string> {
  const reader = (r.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { value, done: ended } = await reader.read();
    if (ended) return text;
    text += decoder.decode(value, { stream: true });
    if (done(text)) {
      await reader.cancel();
      return text;
    }
  }
}

type Part = { type: string; state?: string; toolCallId?: string; text?: string; output?: unknown; approval?: { id: string } };
const partsOf = (m: UIMessage | undefined): Part[] => (m?.parts ?? []) as Part[];
const chatText = (m: UIMessage | undefined): string =>
  partsOf(m)
    .flatMap((p) => (p.type === 'text' ? [p.text ?? ''] : []))
    .join('');

/** An A2A client of a principal, from the card at `url`, over one binding. */
function a2aClient(url: string, token: string, binding: 'HTTP+JSON' | 'JSONRPC') {
  const fetchImpl = asPrincipal(token);
  const transports = binding === 'JSONRPC' ? [new JsonRpcTransportFactory({ fetchImpl })] : [new RestTransportFactory({ fetchImpl })];
  return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports, preferredTransports: [binding] })).createFromUrl(url);
}
const a2aUser = (text: string, extra: Record<string, unknown> = {}): A2aMessage =>
  A2aMessage.fromJSON({ messageId: `m-${Math.random().toString(36).slice(2)}`, role: 'ROLE_USER', parts: [{ text }], ...extra });
const taskState = (t: Task): string => TaskState[t.status?.state ?? 0] ?? '?';
const taskText = (t: Task): string =>
  (t.artifacts ?? [])
    .flatMap((a) => a.parts)
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .join('');

/**
 * What every host must give a user of the embedded API, run through the real clients: the AI SDK
 * chat, the AG-UI `HttpAgent`, the A2A client from the agent card (which names the mounted URL), two
 * principals kept apart, streams that stream, and the studio under the mount path.
 */
export function embeddedSuite(host: string, start: () => Promise<Hosted>): void {
  let h: Hosted;
  beforeAll(async () => {
    h = await start();
  });
  afterAll(async () => {
    await h.stop();
  });
  const as = (token: string, init: RequestInit = {}): RequestInit => ({
    ...init,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(init.headers as Record<string, string> | undefined) },
  });

  describe(`awaken mounted at ${BASE} in ${host}`, () => {
    it("answers under the mount path, and the host's own routes go on answering", async () => {
      expect(await jsonOf(await fetch(`${h.url}/health`))).toEqual({ status: 'healthy', components: { store: 'ok', runtime: 'ok' } });
      expect(await (await fetch(`${h.origin}/`)).text()).toBe('the host app');
      const caps = (await jsonOf(await fetch(`${h.url}/v1/capabilities`, as(TOKENS.alice)))) as { agents: string[] };
      expect(caps.agents).toEqual(['concierge', 'slow']);
      const missing = await fetch(`${h.url}/v1/nothing-here`, as(TOKENS.alice));
      expect([missing.status, await jsonOf(missing)]).toEqual([404, { error: `no route: GET ${BASE}/v1/nothing-here`, code: 'not_found' }]);
      expect((await fetch(`${h.url}/v1/threads`)).status).toBe(401);
    });

    it('the AI SDK chat (AbstractChat + DefaultChatTransport): a tool call, an approval, a denial', async () => {
      const chat = new HeadlessChat(
        'embedded-chat',
        new DefaultChatTransport<UIMessage>({ api: `${h.url}/v1/ai-sdk/chat`, fetch: asPrincipal(TOKENS.alice), body: { agentId: 'concierge' } }),
      );
      await chat.sendMessage({ text: 'weather in Oslo?' });
      expect(chat.error).toBeUndefined();
      expect(partsOf(chat.lastMessage).find((p) => p.type === 'tool-get_weather')).toMatchObject({
        state: 'output-available',
        output: { city: 'Oslo', condition: 'sunny', temperature_c: 10 },
      });
      expect(chatText(chat.lastMessage)).toBe('It is sunny in Oslo, 10 °C.');
      await chat.sendMessage({ text: 'delete the branch' });
      const ask = partsOf(chat.lastMessage).find((p) => p.type === 'tool-confirm_action');
      expect(ask?.state).toBe('approval-requested');
      await chat.addToolApprovalResponse({ id: ask?.approval?.id ?? '', approved: true });
      await expect.poll(() => chat.status, { timeout: 10_000 }).toBe('ready');
      expect(chat.error).toBeUndefined();
      expect(chatText(chat.lastMessage)).toContain('Done: the branch is deleted.');
      await chat.sendMessage({ text: 'delete the tag' });
      const second = partsOf(chat.lastMessage).find((p) => p.toolCallId === 'call_delete_tag');
      expect(second?.state).toBe('approval-requested');
      await chat.addToolApprovalResponse({ id: second?.approval?.id ?? '', approved: false, reason: 'keep it' });
      await expect.poll(() => chat.status, { timeout: 10_000 }).toBe('ready');
      expect(chatText(chat.lastMessage)).toContain('Understood, I left the tag alone.');
      // The thread is alice's: bob reads nothing of it.
      expect((await fetch(`${h.url}/v1/ai-sdk/threads/embedded-chat/messages`, as(TOKENS.alice))).status).toBe(200);
      expect((await fetch(`${h.url}/v1/threads/embedded-chat`, as(TOKENS.bob))).status).toBe(404);
    });

    it('the AG-UI HttpAgent: a tool call, then an interrupt resumed', async () => {
      const agent = new HttpAgent({
        url: `${h.url}/v1/ag-ui/agents/concierge/runs`,
        threadId: 'embedded-agui',
        headers: { authorization: `Bearer ${TOKENS.bob}` },
      });
      agent.messages.push({ id: 'u1', role: 'user', content: 'weather in Oslo?' });
      await agent.runAgent({ runId: 'agui-1' });
      expect(lastAssistantText(agent.messages)).toBe('It is sunny in Oslo, 10 °C.');
      agent.messages.push({ id: 'u2', role: 'user', content: 'delete the branch' });
      await agent.runAgent({ runId: 'agui-2' });
      expect(agent.pendingInterrupts).toMatchObject([{ toolCallId: 'call_delete_branch' }]);
      await agent.runAgent({
        runId: 'agui-3',
        resume: buildResumeArray(agent.pendingInterrupts, { [agent.pendingInterrupts[0]?.id ?? '']: { status: 'resolved', payload: { approved: true } } }),
      });
      expect(agent.pendingInterrupts).toEqual([]);
      expect(lastAssistantText(agent.messages)).toBe('Done: the branch is deleted.');
      // bob's thread: alice cannot read it.
      expect((await fetch(`${h.url}/v1/ag-ui/threads/embedded-agui/messages`, as(TOKENS.alice))).status).toBe(404);
      expect((await fetch(`${h.url}/v1/threads/embedded-agui/messages`, as(TOKENS.bob))).status).toBe(200);
    });

    describe.each(['HTTP+JSON', 'JSONRPC'] as const)('the A2A client over %s, from the agent card', (binding) => {
      it('the card names the mounted URL; a send, an input-required task answered; bob cannot get or cancel it', async () => {
        // The card is read from the mount path (a trailing slash: the client resolves `.well-known/…` against it).
        const client = await a2aClient(`${h.url}/`, TOKENS.alice, binding);
        const card = await client.getAgentCard();
        expect(card.supportedInterfaces.map((i) => i.url)).toEqual([`${h.url}/v1/a2a/concierge`, `${h.url}/v1/a2a/concierge/jsonrpc`]);
        const context = `embedded-a2a-${binding === 'JSONRPC' ? 'rpc' : 'rest'}`;
        const first = (await client.sendMessage({ message: a2aUser('weather in Oslo?', { contextId: context }), tenant: '' } as never)) as Task;
        expect([taskState(first), taskText(first)]).toEqual(['TASK_STATE_COMPLETED', 'It is sunny in Oslo, 10 °C.']);
        const waiting = (await client.sendMessage({ message: a2aUser('delete the branch', { contextId: context }), tenant: '' } as never)) as Task;
        expect(taskState(waiting)).toBe('TASK_STATE_INPUT_REQUIRED');
        const bob = await a2aClient(`${h.url}/`, TOKENS.bob, binding);
        await expect(bob.getTask({ id: waiting.id, tenant: '' } as never)).rejects.toMatchObject({ name: 'TaskNotFoundError' });
        await expect(bob.cancelTask({ id: waiting.id, tenant: '' } as never)).rejects.toMatchObject({ name: 'TaskNotFoundError' });
        expect((await bob.listTasks({ contextId: context, tenant: '' } as never)).tasks).toEqual([]);
        const answered = (await client.sendMessage({
          message: A2aMessage.fromJSON({
            messageId: `yes-${context}`,
            role: 'ROLE_USER',
            taskId: waiting.id,
            contextId: context,
            parts: [{ data: { approved: true } }],
          }),
          tenant: '',
        } as never)) as Task;
        expect([answered.id, taskState(answered), taskText(answered)]).toEqual([waiting.id, 'TASK_STATE_COMPLETED', 'Done: the branch is deleted.']);
      });
    });

    it("two principals: bob cannot read, list, cancel or decide alice's thread and run", async () => {
      const started = await fetch(
        `${h.url}/v1/runs`,
        as(TOKENS.alice, {
          method: 'POST',
          body: JSON.stringify({ agentId: 'slow', threadId: 'alice-slow', messages: [{ role: 'user', content: 'take your time' }] }),
        }),
      );
      expect(started.status).toBe(200);
      const runId = started.headers.get('x-awaken-run-id') as string;
      const following = readUntil(started, (t) => t.includes('"run_finish"'));
      const bob = async (path: string, init: RequestInit = {}): Promise<[number, unknown]> => {
        const r = await fetch(`${h.url}${path}`, as(TOKENS.bob, init));
        return [r.status, await jsonOf(r)];
      };
      expect(await bob('/v1/threads/alice-slow')).toEqual([404, { error: 'thread not found: alice-slow', code: 'thread_not_found' }]);
      expect(await bob('/v1/threads/alice-slow/messages')).toEqual([404, { error: 'thread alice-slow not found', code: 'not_found' }]);
      expect(((await bob('/v1/threads'))[1] as { items: { id: string }[] }).items.map((t) => t.id)).not.toContain('alice-slow');
      expect(((await bob('/v1/runs'))[1] as { items: { run_id: string }[] }).items.map((r) => r.run_id)).not.toContain(runId);
      expect(await bob(`/v1/runs/${runId}`)).toEqual([404, { error: `run not found: ${runId}`, code: 'run_not_found' }]);
      expect((await bob(`/v1/runs/${runId}/cancel`, { method: 'POST' }))[0]).toBe(404);
      expect((await bob(`/v1/runs/${runId}/decision`, { method: 'POST', body: JSON.stringify({ toolCallId: 'call_x', action: 'resume' }) }))[0]).toBe(404);
      expect((await bob(`/v1/threads/alice-slow/stream`))[0]).toBe(404);
      // The run went on for alice, who may cancel it.
      const cancel = await fetch(`${h.url}/v1/runs/${runId}/cancel`, as(TOKENS.alice, { method: 'POST' }));
      expect(cancel.status).toBe(202);
      expect(await following).toContain('"run_finish"');
    });

    it('a stream streams through the host (its first frame long before the run ends); a client that leaves cancels nothing', async () => {
      const t0 = Date.now();
      const r = await fetch(
        `${h.url}/v1/runs`,
        as(TOKENS.alice, { method: 'POST', body: JSON.stringify({ agentId: 'slow', threadId: 'left-early', messages: [{ role: 'user', content: 'go' }] }) }),
      );
      const runId = r.headers.get('x-awaken-run-id') as string;
      const head = await readUntil(r, (t) => t.includes('"text_delta"'));
      // The answer takes two seconds: its first piece arrives while it is still being written.
      expect(Date.now() - t0).toBeLessThan(1500);
      expect(head).toContain('"run_start"');
      // The client went away after the first piece: the run is not cancelled, it ends on its own.
      await expect
        .poll(async () => (await jsonOf(await fetch(`${h.url}/v1/runs/${runId}`, as(TOKENS.alice)))) as { status: string; termination?: { type: string } }, {
          timeout: 10_000,
          interval: 100,
        })
        .toMatchObject({ status: 'done', termination: { type: 'natural_end' } });
    });

    it('the studio: the redirect, the page naming the mount path, its assets under it, with the strict policy', async () => {
      const bare = await fetch(`${h.url}/inspector`, { redirect: 'manual' });
      expect([bare.status, bare.headers.get('location')]).toEqual([302, `${BASE}/inspector/`]);
      const page = await fetch(`${h.url}/inspector/`);
      const html = await page.text();
      expect(html).toContain(`<meta name="awaken-base-path" content="${BASE}" />`);
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
      const script = /src="\.\/(assets\/[^"]+\.js)"/.exec(html)?.[1];
      expect(script).toBeDefined();
      const asset = await fetch(new URL(script as string, `${h.url}/inspector/`));
      expect([asset.status, asset.headers.get('content-type')]).toEqual([200, 'text/javascript; charset=utf-8']);
    });
  });
}
