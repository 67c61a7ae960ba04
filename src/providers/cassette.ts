/**
 * Wire cassettes: a provider's streaming HTTP response kept as one JSON chunk per line (the `data:`
 * payloads of its SSE frames), rebuilt into the provider's SSE framing on replay, so a real provider
 * package runs unchanged against it. Project-made cassettes live in `fixtures/cassettes/`.
 */
export type CassetteFormat = 'openai-compatible' | 'anthropic';

/** The SSE body a provider would have sent for these chunks. */
export function toSse(chunks: readonly string[], format: CassetteFormat): string {
  if (format === 'anthropic') {
    return chunks
      .map((c) => {
        const type = (JSON.parse(c) as { type?: unknown }).type;
        return `event: ${typeof type === 'string' ? type : 'message'}\ndata: ${c}\n\n`;
      })
      .join('');
  }
  return `${chunks.map((c) => `data: ${c}\n\n`).join('')}data: [DONE]\n\n`;
}

/** The chunks of an SSE body: each frame's `data:` payload, without the `[DONE]` sentinel. */
export function fromSse(body: string): string[] {
  const out: string[] = [];
  for (const frame of body.replace(/\r\n/g, '\n').split('\n\n')) {
    const data = frame
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''))
      .join('\n');
    if (data !== '' && data !== '[DONE]') out.push(data);
  }
  return out;
}

/** A cassette file's text as chunks (blank lines ignored). */
export const chunksOf = (jsonl: string): string[] => jsonl.split('\n').filter((l) => l.trim() !== '');

/** A cassette as JSONL text. */
export const cassetteText = (chunks: readonly string[]): string => `${chunks.join('\n')}\n`;

export const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } as const;

/** A streaming `Response` replaying the cassette, split into small pieces as a network would. */
export function cassetteResponse(chunks: readonly string[], format: CassetteFormat, pieceBytes = 64): Response {
  const bytes = new TextEncoder().encode(toSse(chunks, format));
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let i = 0; i < bytes.length; i += pieceBytes) controller.enqueue(bytes.slice(i, i + pieceBytes));
      controller.close();
    },
  });
  return new Response(body, { status: 200, headers: SSE_HEADERS });
}

/** A `fetch` that answers every request with the cassette (for providers that accept a custom fetch). */
export const cassetteFetch =
  (chunks: readonly string[], format: CassetteFormat): typeof fetch =>
  () =>
    Promise.resolve(cassetteResponse(chunks, format));

/** Record mode: reads a live streaming response to its end and returns its chunks. */
export async function recordCassette(response: Response): Promise<string[]> {
  if (!response.ok) throw new Error(`cannot record a cassette from HTTP ${response.status}`);
  return fromSse(await response.text());
}
