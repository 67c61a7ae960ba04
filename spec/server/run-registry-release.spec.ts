import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolResults } from '../../src/contract/tool.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder, type AgentRuntime } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv, type Env } from '../../src/runtime/env.ts';
import { decisionFor } from '../../src/runtime/run-loop.ts';
import type { Store } from '../../src/runtime/store.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { createHttpApp, type HttpOptions } from '../../src/server/http.ts';
import type { Logger } from '../../src/server/log.ts';
import { RunRegistry } from '../../src/server/run-registry.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { bodyJson, json, parseSse, readFrames, type SseFrame } from '../support/server.ts';

/**
 * A server whose runtime is replaced while it runs (a hot reload): the server holds "the current
 * runtime" through a forwarding object, and `releaseParked` lets the runs parked on the old one go
 * waiting, as a shutdown would, so their decisions take them up again on the new one. Runs going at
 * the swap finish on the runtime they started on.
 */

type Version = 'A' | 'B' | 'C';

/** Suspends for approval; resumed, answers which version of the code ran it. */
const approvalOf = (version: Version) =>
  defineTool({
    id: 'approve',
    description: 'Needs a decision',
    args: z.object({ what: z.string() }).loose(),
    execute: (args, ctx) => {
      if (ctx.resume !== undefined) return ToolResults.success('approve', { approved: args.what, by: version });
      return ToolResults.suspended('approve', 'needs approval', {
        suspension: { id: `s-${ctx.callId}`, action: 'confirm', message: `approve ${args.what}?` },
        pending: { id: ctx.callId, name: 'approve', arguments: args as never },
        resume_mode: 'replay_tool_call',
      });
    },
  });

/** Waits for the spec to open its gate (A's, only: B's answers at once); answers which version ran it. */
function slowOf(version: Version, gate?: { started: string[]; opened: Promise<void> }) {
  return defineTool({
    id: 'slow',
    description: 'Takes a while',
    args: z.object({ tag: z.string() }),
    execute: async ({ tag }) => {
      gate?.started.push(tag);
      await gate?.opened;
      return ToolResults.success('slow', { tag, by: version });
    },
  });
}

function runtimeOf(
  version: Version,
  script: readonly ScriptStep[],
  store: Store | undefined,
  env: Env,
  gate?: { started: string[]; opened: Promise<void> },
): { runtime: AgentRuntime; llm: ScriptedLlm } {
  const llm = new ScriptedLlm(script);
  const builder = new AgentRuntimeBuilder().withEnv(env);
  if (store !== undefined) builder.withThreadRunStore(store);
  const built = builder
    .withProvider('scripted', llm)
    .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
    .withAgentSpec({ id: 'agent', model: 'm', system_prompt: 'be brief' })
    .withTool(approvalOf(version))
    .withTool(slowOf(version, gate))
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return { runtime: built.value, llm };
}

/** What `awaken dev` gives the server: one object that is always the runtime current now. */
function forwarding(first: AgentRuntime): { runtime: AgentRuntime; swap(next: AgentRuntime): void } {
  let current = first;
  const runtime = new Proxy(first, {
    get: (_target, prop) => {
      const v: unknown = Reflect.get(current, prop, current);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(current) : v;
    },
  });
  return { runtime, swap: (next) => (current = next) };
}

function recordingLogger(): Logger & { readonly lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push(`${level} ${message} ${JSON.stringify(fields ?? {})}`);
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as Logger & { readonly lines: string[] };
}

/** Two versions of one app on one store and one Env, served through a forwarding runtime. */
function reloadable(
  scripts: { readonly A: readonly ScriptStep[]; readonly B: readonly ScriptStep[] },
  http?: HttpOptions,
  options: { readonly storelessA?: boolean } = {},
) {
  const store = new MemoryStore();
  const env = deterministicEnv();
  let open: () => void = () => undefined;
  const gate = { started: [] as string[], opened: new Promise<void>((r) => (open = r)) };
  const a = runtimeOf('A', scripts.A, options.storelessA === true ? undefined : store, env, gate);
  const b = runtimeOf('B', scripts.B, store, env);
  const current = forwarding(a.runtime);
  const logger = recordingLogger();
  const registry = new RunRegistry(current.runtime, store, { logger });
  const app = createHttpApp({ runtime: current.runtime, store, registry }, http);
  return { store, env, a, b, registry, app, logger, gate, open: () => open(), reload: () => current.swap(b.runtime), swap: current.swap };
}

