import { HttpAgent } from '@ag-ui/client';
import { describe, expect, it } from 'vitest';
import { listen } from '../../src/server/node.ts';
import { addTodoTool, json, testServer } from '../support/server.ts';

/** The client's state and context through AG-UI's `HttpAgent`: shared keys both ways, nothing else writable. */

const turn = (id: string, item: string) => [{ tool_calls: [{ id, name: 'add_todo', arguments: { item } }] }, { text: `Added ${item}.` }];

describe('AG-UI: the client state an agent shares', () => {
  it('the client’s state starts the run, a tool’s write comes back to it, and the client’s own change reaches the next run; nothing else is shown', async () => {
    const s = testServer([...turn('c1', 'eggs'), ...turn('c2', 'jam')], { tools: [addTodoTool], spec: { client_state: ['todos'] } });
    const server = await listen(s.app, { port: 0 });
    try {
      const agent = new HttpAgent({ url: `${server.url}/v1/ag-ui/run`, threadId: 'cs-1', initialState: { todos: ['milk'] } });
      agent.messages.push({ id: 'u1', role: 'user', content: 'add eggs' });
      await agent.runAgent({ runId: 'r1' });
      expect(agent.state).toEqual({ todos: ['milk', 'eggs'] });
      expect(s.llm.requests[1]?.messages.find((m) => m.role === 'tool')?.content).toEqual([{ type: 'text', text: '{"saw":["milk"]}' }]);

      // The page changes the list; the next run starts from the page's list.
      agent.setState({ todos: ['bread'] });
      agent.messages.push({ id: 'u2', role: 'user', content: 'add jam' });
      await agent.runAgent({ runId: 'r2' });
      expect(s.llm.requests[3]?.messages.find((m) => m.role === 'tool' && m.tool_call_id === 'c2')?.content).toEqual([
        { type: 'text', text: '{"saw":["bread"]}' },
      ]);
      expect(agent.state).toEqual({ todos: ['bread', 'jam'] });
    } finally {
      await server.close();
    }
  });

  it('a key the agent does not share is refused, naming it: a plugin’s (permission_policy), the runtime’s, or any', async () => {
    const shared = testServer(turn('c1', 'x'), { tools: [addTodoTool], spec: { client_state: ['todos'] } });
    const none = testServer(turn('c1', 'x'), { tools: [addTodoTool] });
    const input = (state: unknown) => json({ threadId: 'cs-2', runId: 'r', messages: [{ id: 'u1', role: 'user', content: 'go' }], state });
    const refused = async (app: typeof shared.app, state: unknown) => {
      const r = await app.request('/v1/ag-ui/run', input(state));
      return { status: r.status, body: await r.json() };
    };
    expect(await refused(shared.app, { todos: [], permission_policy: { default_behavior: 'allow', rules: [] } })).toEqual({
      status: 400,
      body: {
        error: "state.permission_policy: agent 'agent' shares no such key with its clients (client_state: todos)",
        code: 'invalid_request',
        field: 'state.permission_policy',
      },
    });
    expect(await refused(shared.app, { '__runtime.run_lifecycle': { status: 'done' } })).toEqual({
      status: 400,
      body: {
        error: "state.__runtime.run_lifecycle: agent 'agent' shares no such key with its clients (client_state: todos)",
        code: 'invalid_request',
        field: 'state.__runtime.run_lifecycle',
      },
    });
    expect(await refused(none.app, { todos: ['a'] })).toEqual({
      status: 400,
      body: { error: "state.todos: agent 'agent' shares no such key with its clients (client_state: none)", code: 'invalid_request', field: 'state.todos' },
    });
    expect(await refused(none.app, [1, 2])).toEqual({
      status: 400,
      body: { error: "state: a client's state is an object of the keys its agent shares", code: 'invalid_request', field: 'state' },
    });
    expect(shared.llm.requests).toEqual([]);
    expect(none.llm.requests).toEqual([]);
    // An empty state is no write at all: the run goes on.
    expect((await none.app.request('/v1/ag-ui/run', input({}))).status).toBe(200);
  });

  it('the client’s context is offered to the model in each inference of the run', async () => {
    const s = testServer(turn('c1', 'eggs'), { tools: [addTodoTool], spec: { client_state: ['todos'] } });
    const r = await s.app.request(
      '/v1/ag-ui/run',
      json({
        threadId: 'cs-3',
        runId: 'r',
        messages: [{ id: 'u1', role: 'user', content: 'add eggs' }],
        context: [
          { description: 'page', value: '/checkout' },
          { description: 'user locale', value: 'nb-NO' },
        ],
      }),
    );
    await r.text();
    const said = 'What the client says of its page:\n- page: /checkout\n- user locale: nb-NO';
    for (const request of s.llm.requests) {
      expect(request.messages.filter((m) => m.role === 'system').map((m) => m.content)).toEqual([
        [{ type: 'text', text: 'be brief' }],
        [{ type: 'text', text: said }],
      ]);
    }
    expect(s.llm.requests).toHaveLength(2);
    // Offered, not stored: the thread holds the conversation only.
    const stored = await s.store.loadThread('cs-3');
    expect(stored?.messages.some((m) => m.role === 'system')).toBe(false);
  });
});
