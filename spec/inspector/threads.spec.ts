import { mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TerminationReason } from '../../src/contract/lifecycle.ts';
import { inspectorRoutes } from '../../src/inspector/routes.ts';
import type { RunRecord } from '../../src/runtime/store.ts';
import { SqliteStore } from '../../src/stores/sqlite.ts';
import { testServer } from '../support/server.ts';

/**
 * The inspector's thread list (`GET /v1/inspector/threads`, docs/inspector.md → API), in process on
 * a SQLite store: the store's threads and those only recorded transcripts know, newest first, with
 * their run counts, recorded transcripts and newest run; searched by id, title or run id, narrowed
 * by a run's agent, status or error, paged; each caller's own only. spec/inspector/studio-tenancy.spec.ts
 * attacks it with two principals over `awaken serve`.
 */
const tokens = new Map([
  ['token-ann', 'ann'],
  ['token-bob', 'bob'],
]);

/** A transcript header as `awaken serve --record` writes it (what the index reads of a file). */
const transcriptOf = (thread: string, run: string, owner?: string): string =>
  `${JSON.stringify({ type: 'header', format: 'awaken-transcript/7', request: { thread_id: thread, run_id: run, ...(owner !== undefined ? { owner } : {}) } })}\n`;

function world(options: { readonly auth?: boolean } = {}) {
  const store = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'awaken-threads-db-')), 'store.db'));
  const record = mkdtempSync(join(tmpdir(), 'awaken-threads-record-'));
  const s = testServer([], { store, ...(options.auth === true ? { http: { auth: { tokens } } } : {}) });
  s.app.route('/', inspectorRoutes({ store, recordDir: record }));
  /** A run record on a thread (the thread made or moved on to `at`). */
  const run = (
    threadId: string,
    runId: string,
    at: number,
    fields: { agentId?: string; status?: RunRecord['status']; termination?: TerminationReason; steps?: number } = {},
  ) =>
    store.checkpoint({
      threadId,
      runId,
      agentId: fields.agentId ?? 'agent',
      status: fields.status ?? 'done',
      ...(fields.termination !== undefined
        ? { termination: fields.termination }
        : fields.status === undefined
          ? { termination: { type: 'natural_end' } as const }
          : {}),
      steps: fields.steps ?? 1,
      messages: [],
      threadState: { revision: 1, extensions: {} },
      runState: { revision: 1, extensions: {} },
      updatedAt: at,
    });
  /** A recorded transcript, modified at `at` (ms, whole seconds). */
  const recorded = (name: string, thread: string, runId: string, at: number, owner?: string): void => {
    writeFileSync(join(record, name), transcriptOf(thread, runId, owner));
    utimesSync(join(record, name), new Date(at), new Date(at));
  };
  const get = async (path: string, token?: string) => {
    const r = await s.app.request(path, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> & { items: Record<string, unknown>[]; total: number } };
  };
  return { store, record, run, recorded, get, app: s.app };
}

const T = Date.UTC(2026, 0, 1);