const go = (threadId: string, text = 'deploy it') => json({ threadId, messages: [{ role: 'user', content: text }] });
const data = (f: SseFrame) =>
  JSON.parse(f.data) as { event_type: string; run_id?: string; target_id?: string; result?: unknown; termination?: { type: string } };
const APPROVE = { tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'deploy' } }] };
const SLOW = { tool_calls: [{ id: 's1', name: 'slow', arguments: { tag: 'long' } }] };

/** Starts a run that parks on its approval; returns its id and the last `seq` of its stream. */
async function parkOn(app: ReturnType<typeof createHttpApp>, threadId: string, init: RequestInit = go(threadId)): Promise<{ runId: string; lastSeq: number }> {
  const r = await app.request('/v1/runs', init);
  expect(r.status).toBe(200);
  const frames = parseSse(await r.text());
  expect(data(frames.at(-1) as SseFrame)).toMatchObject({ event_type: 'run_finish', termination: { type: 'suspended' } });
  return { runId: r.headers.get('x-awaken-run-id') as string, lastSeq: Number(frames.at(-1)?.id) };
}

/** What the tools answered in these frames: a call done (`null`: suspended), or a suspended call resumed. */
const toolResults = (frames: readonly SseFrame[]): unknown[] =>
  frames
    .map(data)
    .flatMap((e) =>
      e.event_type === 'tool_call_done' ? [(e.result as { data?: unknown }).data ?? null] : e.event_type === 'tool_call_resumed' ? [e.result] : [],
    );

/** The stored thread's messages: each role, with a tool message's answer parsed. */
async function storedMessages(app: ReturnType<typeof createHttpApp>, threadId: string, init?: RequestInit): Promise<{ role: string; answer: unknown }[]> {
  const messages = (await bodyJson(app.request(`/v1/threads/${threadId}/messages`, init))).messages as {
    role: string;
    content: { type: string; text?: string }[];
  }[];
  const text = (m: (typeof messages)[number]) => m.content.map((b) => b.text ?? '').join('');
  return messages.map((m) => ({ role: m.role, answer: m.role === 'tool' ? JSON.parse(text(m)) : text(m) }));
}

