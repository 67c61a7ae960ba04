import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { AgentSpecInput } from '../../src/contract/agent-spec.ts';
import { TerminationReasons, type TerminationReason } from '../../src/contract/lifecycle.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { delegateToolId } from '../../src/runtime/delegation.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { createHttpApp } from '../../src/server/http.ts';
import { listen, type RunningServer } from '../../src/server/node.ts';
import { RunRegistry } from '../../src/server/run-registry.ts';
import { recoverRuns } from '../../src/server/recovery.ts';
import { runView } from '../../src/server/stored-runs.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { SqliteStore } from '../../src/stores/sqlite.ts';
import { echoTool, namedEnv } from '../support/runtime.ts';
import { testServer } from '../support/server.ts';

/**
 * Run records over HTTP (docs/server.md → Runs): the token totals of a run over every segment, the
 * run that delegated it, and how it ended as one code — in `GET /v1/runs/:id` and `GET /v1/runs`,
 * always present. Two principals over a socket: another principal's run is not there.
 */
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789';

const open: RunningServer[] = [];
afterEach(async () => {
  for (const server of open.splice(0)) await server.close();
});

const call = (url: string, token: string | undefined, method: string, path: string, body?: unknown): Promise<Response> =>
  fetch(`${url}${path}`, {
    method,
    headers: { ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}), 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

/** Polls a run until it has `status` (or the time runs out): its last answer. */
async function runWhen(url: string, token: string | undefined, runId: string, status: string): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const run = (await (await call(url, token, 'GET', `/v1/runs/${runId}`)).json()) as Record<string, unknown>;
    if (run['status'] === status || Date.now() > deadline) return run;
    await new Promise((r) => setTimeout(r, 20));
  }
}

const usage = (prompt: number, completion: number) => ({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });

