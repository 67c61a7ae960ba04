import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/runtime/store.ts';
import { FileStore } from '../../src/stores/file.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { SqliteStore } from '../../src/stores/sqlite.ts';
import { gatedTool, json, parseSse, readFrames, testServer, type SseFrame } from '../support/server.ts';
import { namedEnv } from '../support/runtime.ts';

/**
 * Seed 001 §4.2 across restarts: a thread log's `seq` goes on where it was (issue: the server under
 * faults, finding 2). A restart here is a new runtime and registry over the same store — the data a
 * new process finds; `spec/chaos/` does it with kill -9 of a real process.
 */
const userRun = (text: string, threadId: string) => json({ threadId, messages: [{ role: 'user', content: text }] });
const ids = (frames: readonly SseFrame[]) => frames.map((f) => Number(f.id));
const isFinish = (f: SseFrame) => f.event === undefined && (JSON.parse(f.data) as { event_type: string }).event_type === 'run_finish';

const stores: Record<string, () => { open: () => Store }> = {
  sqlite: () => {
    const path = join(mkdtempSync(join(tmpdir(), 'awaken-seq-')), 'awaken.db');
    return { open: () => new SqliteStore(path) };
  },
  file: () => {
    const root = mkdtempSync(join(tmpdir(), 'awaken-seq-'));
    return { open: () => new FileStore(root) };
  },
  'memory (a registry restarted in one process)': () => {
    const store = new MemoryStore();
    return { open: () => store };
  },
};

describe.each(Object.entries(stores))('the thread sequence after a restart: %s', (_name, make) => {
  it('a clean restart: the next run goes on from the last frame, a client holding it resumes exactly, ?since=0 resyncs', async () => {
    const where = make();
    const a = testServer([{ text: ['one', ' two'] }], { store: where.open() });
    const first = parseSse(await (await a.app.request('/v1/runs', userRun('hi', 't'))).text());
    const last = Math.max(...ids(first));
    expect(ids(first)).toEqual(Array.from({ length: last }, (_, i) => i + 1));
    await a.registry.shutdown();

    const b = testServer([{ text: ['three'] }], { store: where.open(), env: namedEnv('restarted') });
    const follower = await b.app.request('/v1/threads/t/stream', { headers: { 'last-event-id': String(last) } });
    const resumed = readFrames(follower, (fs) => fs.some(isFinish));
    const second = parseSse(await (await b.app.request('/v1/runs', userRun('again', 't'))).text());
    expect(Math.min(...ids(second))).toBe(last + 1);
    const got = await resumed;
    expect(got.every((f) => f.event !== 'resync')).toBe(true);
    expect(ids(got)).toEqual(ids(second));

    for (let i = 0; i < 500 && b.registry.currentRun('t') !== undefined; i++) await new Promise((r) => setTimeout(r, 2));
    const all = parseSse(await (await readFramesText(b, '/v1/threads/t/stream?since=0')).text);
    expect(all[0]?.event).toBe('resync');
    expect(JSON.stringify(JSON.parse(all[0]?.data ?? '{}').messages.at(-1))).toContain('three');
    await b.registry.shutdown();
  });

  it('a crash mid-run: the next run starts above every frame handed out, and a client holding one of them gets a resync first', async () => {
    const where = make();
    const g = gatedTool();
    const a = testServer([{ text: ['before the tool'], tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: 'x' } }] }, { text: 'never' }], {
      store: where.open(),
      tools: [g.tool],
    });
    const r = await a.app.request('/v1/runs', userRun('go', 'crash'));
    const seen = await readFrames(r, (fs) => fs.some((f) => f.data.includes('tool_call_start')));
    const held = Math.max(...ids(seen));
    // The process dies here: no shutdown, no clean end; the next process finds only the store.

    const b = testServer([{ text: ['after'] }], { store: where.open(), env: namedEnv('restarted') });
    const follower = await b.app.request('/v1/threads/crash/stream', { headers: { 'last-event-id': String(held) } });
    const resumed = readFrames(follower, (fs) => fs.some(isFinish));
    const next = parseSse(await (await b.app.request('/v1/runs', userRun('again', 'crash'))).text());
    expect(Math.min(...ids(next))).toBeGreaterThan(held);
    const got = await resumed;
    expect(got[0]?.event).toBe('resync');
    expect(ids(got.slice(1))).toEqual(ids(next));
    await b.registry.shutdown();
    g.open();
    await a.registry.shutdown();
  });
});

async function readFramesText(s: ReturnType<typeof testServer>, path: string): Promise<{ text: string }> {
  const frames = await readFrames(await s.app.request(path), (fs) => fs.length >= 1, 2000);
  return {
    text: frames.map((f) => `${f.id !== undefined ? `id: ${f.id}\n` : ''}${f.event !== undefined ? `event: ${f.event}\n` : ''}data: ${f.data}\n\n`).join(''),
  };
}
