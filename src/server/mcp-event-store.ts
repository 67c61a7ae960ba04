import type { EventStore } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * The SSE events of one MCP session, kept for resumption (a client reconnecting with
 * `Last-Event-ID` gets what it missed): the SDK transport stores every event here, which also makes
 * it open each POST stream with a priming event (`id`, empty data, `retry`). Bounded: the newest
 * `maxStreams` streams, `maxEvents` events each. A stream closed without an answer (a cancelled
 * request) is remembered as such: there is nothing to resume.
 */
export class McpEventStore implements EventStore {
  readonly #streams = new Map<string, { events: { n: number; message: JSONRPCMessage }[]; next: number }>();
  readonly #closed = new Set<string>();
  readonly #maxStreams: number;
  readonly #maxEvents: number;

  constructor(options: { readonly maxStreams?: number; readonly maxEvents?: number } = {}) {
    this.#maxStreams = options.maxStreams ?? 256;
    this.#maxEvents = options.maxEvents ?? 1024;
  }

  storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    let stream = this.#streams.get(streamId);
    if (stream === undefined) {
      stream = { events: [], next: 0 };
      this.#streams.set(streamId, stream);
      if (this.#streams.size > this.#maxStreams) {
        const oldest = this.#streams.keys().next().value as string;
        this.#streams.delete(oldest);
        this.#closed.delete(oldest);
      }
    }
    const n = stream.next++;
    stream.events.push({ n, message });
    if (stream.events.length > this.#maxEvents) stream.events.shift();
    return Promise.resolve(`${streamId}|${n}`);
  }

  getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    const streamId = eventId.slice(0, eventId.lastIndexOf('|'));
    return Promise.resolve(eventId.includes('|') && this.#streams.has(streamId) ? streamId : undefined);
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const cut = lastEventId.lastIndexOf('|');
    const streamId = lastEventId.slice(0, cut);
    const after = Number(lastEventId.slice(cut + 1));
    for (const e of this.#streams.get(streamId)?.events ?? []) if (e.n > after) await send(`${streamId}|${e.n}`, e.message);
    return streamId;
  }

  /** Marks a stream closed without an answer (its request was cancelled). */
  close(streamId: string): void {
    if (this.#streams.has(streamId)) this.#closed.add(streamId);
  }

  /** Whether the stream an event id belongs to was closed without an answer. */
  closedAt(eventId: string): boolean {
    return this.#closed.has(eventId.slice(0, eventId.lastIndexOf('|')));
  }
}
