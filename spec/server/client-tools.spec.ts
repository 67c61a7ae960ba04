import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HttpAgent, type Message as AgUiMessage } from '@ag-ui/client';
import { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls, validateUIMessages, type UIMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import type { ToolDescriptor } from '../../src/contract/tool.ts';
import { State } from '../../src/protocols/ai-sdk-v6/drive.ts';
import { clientTool } from '../../src/runtime/client-tool.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { Mailbox } from '../../src/server/mailbox.ts';
import { listen } from '../../src/server/node.ts';
import { approvalTool, echoTool } from '../support/runtime.ts';
import { bodyJson, json, parseSse, readFor, testServer } from '../support/server.ts';

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
        'MESSAGES_SNAPSHOT',
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
      // The client holds the one result of its own call, under the id the thread keeps it under: the
      // run's last frames align the client to the thread (MESSAGES_SNAPSHOT), every message's id included.
      expect(agent.messages.filter((m) => m.role === 'tool').map((m) => [m.id, (m as { toolCallId?: string }).toolCallId])).toEqual([['message-3', 'c1']]);
      const stored = (await bodyJson(fetch(`${server.url}/v1/ag-ui/threads/ct-1/messages`))) as AgUiMessage[];
      expect(agent.messages).toEqual(stored);
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

  it('a client tool named as one of the agent’s tools is refused, naming it; one without a name, or with parameters that are not a schema, too', async () => {
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
    const shapeless = await s.app.request('/v1/ag-ui/run', input([{ name: 'pick_color', parameters: 'a colour' }]));
    expect(await shapeless.json()).toEqual({
      error: 'tools.0.parameters: Invalid input: expected record, received string',
      code: 'invalid_request',
      field: 'tools.0.parameters',
    });
    expect(s.llm.requests).toEqual([]);
  });
});

