import { copyFileSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { inspectorRoutes } from '../../src/inspector/routes.ts';
import { ServedRecorder, transcriptIdsOf } from '../../src/replay/served.ts';
import { createHttpApp } from '../../src/server/http.ts';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { RunRegistry } from '../../src/server/run-registry.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { readFrames } from '../support/server.ts';
import { startServe, type ServeProcess } from '../support/serve-process.ts';
import { echoTool } from '../support/runtime.ts';

/**
 * Recorded transcripts and two principals (alice, bob; API tokens) over a real socket: a transcript
 * belongs to the principal that owned its thread when it was recorded — written in its header — and
 * is listed, read, replayed and followed live only by that principal while the thread is still
 * theirs; never by whoever holds a thread whose name looks like it, or a thread of the same id
 * created after the first was deleted. A transcript with no owner (recorded without tokens, or by
 * the admin on a free thread) is the admin's alone.
 */
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789';
const ADMIN = 'admin-token-0123456789';

interface Listed {
  readonly name: string;
  readonly thread_id: string;
  readonly run_id: string;
}

function client(url: string) {
  const headers = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });
  const get = (token: string, path: string, init: RequestInit = {}): Promise<Response> =>
    fetch(`${url}${path}`, { ...init, headers: { ...headers(token), ...(init.headers as Record<string, string>) } });
  const post = (token: string, path: string, body: unknown): Promise<Response> =>
    fetch(`${url}${path}`, { method: 'POST', headers: headers(token), body: JSON.stringify(body) });
  return {
    get,
    post,
    /** A run on a thread, read to its end; its run id. */
    run: async (token: string, threadId: string, text: string): Promise<string> => {
      const r = await post(token, '/v1/runs', { threadId, messages: [{ role: 'user', content: text }] });
      expect(r.status, `${threadId}: ${r.status}`).toBe(200);
      await r.text();
      return r.headers.get('x-awaken-run-id') as string;
    },
    list: async (token: string, query = ''): Promise<Listed[]> => {
      const r = await get(token, `/v1/inspector/transcripts${query}`);
      expect(r.status).toBe(200);
      return ((await r.json()) as { items: Listed[] }).items;
    },
  };
}

/** Waits (bounded) until the record directory holds a transcript of each run. */
async function recorded(dir: string, runIds: readonly string[]): Promise<void> {
  await expect.poll(() => runIds.filter((id) => readdirSync(dir).every((f) => transcriptIdsOf(f)?.runId !== id)), { timeout: 10_000 }).toEqual([]);
}
const fileOf = (dir: string, runId: string): string => readdirSync(dir).find((f) => transcriptIdsOf(f)?.runId === runId) as string;

