import { describe, expect, it } from 'vitest';
import { listen } from '../../src/server/node.ts';
import { json, testServer } from '../support/server.ts';
import { report, rngOf, SCALE } from './chaos.ts';

/**
 * Clients that drop and come back (seed 001 §4.5), over a real socket: a thread stream is cut at
 * random points while a run streams, and every reconnect sends the last id it got.
 */
describe('randomized disconnect and reconnect with Last-Event-ID', () => {
  it(`${1000 * SCALE} reconnects during and after a run: every frame exactly once, in order`, async () => {
    const rng = rngOf('reconnect');
    const pieces = 1500;
    const s = testServer([{ text: Array.from({ length: pieces }, (_, i) => `p${i} `), delay_ms: 1 }], { registry: { replayBufferCapacity: 4096 } });
    const server = await listen(s.app, { port: 0 });
    try {
      expect((await fetch(`${server.url}/v1/threads`, json({ id: 'rc' }))).status).toBe(201);
      const run = fetch(`${server.url}/v1/runs`, json({ threadId: 'rc', messages: [{ role: 'user', content: 'go' }] })).then((r) => r.text());
      const got: number[] = [];
      let last = 0;
      let reconnects = 0;
      let resyncs = 0;
      let finished = false;
      const decoder = new TextDecoder();
      while (reconnects < 1000 * SCALE || !finished) {
        const abort = new AbortController();
        const r = await fetch(`${server.url}/v1/threads/rc/stream`, { headers: { 'last-event-id': String(last) }, signal: abort.signal });
        reconnects++;
        const reader = (r.body as ReadableStream<Uint8Array>).getReader();
        const want = 1 + Math.floor(rng() * 6);
        let text = '';
        let frames = 0;
        while (frames < want) {
          const next = await Promise.race([reader.read(), new Promise<'idle'>((res) => setTimeout(() => res('idle'), finished ? 20 : 500))]);
          if (next === 'idle' || next.done) break;
          text += decoder.decode(next.value, { stream: true });
          // Only whole frames count: what was cut mid-frame is sent again after the reconnect.
          const whole = text.slice(0, text.lastIndexOf('\n\n') + 2);
          const blocks = whole.split('\n\n').filter((b) => b.trim() !== '' && !b.startsWith(':'));
          while (frames < Math.min(want, blocks.length)) {
            const block = blocks[frames] as string;
            if (block.includes('event: resync')) resyncs++;
            const id = Number(/^id: (\d+)$/m.exec(block)?.[1]);
            got.push(id);
            last = id;
            if (block.includes('"event_type":"run_finish"')) finished = true;
            frames++;
          }
        }
        abort.abort();
        await reader.cancel().catch(() => undefined);
      }
      await run;
      const expected = Array.from({ length: s.registry.log('rc').lastSeq }, (_, i) => i + 1);
      const lost = expected.filter((id) => !got.includes(id)).length;
      const duplicated = got.length - new Set(got).size;
      report('reconnects', { reconnects, frames: got.length, lost, duplicated, resyncs });
      expect({ lost, duplicated, resyncs }).toEqual({ lost: 0, duplicated: 0, resyncs: 0 });
      expect(got).toEqual(expected);
    } finally {
      await server.close();
    }
  }, 300_000);
});
