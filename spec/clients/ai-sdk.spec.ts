import * as ai6 from 'ai';
import * as ai5 from 'ai5';
import * as ai7 from 'ai7';
import type { UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { State } from '../support/ai-chat.ts';
import { failOnConsole } from '../support/console.ts';
import { startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * The AI SDK's own chat (`AbstractChat` + `DefaultChatTransport`, the state machine under `useChat`)
 * against a real `awaken serve` process over a real socket, in `ai@6` and `ai@7`: a three-turn
 * conversation (a tool call, an approval, a denial), then `regenerate()`. Every response is read
 * again with that version's `readUIMessageStream` and `validateUIMessages`.
 */

type AiModule = typeof ai6;
type Part = { type: string; state?: string; toolCallId?: string; text?: string; output?: unknown; approval?: { id: string } };

/** Each response's body, read again by the version's own stream reader and message validator. */
interface Reading {
  readonly chunks: string[];
  readonly problem: string | undefined;
}

function chatWith(ai: AiModule, url: string, id: string, readings: Promise<Reading>[]) {
  const tap: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    if (response.body === null || !(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return response;
    const [mine, theirs] = response.body.tee();
    const sent = JSON.parse(typeof init?.body === 'string' ? init.body : '{}') as { messages?: UIMessage[] };
    // A response that continues the last assistant message (an approval answered) starts from it, as the chat does.
    const last = sent.messages?.at(-1);
    readings.push(readAgain(ai, theirs, last?.role === 'assistant' ? last : undefined));
    return new Response(mine, { status: response.status, headers: response.headers });
  };
  class HeadlessChat extends ai.AbstractChat<UIMessage> {
    constructor() {
      super({
        id,
        transport: new ai.DefaultChatTransport<UIMessage>({ api: `${url}/v1/ai-sdk/chat`, fetch: tap }),
        state: new State(),
        sendAutomaticallyWhen: ai.lastAssistantMessageIsCompleteWithApprovalResponses,
      });
    }
  }
  return new HeadlessChat();
}

async function readAgain(ai: AiModule, body: ReadableStream<Uint8Array>, message: UIMessage | undefined): Promise<Reading> {
  const text = await new Response(body).text();
  const chunks: unknown[] = text
    .split('\n\n')
    .filter((f) => f.startsWith('data: ') && f !== 'data: [DONE]')
    .map((f) => JSON.parse(f.slice(6)));
  const types = chunks.map((c) => (c as { type: string }).type);
  try {
    let final: UIMessage | undefined;
    const stream = new ReadableStream({
      start(controller) {
        for (const c of chunks) controller.enqueue(c);
        controller.close();
      },
    });
    for await (const m of ai.readUIMessageStream({
      stream: stream as never,
      terminateOnError: true,
      ...(message !== undefined ? { message: structuredClone(message) } : {}),
    }))
      final = m as UIMessage;
    if (final === undefined) return { chunks: types, problem: 'no message' };
    await ai.validateUIMessages({ messages: [final] });
    if (!text.endsWith('data: [DONE]\n\n')) return { chunks: types, problem: 'no [DONE]' };
    return { chunks: types, problem: undefined };
  } catch (e) {
    // A failed run's error chunk is the stream's error: the chat shows it.
    if (types.includes('error')) return { chunks: types, problem: undefined };
    return { chunks: types, problem: e instanceof Error ? e.message : String(e) };
  }
}

const partsOf = (m: UIMessage | undefined): Part[] => (m?.parts ?? []) as Part[];
const textOf = (m: UIMessage | undefined): string =>
  partsOf(m)
    .flatMap((p) => (p.type === 'text' ? [p.text ?? ''] : []))
    .join('');

let server: ServeProcess;
beforeAll(async () => {
  server = await startServe(['--store', 'memory', '--model', 'scripted:fixtures/scripts/demo-conversation.yaml']);
});
afterAll(async () => {
  await server.stop();
});

describe.each([
  ['ai@6', ai6 as AiModule, '6.0.326'],
  ['ai@7', ai7 as unknown as AiModule, '7.0.173'],
])('%s AbstractChat + DefaultChatTransport against awaken serve', (name, ai, version) => {
  failOnConsole(['warn', 'error']);

  it(`is the pinned ${version}`, async () => {
    const { createRequire } = await import('node:module');
    const require = createRequire(import.meta.url);
    const pkg = require(`${name === 'ai@6' ? 'ai' : 'ai7'}/package.json`) as { version: string };
    expect(pkg.version).toBe(version);
  });

  it('three turns: a tool call, an approval, a denial; then regenerate()', async () => {
    const readings: Promise<Reading>[] = [];
    const thread = `chat-${name.replace('@', '')}`;
    const chat = chatWith(ai, server.url, thread, readings);

    await chat.sendMessage({ text: 'weather in Oslo?' });
    expect(chat.error).toBeUndefined();
    const weather = partsOf(chat.lastMessage).find((p) => p.type === 'tool-get_weather');
    expect(weather).toMatchObject({ state: 'output-available', output: { city: 'Oslo', condition: 'sunny', temperature_c: 10 } });
    expect(partsOf(chat.lastMessage).some((p) => p.type === 'reasoning')).toBe(true);
    expect(textOf(chat.lastMessage)).toBe('It is sunny in Oslo, 10 °C.');

    await chat.sendMessage({ text: 'delete the branch' });
    expect(chat.error).toBeUndefined();
    const ask = partsOf(chat.lastMessage).find((p) => p.type === 'tool-confirm_action');
    expect(ask?.state).toBe('approval-requested');
    // A chat reloaded from the server's history shows the same pending approval.
    const history = (await (await fetch(`${server.url}/v1/ai-sdk/threads/${thread}/messages`)).json()) as UIMessage[];
    expect(history.flatMap((m) => partsOf(m)).find((p) => p.toolCallId === ask?.toolCallId)).toMatchObject({
      type: 'tool-confirm_action',
      state: 'approval-requested',
      approval: { id: ask?.approval?.id },
    });
    await chat.addToolApprovalResponse({ id: ask?.approval?.id ?? '', approved: true });
    await expect.poll(() => chat.status, { timeout: 10_000 }).toBe('ready');
    expect(chat.error).toBeUndefined();
    // The resumed call keeps its name: one part, tool-confirm_action, now with its output.
    expect(
      partsOf(chat.lastMessage)
        .filter((p) => p.toolCallId === 'call_delete_branch')
        .map((p) => [p.type, p.state]),
    ).toEqual([['tool-confirm_action', 'output-available']]);
    expect(textOf(chat.lastMessage)).toContain('Done: the branch is deleted.');

    await chat.sendMessage({ text: 'delete the tag' });
    const second = partsOf(chat.lastMessage).find((p) => p.toolCallId === 'call_delete_tag');
    expect(second?.state).toBe('approval-requested');
    await chat.addToolApprovalResponse({ id: second?.approval?.id ?? '', approved: false, reason: 'keep it' });
    await expect.poll(() => chat.status, { timeout: 10_000 }).toBe('ready');
    expect(chat.error).toBeUndefined();
    expect(
      partsOf(chat.lastMessage)
        .filter((p) => p.toolCallId === 'call_delete_tag')
        .map((p) => [p.type, p.state]),
    ).toEqual([['tool-confirm_action', 'output-denied']]);
    expect(textOf(chat.lastMessage)).toContain('Understood, I left the tag alone.');

    // regenerate() sends the history without the last answer: a new answer replaces it, no 4xx.
    await chat.regenerate();
    expect(chat.error).toBeUndefined();
    expect(chat.status).toBe('ready');
    expect(textOf(chat.lastMessage)).toBe('Done.');

    const read = await Promise.all(readings);
    expect(read.length).toBe(6);
    expect(read.map((r) => r.problem)).toEqual(read.map(() => undefined));
    // Three calls, each announced once: a resumed call is not announced again.
    expect(read.flatMap((r) => r.chunks).filter((t) => t === 'tool-input-available').length).toBe(3);
    const stored = (await (await fetch(`${server.url}/v1/threads/${thread}/messages?limit=200`)).json()) as {
      messages: { role: string; content: { text?: string }[] }[];
    };
    expect(stored.messages.filter((m) => m.role === 'user').map((m) => m.content.map((b) => b.text).join(''))).toEqual([
      'weather in Oslo?',
      'delete the branch',
      'delete the tag',
    ]);
  });
});

describe('ai@5 AbstractChat + DefaultChatTransport against awaken serve (no approvals in ai@5)', () => {
  it('chats and shows tool calls; a call waiting for approval ends the chat in error (ai@5 has no tool-approval-request)', async () => {
    class HeadlessChat5 extends ai5.AbstractChat<ai5.UIMessage> {
      constructor(id: string) {
        super({ id, transport: new ai5.DefaultChatTransport<ai5.UIMessage>({ api: `${server.url}/v1/ai-sdk/chat` }), state: new State() as never });
      }
    }
    const chat = new HeadlessChat5('chat-ai5');
    await chat.sendMessage({ text: 'weather in Oslo?' });
    expect(chat.error).toBeUndefined();
    expect(partsOf(chat.lastMessage as never).find((p) => p.type === 'tool-get_weather')?.state).toBe('output-available');
    expect(textOf(chat.lastMessage as never)).toBe('It is sunny in Oslo, 10 °C.');
    const errors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      await chat.sendMessage({ text: 'delete the branch' });
    } finally {
      errors.mockRestore();
    }
    expect(chat.status).toBe('error');
    expect(String(chat.error?.message)).toMatch(/tool-approval-request|Type validation failed/);
  });
});
