import { buildResumeArray } from '@ag-ui/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { failOnConsole } from '../support/console.ts';
import { approvalTool, echoTool } from '../support/runtime.ts';
import { ALICE_TOKEN, addTodoTool, BOB_TOKEN, gatedTool, testServer, twoPrincipals, type TestServer } from '../support/server.ts';

/**
 * CopilotKit's own client (`@copilotkit/core`'s `CopilotKitCore` and its `ProxiedCopilotRuntimeAgent`,
 * what `@copilotkit/react-core`'s `/v2` entry runs in a page) with its `runtimeUrl` on this server's
 * `/v1/copilotkit`, no CopilotKit runtime between: `/info`, runs with an interrupt answered, a
 * frontend tool, shared state both ways, the page's context, `connect` after a reload, `stop`.
 * Headless, in this process: the page's `window` is a stub, which is all the client reads of it.
 */

// CopilotKit reports usage unless told not to; this machine has no network, and a test has no say.
process.env['COPILOTKIT_TELEMETRY_DISABLED'] = '1';
failOnConsole(['warn', 'error']);

const gate = gatedTool();
let s: TestServer;
let server: RunningServer;
let runtimeUrl: string;

beforeAll(async () => {
  s = testServer(
    [
      { tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }] },
      { text: 'Shipped.' },
      { tool_calls: [{ id: 'p1', name: 'pick_color', arguments: { palette: 'warm' } }] },
      { tool_calls: [{ id: 't1', name: 'add_todo', arguments: { item: 'red paint' } }] },
      { text: 'Added red paint.' },
      { tool_calls: [{ id: 'g1', name: 'slow', arguments: { tag: 'stop me' } }] },
    ],
    {
      tools: [echoTool, approvalTool, addTodoTool, gate.tool],
      spec: { description: 'Ships things' },
      agents: [{ id: 'planner', model: 'm', system_prompt: 'You plan.', client_state: ['todos'] }],
    },
  );
  server = await listen(s.app, { port: 0 });
  runtimeUrl = `${server.url}/v1/copilotkit`;
  (globalThis as { window?: unknown }).window = {
    location: { origin: server.url, href: `${server.url}/` },
    addEventListener: () => undefined,
    removeEventListener: () => undefined,
  };
});
afterAll(async () => {
  delete (globalThis as { window?: unknown }).window;
  await server.close();
});

async function page() {
  const { CopilotKitCore } = await import('@copilotkit/core');
  const core = new CopilotKitCore({ runtimeUrl: `${server.url}/v1/copilotkit` });
  for (let i = 0; i < 200 && core.runtimeConnectionStatus !== 'connected'; i++) await new Promise((r) => setTimeout(r, 10));
  expect(core.runtimeConnectionStatus).toBe('connected');
  return core;
}

/** The page's agent `id`, on thread `threadId`. */
function agentOn(core: Awaited<ReturnType<typeof page>>, id: string, threadId: string) {
  const agent = core.getAgent(id);
  if (agent === undefined) throw new Error(`no agent ${id}`);
  agent.threadId = threadId;
  return agent;
}