describe('run records over HTTP', () => {
  it('a finished run: its token totals over its inferences, no parent, its termination code; the list answers the same', async () => {
    const s = testServer([
      { tool_calls: [{ id: 'e1', name: 'echo', arguments: { text: 'x' } }], usage: usage(100, 20) },
      { text: 'done', usage: usage(130, 7) },
    ]);
    const server = await listen(s.app, { port: 0 });
    open.push(server);
    const r = await call(server.url, undefined, 'POST', '/v1/runs', { threadId: 't1', messages: [{ role: 'user', content: 'go' }] });
    const runId = r.headers.get('x-awaken-run-id') as string;
    await r.text();
    const run = await runWhen(server.url, undefined, runId, 'done');
    expect(run).toEqual({
      run_id: runId,
      thread_id: 't1',
      agent_id: 'agent',
      status: 'done',
      termination: { type: 'natural_end' },
      termination_code: 'natural_end',
      steps: 2,
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
      parent_run_id: null,
      input_tokens: 230,
      output_tokens: 27,
    });
    const listed = (await (await call(server.url, undefined, 'GET', '/v1/runs?thread_id=t1')).json()) as { items: unknown[] };
    expect(listed.items).toEqual([run]);
  });

  it('a run that suspends for a decision and is resumed counts the tokens of both segments once, on SQLite', async () => {
    const store = new SqliteStore(':memory:');
    const s = testServer(
      [
        { tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }], usage: usage(50, 5) },
        { text: 'shipped', usage: usage(70, 9) },
      ],
      { store },
    );
    const server = await listen(s.app, { port: 0 });
    open.push(server);
    const r = await call(server.url, undefined, 'POST', '/v1/runs', { threadId: 'hitl', messages: [{ role: 'user', content: 'ship it' }] });
    const runId = r.headers.get('x-awaken-run-id') as string;
    await r.text();
    expect(await runWhen(server.url, undefined, runId, 'waiting')).toMatchObject({
      status: 'waiting',
      input_tokens: 50,
      output_tokens: 5,
      termination_code: 'suspended',
    });
    expect((await call(server.url, undefined, 'POST', `/v1/runs/${runId}/decision`, { toolCallId: 'c1', action: 'resume', payload: true })).status).toBe(202);
    expect(await runWhen(server.url, undefined, runId, 'done')).toMatchObject({
      status: 'done',
      input_tokens: 120,
      output_tokens: 14,
      termination_code: 'natural_end',
      parent_run_id: null,
    });
    await store.close();
  });

  it("a run parked on one process and resumed by the next after a restart counts both processes' tokens once", async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'awaken-run-records-')), 'awaken.db');
    const a = testServer([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'ship' } }], usage: usage(300, 30) }], {
      store: new SqliteStore(path),
    });
    const r = await a.app.request('/v1/runs', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ threadId: 'parked', messages: [{ role: 'user', content: 'ship it' }] }),
    });
    const runId = r.headers.get('x-awaken-run-id') as string;
    await r.text();
    await a.registry.shutdown({ graceMs: 1_000 });
    await a.store.close();

    const store = new SqliteStore(path);
    await recoverRuns(store, Date.now());
    const b = testServer([{ text: 'shipped', usage: usage(45, 4) }], { store, env: namedEnv('restarted') });
    const server = await listen(b.app, { port: 0 });
    open.push(server);
    expect(await runWhen(server.url, undefined, runId, 'waiting')).toMatchObject({ input_tokens: 300, output_tokens: 30 });
    expect((await call(server.url, undefined, 'POST', `/v1/runs/${runId}/decision`, { toolCallId: 'c1', action: 'resume' })).status).toBe(202);
    expect(await runWhen(server.url, undefined, runId, 'done')).toMatchObject({
      status: 'done',
      input_tokens: 345,
      output_tokens: 34,
      termination_code: 'natural_end',
    });
    await b.registry.shutdown();
    await store.close();
  });

  it('a sub-agent run names the run that delegated it', async () => {
    const orchestrator: AgentSpecInput = { id: 'orchestrator', model: 'm-o', system_prompt: 'You coordinate.', delegates: ['researcher'] };
    const researcher: AgentSpecInput = { id: 'researcher', model: 'm-r', system_prompt: 'You research.', allowed_tools: ['echo'] };
    const parentSteps: ScriptStep[] = [
      { tool_calls: [{ id: 'd1', name: delegateToolId('researcher'), arguments: { prompt: 'tides' } }], usage: usage(10, 1) },
      { text: 'found' },
    ];
    const store = new MemoryStore();
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withTool(echoTool)
      .withDelegation({})
      .withThreadRunStore(store)
      .withProvider('o', new ScriptedLlm(parentSteps))
      .withModel('m-o', { provider: 'o', model_name: 'o' })
      .withProvider('r', new ScriptedLlm([{ text: 'three sources', usage: usage(40, 4) }]))
      .withModel('m-r', { provider: 'r', model_name: 'r' })
      .withAgentSpec(orchestrator)
      .withAgentSpec(researcher)
      .build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    const app = createHttpApp({ runtime: built.value, store, registry: new RunRegistry(built.value, store) });
    const server = await listen(app, { port: 0 });
    open.push(server);
    const r = await call(server.url, undefined, 'POST', '/v1/runs', {
      threadId: 'main',
      agentId: 'orchestrator',
      messages: [{ role: 'user', content: 'research tides' }],
    });
    const parentId = r.headers.get('x-awaken-run-id') as string;
    await r.text();
    await runWhen(server.url, undefined, parentId, 'done');
    const runs = (await (await call(server.url, undefined, 'GET', '/v1/runs')).json()) as {
      items: { run_id: string; agent_id: string; parent_run_id: string | null }[];
    };
    const child = runs.items.find((x) => x.agent_id === 'researcher');
    expect(child).toMatchObject({ parent_run_id: parentId, input_tokens: 40, output_tokens: 4, termination_code: 'natural_end' });
    expect(await (await call(server.url, undefined, 'GET', `/v1/runs/${child?.run_id}`)).json()).toMatchObject({ parent_run_id: parentId });
    expect(await (await call(server.url, undefined, 'GET', `/v1/runs/${parentId}`)).json()).toMatchObject({
      parent_run_id: null,
      input_tokens: 10,
      output_tokens: 1,
    });
  });

  it("two principals over a socket: bob gets 404 for alice's run and does not see it listed; alice sees its totals", async () => {
    const s = testServer([{ text: 'secret', usage: usage(11, 2) }], {
      http: {
        auth: {
          tokens: new Map([
            [ALICE, 'alice'],
            [BOB, 'bob'],
          ]),
        },
      },
    });
    const server = await listen(s.app, { port: 0 });
    open.push(server);
    const r = await call(server.url, ALICE, 'POST', '/v1/runs', { threadId: 'alice-t', messages: [{ role: 'user', content: 'hi' }] });
    const runId = r.headers.get('x-awaken-run-id') as string;
    await r.text();
    expect(await runWhen(server.url, ALICE, runId, 'done')).toMatchObject({ input_tokens: 11, output_tokens: 2, parent_run_id: null });
    const bob = await call(server.url, BOB, 'GET', `/v1/runs/${runId}`);
    expect(bob.status).toBe(404);
    expect(await bob.json()).toMatchObject({ code: 'run_not_found' });
    expect(await (await call(server.url, BOB, 'GET', '/v1/runs')).json()).toMatchObject({ items: [], total: 0 });
  });
});

