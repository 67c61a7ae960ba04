import { describe, expect, it } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { deterministicEnv, realEnv } from '../../src/runtime/env.ts';
import { Mailbox } from '../../src/server/mailbox.ts';
import { createHttpApp } from '../../src/server/http.ts';
import { createLogger } from '../../src/server/log.ts';
import { asPrincipal } from '../../src/server/principal.ts';
import type { Store } from '../../src/runtime/store.ts';
import { bodyJson, gatedTool, json, testServer } from '../support/server.ts';

const until = async (cond: () => boolean | Promise<boolean>, ms = 5000): Promise<void> => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 2));
  }
};

describe('the mailbox service (book: Mailbox 架构)', () => {
  it('a store that fails under the dispatcher is logged once with its cause, and its recovery once; the loop goes on', async () => {
    const s = testServer([{ text: 'after the outage' }]);
    let failures = 3;
    const flaky = new Proxy(s.store, {
      get(target, name, receiver) {
        if (name === 'claim') {
          return (...args: unknown[]) => {
            if (failures-- > 0)
              return Promise.reject(new Error('claim failed', { cause: Object.assign(new Error('connection terminated'), { code: '57P01' }) }));
            return (target.claim as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        const v = Reflect.get(target, name, receiver) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    }) as Store;
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', format: 'json', write: (l) => void lines.push(l), now: () => 0 });
    const mailbox = new Mailbox(flaky, s.registry, realEnv(), { logger, config: { sweep_interval_ms: 60_000, gc_interval_ms: 60_000 } });
    const job = await mailbox.submit({ threadId: 'flaky', agentId: 'agent', messages: [Messages.user('hi', { id: 'u1' })] });
    mailbox.start(2);
    try {
      await until(async () => (await s.store.loadJob(job.job_id))?.status === 'accepted');
    } finally {
      await mailbox.stop();
    }
    const told = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => String(l['msg']).startsWith('mailbox'));
    expect(told).toEqual([
      {
        time: '1970-01-01T00:00:00.000Z',
        level: 'error',
        msg: 'mailbox store failure',
        task: 'dispatch',
        error: 'claim failed',
        cause: 'connection terminated (57P01)',
      },
      { time: '1970-01-01T00:00:00.000Z', level: 'info', msg: 'mailbox store recovered', task: 'dispatch' },
    ]);
  });

  it('a submitted job is claimed, run on its thread, and accepted', async () => {
    const s = testServer([{ text: 'from the mailbox' }]);
    const mailbox = new Mailbox(s.store, s.registry, s.runtime.env);
    const job = await mailbox.submit({ threadId: 'mb1', agentId: 'agent', messages: [Messages.user('hi', { id: 'u1' })] });
    expect(job.status).toBe('queued');
    expect((await mailbox.dispatchOnce()).map((j) => j.job_id)).toEqual([job.job_id]);
    await mailbox.drain();
    expect((await s.store.loadJob(job.job_id))?.status).toBe('accepted');
    expect((await s.store.loadThread('mb1'))?.messages.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'from the mailbox' }] });
  });

  it('new input cancels the run in flight and supersedes what was queued before it', async () => {
    const g = gatedTool();
    const s = testServer([{ tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: 'old' } }] }, { text: 'new answer' }], { tools: [g.tool] });
    const mailbox = new Mailbox(s.store, s.registry, s.runtime.env);
    const started = await s.registry.start({ threadId: 'mb2', messages: [Messages.user('old', { id: 'o' })] });
    if (!started.ok) throw new Error('start');
    await until(() => g.started.length === 1);
    const stale = await s.store.enqueue({ job_id: 'stale', mailbox_id: 'mb2', agent_id: 'agent', messages: [], origin: 'user' }, 0);
    const job = await mailbox.submit({ threadId: 'mb2', agentId: 'agent', messages: [Messages.user('new', { id: 'n' })] });
    expect(job.generation).toBe(stale.generation + 1);
    expect((await s.store.loadJob('stale'))?.status).toBe('superseded');
    g.open();
    expect((await started.value.done)?.termination.type).toBe('cancelled');
    await mailbox.dispatchOnce();
    await mailbox.drain();
    expect((await s.store.loadJob(job.job_id))?.status).toBe('accepted');
    expect((await s.store.loadThread('mb2'))?.messages.at(-1)).toMatchObject({ content: [{ type: 'text', text: 'new answer' }] });
  });

  it('a job records the principal that queued it and runs as it: on a thread no longer theirs it is dead-lettered, not run there', async () => {
    const s = testServer([{ text: 'must not run' }]);
    const mailbox = new Mailbox(s.store, s.registry, s.runtime.env);
    const job = await asPrincipal('alice', () => mailbox.submit({ threadId: 'owned', agentId: 'agent', messages: [Messages.user('hi', { id: 'u1' })] }));
    expect(job.principal).toBe('alice');
    expect(await s.store.threadOwner('owned')).toBe('alice');
    // The thread's ownership changes under the queued job (its id given up, then taken by bob).
    await s.store.deleteThread('owned');
    expect(await s.store.claimThread('owned', 'bob')).toBe('bob');
    await mailbox.dispatchOnce();
    await mailbox.drain();
    expect((await s.store.loadJob(job.job_id))?.status).toBe('dead_letter');
    expect(s.llm.requests).toHaveLength(0);
    // Bob's own submission there is his to make; alice's is refused at once.
    await expect(
      asPrincipal('alice', () => mailbox.submit({ threadId: 'owned', agentId: 'agent', messages: [Messages.user('again', { id: 'u2' })] })),
    ).rejects.toThrow('thread not found: owned');
  });

  it('a job that cannot start is retried with backoff, then dead-lettered', async () => {
    const env = deterministicEnv();
    const s = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'x' } }] }]);
    const mailbox = new Mailbox(s.store, s.registry, env, { config: { default_max_attempts: 2 } });
    // The thread waits for a decision: a queued job cannot start there.
    const paused = await s.registry.start({ threadId: 'mb3', messages: [Messages.user('go', { id: 'g' })] });
    if (!paused.ok) throw new Error('start');
    await until(() => s.registry.currentRun('mb3')?.status === 'waiting');
    const job = await s.store.enqueue(
      { job_id: 'blocked', mailbox_id: 'mb3', agent_id: 'agent', messages: [Messages.user('more')], origin: 'user', max_attempts: 2 },
      env.clock.now(),
    );
    await mailbox.dispatchOnce();
    await mailbox.drain();
    const after1 = await s.store.loadJob(job.job_id);
    expect(after1).toMatchObject({ status: 'queued', attempt_count: 1 });
    expect(after1?.available_at).toBe(env.clock.now() + 250);
    expect(await mailbox.dispatchOnce()).toEqual([]);
    env.advance(250);
    await mailbox.dispatchOnce();
    await mailbox.drain();
    expect(await s.store.loadJob(job.job_id)).toMatchObject({ status: 'dead_letter', attempt_count: 2 });
    expect((await s.store.loadJob(job.job_id))?.last_error).toContain('waiting for a decision');
  });

  it('a job held by a consumer that died is re-queued after its lease and run by another', async () => {
    const env = deterministicEnv();
    const s = testServer([{ text: 'rescued' }]);
    const mailbox = new Mailbox(s.store, s.registry, env, { config: { lease_ms: 1000 } });
    await s.store.enqueue({ job_id: 'orphan', mailbox_id: 'mb4', agent_id: 'agent', messages: [Messages.user('hi')], origin: 'user' }, env.clock.now());
    // Another consumer claims it and is never heard of again.
    expect(await s.store.claim('dead-consumer', 'gone', 1000, env.clock.now(), 1)).toHaveLength(1);
    expect(await mailbox.dispatchOnce()).toEqual([]);
    expect(await mailbox.sweep()).toEqual([]);
    env.advance(1001);
    expect((await mailbox.sweep()).map((j) => j.job_id)).toEqual(['orphan']);
    await mailbox.dispatchOnce();
    await mailbox.drain();
    expect(await s.store.loadJob('orphan')).toMatchObject({ status: 'accepted', attempt_count: 1 });
  });

  it('a job re-queued after its consumer died, whose run another instance took up, is not run twice: retried while that run goes on, done once it answered', async () => {
    const env = deterministicEnv();
    const s = testServer([{ text: 'run again: wrong' }]);
    const mailbox = new Mailbox(s.store, s.registry, env, { config: { lease_ms: 1000 } });
    const hi = Messages.user('hi', { id: 'm-hi' });
    await s.store.enqueue({ job_id: 'taken', mailbox_id: 'mb5', agent_id: 'agent', messages: [hi], origin: 'user' }, env.clock.now());
    expect(await s.store.claim('dead-consumer', 'gone', 1000, env.clock.now(), 1)).toHaveLength(1);
    // The dead consumer's run had stored the job's message; another instance took it up and it goes on.
    const state = { revision: 1, extensions: {} };
    const checkpoint = (messages: Parameters<Store['checkpoint']>[0]['messages'], status: 'running' | 'done') =>
      s.store.checkpoint({ threadId: 'mb5', runId: 'up', agentId: 'agent', messages, status, steps: 1, threadState: state, runState: state, updatedAt: 0 });
    await checkpoint([hi], 'running');
    env.advance(1001);
    expect((await s.store.takeLease({ threadId: 'mb5', runId: 'up', owner: 'survivor', now: env.clock.now(), ttlMs: 100_000 })).ok).toBe(true);
    expect((await mailbox.sweep()).map((j) => j.job_id)).toEqual(['taken']);
    await mailbox.dispatchOnce();
    await mailbox.drain();
    expect(await s.store.loadJob('taken')).toMatchObject({ status: 'queued', last_error: 'its run goes on elsewhere' });
    // It answered: the job is done, and its messages are not run again.
    await checkpoint([hi, Messages.assistant('taken up and answered')], 'done');
    env.advance(60_000);
    await mailbox.dispatchOnce();
    await mailbox.drain();
    expect(await s.store.loadJob('taken')).toMatchObject({ status: 'accepted' });
    expect(s.llm.requests).toHaveLength(0);
    expect((await s.store.loadThread('mb5'))?.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('GC drops finished jobs after gc_ttl', async () => {
    const env = deterministicEnv();
    const s = testServer([{ text: 'x' }]);
    const mailbox = new Mailbox(s.store, s.registry, env, { config: { gc_ttl_ms: 1000 } });
    const job = await mailbox.submit({ threadId: 'mb5', agentId: 'agent', messages: [Messages.user('hi')] });
    await mailbox.dispatchOnce();
    await mailbox.drain();
    expect(await mailbox.gc()).toBe(0);
    env.advance(1001);
    expect(await mailbox.gc()).toBe(1);
    expect(await s.store.loadJob(job.job_id)).toBeUndefined();
  });

  it('runs by itself once started: the dispatcher loop picks submissions up', async () => {
    const s = testServer([{ text: 'looped' }]);
    const { realEnv } = await import('../../src/runtime/env.ts');
    const mailbox = new Mailbox(s.store, s.registry, realEnv());
    mailbox.start(5);
    try {
      const job = await mailbox.submit({ threadId: 'mb6', agentId: 'agent', messages: [Messages.user('hi')] });
      await until(async () => (await s.store.loadJob(job.job_id))?.status === 'accepted');
    } finally {
      await mailbox.stop();
    }
  });
});

describe('mailbox routes', () => {
  it('POST /v1/threads/:id/messages and /mailbox queue work; GET lists the jobs', async () => {
    const s = testServer([{ text: 'queued answer' }, { text: 'second' }]);
    const mailbox = new Mailbox(s.store, s.registry, s.runtime.env);
    const app = createHttpApp({ runtime: s.runtime, store: s.store, registry: s.registry, mailbox });
    expect((await app.request('/v1/threads/none/messages', json({ messages: [{ role: 'user', content: 'x' }] }))).status).toBe(404);
    await app.request('/v1/threads', json({ id: 'q1' }));
    const r = await app.request('/v1/threads/q1/messages', json({ messages: [{ role: 'user', content: 'hello' }] }));
    expect(r.status).toBe(202);
    const body = await bodyJson(r);
    expect(body).toMatchObject({ status: 'queued', thread_id: 'q1' });
    const listed = await bodyJson(app.request('/v1/threads/q1/mailbox'));
    expect(listed.items.map((j: { job_id: string; status: string }) => [j.job_id, j.status])).toEqual([[body.job_id, 'queued']]);
    await mailbox.dispatchOnce();
    await mailbox.drain();
    expect((await bodyJson(app.request('/v1/threads/q1/mailbox?status=accepted'))).total).toBe(1);
    expect((await app.request('/v1/threads/q1/mailbox?status=nope')).status).toBe(400);
    expect((await app.request('/v1/threads/q2/mailbox', json({ messages: [{ role: 'user', content: 'x' }], priority: 999 }))).status).toBe(400);
    expect((await s.app.request('/v1/threads/q1/mailbox', json({ messages: [{ role: 'user', content: 'x' }] }))).status).toBe(404);
  });
});

describe('lease renewal', () => {
  it('a run longer than the lease keeps its job: renewals push the lease on, the sweeper finds nothing', async () => {
    const g = gatedTool();
    const s = testServer([{ tool_calls: [{ id: 'c', name: 'slow', arguments: { tag: 'long' } }] }, { text: 'done' }], { tools: [g.tool] });
    const { realEnv } = await import('../../src/runtime/env.ts');
    const env = realEnv();
    const mailbox = new Mailbox(s.store, s.registry, env, { config: { lease_ms: 100, lease_renewal_interval_ms: 20 } });
    const job = await mailbox.submit({ threadId: 'lr', agentId: 'agent', messages: [Messages.user('go')] });
    await mailbox.dispatchOnce();
    await until(() => g.started.length === 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(await mailbox.sweep()).toEqual([]);
    const held = await s.store.loadJob(job.job_id);
    expect(held?.status).toBe('claimed');
    expect(held?.lease_until).toBeGreaterThan(env.clock.now());
    g.open();
    await mailbox.drain();
    expect((await s.store.loadJob(job.job_id))?.status).toBe('accepted');
  });
});
