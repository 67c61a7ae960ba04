import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolResults } from '../../src/contract/tool.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { createHttpApp } from '../../src/server/http.ts';
import { Mailbox } from '../../src/server/mailbox.ts';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { currentPrincipal } from '../../src/server/principal.ts';
import type { ScriptStep } from '../../src/providers/scripted.ts';
import { bodyJson, testServer } from '../support/server.ts';

/**
 * The mailbox routes (`POST /v1/threads/:id/mailbox`, `/messages`) under API tokens, driven over a
 * socket by two principals: another principal's thread is not there (nothing queued, nothing of its
 * owner's superseded), a thread the mailbox creates is its caller's, and the queued run acts as the
 * principal that queued it — decided from the principal the job recorded, not from the thread's name.
 */
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789';

const headers = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

let open: RunningServer | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

/** A server with tokens and a mailbox whose dispatcher the spec drives by hand; `whoami` records the principal it runs as. */
async function world(script: readonly ScriptStep[]) {
  const principals: (string | undefined)[] = [];
  const whoami = defineTool({
    id: 'whoami',
    description: 'Tells which principal the run acts for',
    args: z.object({}).loose(),
    execute: () => {
      principals.push(currentPrincipal());
      return ToolResults.success('whoami', { principal: currentPrincipal() ?? null });
    },
  });
  const s = testServer(script, { tools: [whoami] });
  const mailbox = new Mailbox(s.store, s.registry, s.runtime.env);
  const app = createHttpApp(
    { runtime: s.runtime, store: s.store, registry: s.registry, mailbox },
    {
      auth: {
        tokens: new Map([
          [ALICE, 'alice'],
          [BOB, 'bob'],
        ]),
      },
    },
  );
  const server = await listen(app, { port: 0 });
  open = server;
  const call = (token: string, method: string, path: string, body?: unknown): Promise<Response> =>
    fetch(`${server.url}${path}`, { method, headers: headers(token), ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const texts = async (token: string, thread: string): Promise<string[]> =>
    ((await bodyJson(call(token, 'GET', `/v1/threads/${thread}/messages`))).messages as { content: { text?: string }[] }[]).map((m) =>
      m.content.map((b) => b.text ?? '').join(''),
    );
  const dispatch = async (): Promise<void> => {
    await mailbox.dispatchOnce();
    await mailbox.drain();
  };
  return { s, call, texts, dispatch, principals };
}

const say = (content: string) => ({ messages: [{ role: 'user', content }] });

describe('the mailbox under API tokens, two principals over a socket', () => {
  it("another principal's thread is not there: 404, nothing queued, its owner's queued job not superseded, its history untouched", async () => {
    const w = await world([{ text: 'answer for bob' }]);
    expect((await w.call(BOB, 'POST', '/v1/threads', { id: 'b1' })).status).toBe(201);
    const queued = await w.call(BOB, 'POST', '/v1/threads/b1/mailbox', say('bob asks'));
    expect(queued.status).toBe(202);
    const bobsJob = (await bodyJson(queued)).job_id as string;

    for (const route of ['/v1/threads/b1/mailbox', '/v1/threads/b1/messages']) {
      const r = await w.call(ALICE, 'POST', route, say('alice writes'));
      expect(r.status, route).toBe(404);
      expect(await r.json(), route).toEqual({ error: 'thread not found: b1', code: 'thread_not_found' });
    }
    // Nothing of alice's is queued there, and bob's job was not superseded by her attempt.
    const jobs = (await bodyJson(w.call(BOB, 'GET', '/v1/threads/b1/mailbox'))).items as { job_id: string; status: string }[];
    expect(jobs.map((j) => [j.job_id, j.status])).toEqual([[bobsJob, 'queued']]);

    await w.dispatch();
    expect(await w.texts(BOB, 'b1')).toEqual(['bob asks', 'answer for bob']);
    expect(w.s.llm.requests).toHaveLength(1);
    expect((await bodyJson(w.call(ALICE, 'GET', '/v1/threads'))).items).toEqual([]);
  });

  it("a thread created through the mailbox is its caller's, and the queued run acts as the caller", async () => {
    const w = await world([{ tool_calls: [{ id: 'w1', name: 'whoami', arguments: {} }] }, { text: 'done for alice' }]);
    const queued = await w.call(ALICE, 'POST', '/v1/threads/a-new/mailbox', say('alice asks'));
    expect(queued.status).toBe(202);
    // Queued, not yet run: the thread is hers already, nobody else's.
    expect((await w.call(BOB, 'POST', '/v1/threads/a-new/mailbox', say('bob writes'))).status).toBe(404);
    expect((await bodyJson(w.call(ALICE, 'GET', '/v1/threads/a-new/mailbox'))).items).toHaveLength(1);

    await w.dispatch();
    expect(w.principals).toEqual(['alice']);
    expect((await w.call(ALICE, 'GET', '/v1/threads/a-new')).status).toBe(200);
    expect((await w.texts(ALICE, 'a-new')).at(-1)).toBe('done for alice');
    expect((await bodyJson(w.call(ALICE, 'GET', '/v1/runs'))).items.map((r: { thread_id: string }) => r.thread_id)).toEqual(['a-new']);
    expect((await w.call(BOB, 'GET', '/v1/threads/a-new')).status).toBe(404);
    expect((await bodyJson(w.call(BOB, 'GET', '/v1/runs'))).items).toEqual([]);
  });

  it('deleting a thread supersedes its queued jobs: none runs on a thread another principal then creates under its id', async () => {
    const w = await world([{ text: 'must not be written' }]);
    expect((await w.call(ALICE, 'POST', '/v1/threads', { id: 'reused' })).status).toBe(201);
    expect((await w.call(ALICE, 'POST', '/v1/threads/reused/mailbox', say('alice, queued'))).status).toBe(202);
    expect((await w.call(ALICE, 'DELETE', '/v1/threads/reused')).status).toBe(204);
    expect((await w.call(BOB, 'POST', '/v1/threads', { id: 'reused' })).status).toBe(201);

    await w.dispatch();
    expect(w.s.llm.requests).toHaveLength(0);
    expect(await w.texts(BOB, 'reused')).toEqual([]);
    expect((await w.s.store.listJobs('reused', { offset: 0, limit: 10 })).items.map((j) => j.status)).toEqual(['superseded']);
  });
});