describe('the inspector with API tokens, over awaken serve', () => {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-tenancy-'));
  let server: ServeProcess;
  beforeAll(async () => {
    const conf = mkdtempSync(join(tmpdir(), 'awaken-tenancy-config-'));
    writeFileSync(join(conf, 'script.json'), JSON.stringify([{ text: 'noted' }, { text: 'noted again' }, { text: 'noted once more' }]));
    writeFileSync(
      join(conf, 'awaken.yaml'),
      [
        'server:',
        '  store: memory',
        '  model: scripted:script.json',
        '  auth:',
        '    tokens:',
        '      - { principal: alice, token_env: ALICE_SECRET }',
        '      - { principal: bob, token_env: BOB_SECRET }',
        '',
      ].join('\n'),
    );
    server = await startServe(['--config', join(conf, 'awaken.yaml'), '--record', dir], { ALICE_SECRET: ALICE, BOB_SECRET: BOB, AWAKEN_ADMIN_TOKEN: ADMIN });
  }, 30_000);
  afterAll(async () => {
    await server.stop();
  });

  it('a name that looks like another thread gives nothing: list, read and replay go by the owner and thread the transcript records', async () => {
    const c = client(server.url);
    const alices = await c.run(ALICE, 'team:alpha', 'alice: the launch code is 4711');
    // Bob holds the free threads whose names the old file names would have matched.
    const bobs = [await c.run(BOB, 'team_alpha', 'bob here'), await c.run(BOB, 'x', 'bob again')];
    await recorded(dir, [alices, ...bobs]);
    const alicesFile = fileOf(dir, alices);
    // Copies of Alice's transcript under names that say "bob's thread".
    copyFileSync(join(dir, alicesFile), join(dir, `x--secret--${alices}.jsonl`));
    copyFileSync(join(dir, alicesFile), join(dir, `team_alpha--${alices}.jsonl`));

    const bobSees = await c.list(BOB);
    expect(bobSees.map((t) => [t.thread_id, t.run_id]).sort()).toEqual(
      [
        ['team_alpha', bobs[0]],
        ['x', bobs[1]],
      ].sort(),
    );
    expect(await c.list(BOB, '?thread_id=team_alpha')).toEqual([expect.objectContaining({ thread_id: 'team_alpha', run_id: bobs[0] })]);
    expect(await c.list(BOB, `?thread_id=${encodeURIComponent('team:alpha')}`)).toEqual([]);
    for (const name of [alicesFile, `x--secret--${alices}.jsonl`, `team_alpha--${alices}.jsonl`]) {
      const read = await c.get(BOB, `/v1/inspector/transcripts/${encodeURIComponent(name)}`);
      expect(read.status, name).toBe(404);
      expect(await read.text(), name).not.toContain('4711');
      const replayed = await c.post(BOB, '/v1/inspector/replay', { name });
      expect(replayed.status, name).toBe(404);
      expect(await replayed.json()).toEqual({ error: `no recorded transcript ${name}`, code: 'transcript_not_found' });
      const forked = await c.post(BOB, '/v1/inspector/fork', { name, at_step: 1 });
      expect(forked.status, name).toBe(404);
      expect(await forked.json()).toEqual({ error: `no recorded transcript ${name}`, code: 'transcript_not_found' });
    }

    // Alice sees her transcript (and its copies: they are hers) under the thread it records.
    const aliceSees = await c.list(ALICE);
    expect(aliceSees.map((t) => t.thread_id)).toEqual(['team:alpha', 'team:alpha', 'team:alpha']);
    expect(new Set(aliceSees.map((t) => t.run_id))).toEqual(new Set([alices]));
    const own = await c.get(ALICE, `/v1/inspector/transcripts/${encodeURIComponent(alicesFile)}`);
    expect(own.status).toBe(200);
    expect(await own.text()).toContain('the launch code is 4711');
    expect(((await (await c.post(ALICE, '/v1/inspector/replay', { name: alicesFile })).json()) as { report: { identical: boolean } }).report.identical).toBe(
      true,
    );
    const ownFork = await c.post(ALICE, '/v1/inspector/fork', { name: alicesFile, at_step: 1 });
    expect(ownFork.status).toBe(200);
    const child = ((await ownFork.json()) as { transcript: string }).transcript;
    expect(child).toContain('the launch code is 4711');
    expect(JSON.parse(child.slice(0, child.indexOf('\n'))).fork).toMatchObject({ parent: alicesFile, at_step: 1 });
    // Written under a name that gives the thread back (`:` and `-` escaped), which no other thread id has.
    expect(alicesFile).toBe(`team~3aalpha--${alices.replace(/-/g, '~2d')}.jsonl`);
  });

  it('live follow: another principal’s thread stream is not there', async () => {
    const c = client(server.url);
    const alices = await c.run(ALICE, 'alice-live', 'alice streams');
    for (const init of [{}, { headers: { 'last-event-id': '0' } }]) {
      const r = await c.get(BOB, '/v1/threads/alice-live/stream', init);
      expect(r.status).toBe(404);
      expect(await r.text()).not.toContain(alices);
    }
    expect((await c.get(BOB, '/v1/threads/alice-live/stream?since=0')).status).toBe(404);
  });

  it('a thread deleted and created again by another principal: the new owner gets none of the old transcripts or frames, the old owner none of the thread', async () => {
    const c = client(server.url);
    const bobs = await c.run(BOB, 'reuse', 'bob: my salary is 9000');
    await recorded(dir, [bobs]);
    const bobsFile = fileOf(dir, bobs);
    expect((await c.list(BOB, '?thread_id=reuse')).map((t) => t.run_id)).toEqual([bobs]);
    expect((await c.get(BOB, '/v1/threads/reuse', { method: 'DELETE' })).status).toBe(204);

    const alices = await c.run(ALICE, 'reuse', 'alice takes the name');
    await recorded(dir, [alices]);
    expect((await c.list(ALICE, '?thread_id=reuse')).map((t) => t.run_id)).toEqual([alices]);
    expect((await c.get(ALICE, `/v1/inspector/transcripts/${encodeURIComponent(bobsFile)}`)).status).toBe(404);
    expect((await c.post(ALICE, '/v1/inspector/replay', { name: bobsFile })).status).toBe(404);
    // Following the thread from its first frame: Alice's own run (its frames, or a resync with her
    // thread's messages), nothing of Bob's before it.
    const mine = (x: { readonly event?: string; readonly data: string }): boolean =>
      x.event === 'resync' || (x.data.includes('"run_finish"') && x.data.includes(alices));
    const frames = await readFrames(await c.get(ALICE, '/v1/threads/reuse/stream?since=0'), (f) => f.some(mine), 5_000);
    expect(frames.some(mine)).toBe(true);
    expect(frames.filter((x) => x.data.includes(bobs) || x.data.includes('9000'))).toEqual([]);
    expect(frames.some((x) => x.data.includes(alices) || x.data.includes('alice takes the name'))).toBe(true);
    // Bob's transcript is not his to read through a thread that is no longer his (the admin still can).
    expect(await c.list(BOB, '?thread_id=reuse')).toEqual([]);
    expect((await c.get(BOB, `/v1/inspector/transcripts/${encodeURIComponent(bobsFile)}`)).status).toBe(404);
    expect((await c.get(ADMIN, `/v1/inspector/transcripts/${encodeURIComponent(bobsFile)}`)).status).toBe(200);
  });

  it('a transcript with no owner (the admin on a free thread) is the admin’s alone', async () => {
    const c = client(server.url);
    const admins = await c.run(ADMIN, 'ops', 'admin work');
    await recorded(dir, [admins]);
    const file = fileOf(dir, admins);
    expect((await c.list(ADMIN)).map((t) => t.run_id)).toContain(admins);
    for (const token of [ALICE, BOB]) {
      expect((await c.list(token)).map((t) => t.run_id)).not.toContain(admins);
      expect((await c.get(token, `/v1/inspector/transcripts/${encodeURIComponent(file)}`)).status).toBe(404);
    }
  });

  it('`..%2F`, a 300-character thread id and names that are no file of the directory are refused or not found, never a file elsewhere or a 500', async () => {
    const c = client(server.url);
    for (const threadId of ['..%2F..%2Fescape', 'a..%2F..%2Fb', 't'.repeat(300)]) {
      const r = await c.post(ALICE, '/v1/runs', { threadId, messages: [{ role: 'user', content: 'hi' }] });
      expect(r.status, threadId).toBe(400);
      expect(await r.json()).toEqual({ error: 'invalid thread id', code: 'invalid_id', field: 'threadId' });
    }
    expect(await c.list(ALICE, `?thread_id=${encodeURIComponent('..%2F..%2Fescape')}`)).toEqual([]);
    for (const name of ['..%2F..%2Fpackage.json', '..%252F..%252Fpackage.json', '%ff', '%', 'package.json', 'x.jsonl']) {
      const r = await c.get(ADMIN, `/v1/inspector/transcripts/${name}`);
      expect(r.status, name).toBe(404);
      expect(await r.json()).toMatchObject({ code: 'transcript_not_found' });
    }
    const badName = await c.post(ADMIN, '/v1/inspector/replay', { name: '../package.json' });
    expect(badName.status).toBe(400);
    expect(await badName.json()).toMatchObject({ code: 'invalid_request', field: 'name' });
  });
});

