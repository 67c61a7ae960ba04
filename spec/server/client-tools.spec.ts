import { HttpAgent, type Message as AgUiMessage } from '@ag-ui/client';
import { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls, validateUIMessages, type UIMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import type { ToolDescriptor } from '../../src/contract/tool.ts';
import { State } from '../../src/protocols/ai-sdk-v6/drive.ts';
import { clientTool } from '../../src/runtime/client-tool.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { Mailbox } from '../../src/server/mailbox.ts';
import { listen } from '../../src/server/node.ts';
import { echoTool } from '../support/runtime.ts';
import { bodyJson, json, testServer } from '../support/server.ts';

/** Tools the client runs, through the official clients over a socket: AG-UI's `HttpAgent` and the AI SDK's chat. */

const pickColor: ToolDescriptor = {
  id: 'pick_color',
  name: 'pick_color',
  description: 'Asks the user to pick a colour in the page',
  parameters: { type: 'object', properties: { palette: { type: 'string' } }, required: ['palette'] },
};
const agUiTool = { name: pickColor.name, description: pickColor.description, parameters: pickColor.parameters };
const script = [{ tool_calls: [{ id: 'c1', name: 'pick_color', arguments: { palette: 'warm' } }] }, { text: 'You picked red.' }];

describe('AG-UI: the tools a RunAgentInput declares', () => {
  it('are offered to the model; a call ends the run for the client to run it, and its tool message resumes the run', async () => {
    const s = testServer(script, { tools: [echoTool] });
    const server = await listen(s.app, { port: 0 });
    try {
      const agent = new HttpAgent({ url: `${server.url}/v1/ag-ui/run`, threadId: 'ct-1' });
      const seen: string[] = [];
      agent.messages.push({ id: 'u1', role: 'user', content: 'pick a colour' });
      await agent.runAgent({ runId: 'client-run-1', tools: [agUiTool] }, { onEvent: ({ event }) => void seen.push(event.type) });
      expect(s.llm.requests[0]?.tools).toEqual([echoTool.descriptor, pickColor]);
      expect(seen).toEqual([
        'RUN_STARTED',
        'STEP_STARTED',
        'TOOL_CALL_START',
        'TOOL_CALL_ARGS',
        'TOOL_CALL_END',
        'STATE_SNAPSHOT',
        'STEP_FINISHED',
        'STATE_SNAPSHOT',
        'RUN_FINISHED',
      ]);
      // Not an interrupt: the client's own tool, which it runs now that the run has finished.
      expect(agent.pendingInterrupts).toEqual([]);
      const call = agent.messages.at(-1) as Extract<AgUiMessage, { role: 'assistant' }>;
      expect(call.toolCalls).toEqual([{ id: 'c1', type: 'function', function: { name: 'pick_color', arguments: '{"palette":"warm"}' } }]);

      agent.messages.push({ id: 'tool-c1', role: 'tool', toolCallId: 'c1', content: JSON.stringify({ color: 'red' }) });
      await agent.runAgent({ runId: 'client-run-2', tools: [agUiTool] });
      const last = agent.messages.at(-1) as { role: string; content?: unknown };
      expect(last).toMatchObject({ role: 'assistant', content: 'You picked red.' });
      expect(s.llm.requests[1]?.messages.find((m) => m.role === 'tool')).toMatchObject({
        tool_call_id: 'c1',
        content: [{ type: 'text', text: '{"color":"red"}' }],
      });
      const runs = await bodyJson(fetch(`${server.url}/v1/runs?thread_id=ct-1`));
      expect(runs.items.map((r: { status: string }) => r.status)).toEqual(['done']);
    } finally {
      await server.close();
    }
  });

  it('a client tool named as one of the agent’s tools is refused, naming it; one without a name too', async () => {
    const s = testServer(script, { tools: [echoTool] });
    const input = (tools: unknown[]) => json({ threadId: 'ct-2', runId: 'r', messages: [{ id: 'u1', role: 'user', content: 'go' }], tools });
    const clash = await s.app.request('/v1/ag-ui/run', input([agUiTool, { name: 'echo', description: 'mine', parameters: {} }]));
    expect(clash.status).toBe(400);
    expect(await clash.json()).toEqual({
      error: "tools[1].name: 'echo' is a tool of the agent: a client tool may not take a server tool's name",
      code: 'invalid_request',
      field: 'tools[1].name',
    });
    const nameless = await s.app.request('/v1/ag-ui/run', input([{ description: 'no name' }]));
    expect(nameless.status).toBe(400);
    expect(await nameless.json()).toEqual({
      error: 'tools.0.name: Invalid input: expected string, received undefined',
      code: 'invalid_request',
      field: 'tools.0.name',
    });
    expect(s.llm.requests).toEqual([]);
  });
});

/** The AI SDK chat as a page uses it with a client tool: `onToolCall` runs it, `addToolOutput` answers, and it sends again by itself. */
class ToolChat extends AbstractChat<UIMessage> {
  constructor(id: string, api: string, run: (input: unknown) => unknown) {
    super({
      id,
      transport: new DefaultChatTransport<UIMessage>({ api }),
      state: new State(),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
      onToolCall: ({ toolCall }) => {
        void this.addToolOutput({ tool: toolCall.toolName as never, toolCallId: toolCall.toolCallId, output: run(toolCall.input) as never });
      },
    });
  }
}

describe('AI SDK: a tool the server declares without running it', () => {
  it('useChat’s onToolCall runs it, addToolOutput sends the output, and the conversation completes', async () => {
    const s = testServer(script, { tools: [echoTool, clientTool(pickColor)] });
    const server = await listen(s.app, { port: 0 });
    try {
      const inputs: unknown[] = [];
      const chat = new ToolChat('ct-ai', `${server.url}/v1/ai-sdk/chat`, (input) => {
        inputs.push(input);
        return { color: 'red' };
      });
      await chat.sendMessage({ text: 'pick a colour' });
      await expect.poll(() => chat.status, { timeout: 5000 }).toBe('ready');
      expect(chat.error).toBeUndefined();
      expect(inputs).toEqual([{ palette: 'warm' }]);
      const parts = chat.lastMessage?.parts ?? [];
      expect(parts.filter((p) => p.type === 'tool-pick_color')).toEqual([
        expect.objectContaining({ toolCallId: 'c1', state: 'output-available', input: { palette: 'warm' }, output: { color: 'red' } }),
      ]);
      expect(parts.flatMap((p) => (p.type === 'text' ? [p.text] : []))).toEqual(['You picked red.']);
      expect(s.llm.requests[1]?.messages.find((m) => m.role === 'tool')).toMatchObject({
        tool_call_id: 'c1',
        content: [{ type: 'text', text: '{"color":"red"}' }],
      });
      const runs = await bodyJson(fetch(`${server.url}/v1/runs?thread_id=ct-ai`));
      expect(runs.items.map((r: { status: string }) => r.status)).toEqual(['done']);
    } finally {
      await server.close();
    }
  });

  it('a chat reloaded while the client’s call waits shows the call with its input, to run — not an approval', async () => {
    const s = testServer(script, { tools: [clientTool(pickColor)] });
    const first = await s.app.request(
      '/v1/ai-sdk/chat',
      json({ id: 'ct-reload', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'pick' }] }] }),
    );
    const text = await first.text();
    expect(text).toContain('"type":"tool-input-available"');
    expect(text).not.toContain('tool-approval-request');
    const ui = await bodyJson(s.app.request('/v1/ai-sdk/threads/ct-reload/messages'));
    expect(ui.at(-1).parts).toEqual([{ type: 'tool-pick_color', toolCallId: 'c1', input: { palette: 'warm' }, state: 'input-available' }]);
    await validateUIMessages({ messages: ui });
  });
});