/** A server whose model calls `approve` (an approval) and the client's `pick_color` in one step, run in `mode`. */
const beside = (mode: 'parallel_batch_approval' | 'parallel_streaming') =>
  testServer(
    [
      {
        tool_calls: [
          { id: 'c1', name: 'approve', arguments: { what: 'x' } },
          { id: 'p1', name: 'pick_color', arguments: { palette: 'warm' } },
        ],
      },
      { text: 'ok' },
    ],
    { tools: [echoTool, approvalTool], spec: { sections: { tool_execution: { mode } } } },
  );

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

  it('by default after 24 hours, with the error docs/server.md shows', async () => {
    const s = testServer(script, { tools: [clientTool(pickColor)] });
    await (await s.app.request('/v1/ag-ui/run', json({ threadId: 'ct-day', runId: 'r1', messages: [{ id: 'u1', role: 'user', content: 'pick' }] }))).text();
    const parked = (await s.store.listRuns({ offset: 0, limit: 10, threadId: 'ct-day' })).items[0];
    let now = (parked?.updated_at ?? 0) + 24 * 3600_000 - 1;
    const mailbox = new Mailbox(s.store, s.registry, { ...deterministicEnv(), clock: { now: () => now } });
    expect(await mailbox.wakeScheduled()).toEqual([]);
    now += 1;
    expect(await mailbox.wakeScheduled()).toEqual(['c1']);
    await expect.poll(() => s.llm.requests.length, { timeout: 5000 }).toBe(2);
    const shown = /the mailbox ends the call with the error `([^`]+)`/.exec(
      readFileSync(join(import.meta.dirname, '../../docs/server.md'), 'utf8').replace(/\n/g, ' '),
    )?.[1];
    expect(s.llm.requests[1]?.messages.find((m) => m.role === 'tool')?.content).toEqual([{ type: 'text', text: shown }]);
  });

  it('in a batch that also waits for an approval, ends the client’s call once; the run waits on for the approval, then goes on', async () => {
    const s = beside('parallel_batch_approval');
    const input = (extra: object) =>
      json({ threadId: 'ct-late2', runId: 'r1', messages: [{ id: 'u1', role: 'user', content: 'go' }], tools: [agUiTool], ...extra });
    await (await s.app.request('/v1/ag-ui/run', input({}))).text();
    const parked = (await s.store.listRuns({ offset: 0, limit: 10, threadId: 'ct-late2' })).items[0];
    let now = (parked?.updated_at ?? 0) + 90_000;
    const mailbox = new Mailbox(s.store, s.registry, { ...deterministicEnv(), clock: { now: () => now } }, { clientToolTimeoutMs: 90_000 });
    expect(await mailbox.wakeScheduled()).toEqual(['p1']);
    now += 1000;
    expect(await mailbox.wakeScheduled()).toEqual([]);
    expect((await s.store.listRuns({ offset: 0, limit: 10, threadId: 'ct-late2' })).items[0]?.status).toBe('waiting');
    const approved = await readFor(
      await s.app.request('/v1/ag-ui/run', input({ resume: [{ interruptId: 's-c1', status: 'resolved', payload: { approved: true } }] })),
      3000,
    );
    expect(approved.text).toContain('"outcome":{"type":"success"}');
    expect(s.llm.requests[1]?.messages.find((m) => m.tool_call_id === 'p1')?.content).toEqual([
      { type: 'text', text: "the client did not send this call's result within 90 s" },
    ]);
  });
});

describe('AG-UI: a client call waiting beside an approval', () => {
  const outcomes = (text: string) =>
    parseSse(text)
      .map((f) => JSON.parse(f.data) as { type: string; outcome?: unknown; toolCallId?: string })
      .filter((e) => e.type === 'RUN_FINISHED' || e.type === 'TOOL_CALL_RESULT')
      .map((e) => (e.type === 'RUN_FINISHED' ? e.outcome : `result ${e.toolCallId}`));
  const input = (runId: string, extra: object) =>
    json({ threadId: 'ct-mix', runId, messages: [{ id: 'u1', role: 'user', content: 'go' }], tools: [agUiTool], ...extra });

  it('is listed with the interrupts (a batch waits for both), and one resume[] answering both goes on', async () => {
    const s = beside('parallel_batch_approval');
    const first = outcomes(await (await s.app.request('/v1/ag-ui/run', input('r1', {}))).text());
    expect(first).toEqual([
      {
        type: 'interrupt',
        interrupts: [
          expect.objectContaining({ id: 's-c1', reason: 'confirm', toolCallId: 'c1' }),
          expect.objectContaining({ id: 'p1', reason: 'client_tool', toolCallId: 'p1' }),
        ],
      },
    ]);
    const resume = [
      { interruptId: 's-c1', status: 'resolved', payload: { approved: true } },
      { interruptId: 'p1', status: 'resolved', payload: { color: 'red' } },
    ];
    const second = await readFor(await s.app.request('/v1/ag-ui/run', input('r1', { resume })), 3000);
    // Answered by resume[], the client's call has no message of the client's: its result is sent like the approval's.
    expect(outcomes(second.text)).toEqual(['result c1', 'result p1', { type: 'success' }]);
    expect(s.llm.requests[1]?.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, m.content])).toEqual([
      ['c1', [{ type: 'text', text: '{"approved":"x","decision":{"approved":true}}' }]],
      ['p1', [{ type: 'text', text: '{"color":"red"}' }]],
    ]);
  });

  it('a stream that resumes one call and parks again lists what still waits, not a made-up interrupt', async () => {
    const s = beside('parallel_streaming');
    await (await s.app.request('/v1/ag-ui/run', input('r1', {}))).text();
    // The approval answered: the run goes on and parks again on the client's call alone.
    const resumed = await readFor(
      await s.app.request('/v1/ag-ui/run', input('r1', { resume: [{ interruptId: 's-c1', status: 'resolved', payload: { approved: true } }] })),
      3000,
    );
    expect(outcomes(resumed.text)).toEqual(['result c1', { type: 'success' }]);
    // The client's call answered: no second result for it, and the run ends.
    const answered = await readFor(
      await s.app.request(
        '/v1/ag-ui/run',
        json({
          threadId: 'ct-mix',
          runId: 'r2',
          tools: [agUiTool],
          messages: [
            { id: 'u1', role: 'user', content: 'go' },
            { id: 't-p1', role: 'tool', toolCallId: 'p1', content: '{"color":"red"}' },
          ],
        }),
      ),
      3000,
    );
    expect(outcomes(answered.text)).toEqual([{ type: 'success' }]);
  });
});
