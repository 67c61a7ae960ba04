import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transcriptIdsOf } from '../../src/replay/served.ts';
import { startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * The inspector's finding surfaces with two principals (alice, bob; API tokens) over `awaken serve`
 * on SQLite: the thread search, the transcript search, a transcript by name, a replay by name, the
 * runs of a thread and the AI SDK chat route. Bob never finds, reads or drives Alice's thread —
 * not by its id, its title or her run id — and Alice finds all of it.
 */
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789';
const ADMIN = 'admin-token-0123456789';

describe('finding things with two principals, over awaken serve', () => {
  const record = mkdtempSync(join(tmpdir(), 'awaken-studio-tenancy-'));
  let server: ServeProcess;
  let alicesRun: string;
  let bobsRun: string;
  let alicesFile: string;
  const headers = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });
  const get = (token: string, path: string): Promise<Response> => fetch(`${server.url}${path}`, { headers: headers(token) });
  const post = (token: string, path: string, body: unknown): Promise<Response> =>
    fetch(`${server.url}${path}`, { method: 'POST', headers: headers(token), body: JSON.stringify(body) });
  const threadIds = async (token: string, query: string): Promise<string[]> => {
    const r = await get(token, `/v1/inspector/threads?${query}`);
    expect(r.status, query).toBe(200);
    return ((await r.json()) as { items: { id: string }[] }).items.map((t) => t.id);
  };
  const transcriptRuns = async (token: string, query: string): Promise<{ runs: string[]; total: number }> => {
    const r = await get(token, `/v1/inspector/transcripts?${query}`);
    expect(r.status, query).toBe(200);
    const body = (await r.json()) as { items: { run_id: string }[]; total: number };
    return { runs: body.items.map((t) => t.run_id), total: body.total };
  };

  beforeAll(async () => {
    const conf = mkdtempSync(join(tmpdir(), 'awaken-studio-tenancy-config-'));
    writeFileSync(join(conf, 'script.json'), JSON.stringify([{ text: 'the code is 4711' }, { text: 'noted' }, { text: 'again' }, { text: 'more' }]));
    writeFileSync(
      join(conf, 'awaken.yaml'),
      [
        'server:',
        `  store: sqlite:${join(conf, 'store.db')}`,
        '  model: scripted:script.json',
        '  auth:',
        '    tokens:',
        '      - { principal: alice, token_env: ALICE_SECRET }',
        '      - { principal: bob, token_env: BOB_SECRET }',
        '',
      ].join('\n'),
    );
    server = await startServe(['--config', join(conf, 'awaken.yaml'), '--record', record], { ALICE_SECRET: ALICE, BOB_SECRET: BOB, AWAKEN_ADMIN_TOKEN: ADMIN });
    expect((await post(ALICE, '/v1/threads', { id: 'alice-launch', title: 'Launch Codes' })).status).toBe(201);
    const a = await post(ALICE, '/v1/runs', { threadId: 'alice-launch', messages: [{ role: 'user', content: 'remember 4711' }] });
    expect(a.status).toBe(200);
    await a.text();
    alicesRun = a.headers.get('x-awaken-run-id') as string;
    const b = await post(BOB, '/v1/runs', { threadId: 'bob-notes', messages: [{ role: 'user', content: 'bob here' }] });
    expect(b.status).toBe(200);
    await b.text();
    bobsRun = b.headers.get('x-awaken-run-id') as string;
    for (let waited = 0; ; waited += 50) {
      const files = readdirSync(record);
      const found = files.find((f) => transcriptIdsOf(f)?.runId === alicesRun);
      if (found !== undefined && files.some((f) => transcriptIdsOf(f)?.runId === bobsRun)) {
        alicesFile = found;
        break;
      }
      if (waited > 10_000) throw new Error('the runs were not recorded within 10 s');
      await new Promise((r) => setTimeout(r, 50));
    }
  }, 60_000);
  afterAll(async () => {
    await server.stop();
  });

  it('the thread search: Bob never finds Alice’s thread — not by its id, its title or her run id, nor by a filter; Alice does', async () => {
    expect(await threadIds(BOB, '')).toEqual(['bob-notes']);
    for (const q of [`q=${alicesRun}`, `q=${alicesRun.toUpperCase()}`, 'q=launch%20codes', 'q=alice', 'q=-launch'])
      expect(await threadIds(BOB, q), q).toEqual([]);
    for (const filter of ['agent_id=agent', 'agent_id=default', 'status=done', 'errors=false'])
      expect(await threadIds(BOB, filter), filter).not.toContain('alice-launch');
    const bobs = (await (await get(BOB, '/v1/inspector/threads')).json()) as { items: { recorded: number; last_run: { run_id: string } }[]; total: number };
    expect(bobs.total).toBe(1);
    expect(bobs.items[0]?.last_run.run_id).toBe(bobsRun);
    for (const q of [`q=${alicesRun}`, 'q=LAUNCH', 'q=alice-launch']) expect(await threadIds(ALICE, q), q).toEqual(['alice-launch']);
    const alices = (await (await get(ALICE, `/v1/inspector/threads?q=${alicesRun}`)).json()) as { items: { title: string; runs: number; recorded: number }[] };
    expect(alices.items[0]).toMatchObject({ title: 'Launch Codes', runs: 1, recorded: 1 });
    expect((await threadIds(ADMIN, '')).sort()).toEqual(['alice-launch', 'bob-notes']);
  });

  it('the transcript search, a transcript by name and a replay by name: nothing of Alice’s for Bob', async () => {
    expect(await transcriptRuns(BOB, `q=${alicesRun}&limit=50`)).toEqual({ runs: [], total: 0 });
    expect(await transcriptRuns(BOB, 'q=alice&limit=50')).toEqual({ runs: [], total: 0 });
    expect(await transcriptRuns(BOB, 'limit=50')).toEqual({ runs: [bobsRun], total: 1 });
    expect(await transcriptRuns(ALICE, `q=${alicesRun}&limit=50`)).toEqual({ runs: [alicesRun], total: 1 });
    const read = await get(BOB, `/v1/inspector/transcripts/${encodeURIComponent(alicesFile)}`);
    expect(read.status).toBe(404);
    expect(await read.text()).not.toContain('4711');
    const replay = await post(BOB, '/v1/inspector/replay', { name: alicesFile });
    expect(replay.status).toBe(404);
    expect(await replay.json()).toMatchObject({ code: 'transcript_not_found' });
    expect((await get(ALICE, `/v1/inspector/transcripts/${encodeURIComponent(alicesFile)}`)).status).toBe(200);
  });

  it('the runs of Alice’s thread and the AI SDK chat route on it: refused to Bob, nothing written', async () => {
    const runs = await get(BOB, '/v1/runs?thread_id=alice-launch');
    expect(JSON.stringify(await runs.json())).not.toContain(alicesRun);
    const chat = await post(BOB, '/v1/ai-sdk/chat', { id: 'alice-launch', messages: [{ id: 'x1', role: 'user', parts: [{ type: 'text', text: 'hijack' }] }] });
    expect(chat.status).toBe(404);
    await chat.text();
    const byThreadId = await post(BOB, '/v1/ai-sdk/chat', {
      threadId: 'alice-launch',
      messages: [{ id: 'x2', role: 'user', parts: [{ type: 'text', text: 'hijack' }] }],
    });
    expect(byThreadId.status).toBe(404);
    await byThreadId.text();
    // Alice's thread is as she left it: her one run, no message of Bob's.
    const mine = (await (await get(ALICE, '/v1/runs?thread_id=alice-launch')).json()) as { items: { run_id: string }[] };
    expect(mine.items.map((r) => r.run_id)).toEqual([alicesRun]);
    const messages = await (await get(ALICE, '/v1/threads/alice-launch/messages')).text();
    expect(messages).not.toContain('hijack');
    expect(await threadIds(BOB, '')).toEqual(['bob-notes']);
  });
});