describe('runView', () => {
  it('the termination code is the type, with the stop code after a colon for a stop; null before the run ends', () => {
    const base = { run_id: 'r', thread_id: 't', agent_id: 'a', status: 'done' as const, steps: 1, created_at: 1, updated_at: 2 };
    const code = (t: TerminationReason): string | null => runView({ ...base, termination: t }).termination_code;
    expect(code(TerminationReasons.naturalEnd())).toBe('natural_end');
    expect(code(TerminationReasons.behaviorRequested())).toBe('behavior_requested');
    expect(code(TerminationReasons.cancelled())).toBe('cancelled');
    expect(code(TerminationReasons.suspended())).toBe('suspended');
    expect(code(TerminationReasons.blocked('not allowed'))).toBe('blocked');
    expect(code(TerminationReasons.error('provider down'))).toBe('error');
    expect(code(TerminationReasons.stopped('max_rounds', 'after 5'))).toBe('stopped:max_rounds');
    expect(runView({ ...base, status: 'running' })).toEqual({
      ...base,
      status: 'running',
      parent_run_id: null,
      input_tokens: 0,
      output_tokens: 0,
      termination_code: null,
    });
  });

  it('keeps every field of the record and adds only the four, whatever the record holds', () => {
    fc.assert(
      fc.property(
        fc.option(fc.string({ minLength: 1 }), { nil: undefined }),
        fc.option(fc.nat(), { nil: undefined }),
        fc.option(fc.nat(), { nil: undefined }),
        (parent, input, output) => {
          const record = {
            run_id: 'r',
            thread_id: 't',
            agent_id: 'a',
            status: 'running' as const,
            steps: 0,
            created_at: 1,
            updated_at: 1,
            ...(parent !== undefined ? { parent_run_id: parent } : {}),
            ...(input !== undefined ? { input_tokens: input, output_tokens: output ?? 0 } : {}),
          };
          const view = runView(record);
          expect(view).toMatchObject(record);
          expect(view.parent_run_id).toBe(parent ?? null);
          expect(view.input_tokens).toBe(input ?? 0);
          expect(Object.keys(view).sort()).toEqual(
            [...new Set([...Object.keys(record), 'parent_run_id', 'input_tokens', 'output_tokens', 'termination_code'])].sort(),
          );
        },
      ),
    );
  });
});
