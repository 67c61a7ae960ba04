import { EventSchema } from '@ag-ui/core/schemas';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/contract/json.ts';
import { Messages, type Message } from '../../src/contract/message.ts';
import { initialAgUiState, transcodeAgUi } from '../../src/protocols/ag-ui/encoder.ts';
import { toAgUiMessages } from '../../src/server/protocol-routes.ts';
import { message } from '../../src/testing/arbitraries.ts';

/**
 * One conversion of stored messages to AG-UI messages: a `messages_snapshot` event (what `awaken
 * encode` and a user's event stream carry) is encoded as the server sends the thread on `connect`
 * and at the end of a run — a user's images and documents as content parts included — and
 * `@ag-ui/core`'s schema takes it.
 */

/** The messages of the `MESSAGES_SNAPSHOT` a run's `messages_snapshot` event is encoded as. */
function snapshotOf(messages: readonly Message[]): JsonValue[] {
  const [started] = transcodeAgUi(initialAgUiState(), { event_type: 'run_start', thread_id: 't', run_id: 'r' });
  const [, frames] = transcodeAgUi(started, { event_type: 'messages_snapshot', messages: messages as unknown as JsonValue[] });
  const snapshot = frames.find((f) => f.type === 'MESSAGES_SNAPSHOT') as { messages: JsonValue[] } | undefined;
  return snapshot?.messages ?? [];
}

describe('AG-UI messages: the encoder and the server convert alike', () => {
  it('a user image and document are content parts in a messages_snapshot event, as the server sends them', () => {
    const user: Message = {
      id: 'u1',
      role: 'user',
      content: [
        { type: 'text', text: 'what is this?' },
        { type: 'image', source: { kind: 'url', url: 'https://example.com/cat.png' } },
        { type: 'document', source: { kind: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } },
      ],
    };
    const expected = [
      {
        id: 'u1',
        role: 'user',
        content: [
          { type: 'text', text: 'what is this?' },
          { type: 'image', source: { type: 'url', value: 'https://example.com/cat.png' } },
          { type: 'document', source: { type: 'data', value: 'JVBERi0=', mimeType: 'application/pdf' } },
        ],
      },
    ];
    expect(snapshotOf([user])).toEqual(expected);
    expect(toAgUiMessages([user])).toEqual(expected);
  });

  it('an assistant turn with its calls, the tool result and a system message, whole: as the server has always sent them', () => {
    const thread: Message[] = [
      { id: 's1', role: 'system', content: [{ type: 'text', text: 'Be brief.' }] },
      { id: 'a1', role: 'assistant', content: [], tool_calls: [{ id: 'c1', name: 'get_weather', arguments: { city: 'Oslo' } }] },
      { id: 't1', role: 'tool', content: [{ type: 'text', text: '{"temp":10}' }], tool_call_id: 'c1' },
      {
        id: 'a2',
        role: 'assistant',
        content: [
          { type: 'text', text: 'It is ' },
          { type: 'text', text: '10 °C.' },
        ],
      },
    ];
    const expected = [
      { id: 's1', role: 'system', content: 'Be brief.' },
      {
        id: 'a1',
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
      },
      { id: 't1', role: 'tool', content: '{"temp":10}', toolCallId: 'c1' },
      { id: 'a2', role: 'assistant', content: 'It is 10 °C.' },
    ];
    expect(toAgUiMessages(thread)).toEqual(expected);
    expect(snapshotOf(thread)).toEqual(expected);
  });

  it('for any stored messages, the snapshot keeps each id and role, in order, and @ag-ui/core takes it', () => {
    fc.assert(
      fc.property(fc.array(message(), { maxLength: 5 }), (messages) => {
        const stored = messages.map((m, i) => ({ ...m, id: m.id ?? `m${i}` }));
        const encoded = snapshotOf(stored) as { id: string; role: string }[];
        expect(encoded.map((m) => [m.id, m.role])).toEqual(stored.map((m) => [m.id, m.role]));
        expect(EventSchema.safeParse({ type: 'MESSAGES_SNAPSHOT', messages: encoded }).success).toBe(true);
      }),
    );
  });

  it('a message an event carries without an id is msg_<index>', () => {
    expect(snapshotOf([Messages.user('hi'), { role: 'assistant', content: [] }])).toEqual([
      { id: 'msg_0', role: 'user', content: 'hi' },
      { id: 'msg_1', role: 'assistant', content: '' },
    ]);
  });
});
