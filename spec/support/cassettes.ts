import { http, HttpResponse } from 'msw';
import { setupServer } from 'msw/node';
import { toSse, type CassetteFormat } from '../../src/providers/cassette.ts';

/** An msw server answering POSTs to `url` with the cassette in the provider's SSE framing. */
export function cassetteServer(url: string, chunks: () => readonly string[], format: CassetteFormat): ReturnType<typeof setupServer> & { requests: unknown[] } {
  const requests: unknown[] = [];
  const server = setupServer(
    http.post(url, async ({ request }) => {
      requests.push(await request.json());
      return new HttpResponse(toSse(chunks(), format), { headers: { 'content-type': 'text/event-stream' } });
    }),
  );
  return Object.assign(server, { requests });
}
