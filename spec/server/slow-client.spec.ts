import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/server/log.ts';
import { listen } from '../../src/server/node.ts';
import { json, parseSse, testServer } from '../support/server.ts';

/**
 * A client that stops reading (issue: the server under faults, finding 3): what the server holds for
 * it is bounded, and it is dropped with a resync telling it where to reconnect from — over a real
 * socket, whose kernel buffers fill first.
 */
describe('a follower that stops reading', () => {
  it('is dropped once it leaves maxFollowerBytes unread: unsubscribed while its socket is still open, its stream ending with a resync after contiguous frames', async () => {
    const piece = 'x'.repeat(64 * 1024);
    const lines: string[] = [];
    const s = testServer([{ text: Array.from({ length: 200 }, () => piece) }], {
      registry: { maxFollowerBytes: 256 * 1024, logger: createLogger({ level: 'warn', format: 'json', now: () => 0, write: (l) => lines.push(l) }) },
    });
    const server = await listen(s.app, { port: 0 });
    try {
      expect((await fetch(`${server.url}/v1/threads`, json({ id: 'big' }))).status).toBe(201);
      // A raw socket that sends its request and then reads nothing.
      const url = new URL(server.url);
      const socket = connect(Number(url.port), url.hostname);
      const chunks: Buffer[] = [];
      await new Promise<void>((r) => socket.once('connect', () => r()));
      socket.write(`GET /v1/threads/big/stream HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n`);
      socket.pause();
      for (let i = 0; i < 500 && s.registry.log('big').subscribers === 0; i++) await new Promise((r) => setTimeout(r, 5));
      expect(s.registry.log('big').subscribers).toBe(1);

      // 200 × 64 KiB: far more than the socket buffers and the bound hold.
      const run = await fetch(`${server.url}/v1/runs`, json({ threadId: 'big', messages: [{ role: 'user', content: 'go' }] }));
      await run.text();
      for (let i = 0; i < 2000 && s.registry.currentRun('big') !== undefined; i++) await new Promise((r) => setTimeout(r, 5));
      expect(s.registry.log('big').lastSeq).toBeGreaterThan(200);
      // Dropped while the socket is still open and unread: nothing more is held for it.
      expect(s.registry.log('big').subscribers).toBe(0);
      expect(socket.destroyed).toBe(false);
      expect(lines.some((l) => l.includes('slow client dropped') && l.includes('"thread":"big"'))).toBe(true);

      // Reading now: every frame it was sent, in order, then the resync, then the end.
      // The response ends with the last chunk of its chunked body.
      await new Promise<void>((r) => {
        socket.on('data', (c: Buffer) => {
          chunks.push(c);
          if (Buffer.concat(chunks.slice(-2)).toString('latin1').endsWith('\r\n0\r\n\r\n')) r();
        });
        socket.once('end', () => r());
        socket.resume();
      });
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text.slice(text.indexOf('\r\n\r\n') + 4);
      const frames = parseSse(body.replace(/\r\n[0-9a-f]+\r\n/g, '').replace(/^[0-9a-f]+\r\n/, ''));
      const last = frames.at(-1);
      expect(last?.event).toBe('resync');
      const data = frames.slice(0, -1).filter((f) => f.id !== undefined);
      const ids = data.map((f) => Number(f.id));
      expect(ids.length).toBeGreaterThan(0);
      expect(ids).toEqual(ids.map((_, i) => (ids[0] as number) + i));
      // No history for a client that does not read: the id to reconnect from (the last frame it was sent).
      expect(JSON.parse(last?.data ?? '{}')).toEqual({ seq: ids.at(-1), reconnect: true, reason: 'slow_client' });
      expect(last?.id).toBe(String(ids.at(-1)));
      socket.destroy();
    } finally {
      await server.close();
    }
  }, 30_000);

  it('on a protocol stream (AI SDK), which has no resync frame, is cut off: the connection is closed for it to resume from', async () => {
    const piece = 'y'.repeat(64 * 1024);
    const s = testServer([{ text: Array.from({ length: 200 }, () => piece) }], { registry: { maxFollowerBytes: 256 * 1024 } });
    const server = await listen(s.app, { port: 0 });
    try {
      const url = new URL(server.url);
      const socket = connect(Number(url.port), url.hostname);
      await new Promise<void>((r) => socket.once('connect', () => r()));
      const body = JSON.stringify({ id: 'chat', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'go' }] }] });
      socket.write(
        `POST /v1/ai-sdk/chat HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      socket.pause();
      const closed = new Promise<void>((r) => socket.once('close', () => r()));
      for (let i = 0; i < 2000 && (s.registry.currentRun('chat') !== undefined || s.registry.log('chat').lastSeq === 0); i++)
        await new Promise((r) => setTimeout(r, 5));
      expect(s.registry.log('chat').lastSeq).toBeGreaterThan(200);
      expect(s.registry.log('chat').subscribers).toBe(0);
      socket.resume();
      socket.on('data', () => undefined);
      await closed;
      expect(socket.destroyed).toBe(true);
    } finally {
      await server.close();
    }
  }, 30_000);

  it('a burst above the bound that the client reads (frames of 300 to 600 KB, 1.8 MB at once) is not a slow client: the stream ends normally', async () => {
    const s = testServer([{ text: 'w'.repeat(300 * 1024) }], { registry: { maxFollowerBytes: 512 * 1024 } });
    const server = await listen(s.app, { port: 0 });
    try {
      const text = await (await fetch(`${server.url}/v1/runs`, json({ threadId: 'burst', messages: [{ role: 'user', content: 'go' }] }))).text();
      const frames = parseSse(text);
      expect(frames.some((f) => f.event === 'resync')).toBe(false);
      expect(JSON.parse(frames.at(-1)?.data ?? '{}').event_type).toBe('run_finish');
    } finally {
      await server.close();
    }
  });

  it("what it has not read waits as the frames' text, not as bytes: at most 64 KiB of it is encoded ahead", async () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    expect(gc).toBeTypeOf('function');
    const piece = 'x'.repeat(4096);
    // 200 frames of 4 KB for a follower that reads nothing, under a bound that does not drop it.
    const s = testServer(
      [
        { text: Array.from({ length: 200 }, () => piece) },
        { text: Array.from({ length: 200 }, () => piece) },
        { text: Array.from({ length: 200 }, () => piece) },
      ],
      {
        registry: { maxFollowerBytes: 64 * 1024 * 1024 },
      },
    );
    const settled = async (): Promise<number> => {
      (gc as () => void)();
      await new Promise((r) => setTimeout(r, 20));
      (gc as () => void)();
      return process.memoryUsage().arrayBuffers;
    };
    // \`arrayBuffers\` is the process's: whatever else settles meanwhile only adds to it, so the least
    // of three threads' figures is taken (all three exceed the bound if the frames are held as bytes).
    const figures: number[] = [];
    for (const thread of ['held-1', 'held-2', 'held-3']) {
      expect((await s.app.request('/v1/threads', json({ id: thread }))).status).toBe(201);
      const before = await settled();
      const follower = await s.app.request(`/v1/threads/${thread}/stream`);
      await (await s.app.request('/v1/runs', json({ threadId: thread, messages: [{ role: 'user', content: 'go' }] }))).text();
      for (let i = 0; i < 500 && s.registry.currentRun(thread) !== undefined; i++) await new Promise((r) => setTimeout(r, 2));
      figures.push((await settled()) - before);
      expect(s.registry.log(thread).subscribers).toBe(1);
      await follower.body?.cancel();
      if (Math.min(...figures) < 256 * 1024) break;
    }
    expect(Math.min(...figures)).toBeLessThan(256 * 1024);
  });
});