describe('@copilotkit/core against awaken serve’s /v1/copilotkit', () => {
  it('/info lists every agent by id, with what it does', async () => {
    const info = await fetch(`${runtimeUrl}/info`);
    expect(await info.json()).toEqual({
      agents: {
        agent: { name: 'agent', description: 'Ships things', capabilities: { humanInTheLoop: true } },
        planner: { name: 'planner', description: 'You plan.', capabilities: { humanInTheLoop: true } },
      },
      mode: 'sse',
      suggestions: true,
      threadEndpoints: { list: true, inspect: true, mutations: true, realtimeMetadata: false },
    });
    const core = await page();
    expect(Object.keys(core.agents).sort()).toEqual(['agent', 'planner']);
  });

  it('runs, gets the interrupt, and resumes it under the same run id', async () => {
    const core = await page();
    const agent = agentOn(core, 'agent', 'ck-hitl');
    agent.addMessage({ id: 'u1', role: 'user', content: 'ship it' });
    const runId = 'page-run-1';
    await core.runAgent({ agent, runId });
    const interrupts = (agent as unknown as { pendingInterrupts: { id: string; toolCallId?: string }[] }).pendingInterrupts;
    expect(interrupts).toMatchObject([{ id: 's-c1', reason: 'confirm', toolCallId: 'c1' }]);
    await core.runAgent({ agent, runId, resume: buildResumeArray(interrupts as never, { 's-c1': { status: 'resolved', payload: { approved: true } } }) });
    const last = agent.messages.at(-1) as { role: string; content?: unknown };
    expect(last).toMatchObject({ role: 'assistant', content: 'Shipped.' });
  });

  it('a frontend tool runs in the page, shared state goes both ways, the page’s context reaches the model; a reload connects to the same thread', async () => {
    const core = await page();
    const picked: unknown[] = [];
    core.addTool({
      name: 'pick_color',
      description: 'Asks the user for a colour',
      parameters: z.object({ palette: z.string() }),
      agentId: 'planner',
      handler: async (args: unknown) => {
        picked.push(args);
        return { color: 'red' };
      },
    } as never);
    core.addContext({ description: 'page', value: '/plan' });
    const agent = agentOn(core, 'planner', 'ck-plan');
    agent.setState({ todos: ['milk'] });
    agent.addMessage({ id: 'u1', role: 'user', content: 'add a colour to the list' });
    await core.runAgent({ agent });
    for (let i = 0; i < 200 && (agent.messages.at(-1) as { content?: unknown }).content !== 'Added red paint.'; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(picked).toEqual([{ palette: 'warm' }]);
    expect((agent.messages.at(-1) as { content?: unknown }).content).toBe('Added red paint.');
    expect(agent.state).toEqual({ todos: ['milk', 'red paint'] });
    const first = s.llm.requests.find((r) => r.tools.some((t) => t.id === 'pick_color'));
    expect(first?.messages.filter((m) => m.role === 'system').at(-1)?.content).toEqual([
      { type: 'text', text: 'What the client says of its page:\n- page: /plan' },
    ]);

    const reloaded = await page();
    const again = agentOn(reloaded, 'planner', 'ck-plan');
    await reloaded.connectAgent({ agent: again });
    expect(again.messages.map((m) => m.role)).toEqual(agent.messages.map((m) => m.role));
    expect(again.state).toEqual({ todos: ['milk', 'red paint'] });
  });

  it('stop ends the run in flight: the server closes the stream with RUN_FINISHED', async () => {
    const core = await page();
    const agent = agentOn(core, 'agent', 'ck-stop');
    agent.addMessage({ id: 'u1', role: 'user', content: 'take your time' });
    const running = core.runAgent({ agent });
    for (let i = 0; i < 200 && gate.started.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    core.stopAgent({ agent });
    // The server cancels the run: the tool's signal is aborted; the tool then gives up its wait.
    for (let i = 0; i < 200 && gate.aborted.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(gate.aborted).toEqual(['stop me']);
    gate.open();
    await running;
    const runs = (await (await fetch(`${server.url}/v1/runs?thread_id=ck-stop`)).json()) as { items: { status: string; termination?: unknown }[] };
    expect(runs.items.map((r: { status: string; termination?: unknown }) => [r.status, r.termination])).toEqual([['done', { type: 'cancelled' }]]);
  });
});

describe('a page reloaded while its thread waits', () => {
  it('connect shows the call that waits and its interrupt; the reloaded page answers it and the run goes on', async () => {
    const t = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'deploy' } }] }, { text: 'Deployed.' }], { tools: [approvalTool] });
    const other = await listen(t.app, { port: 0 });
    try {
      const url = `${other.url}/v1/copilotkit`;
      const { CopilotKitCore } = await import('@copilotkit/core');
      const open = async () => {
        const core = new CopilotKitCore({ runtimeUrl: url });
        for (let i = 0; i < 200 && core.runtimeConnectionStatus !== 'connected'; i++) await new Promise((r) => setTimeout(r, 10));
        return core;
      };
      const first = await open();
      const agent = agentOn(first, 'agent', 'ck-wait');
      agent.addMessage({ id: 'u1', role: 'user', content: 'deploy' });
      await first.runAgent({ agent, runId: 'page-run' });

      const reloaded = await open();
      const again = agentOn(reloaded, 'agent', 'ck-wait');
      await reloaded.connectAgent({ agent: again });
      expect(again.messages.map((m) => [m.role, 'toolCalls' in m ? (m.toolCalls ?? []).map((c) => c.id) : []])).toEqual([
        ['user', []],
        ['assistant', ['c1']],
      ]);
      const interrupts = (again as unknown as { pendingInterrupts: { id: string }[] }).pendingInterrupts;
      expect(interrupts).toMatchObject([{ id: 's-c1', reason: 'confirm', toolCallId: 'c1' }]);
      await reloaded.runAgent({
        agent: again,
        runId: 'page-run',
        resume: buildResumeArray(interrupts as never, { 's-c1': { status: 'resolved', payload: { approved: true } } }),
      });
      expect(again.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'Deployed.' });
    } finally {
      await other.close();
    }
  });
});

