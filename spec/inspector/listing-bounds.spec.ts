import { mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TerminationReason } from '../../src/contract/lifecycle.ts';
import { inspectorRoutes } from '../../src/inspector/routes.ts';
import { SqliteStore } from '../../src/stores/sqlite.ts';
import { testServer } from '../support/server.ts';

/**
 * The inspector's listings at scale, in process on a SQLite store: 2,000 threads and 10,000
 * recorded transcripts give the right page, search, filter and whole transcript listing. How fast
 * they answer is measured by `npm run bench:studio` (bench/studio-listing.ts), not here.
 */
const T = Date.UTC(2026, 0, 1);
const header = (thread: string, run: string): string =>
  `${JSON.stringify({ type: 'header', format: 'awaken-transcript/7', request: { thread_id: thread, run_id: run } })}\n`;

function world() {
  const store = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'awaken-bounds-db-')), 'store.db'));
  const record = mkdtempSync(join(tmpdir(), 'awaken-bounds-record-'));
  const s = testServer([], { store });
  s.app.route('/', inspectorRoutes({ store, recordDir: record }));
  const run = (threadId: string, runId: string, at: number, fields: { agentId?: string; termination?: TerminationReason } = {}) =>
    store.checkpoint({
      threadId,
      runId,
      agentId: fields.agentId ?? 'agent',
      status: 'done',
      termination: fields.termination ?? { type: 'natural_end' },
      steps: 1,
      messages: [],
      threadState: { revision: 1, extensions: {} },
      runState: { revision: 1, extensions: {} },
      updatedAt: at,
    });
  const recorded = (name: string, thread: string, runId: string, at: number): void => {
    writeFileSync(join(record, name), header(thread, runId));
    utimesSync(join(record, name), new Date(at), new Date(at));
  };
  const put = recorded;
  const get = async (path: string) => {
    const r = await s.app.request(path.startsWith('?') ? `/v1/inspector/transcripts${path}` : path === '' ? '/v1/inspector/transcripts' : path);
    return { status: r.status, body: (await r.json()) as { items: Record<string, unknown>[]; total: number } };
  };
  return { run, recorded, put, get };
}

describe('inspector listings at scale', () => {
  it('2,000 threads on SQLite with runs and transcripts: a page, the last page, a search by run id and the error filter', async () => {
    const w = world();
    for (let i = 0; i < 2_000; i++) {
      const id = `thread-${String(i).padStart(4, '0')}`;
      await w.run(id, `run-${i}-a`, T + i * 10, { agentId: i % 3 === 0 ? 'writer' : 'helper' });
      await w.run(id, `run-${i}-b`, T + i * 10 + 5, i % 7 === 0 ? { termination: { type: 'error', value: 'x' } } : {});
      if (i % 4 === 0) w.recorded(`${id}.jsonl`, id, `run-${i}-a`, T + i * 10);
    }
    for (let i = 0; i < 50; i++) w.recorded(`only-${i}.jsonl`, `only-${i}`, `only-run-${i}`, T + i * 100);
    const timed = async (q: string): Promise<{ items: number; total: number }> => {
      const r = await w.get(`/v1/inspector/threads?${q}`);
      expect(r.status).toBe(200);
      return { items: r.body.items.length, total: r.body.total };
    };
    const first = await timed('limit=50');
    expect(first.total).toBe(2_050);
    expect(first.items).toBe(50);
    const deep = await timed('offset=2000&limit=50');
    expect(deep).toEqual({ items: 50, total: 2_050 });
    expect((await timed('offset=2040&limit=50')).items).toBe(10);
    const search = await timed('q=RUN-19');
    // run-19-a/b, run-190…199, run-1900…1999, and only-run-19 of a thread only a transcript knows.
    expect(search.total).toBe(112);
    const errors = await timed('errors=true');
    expect(errors.total).toBe(Math.ceil(2_000 / 7));
  });

  it('10,000 transcripts: a page, a search and the whole listing', async () => {
    const w = world();
    for (let i = 0; i < 10_000; i++) w.put(`thread-${i % 2_000}--run-${i}.jsonl`, `thread-${i % 2_000}`, `run-${i}`, T + i * 1_000);
    expect((await w.get('?limit=1')).body.total).toBe(10_000);
    const page = await w.get('?limit=50');
    expect(page.body.items).toHaveLength(50);
    expect(page.body.items[0]?.['name']).toBe('thread-1999--run-9999.jsonl');
    expect((await w.get('?q=run-99&limit=50')).body.total).toBe(111);
    expect((await w.get('')).body.items).toHaveLength(10_000);
    expect((await w.get('?q=run-9999')).body.items.map((t) => t['name'])).toEqual(['thread-1999--run-9999.jsonl']);
  });
});