describe('RunRegistry#releaseParked: a parked run outlives the code that parked it', () => {
  it('a run parked on the old runtime resumes on the new one when its decision comes; a run going at the swap finishes on the old', async () => {
    const s = reloadable({ A: [APPROVE, SLOW, { text: 'A finished the long job.' }], B: [{ text: 'B deployed it.' }] });
    const parked = await parkOn(s.app, 'p');
    const going = await s.app.request('/v1/runs', go('r', 'do the long job'));
    expect(going.status).toBe(200);
    const goingId = going.headers.get('x-awaken-run-id') as string;
    await expect.poll(() => s.gate.started).toEqual(['long']);
    // An open stream of the parked thread: it goes on with the run once it is taken up again.
    const follower = readFrames(
      await s.app.request('/v1/threads/p/stream', { headers: { 'last-event-id': String(parked.lastSeq) } }),
      (fs) => fs.some((f) => data(f).termination?.type === 'natural_end'),
      5_000,
    );

    s.reload();
    expect(await s.registry.releaseParked()).toBe(1);
    // Let go as a shutdown would: waiting in the store, its lease gone, nothing of it held here.
    expect(await s.store.getRun(parked.runId)).toMatchObject({ status: 'waiting' });
    expect(await s.store.getLease('p')).toBeUndefined();
    expect(s.registry.live(parked.runId)).toBeUndefined();
    expect(s.registry.currentRun('p')).toBeUndefined();
    expect(s.registry.liveRuns).toBe(1);
    expect(await s.registry.lastSeq('p')).toBe(parked.lastSeq);
    expect(await bodyJson(s.app.request('/v1/threads/p'))).toMatchObject({ active_run_id: parked.runId, active_run_status: 'waiting' });
    expect(s.logger.lines).toContain(
      `info parked run released: it resumes on the runtime current when its decision comes ${JSON.stringify({ run: parked.runId, thread: 'p' })}`,
    );

    const decided = await s.app.request(`/v1/runs/${parked.runId}/decision`, json({ toolCallId: 'c1', action: 'resume' }));
    expect(decided.status).toBe(202);
    expect(await decided.json()).toEqual({ status: 'decision_submitted', run_id: parked.runId, tool_call_id: 'c1' });
    const frames = await follower;
    const events = frames.map(data);
    expect(events[0]).toMatchObject({ event_type: 'run_start', run_id: parked.runId });
    expect(toolResults(frames)).toEqual([{ approved: 'deploy', by: 'B' }]);
    expect(events.at(-1)).toMatchObject({ event_type: 'run_finish', run_id: parked.runId, termination: { type: 'natural_end' } });
    // The thread's sequence goes on where the released run left it.
    expect(frames.map((f) => Number(f.id))).toEqual(frames.map((_, i) => parked.lastSeq + 1 + i));
    await expect.poll(async () => (await s.store.getRun(parked.runId))?.status).toBe('done');
    expect(await s.store.getRun(parked.runId)).toMatchObject({ termination: { type: 'natural_end' } });
    expect((await storedMessages(s.app, 'p')).slice(2)).toEqual([
      { role: 'tool', answer: { approved: 'deploy', by: 'B' } },
      { role: 'assistant', answer: 'B deployed it.' },
    ]);

    // The run going at the swap was not touched: it finishes on A, A's tool and A's model.
    expect(s.registry.live(goingId)).toMatchObject({ status: 'running' });
    s.open();
    const goingFrames = parseSse(await going.text());
    expect(toolResults(goingFrames)).toEqual([{ tag: 'long', by: 'A' }]);
    expect(goingFrames.map(data).at(-1)).toMatchObject({ event_type: 'run_finish', run_id: goingId, termination: { type: 'natural_end' } });
    expect(await s.store.getRun(goingId)).toMatchObject({ status: 'done', termination: { type: 'natural_end' } });
    expect(s.a.llm.requests).toHaveLength(3);
    expect(s.b.llm.requests).toHaveLength(1);
    await s.registry.shutdown();
  });

  it('releases nothing when no run is parked, and again nothing once the parked runs are gone', async () => {
    const s = reloadable({ A: [APPROVE], B: [{ text: 'B deployed it.' }] });
    expect(await s.registry.releaseParked()).toBe(0);
    const parked = await parkOn(s.app, 'p');
    s.reload();
    expect(await s.registry.releaseParked()).toBe(1);
    expect(await s.registry.releaseParked()).toBe(0);
    expect(await s.store.getRun(parked.runId)).toMatchObject({ status: 'waiting' });
    await s.registry.shutdown();
  });

  it('a parked run the store does not hold waiting is kept where it is: nothing could take it up again', async () => {
    // A runtime without the server's store parks its runs in memory only.
    const s = reloadable({ A: [APPROVE, { text: 'A deployed it.' }], B: [] }, undefined, { storelessA: true });
    const parked = await parkOn(s.app, 'm');
    s.reload();
    expect(await s.registry.releaseParked()).toBe(0);
    expect(s.logger.lines).toContain(
      `warn parked run kept on its runtime: the store does not hold it waiting ${JSON.stringify({ run: parked.runId, thread: 'm' })}`,
    );
    expect(s.registry.waiting(parked.runId)?.calls.map((c) => c.callId)).toEqual(['c1']);
    const follower = readFrames(await s.app.request('/v1/threads/m/stream'), (fs) => fs.some((f) => data(f).termination?.type === 'natural_end'), 5_000);
    expect((await s.app.request(`/v1/runs/${parked.runId}/decision`, json({ toolCallId: 'c1', action: 'resume' }))).status).toBe(202);
    expect(toolResults(await follower)).toEqual([{ approved: 'deploy', by: 'A' }]);
    await s.registry.shutdown();
  });

  it('a run taken up again and still waiting is let go again at the next reload', async () => {
    const s = reloadable({ A: [APPROVE], B: [] });
    const parked = await parkOn(s.app, 'p');
    s.reload();
    expect(await s.registry.releaseParked()).toBe(1);
    // Taken up on B (as a protocol route does before it reads the calls a run waits on), then C replaces B.
    expect(await s.registry.adopt(parked.runId)).toBe(true);
    const c = runtimeOf('C', [{ text: 'C deployed it.' }], s.store, s.env);
    s.swap(c.runtime);
    expect(await s.registry.releaseParked()).toBe(1);
    expect(s.registry.liveRuns).toBe(0);
    expect((await s.app.request(`/v1/runs/${parked.runId}/decision`, json({ toolCallId: 'c1', action: 'resume' }))).status).toBe(202);
    await expect.poll(async () => (await s.store.getRun(parked.runId))?.status).toBe('done');
    expect((await storedMessages(s.app, 'p')).slice(2)).toEqual([
      { role: 'tool', answer: { approved: 'deploy', by: 'C' } },
      { role: 'assistant', answer: 'C deployed it.' },
    ]);
    expect(s.b.llm.requests).toHaveLength(0);
    await s.registry.shutdown();
  });

  it('a decision that arrives while the release is under way waits for it, and resumes the run on the new runtime', async () => {
    const s = reloadable({ A: [APPROVE], B: [{ text: 'B deployed it.' }] });
    const parked = await parkOn(s.app, 'p');
    s.reload();
    // Sent in the same turn as the release starts: before the run is let go.
    const released = s.registry.releaseParked();
    const decided = s.registry.decideAnywhere(parked.runId, [decisionFor('c1', 'resume', 0)]);
    expect(await released).toBe(1);
    expect(await decided).toEqual({ ok: true, value: { runId: parked.runId } });
    await expect.poll(async () => (await s.store.getRun(parked.runId))?.status).toBe('done');
    expect((await storedMessages(s.app, 'p')).slice(2)).toEqual([
      { role: 'tool', answer: { approved: 'deploy', by: 'B' } },
      { role: 'assistant', answer: 'B deployed it.' },
    ]);
    expect(s.b.llm.requests).toHaveLength(1);
    await s.registry.shutdown();
  });

  it('a run going at the swap that parks afterwards is let go as it parks: its decision resumes it on the new runtime', async () => {
    // A's run: the long job (held at the swap), then an approval, parked after the swap.
    const s = reloadable({ A: [SLOW, APPROVE], B: [{ text: 'B deployed it.' }] });
    const going = await s.app.request('/v1/runs', go('q', 'long job, then deploy'));
    const runId = going.headers.get('x-awaken-run-id') as string;
    await expect.poll(() => s.gate.started).toEqual(['long']);
    s.reload();
    expect(await s.registry.releaseParked()).toBe(0);
    s.open();
    const segment = parseSse(await going.text());
    // Its first segment ran on A throughout, up to its suspension.
    expect(toolResults(segment)).toEqual([{ tag: 'long', by: 'A' }, null]);
    expect(segment.map(data).at(-1)).toMatchObject({ event_type: 'run_finish', run_id: runId, termination: { type: 'suspended' } });
    await expect.poll(() => s.registry.live(runId)).toBeUndefined();
    expect(await s.store.getLease('q')).toBeUndefined();
    expect(await s.store.getRun(runId)).toMatchObject({ status: 'waiting' });

    expect((await s.app.request(`/v1/runs/${runId}/decision`, json({ toolCallId: 'c1', action: 'resume' }))).status).toBe(202);
    await expect.poll(async () => (await s.store.getRun(runId))?.status).toBe('done');
    expect((await storedMessages(s.app, 'q')).slice(2)).toEqual([
      { role: 'tool', answer: { tag: 'long', by: 'A' } },
      { role: 'assistant', answer: '' },
      { role: 'tool', answer: { approved: 'deploy', by: 'B' } },
      { role: 'assistant', answer: 'B deployed it.' },
    ]);
    await s.registry.shutdown();
  });

  it("after a release, another principal can neither decide nor cancel the owner's parked run; its owner can", async () => {
    const tokens = new Map([
      ['alice-token-0123456789', 'alice'],
      ['bob-token-0123456789', 'bob'],
    ]);
    const as = (token: string, body?: unknown): RequestInit => ({
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const s = reloadable({ A: [APPROVE], B: [{ text: 'B shipped it.' }] }, { auth: { tokens } });
    const parked = await parkOn(s.app, 'own', as('alice-token-0123456789', { threadId: 'own', messages: [{ role: 'user', content: 'ship it' }] }));
    s.reload();
    expect(await s.registry.releaseParked()).toBe(1);

    const refused = await s.app.request(`/v1/runs/${parked.runId}/decision`, as('bob-token-0123456789', { toolCallId: 'c1', action: 'resume' }));
    expect(refused.status).toBe(404);
    expect(await refused.json()).toEqual({ error: `no waiting run: ${parked.runId}`, code: 'run_not_found' });
    expect((await s.app.request(`/v1/runs/${parked.runId}/cancel`, as('bob-token-0123456789', {}))).status).toBe(404);
    expect((await s.app.request('/v1/threads/own', as('bob-token-0123456789'))).status).toBe(404);
    // Bob's attempts took nothing up: the run is still waiting in the store, held by no instance.
    expect(await s.store.getRun(parked.runId)).toMatchObject({ status: 'waiting' });
    expect(await s.store.getLease('own')).toBeUndefined();
    expect(s.registry.liveRuns).toBe(0);

    expect((await s.app.request(`/v1/runs/${parked.runId}/decision`, as('alice-token-0123456789', { toolCallId: 'c1', action: 'resume' }))).status).toBe(202);
    await expect.poll(async () => (await s.store.getRun(parked.runId))?.status).toBe('done');
    expect((await storedMessages(s.app, 'own', as('alice-token-0123456789'))).slice(2)).toEqual([
      { role: 'tool', answer: { approved: 'deploy', by: 'B' } },
      { role: 'assistant', answer: 'B shipped it.' },
    ]);
    await s.registry.shutdown();
  });

  it("A2A tasks/<id>:cancel of a task let go at a reload cancels it (it is not 'finished'); another principal's cancel finds no task and leaves it waiting", async () => {
    const tokens = new Map([
      ['alice-token-0123456789', 'alice'],
      ['bob-token-0123456789', 'bob'],
    ]);
    const as = (token: string, body?: unknown): RequestInit => ({
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body ?? {}),
    });
    const s = reloadable({ A: [APPROVE], B: [{ text: 'never asked' }] }, { auth: { tokens } });
    const parked = await parkOn(s.app, 'own', as('alice-token-0123456789', { threadId: 'own', messages: [{ role: 'user', content: 'ship it' }] }));
    s.reload();
    expect(await s.registry.releaseParked()).toBe(1);

    const refused = await s.app.request(`/v1/a2a/tasks/${parked.runId}:cancel`, as('bob-token-0123456789'));
    expect(refused.status).toBe(404);
    expect(((await refused.json()) as { error: { details: { reason: string }[] } }).error.details[0]?.reason).toBe('TASK_NOT_FOUND');
    expect(await s.store.getRun(parked.runId)).toMatchObject({ status: 'waiting' });

    const cancelled = await s.app.request(`/v1/a2a/tasks/${parked.runId}:cancel`, as('alice-token-0123456789'));
    expect(cancelled.status).toBe(200);
    expect(await cancelled.json()).toMatchObject({ id: parked.runId, contextId: 'own', status: { state: 'TASK_STATE_CANCELED' } });
    expect(await s.store.getRun(parked.runId)).toMatchObject({ status: 'done', termination: { type: 'cancelled' } });
    // Cancelled once is finished: a second cancel is refused as for any finished task.
    const again = await s.app.request(`/v1/a2a/tasks/${parked.runId}:cancel`, as('alice-token-0123456789'));
    expect(again.status).toBe(409);
    await s.registry.shutdown();
  });
});