describe('the single route (`runtimeTransport: "single"`)', () => {
  it('info, a run with an interrupt resumed, connect and stop all go through POST /v1/copilotkit', async () => {
    const held = gatedTool();
    const t = testServer(
      [
        { tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }] },
        { text: 'Shipped.' },
        { tool_calls: [{ id: 'g1', name: 'slow', arguments: { tag: 'single' } }] },
      ],
      { tools: [approvalTool, held.tool], agents: [{ id: 'planner', model: 'm', system_prompt: 'You plan.' }] },
    );
    const other = await listen(t.app, { port: 0 });
    const paths: string[] = [];
    const original = globalThis.fetch;
    globalThis.fetch = (input, init) => {
      const url = String(input instanceof Request ? input.url : input);
      if (url.startsWith(other.url))
        paths.push(`${init?.method ?? 'GET'} ${url.slice(other.url.length)} ${JSON.parse(String(init?.body ?? '{}')).method ?? ''}`);
      return original(input, init);
    };
    try {
      const { CopilotKitCore } = await import('@copilotkit/core');
      const core = new CopilotKitCore({ runtimeUrl: `${other.url}/v1/copilotkit`, runtimeTransport: 'single' });
      for (let i = 0; i < 200 && core.runtimeConnectionStatus !== 'connected'; i++) await new Promise((r) => setTimeout(r, 10));
      expect(Object.keys(core.agents).sort()).toEqual(['agent', 'planner']);
      const agent = agentOn(core, 'agent', 'ck-single');
      agent.addMessage({ id: 'u1', role: 'user', content: 'ship it' });
      await core.runAgent({ agent, runId: 'single-run' });
      const interrupts = (agent as unknown as { pendingInterrupts: { id: string }[] }).pendingInterrupts;
      expect(interrupts).toMatchObject([{ id: 's-c1', toolCallId: 'c1' }]);
      await core.runAgent({
        agent,
        runId: 'single-run',
        resume: buildResumeArray(interrupts as never, { 's-c1': { status: 'resolved', payload: { approved: true } } }),
      });
      expect(agent.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'Shipped.' });

      const reloaded = agentOn(core, 'agent', 'ck-single');
      await core.connectAgent({ agent: reloaded });
      expect(reloaded.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'Shipped.' });

      reloaded.addMessage({ id: 'u2', role: 'user', content: 'take your time' });
      const going = core.runAgent({ agent: reloaded });
      for (let i = 0; i < 200 && held.started.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      core.stopAgent({ agent: reloaded });
      for (let i = 0; i < 200 && held.aborted.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(held.aborted).toEqual(['single']);
      held.open();
      await going;
      expect(new Set(paths)).toEqual(
        new Set(['POST /v1/copilotkit info', 'POST /v1/copilotkit agent/run', 'POST /v1/copilotkit agent/connect', 'POST /v1/copilotkit agent/stop']),
      );
    } finally {
      globalThis.fetch = original;
      await other.close();
    }
  });

  it('an envelope without a known method is 400 naming the field; an unknown agent is 404', async () => {
    const t = testServer([]);
    const post = async (body: unknown) => {
      const r = await t.app.request('/v1/copilotkit', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: r.status, body: await r.json() };
    };
    expect(await post({ method: 'resource/request' })).toEqual({
      status: 400,
      body: { error: 'method: one of info, agent/run, agent/connect, agent/stop', code: 'invalid_request', field: 'method' },
    });
    expect(await post({ method: 'agent/run', params: { agentId: 'nobody' }, body: {} })).toEqual({
      status: 404,
      body: { error: 'agent not found: nobody', code: 'agent_not_found', field: 'params.agentId' },
    });
  });
});