describe('a client that never answers its tool’s call', () => {
  it('ends the call with an error the model reads once the run has waited the client tool timeout, not before', async () => {
    const s = testServer(script, { tools: [clientTool(pickColor)] });
    const r = await s.app.request(
      '/v1/ag-ui/run',
      json({ threadId: 'ct-late', runId: 'r1', messages: [{ id: 'u1', role: 'user', content: 'pick' }], tools: [] }),
    );
    await r.text();
    const parked = (await s.store.listRuns({ offset: 0, limit: 10, threadId: 'ct-late' })).items[0];
    expect(parked?.status).toBe('waiting');
    let now = 0;
    const mailbox = new Mailbox(s.store, s.registry, { ...deterministicEnv(), clock: { now: () => now } }, { clientToolTimeoutMs: 90_000 });
    now = (parked?.updated_at ?? 0) + 89_999;
    expect(await mailbox.wakeScheduled()).toEqual([]);
    now += 1;
    expect(await mailbox.wakeScheduled()).toEqual(['c1']);
    await expect.poll(async () => (await s.store.listRuns({ offset: 0, limit: 10, threadId: 'ct-late' })).items[0]?.status, { timeout: 5000 }).toBe('done');
    expect(s.llm.requests[1]?.messages.find((m) => m.role === 'tool')).toMatchObject({
      tool_call_id: 'c1',
      content: [{ type: 'text', text: "the client did not send this call's result within 90 s" }],
    });
  });
});