describe('thread ids the HTTP routes and the stores refuse, recorded through the runtime', () => {
  let server: RunningServer;
  const dir = mkdtempSync(join(tmpdir(), 'awaken-tenancy-ids-'));
  const store = new MemoryStore();
  let registry: RunRegistry;
  beforeAll(async () => {
    const recorder = new ServedRecorder({ dir, models: { m: { provider: 'scripted', model_name: 'scripted-model' } }, tools: [echoTool.descriptor] });
    const built = new AgentRuntimeBuilder()
      .withEnv(recorder.env(deterministicEnv()))
      .withProvider('scripted', recorder.llm(new ScriptedLlm([{ text: 'one' }, { text: 'two' }, { text: 'three' }])))
      .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
      .withThreadRunStore(recorder.store(store))
      .withAgentSpec({ id: 'agent', model: 'm', system_prompt: 'be brief' })
      .withTool(recorder.tool(echoTool))
      .build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    recorder.attach(built.value);
    registry = new RunRegistry(built.value, store, { observer: recorder });
    const app = createHttpApp(
      { runtime: built.value, store, registry },
      {
        auth: {
          tokens: new Map([
            [ALICE, 'alice'],
            [BOB, 'bob'],
          ]),
        },
        adminToken: ADMIN,
      },
    );
    app.route('/', inspectorRoutes({ store, recordDir: dir }));
    server = await listen(app, { port: 0 });
  });
  afterAll(async () => {
    await server.close();
  });

  it('a 300-character thread id and one with `..%2F` are written inside the directory under a short name, listed under their whole id — to the admin only, as nobody owns them', async () => {
    const long = 't'.repeat(300);
    const dotted = '..%2F..%2F..%2Fescape';
    // No store takes such an id (the run fails at its first checkpoint), but its transcript is written.
    for (const threadId of [long, dotted]) {
      const started = await registry.start({ threadId, messages: [Messages.user('hi')] });
      expect(started.ok).toBe(true);
      if (started.ok) await started.value.done;
    }
    await expect.poll(() => readdirSync(dir).filter((f) => f.endsWith('.jsonl')).length, { timeout: 10_000 }).toBe(2);
    for (const f of readdirSync(dir)) expect(Buffer.byteLength(f)).toBeLessThanOrEqual(200);
    const c = client(server.url);
    const listed = await c.list(ADMIN);
    expect(listed.map((t) => t.thread_id).sort()).toEqual([dotted, long].sort());
    expect((await c.list(ADMIN, `?thread_id=${long}`)).map((t) => t.thread_id)).toEqual([long]);
    expect((await c.list(ADMIN, `?thread_id=${encodeURIComponent(dotted)}`)).map((t) => t.thread_id)).toEqual([dotted]);
    for (const t of listed) {
      expect((await c.get(ADMIN, `/v1/inspector/transcripts/${encodeURIComponent(t.name)}`)).status).toBe(200);
      for (const token of [ALICE, BOB]) expect((await c.get(token, `/v1/inspector/transcripts/${encodeURIComponent(t.name)}`)).status).toBe(404);
    }
    expect(await c.list(ALICE)).toEqual([]);
    expect(await c.list(BOB)).toEqual([]);
  });
});