describe('/v1/copilotkit with two principals', () => {
  it('connect shows another’s thread as an empty one; stop answers 404 and leaves its run going, which its owner can stop', async () => {
    const held = gatedTool();
    const t = testServer([{ text: 'Alice’s answer.' }, { tool_calls: [{ id: 'g1', name: 'slow', arguments: { tag: 'alice' } }] }, { text: 'Stopped?' }], {
      tools: [echoTool, held.tool],
    });
    const { call, close } = await twoPrincipals(t);
    try {
      const run = (runId: string, id: string, content: string) =>
        call(ALICE_TOKEN, 'POST', '/v1/copilotkit/agent/agent/run', { threadId: 'alice-t', runId, messages: [{ id, role: 'user', content }] });
      expect(await (await run('r1', 'u1', 'hi')).text()).toContain('Alice’s answer.');
      const connect = (token: string) => call(token, 'POST', '/v1/copilotkit/agent/agent/connect', { threadId: 'alice-t', runId: 'c1', messages: [] });
      expect(await (await connect(ALICE_TOKEN)).text()).toContain('Alice’s answer.');
      expect(await (await connect(BOB_TOKEN)).text()).toBe(
        [
          'data: {"type":"RUN_STARTED","threadId":"alice-t","runId":"c1"}',
          'data: {"type":"MESSAGES_SNAPSHOT","messages":[]}',
          'data: {"type":"STATE_SNAPSHOT","snapshot":{}}',
          'data: {"type":"RUN_FINISHED","threadId":"alice-t","runId":"c1","outcome":{"type":"success"}}',
          '',
        ].join('\n\n'),
      );

      // Alice's second run is held in flight by its tool.
      const going = run('r2', 'u2', 'take your time');
      for (let i = 0; i < 200 && held.started.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      const stop = (token: string) => call(token, 'POST', '/v1/copilotkit/agent/agent/stop/alice-t', { runId: 'r2' });
      const bobs = await stop(BOB_TOKEN);
      expect({ status: bobs.status, body: await bobs.json() }).toEqual({
        status: 404,
        body: { error: 'nothing to interrupt on thread alice-t: no run going or waiting, nothing queued', code: 'nothing_to_interrupt' },
      });
      expect(held.aborted).toEqual([]);
      const alices = await stop(ALICE_TOKEN);
      expect(alices.status).toBe(202);
      expect(held.aborted).toEqual(['alice']);
      held.open();
      expect(await (await going).text()).toContain('"outcome":{"type":"cancelled"}');
    } finally {
      await close();
    }
  });
});
