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

  it('for any stored messages (with their ids), the event and the server give the same AG-UI messages, which @ag-ui/core takes', () => {
    fc.assert(
      fc.property(fc.array(message(), { maxLength: 5 }), (messages) => {
        const stored = messages.map((m, i) => ({ ...m, id: m.id ?? `m${i}` }));
        const encoded = snapshotOf(stored);
        expect(encoded).toEqual(toAgUiMessages(stored));
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
