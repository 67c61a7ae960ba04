import { describe, expect, it } from 'vitest';
import { ALICE_TOKEN, BOB_TOKEN, bodyJson, gatedTool, type TestServer, testServer, twoPrincipals } from '../support/server.ts';

/**
 * Another principal's thread while its run is going or waiting for a decision: every route of the
 * REST API that names a thread or a run answers Bob exactly as it answers him for a thread or run
 * that does not exist (status and body, the ids aside), so nothing tells him the thread is there, that
 * it is busy, or which run holds it — and nothing of it changes.
 */

type Principals = Awaited<ReturnType<typeof twoPrincipals>>;

/** Bob's answer on Alice's thread and run, and on a thread and run nobody has: the same, ids aside. */
async function bobFindsNothing(p: Principals, thread: string, run: string): Promise<void> {
  const answer = async (method: string, path: string, body?: unknown) => {
    const r = await p.call(BOB_TOKEN, method, path, body);
    const text = (await r.text()).replaceAll(run, '<run>').replaceAll(thread, '<thread>').replaceAll('run-none', '<run>').replaceAll('nobody-t', '<thread>');
    return { status: r.status, body: text };
  };
  const same = async (method: string, path: (thread: string, run: string) => string, body?: unknown) => {
    const route = `${method} ${path('<thread>', '<run>')}`;
    const theirs = await answer(method, path(thread, run), body);
    const none = await answer(method, path('nobody-t', 'run-none'), body);
    expect({ route, theirs }).toEqual({ route, theirs: none });
    return theirs.status;
  };
  const input = { messages: [{ role: 'user', content: 'mine now' }] };
  expect(await same('DELETE', (t) => `/v1/threads/${t}`)).toBe(404);
  expect(await same('GET', (t) => `/v1/threads/${t}`)).toBe(404);
  expect(await same('PATCH', (t) => `/v1/threads/${t}`, { title: 'mine' })).toBe(404);
  expect(await same('PATCH', (t) => `/v1/threads/${t}/metadata`, { title: 'mine' })).toBe(404);
  expect(await same('GET', (t) => `/v1/threads/${t}/messages`)).toBe(404);
  expect(await same('POST', (t) => `/v1/threads/${t}/messages`, input)).toBe(404);
  expect(await same('GET', (t) => `/v1/threads/${t}/stream?until=idle`)).toBe(404);
  expect(await same('POST', (t) => `/v1/threads/${t}/interrupt`)).toBe(404);
  expect(await same('GET', (t) => `/v1/threads/${t}/mailbox`)).toBe(200);
  expect(await same('GET', (_, r) => `/v1/runs/${r}`)).toBe(404);
  expect(await same('GET', (t) => `/v1/runs?thread_id=${t}`)).toBe(200);
  expect(await same('POST', (_, r) => `/v1/runs/${r}/cancel`)).toBe(404);
  expect(await same('POST', (t) => `/v1/runs/${t}/cancel`)).toBe(404);
  expect(await same('POST', (_, r) => `/v1/runs/${r}/inputs`, input)).toBe(404);
  expect(await same('POST', (t) => `/v1/runs/${t}/inputs`, input)).toBe(404);
  expect(await same('POST', (_, r) => `/v1/runs/${r}/decision`, { toolCallId: 'c1', action: 'cancel' })).toBe(404);
  expect(await same('POST', (t) => `/v1/runs/${t}/decision`, { toolCallId: 'c1', action: 'resume' })).toBe(404);
  expect(await same('POST', (_, r) => `/v1/runs/${r}/triggers/c1`, {})).toBe(404);
  expect(await same('POST', (t) => `/v1/copilotkit/threads/${t}/archive`, { agentId: 'agent' })).toBe(404);
  expect(await same('DELETE', (t) => `/v1/copilotkit/threads/${t}`, { agentId: 'agent' })).toBe(404);
}

const aliceRunOf = async (p: Principals, thread: string): Promise<string> => {
  const view = await bodyJson(p.call(ALICE_TOKEN, 'GET', `/v1/threads/${thread}`));
  expect(view.active_run_id).toEqual(expect.any(String));
  return view.active_run_id as string;
};

const untouched = async (s: TestServer, thread: string, run: string) => {
  expect(await s.store.getThread(thread)).toMatchObject({ id: thread, latest_run_id: run });
  expect(await s.store.threadOwner(thread)).toBe('alice');
};

describe("Bob and Alice's thread with a run on it", () => {
  it('a run in flight: each thread and run route answers as for one that does not exist, and changes nothing', async () => {
    const gate = gatedTool();
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'slow', arguments: { tag: 'held' } }] }, { text: 'done' }], { tools: [gate.tool] });
    const p = await twoPrincipals(s);
    try {
      const going = p.call(ALICE_TOKEN, 'POST', '/v1/runs', { threadId: 'alice-t', messages: [{ role: 'user', content: 'go' }] });
      for (let i = 0; i < 200 && gate.started.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(gate.started).toEqual(['held']);
      const run = await aliceRunOf(p, 'alice-t');
      await bobFindsNothing(p, 'alice-t', run);
      // Alice's run went on untouched, to its end.
      expect(gate.aborted).toEqual([]);
      gate.open();
      await (await going).text();
      await untouched(s, 'alice-t', run);
      expect((await s.store.getRun(run))?.termination).toEqual({ type: 'natural_end' });
    } finally {
      gate.open();
      await p.close();
    }
  });

  it('a run waiting for a decision: the same', async () => {
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }] }, { text: 'shipped' }]);
    const p = await twoPrincipals(s);
    try {
      await (await p.call(ALICE_TOKEN, 'POST', '/v1/runs', { threadId: 'alice-t', messages: [{ role: 'user', content: 'ship it' }] })).text();
      const run = await aliceRunOf(p, 'alice-t');
      await bobFindsNothing(p, 'alice-t', run);
      await untouched(s, 'alice-t', run);
      expect((await s.store.getRun(run))?.status).toBe('waiting');
      expect(s.llm.requests).toHaveLength(1);
    } finally {
      await p.close();
    }
  });
});
