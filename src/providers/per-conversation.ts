import type { Message } from '../contract/message.ts';
import type { StreamPart } from '../contract/stream.ts';
import type { InferenceRequest, LlmExecutor } from '../runtime/llm.ts';

/**
 * An executor that gives every conversation its own executor from `make` — a file-backed model
 * (`scripted:FILE`, `transcript:FILE`) served to many threads runs its file from the start in each,
 * exactly as `awaken run` does for one. A conversation is its thread (`InferenceRequest.threadId`):
 * clients may reuse message ids across threads, and plugins place messages of their own at the head
 * of a request, so nothing in the messages names it. A thread deleted and begun again (its first
 * message another, no assistant turn yet) is a new conversation. A request from no thread is known by
 * its first message that is not a system message. The oldest conversations are forgotten beyond
 * `capacity`. A conversation first seen with assistant turns in its history (taken up after a
 * restart, or after it was forgotten) goes on from there: `make` is told how many turns it had.
 */
export function perConversation(make: (turnsTaken: number) => LlmExecutor, options: { readonly capacity?: number } = {}): LlmExecutor {
  const capacity = options.capacity ?? 10_000;
  const conversations = new Map<string, { readonly executor: LlmExecutor; readonly opening: string }>();
  return {
    name: make(0).name,
    stream(request: InferenceRequest): AsyncIterable<StreamPart> {
      const opening = openingOf(request.messages);
      const key = request.threadId !== undefined ? `thread:${request.threadId}` : `message:${opening}`;
      let turns = 0;
      for (const m of request.messages) if (m.role === 'assistant') turns++;
      let conversation = conversations.get(key);
      if (conversation === undefined || (turns === 0 && conversation.opening !== opening)) {
        conversation = { executor: make(turns), opening };
        conversations.delete(key);
        conversations.set(key, conversation);
        if (conversations.size > capacity) conversations.delete(conversations.keys().next().value as string);
      }
      return conversation.executor.stream(request);
    },
  };
}

/** The id of the first message the conversation itself holds: not a system message, not one a plugin placed for this request only. */
function openingOf(messages: readonly Message[]): string {
  for (const m of messages) if (m.role !== 'system' && m.visibility !== 'internal') return m.id ?? '';
  return '';
}
