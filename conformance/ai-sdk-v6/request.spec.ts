import { DefaultChatTransport, type UIMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { encodeAiSdk, frameAiSdk } from '../../src/protocols/ai-sdk-v6/encoder.ts';
import { decodeAiSdkRequest } from '../../src/protocols/ai-sdk-v6/request.ts';
import { HeadlessChat } from '../../spec/support/ai-chat.ts';
import { eventsOf } from '../support.ts';

const NOW = 1_700_000_000_000;

describe('AI SDK v6 request decoding, fed by the official AbstractChat + DefaultChatTransport', () => {
  it('reads the user message, then the approval the client answers for the approval request it was sent', async () => {
    const bodies: unknown[] = [];
    const suspended = frameAiSdk(encodeAiSdk(eventsOf('run-suspension-left-waiting.events.jsonl')));
    // The resumed run, as the server streams it after the decision (the second run of a recorded resume).
    const resumed = eventsOf('run-suspension-resumed-replay-tool-call.events.jsonl');
    const finished = frameAiSdk(encodeAiSdk(resumed.slice(resumed.findLastIndex((e) => e.event_type === 'run_start'))));
    const transport = new DefaultChatTransport<UIMessage>({
      api: 'http://agent.test/v1/ai-sdk/chat',
      fetch: async (_url, init) => {
        if (bodies.length >= 2) throw new Error('the chat sent a third request');
        bodies.push(JSON.parse(String(init?.body)));
        return new Response(bodies.length === 1 ? suspended : finished, {
          headers: { 'content-type': 'text/event-stream', 'x-vercel-ai-ui-message-stream': 'v1' },
        });
      },
    });
    const chat = new HeadlessChat('thread-1', transport);
    await chat.sendMessage({ text: 'delete it' });
    const part = chat.lastMessage?.parts.find((p) => p.type.startsWith('tool-')) as { state?: string; approval?: { id: string } } | undefined;
    expect(part?.state).toBe('approval-requested');
    expect(part?.approval?.id).toBe('confirm-c1');
    await chat.addToolApprovalResponse({ id: 'confirm-c1', approved: true, reason: 'go ahead' });
    await expect.poll(() => bodies.length).toBe(2);
    await expect.poll(() => chat.status).toBe('ready');

    const first = decodeAiSdkRequest(bodies[0], NOW);
    expect(first.ok && first.value.threadId).toBe('thread-1');
    expect(first.ok && first.value.messages.map((m) => [m.message.role, m.message.content])).toEqual([['user', [{ type: 'text', text: 'delete it' }]]]);
    expect(first.ok && first.value.decisions).toEqual([]);
    const second = decodeAiSdkRequest(bodies[1], NOW);
    expect(second.ok && second.value.decisions).toEqual([
      {
        targetId: 'confirm-c1',
        decision: { decision_id: '', action: 'resume', result: { approved: true, reason: 'go ahead' }, reason: 'go ahead', updated_at: NOW },
      },
    ]);
  });

  it('reads outputs, errors and denials of client-side tool parts; server-executed parts carry none', () => {
    const tool = (state: string, extra: object): object => ({ type: 'tool-t', toolCallId: `c-${state}`, state, input: {}, ...extra });
    const r = decodeAiSdkRequest(
      {
        id: 'chat',
        messages: [
          {
            id: 'a1',
            role: 'assistant',
            parts: [
              tool('output-available', { output: { ok: 1 } }),
              tool('output-error', { errorText: 'boom' }),
              tool('output-denied', { approval: { id: 'ap', approved: false, reason: 'no' } }),
              tool('output-available', { output: 1, providerExecuted: true, toolCallId: 'server' }),
            ],
          },
        ],
      },
      NOW,
    );
    expect(r.ok && r.value.decisions.map((d) => [d.targetId, d.decision.action, d.decision.result])).toEqual([
      ['c-output-available', 'resume', { ok: 1 }],
      ['c-output-error', 'resume', { error: 'boom' }],
      ['ap', 'cancel', { approved: false }],
    ]);
  });

  it('reads file parts as media blocks and the runtime fields', () => {
    const r = decodeAiSdkRequest(
      {
        threadId: 't',
        agentId: 'a',
        messages: [
          {
            role: 'user',
            parts: [
              { type: 'file', mediaType: 'image/png', url: 'data:image/png;base64,AAAA' },
              { type: 'text', text: 'what is it' },
            ],
          },
        ],
        state: { k: 1 },
      },
      NOW,
    );
    expect(r.ok && r.value).toEqual({
      threadId: 't',
      agentId: 'a',
      messages: [
        {
          message: {
            role: 'user',
            content: [
              { type: 'image', source: { kind: 'base64', media_type: 'image/png', data: 'AAAA' } },
              { type: 'text', text: 'what is it' },
            ],
          },
        },
      ],
      decisions: [],
      state: { k: 1 },
    });
  });

  it.each([
    ['no messages', {}, 'messages'],
    ['a legacy content message', { messages: [{ role: 'user', content: 'hi' }] }, 'messages.0.parts'],
    ['a bad role', { messages: [{ role: 'robot', parts: [] }] }, 'messages.0.role'],
    ['a part without a type', { messages: [{ role: 'user', parts: [{ text: 'x' }] }] }, 'messages.0.parts.0.type'],
  ])('bad input (%s) is a typed error naming the field', (_name, body, path) => {
    const r = decodeAiSdkRequest(body, NOW);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error.code === 'invalid_value' && r.error.issues.map((i) => i.path)).toContain(path);
  });
});
