import { Message, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import type { ToolDescriptor } from '../../src/contract/tool.ts';
import { clientTool } from '../../src/runtime/client-tool.ts';
import { listen } from '../../src/server/node.ts';
import { testServer } from '../support/server.ts';

/**
 * A client tool (`clientTool`, an app's tool without `execute`) called in a task an A2A client
 * started, driven by the official @a2a-js/sdk client over a socket: the task asks for input and
 * lists the call as the client's to run, and the client's answer on the task is the call's result.
 */

const pickColor: ToolDescriptor = {
  id: 'pick_color',
  name: 'pick_color',
  description: 'Asks the user to pick a colour',
  parameters: { type: 'object', properties: { palette: { type: 'string' } }, required: ['palette'] },
};
const script = [{ tool_calls: [{ id: 'c1', name: 'pick_color', arguments: { palette: 'warm' } }] }, { text: 'You picked red.' }];
const clientToolServer = () => testServer(script, { tools: [clientTool(pickColor)] });

const user = (extra: Record<string, unknown>) => Message.fromJSON({ messageId: `m-${Math.random().toString(36).slice(2)}`, role: 'ROLE_USER', ...extra });
const stateOf = (t: Task): string => TaskState[t.status?.state ?? 0] ?? '?';
type WithStatus = { readonly status?: { readonly message?: Message | undefined } | undefined };
const dataOf = (t: WithStatus): unknown => t.status?.message?.parts.find((p) => p.content?.$case === 'data')?.content?.value;
const textOf = (t: WithStatus): string => (t.status?.message?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
const answerText = (t: Task): string =>
  (t.artifacts ?? [])
    .flatMap((a) => a.parts)
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .join('');

/** What the model read as the call's result in its second request. */
const toolResultRead = (s: ReturnType<typeof clientToolServer>): unknown => s.llm.requests[1]?.messages.find((m) => m.role === 'tool');

const waitingCall = {
  toolCallId: 'c1',
  name: 'pick_color',
  arguments: { palette: 'warm' },
  disposition: 'pending_client',
  suspensionId: 'c1',
  action: 'client_tool',
  message: "Tool 'pick_color' runs on the client: awaiting its result",
};

describe('A2A: a call to a client tool', () => {
  it('leaves the task input-required with the call listed as the client’s (action client_tool), in the stream and in GetTask alike', async () => {
    const s = clientToolServer();
    const server = await listen(s.app, { port: 0 });
    try {
      const client = await new ClientFactory().createFromUrl(server.url);
      const frames: StreamResponse[] = [];
      for await (const f of client.sendMessageStream({ message: user({ parts: [{ text: 'pick a colour' }] }), tenant: '' } as never)) frames.push(f);
      const last = frames.at(-1)?.payload;
      const status = last?.$case === 'statusUpdate' ? last.value : undefined;
      expect(TaskState[status?.status?.state ?? 0]).toBe('TASK_STATE_INPUT_REQUIRED');
      expect(dataOf(status ?? {})).toEqual({ pendingToolCalls: [waitingCall] });
      expect(textOf(status ?? {})).toContain("Tool 'pick_color' runs on the client: awaiting its result");

      const got = await client.getTask({ id: status?.taskId ?? '', tenant: '' } as never);
      expect(stateOf(got)).toBe('TASK_STATE_INPUT_REQUIRED');
      expect(dataOf(got)).toEqual({ pendingToolCalls: [waitingCall] });
      // Only the first inference ran: nothing ran the client's tool on the server.
      expect(s.llm.requests).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it('is answered by a message on the task: its data part is the call’s result, which the model reads, and the task completes', async () => {
    const s = clientToolServer();
    const server = await listen(s.app, { port: 0 });
    try {
      const client = await new ClientFactory().createFromUrl(server.url);
      const waiting = (await client.sendMessage({ message: user({ parts: [{ text: 'pick a colour' }] }), tenant: '' } as never)) as Task;
      expect(stateOf(waiting)).toBe('TASK_STATE_INPUT_REQUIRED');
      const answered = (await client.sendMessage({
        message: user({ taskId: waiting.id, contextId: waiting.contextId, parts: [{ data: { color: 'red' } }] }),
        tenant: '',
      } as never)) as Task;
      expect(answered.id).toBe(waiting.id);
      expect(stateOf(answered)).toBe('TASK_STATE_COMPLETED');
      expect(answerText(answered)).toBe('You picked red.');
      expect(toolResultRead(s)).toMatchObject({ tool_call_id: 'c1', content: [{ type: 'text', text: '{"color":"red"}' }] });
    } finally {
      await server.close();
    }
  });

  it('a text answer is the result {text}; a data part {"error": …} alone fails the call with that text — the model reads either', async () => {
    for (const [parts, read] of [
      [[{ text: 'red' }], '{"text":"red"}'],
      [[{ data: { error: 'no palette here' } }], 'no palette here'],
    ] as const) {
      const s = clientToolServer();
      const server = await listen(s.app, { port: 0 });
      try {
        const client = await new ClientFactory().createFromUrl(server.url);
        const waiting = (await client.sendMessage({ message: user({ parts: [{ text: 'pick a colour' }] }), tenant: '' } as never)) as Task;
        const answered = (await client.sendMessage({
          message: user({ taskId: waiting.id, contextId: waiting.contextId, parts }),
          tenant: '',
        } as never)) as Task;
        expect(stateOf(answered)).toBe('TASK_STATE_COMPLETED');
        expect(toolResultRead(s)).toMatchObject({ tool_call_id: 'c1', content: [{ type: 'text', text: read }] });
      } finally {
        await server.close();
      }
    }
  });
});