describe('GET /v1/inspector/threads', () => {
  it('the store’s threads and the ones only transcripts know, newest first, each with its runs, recorded transcripts and newest run', async () => {
    const w = world();
    await w.store.createThread({ id: 'quiet', title: 'Nothing ran here', now: T + 1_000 });
    await w.run('busy', 'busy-r1', T + 2_000, { agentId: 'writer' });
    await w.run('busy', 'busy-r2', T + 5_000, { agentId: 'critic', status: 'done', termination: { type: 'error', value: 'model down' }, steps: 3 });
    w.recorded('busy--busy-r1.jsonl', 'busy', 'busy-r1', T + 2_000);
    w.recorded('busy--busy-r2.jsonl', 'busy', 'busy-r2', T + 5_000);
    // A run recorded twice (a later segment), on a thread the store does not hold.
    w.recorded('gone--g1.jsonl', 'gone', 'gone-r1', T + 3_000);
    w.recorded('gone--g1-2.jsonl', 'gone', 'gone-r1', T + 4_000);
    const { status, body } = await w.get('/v1/inspector/threads');
    expect(status).toBe(200);
    expect(body).toEqual({
      items: [
        {
          id: 'busy',
          updated_at: T + 5_000,
          runs: 2,
          recorded: 2,
          last_run: { run_id: 'busy-r2', agent_id: 'critic', status: 'done', termination: 'error', steps: 3, updated_at: T + 5_000 },
        },
        { id: 'gone', updated_at: T + 4_000, runs: 0, recorded: 2 },
        { id: 'quiet', title: 'Nothing ran here', updated_at: T + 1_000, runs: 0, recorded: 0 },
      ],
      total: 3,
      offset: 0,
      limit: 50,
      has_more: false,
    });
  });

  it('pages the merged list: offset and limit across store and transcript threads, total and has_more', async () => {
    const w = world();
    for (let i = 0; i < 6; i++) await w.run(`s${i}`, `s${i}-run`, T + i * 2_000);
    for (let i = 0; i < 3; i++) w.recorded(`x${i}.jsonl`, `x${i}`, `x${i}-run`, T + i * 4_000 + 1_000);
    const all = ['s5', 'x2', 's4', 's3', 'x1', 's2', 's1', 'x0', 's0'];
    const ids = async (q: string) => {
      const { body } = await w.get(`/v1/inspector/threads?${q}`);
      return { ids: body.items.map((t) => t['id']), total: body.total, has_more: body['has_more'] };
    };
    expect((await ids('')).ids).toEqual(all);
    for (const [offset, limit] of [
      [0, 4],
      [4, 4],
      [8, 4],
      [2, 3],
      [9, 2],
    ] as const) {
      expect(await ids(`offset=${offset}&limit=${limit}`), `${offset}+${limit}`).toEqual({
        ids: all.slice(offset, offset + limit),
        total: 9,
        has_more: offset + limit < 9,
      });
    }
    // Only store threads (a search no transcript thread matches): paged by the store itself.
    expect(await ids('q=-run&agent_id=agent&offset=1&limit=2')).toEqual({ ids: ['s4', 's3'], total: 6, has_more: true });
  });

  it('q finds a thread by its id, its title or a run id, in any case; agent_id, status and errors keep threads with such a run', async () => {
    const w = world();
    await w.store.createThread({ id: 'planning', title: 'Quarterly Report', now: T });
    await w.run('planning', 'run-PLAN-1', T + 1_000, { agentId: 'writer' });
    await w.run('support', 'run-help-1', T + 2_000, { agentId: 'helper', status: 'waiting' });
    await w.run('support', 'run-help-2', T + 3_000, { agentId: 'helper', termination: { type: 'error', value: 'tool failed' } });
    await w.run('sales', 'run-sale-1', T + 4_000, { agentId: 'writer', termination: { type: 'cancelled' } });
    w.recorded('archive.jsonl', 'archived', 'run-OLD-9', T + 500);
    const ids = async (q: string) => (await w.get(`/v1/inspector/threads?${q}`)).body.items.map((t) => t['id']);
    expect(await ids('q=PLAN')).toEqual(['planning']);
    expect(await ids('q=quarterly%20report')).toEqual(['planning']);
    expect(await ids('q=HELP-2')).toEqual(['support']);
    // A thread known only from transcripts: by its id or a recorded run's id.
    expect(await ids('q=old-9')).toEqual(['archived']);
    expect(await ids('q=ARCHIV')).toEqual(['archived']);
    expect(await ids('q=run-')).toEqual(['sales', 'support', 'planning', 'archived']);
    expect(await ids('q=nothing-like-it')).toEqual([]);
    expect(await ids('agent_id=writer')).toEqual(['sales', 'planning']);
    expect(await ids('status=waiting')).toEqual(['support']);
    expect(await ids('errors=true')).toEqual(['support']);
    expect(await ids('errors=false')).toEqual(['sales', 'support', 'planning', 'archived']);
    expect(await ids('agent_id=writer&errors=true')).toEqual([]);
    expect(await ids('agent_id=helper&status=waiting&q=support')).toEqual(['support']);
    // A thread known only from transcripts has no run record to match a run filter.
    expect(await ids('q=archived&agent_id=agent')).toEqual([]);
  });

  it('bad values are a 400 naming the field; a limit out of range is brought into it', async () => {
    const w = world();
    for (const [query, field] of [
      ['limit=ten', 'limit'],
      ['limit=1.5', 'limit'],
      ['offset=-', 'offset'],
      ['status=finished', 'status'],
      ['errors=yes', 'errors'],
      [`q=${'x'.repeat(201)}`, 'q'],
      [`agent_id=${'a'.repeat(201)}`, 'agent_id'],
    ] as const) {
      const r = await w.get(`/v1/inspector/threads?${query}`);
      expect(r.status, query).toBe(400);
      expect(r.body, query).toMatchObject({ code: 'invalid_query', field });
    }
    expect((await w.get('/v1/inspector/threads?limit=500&offset=-3')).body).toMatchObject({ limit: 200, offset: 0 });
    expect((await w.get('/v1/inspector/threads?limit=0')).body).toMatchObject({ limit: 1 });
    expect((await w.get('/v1/inspector/threads?q=&status=&errors=')).status).toBe(200);
  });

  it('with tokens: each caller’s own threads and transcripts; another’s are not found by id, title or run id; 401 without a token', async () => {
    const w = world({ auth: true });
    await w.run('ann-plans', 'ann-run-1', T + 1_000);
    await w.store.claimThread('ann-plans', 'ann');
    await w.store.createThread({ id: 'ann-secret', title: 'Launch Codes', now: T + 2_000 });
    await w.store.claimThread('ann-secret', 'ann');
    await w.run('bob-notes', 'bob-run-1', T + 3_000);
    await w.store.claimThread('bob-notes', 'bob');
    w.recorded('a.jsonl', 'ann-plans', 'ann-run-1', T + 1_000, 'ann');
    // Recorded on Bob's thread but saying Ann owned it: nobody's to list (the thread is not Ann's).
    w.recorded('b.jsonl', 'bob-notes', 'ann-run-x', T + 3_000, 'ann');
    // A thread only transcripts know, owned by nobody: the admin's alone.
    w.recorded('c.jsonl', 'orphan', 'orphan-run', T + 4_000);
    expect((await w.get('/v1/inspector/threads')).status).toBe(401);
    const ann = await w.get('/v1/inspector/threads', 'token-ann');
    expect(ann.body.items.map((t) => [t['id'], t['recorded']])).toEqual([
      ['ann-secret', 0],
      ['ann-plans', 1],
    ]);
    expect(ann.body.total).toBe(2);
    const bob = (q: string) => w.get(`/v1/inspector/threads?${q}`, 'token-bob');
    expect((await bob('')).body.items.map((t) => [t['id'], t['recorded']])).toEqual([['bob-notes', 0]]);
    for (const q of ['q=ann', 'q=ann-run-1', 'q=launch', 'q=orphan', 'q=ann-run-x']) expect((await bob(q)).body, q).toMatchObject({ items: [], total: 0 });
  });
});
