import { afterEach, describe, expect, it } from 'vitest';
import { realEnv } from '../../src/runtime/env.ts';
import { createHttpApp } from '../../src/server/http.ts';
import { Mailbox } from '../../src/server/mailbox.ts';
import { ALICE_TOKEN, BOB_TOKEN, bodyJson, gatedTool, testServer, twoPrincipals } from '../support/server.ts';

/**
 * Interrupting a thread (book: MailboxInterrupt): `POST /v1/threads/:id/interrupt`, and the AI SDK
 * and AG-UI interrupt routes with the same answer. Queued runs are superseded, the run going is
 * cancelled; a thread with neither is a 404; another principal's thread is not there — 404, and
 * nothing of its owner's is superseded or cancelled (two principals, over a socket).
 */
const ALICE = ALICE_TOKEN;
const BOB = BOB_TOKEN;
const ROUTES = ['/v1/threads/:id/interrupt', '/v1/ai-sdk/threads/:id/interrupt', '/v1/ag-ui/threads/:id/interrupt'] as const;

let open: { close(): Promise<void> } | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

async function world() {
  const g = gatedTool();
  const s = testServer([{ tool_calls: [{ id: 'c1', name: 'slow', arguments: { tag: 'x' } }] }, { text: 'done' }], { tools: [g.tool] });
  const { call, close } = await twoPrincipals(s);
  open = { close };
  const statuses = async (token: string, thread: string): Promise<string[]> =>
    ((await bodyJson(call(token, 'GET', `/v1/threads/${thread}/mailbox`))).items as { status: string }[]).map((j) => j.status);
  return { g, s, call, statuses };
}

const say = (content: string) => ({ messages: [{ role: 'user', content }] });

describe('interrupting a thread', () => {
  for (const route of ROUTES)
    it(`${route}: supersedes the thread's queued runs; then there is nothing to interrupt`, async () => {
      const w = await world();
      const path = route.replace(':id', 'a1');
      expect((await w.call(ALICE, 'POST', '/v1/threads', { id: 'a1' })).status).toBe(201);
      // Each submission interrupts what was queued before it: one job is left queued.
      for (const text of ['first', 'second']) expect((await w.call(ALICE, 'POST', '/v1/threads/a1/mailbox', say(text))).status).toBe(202);
      expect(await w.statuses(ALICE, 'a1')).toEqual(['superseded', 'queued']);

      const bob = await w.call(BOB, 'POST', path);
      expect({ status: bob.status, body: await bob.json() }).toEqual({
        status: 404,
        body: { error: 'nothing to interrupt on thread a1: no run going or waiting, nothing queued', code: 'nothing_to_interrupt' },
      });
      expect(await w.statuses(ALICE, 'a1')).toEqual(['superseded', 'queued']);

      const r = await w.call(ALICE, 'POST', path);
      expect({ status: r.status, body: await r.json() }).toEqual({
        status: 202,
        body: { status: 'interrupt_requested', thread_id: 'a1', superseded_dispatches: 1 },
      });
      expect(await w.statuses(ALICE, 'a1')).toEqual(['superseded', 'superseded']);
      expect((await w.call(ALICE, 'POST', path)).status).toBe(404);
      expect((await w.call(ALICE, 'POST', route.replace(':id', 'never-made'))).status).toBe(404);
    });

  it('leaves nothing behind for an id nothing knows, on a server without tokens too: its 404 records no mailbox generation', async () => {
    const s = testServer([{ text: 'hi' }]);
    const app = createHttpApp({ runtime: s.runtime, store: s.store, registry: s.registry, mailbox: new Mailbox(s.store, s.registry, realEnv()) });
    const post = (path: string, body?: unknown) =>
      app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    for (let i = 0; i < 3; i++) expect((await post('/v1/threads/ghost/interrupt')).status).toBe(404);
    expect((await post('/v1/threads/ghost/mailbox', say('hello'))).status).toBe(202);
    const jobs = (await bodyJson(app.request('/v1/threads/ghost/mailbox'))).items as { generation: number }[];
    // The submission's own interrupt is the thread's first generation.
    expect(jobs.map((j) => j.generation)).toEqual([1]);
  });

  it('cancels the run of a job the mailbox claimed a moment ago, before that run had started', async () => {
    const w = await world();
    expect((await w.call(ALICE, 'POST', '/v1/threads', { id: 'a3' })).status).toBe(201);
    expect((await w.call(ALICE, 'POST', '/v1/threads/a3/mailbox', say('go'))).status).toBe(202);
    // Claimed, its run starting: the interrupt comes in between. (A dispatcher on the wall clock: the
    // deterministic one's sleeps return at once, and its lease renewals would never yield to a timer.)
    const dispatcher = new Mailbox(w.s.store, w.s.registry, realEnv());
    const start = w.s.registry.start.bind(w.s.registry);
    w.s.registry.start = async (...args) => {
      await new Promise((r) => setTimeout(r, 300));
      return start(...args);
    };
    await dispatcher.dispatchOnce();
    const r = await w.call(ALICE, 'POST', '/v1/threads/a3/interrupt');
    expect(r.status).toBe(202);
    const body = (await r.json()) as { superseded_dispatches: number; run_id?: string };
    expect(body.superseded_dispatches).toBe(0);
    w.g.open();
    await dispatcher.drain();
    const runs = (await bodyJson(w.call(ALICE, 'GET', '/v1/runs?thread_id=a3'))).items as { run_id: string; termination?: { type: string } }[];
    expect(runs.map((x) => [x.run_id, x.termination?.type])).toEqual([[body.run_id, 'cancelled']]);
  });

  for (const route of ROUTES)
    it(`${route}: cancels the thread's run, for its owner only`, async () => {
      const w = await world();
      const path = route.replace(':id', 'a2');
      const running = await w.call(ALICE, 'POST', '/v1/runs', { threadId: 'a2', ...say('go') });
      expect(running.status).toBe(200);
      const runId = running.headers.get('x-awaken-run-id');
      while (w.g.started.length === 0) await new Promise((r) => setTimeout(r, 5));
      expect((await w.call(BOB, 'POST', path)).status).toBe(404);
      expect(w.g.aborted).toEqual([]);

      const r = await w.call(ALICE, 'POST', path);
      expect({ status: r.status, body: await r.json() }).toEqual({
        status: 202,
        body: { status: 'interrupt_requested', thread_id: 'a2', superseded_dispatches: 0, run_id: runId },
      });
      // The tool sees its signal abort; it returns once its gate opens, and the run ends cancelled.
      w.g.open();
      const text = await running.text();
      expect(text).toContain('"termination":{"type":"cancelled"}');
      expect(w.g.aborted).toEqual(['x']);
    });
});
