import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { timelineOf, transcriptRecords } from '../../src/replay/timeline.ts';
import { startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * A thread id with `:` (`user:42`, as apps name threads per user) over a real `awaken serve
 * --record`: the inspector lists its transcript under `user:42` — the thread the page shows, whose
 * stored runs it joins with the transcripts by thread and run id — serves it, and its timeline is
 * the thread's; with API tokens, to the principal whose thread it is.
 */
const ALICE = 'alice-token-0123456789';
let server: ServeProcess;
beforeAll(async () => {
  const conf = mkdtempSync(join(tmpdir(), 'awaken-colon-'));
  writeFileSync(join(conf, 'script.json'), JSON.stringify([{ text: 'hello, user 42' }]));
  writeFileSync(
    join(conf, 'awaken.yaml'),
    ['server:', '  store: memory', '  model: scripted:script.json', '  auth:', '    tokens:', '      - { principal: alice, token_env: ALICE_SECRET }', ''].join(
      '\n',
    ),
  );
  server = await startServe(['--config', join(conf, 'awaken.yaml'), '--record', mkdtempSync(join(tmpdir(), 'awaken-colon-record-'))], { ALICE_SECRET: ALICE });
});
afterAll(async () => {
  await server.stop();
});

const get = (path: string): Promise<Response> => fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${ALICE}` } });

describe('the inspector and a thread id with `:`', () => {
  it('lists the transcript under user:42, joins it with the thread’s stored run, serves it, and its timeline is user:42’s', async () => {
    const r = await fetch(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ALICE}`, 'content-type': 'application/json' },
      body: JSON.stringify({ threadId: 'user:42', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(r.status).toBe(200);
    await r.text();
    const runId = r.headers.get('x-awaken-run-id') as string;

    // What the page does: the thread's stored runs, and the transcripts recorded under the thread.
    await expect.poll(async () => ((await (await get('/v1/inspector/transcripts')).json()) as { items: unknown[] }).items.length, { timeout: 10_000 }).toBe(1);
    const all = (await (await get('/v1/inspector/transcripts')).json()) as { items: { name: string; thread_id: string; run_id: string }[] };
    expect(all.items.map((t) => [t.thread_id, t.run_id])).toEqual([['user:42', runId]]);
    const threads = (await (await get('/v1/threads')).json()) as { items: { id: string }[] };
    expect(threads.items.map((t) => t.id)).toEqual(['user:42']);
    const stored = (await (await get(`/v1/runs?thread_id=${encodeURIComponent('user:42')}`)).json()) as { items: { run_id: string }[] };
    const recorded = (
      (await (await get(`/v1/inspector/transcripts?thread_id=${encodeURIComponent('user:42')}`)).json()) as { items: { name: string; run_id: string }[] }
    ).items;
    expect(stored.items.map((s) => [s.run_id, recorded.find((t) => t.run_id === s.run_id)?.name])).toEqual([[runId, all.items[0]?.name]]);

    const text = await (await get(`/v1/inspector/transcripts/${encodeURIComponent(all.items[0]?.name as string)}`)).text();
    const timeline = timelineOf(transcriptRecords(text));
    expect([timeline.thread_id, timeline.run_id, timeline.response, timeline.steps.length]).toEqual(['user:42', runId, 'hello, user 42', 1]);
  });
});
