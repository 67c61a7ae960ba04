import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killHard, repo, startServe, type ServeProcess } from '../support/serve-process.ts';
import { parseSse } from '../support/server.ts';

/**
 * Delegation across real processes and sockets (docs/delegation.md): `front` (one awaken serve on a
 * SQLite file) runs an orchestrator that delegates to a local researcher — a sub-run in a child
 * thread — and to a remote analyst, an agent of a second awaken serve (`remote`, with API tokens)
 * reached over A2A with a bearer token. Each delegate asks for a confirmation: its question
 * suspends the orchestrator's call, and the decision sent to the orchestrator's run goes on to the
 * delegate. The first decision is sent after `front` was killed (kill -9) and started again.
 *
 * The remote serves several agents, and the analyst is not the one its root card names (the
 * accountant sorts first): a delegation reaches the agent its endpoint names — by `target`, by a
 * `base_url` ending in the agent's path, or, with neither, the agent of the A2A root's card.
 */

const fixtures = join(repo, 'spec/cli/fixtures/delegation');
const TOKEN = 'remote-token-0123456789abcdef';
let remote: ServeProcess;
let front: ServeProcess | undefined;
let frontArgs: string[];
let dir: string;

const startFront = (): Promise<ServeProcess> => startServe(frontArgs, { FRONT_TO_REMOTE_API_KEY: TOKEN });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'awaken-delegation-'));
  const remoteConfig = join(dir, 'remote.yaml');
  writeFileSync(join(dir, 'accountant.yaml'), '- text: Books balanced.\n');
  writeFileSync(join(dir, 'writer.yaml'), '- text: Draft written.\n');
  writeFileSync(
    remoteConfig,
    [
      'server:',
      '  store: memory',
      '  auth: { tokens: [ { principal: front, token_env: REMOTE_TOKEN } ] }',
      'providers:',
      `  analyst: { kind: scripted, file: ${join(fixtures, 'analyst.yaml')} }`,
      `  accountant: { kind: scripted, file: ${join(dir, 'accountant.yaml')} }`,
      `  writer: { kind: scripted, file: ${join(dir, 'writer.yaml')} }`,
      'models:',
      '  analyst: { provider: analyst, model_name: analyst }',
      '  accountant: { provider: accountant, model_name: accountant }',
      '  writer: { provider: writer, model_name: writer }',
      'agents:',
      // The first agent in id order: the one the remote's A2A root card names.
      '  - { id: accountant, model: accountant, system_prompt: "You keep the books." }',
      '  - { id: analyst, model: analyst, system_prompt: "You analyse reports.", allowed_tools: [confirm_action] }',
      '  - { id: writer, model: writer, system_prompt: "You write drafts." }',
    ].join('\n'),
  );
  remote = await startServe(['--config', remoteConfig], { REMOTE_TOKEN: TOKEN });
  const frontConfig = join(dir, 'front.yaml');
  writeFileSync(
    frontConfig,
    [
      'server:',
      `  store: sqlite:${join(dir, 'front.db')}`,
      'providers:',
      `  orchestrator: { kind: scripted, file: ${join(fixtures, 'orchestrator.yaml')} }`,
      `  researcher: { kind: scripted, file: ${join(fixtures, 'researcher.yaml')} }`,
      `  dispatcher: { kind: scripted, file: ${join(dir, 'dispatcher.yaml')} }`,
      'models:',
      '  orchestrator: { provider: orchestrator, model_name: orchestrator }',
      '  researcher: { provider: researcher, model_name: researcher }',
      '  dispatcher: { provider: dispatcher, model_name: dispatcher }',
      'agents:',
      '  - { id: orchestrator, model: orchestrator, system_prompt: "You coordinate.", delegates: [researcher, analyst], allowed_tools: ["agent_run_*"] }',
      '  - { id: researcher, model: researcher, system_prompt: "You check facts.", allowed_tools: [confirm_action] }',
      `  - id: analyst`,
      `    description: The analyst of the other server`,
      `    endpoint: { backend: a2a, base_url: "${remote.url}/v1/a2a", target: analyst, auth: { type: bearer, token_env: FRONT_TO_REMOTE_API_KEY }, timeout_ms: 30000, options: { poll_interval_ms: 50 } }`,
      '  - { id: dispatcher, model: dispatcher, delegates: [writer, books], allowed_tools: ["agent_run_*"] }',
      // No target: the base URL is the agent's own (its path on the remote), or the A2A root (the root card's agent).
      `  - { id: writer, endpoint: { backend: a2a, base_url: "${remote.url}/v1/a2a/writer", auth: { type: bearer, token_env: FRONT_TO_REMOTE_API_KEY }, timeout_ms: 30000 } }`,
      `  - { id: books, endpoint: { backend: a2a, base_url: "${remote.url}/v1/a2a", auth: { type: bearer, token_env: FRONT_TO_REMOTE_API_KEY }, timeout_ms: 30000 } }`,
    ].join('\n'),
  );
  writeFileSync(
    join(dir, 'dispatcher.yaml'),
    [
      '- tool_calls:',
      '    - { id: call_writer, name: agent_run_writer, arguments: { prompt: draft it } }',
      '    - { id: call_books, name: agent_run_books, arguments: { prompt: balance them } }',
      '- text: Dispatched.',
    ].join('\n'),
  );
  frontArgs = ['--config', frontConfig];
  front = await startFront();
});

afterAll(async () => {
  await front?.stop();
  await remote.stop();
});

// The shapes of the server's answers that these specs read.
type Child = { agent_id: string; thread_id: string; run_id: string };
type StreamEvent = {
  event_type: string;
  delta?: string;
  id?: string;
  result?: { status: string; suspension: { suspension: { parameters: { delegation: { child: Child } } } } };
};
type RunView = { status: string; termination?: unknown };
type Messages = { messages: { role: string; content: { text: string }[] }[] };
type Tasks = { items: { run_id: string; agent_id: string }[] };
type Delegated = { agent_id: string; status: string; response: string; run_id?: string };

const json = async <T = unknown>(r: Response | Promise<Response>): Promise<T> => (await r).json() as Promise<T>;
const post = (url: string, body: unknown): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const events = (sse: string): StreamEvent[] => parseSse(sse).map((f) => JSON.parse(f.data) as StreamEvent);

async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}:\n${front?.log() ?? ''}\n--- remote:\n${remote.log()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('delegation in awaken serve: a local child thread, a remote agent over A2A, decisions across a restart', () => {
  it('the orchestrator’s call waits on the researcher’s question; after kill -9 and a restart its decision reaches the researcher; then the remote analyst asks, and its answer reaches the other server', async () => {
    const url = (front as ServeProcess).url;
    const first = await post(`${url}/v1/runs`, { threadId: 'front-1', agentId: 'orchestrator', messages: [{ role: 'user', content: 'check and share' }] });
    expect(first.status).toBe(200);
    const runId = first.headers.get('x-awaken-run-id') as string;
    const segment = events(await first.text());
    // The researcher's text and question reach the stream as the call's activity, not as the orchestrator's text.
    expect(
      segment
        .filter((e) => e.event_type === 'text_delta')
        .map((e) => e.delta)
        .join(''),
    ).toBe('Asking the researcher first.');
    const waiting = segment.find((e) => e.event_type === 'tool_call_done' && e.id === 'call_research');
    expect(waiting!.result!.status).toBe('pending');
    expect(waiting!.result!.suspension.suspension).toMatchObject({ action: 'confirm', message: 'Confirm: publish the facts?' });
    const child = waiting!.result!.suspension.suspension.parameters.delegation.child;
    expect(child).toMatchObject({ agent_id: 'researcher', backend: 'local', depth: 1 });
    expect(segment.at(-1)).toMatchObject({ event_type: 'run_finish', termination: { type: 'suspended' } });
    // The child thread is a thread of the store: the prompt (its waiting call joins it once settled).
    const childMessages = await json<Messages>(fetch(`${url}/v1/threads/${child.thread_id}/messages`));
    expect(childMessages.messages.map((m: { role: string; content: { text: string }[] }) => [m.role, m.content[0]?.text])).toEqual([
      ['user', 'check the facts'],
    ]);
    expect(await json(fetch(`${url}/v1/runs/${child.run_id}`))).toMatchObject({ status: 'waiting', thread_id: child.thread_id, agent_id: 'researcher' });

    // The front server dies and comes back on the same store.
    await killHard(front as ServeProcess);
    front = await startFront();
    const again = (front as ServeProcess).url;
    const decided = await post(`${again}/v1/runs/${runId}/decision`, { toolCallId: 'call_research', action: 'resume', payload: { approved: true } });
    expect(decided.status).toBe(202);

    // The researcher went on and answered; the orchestrator then asked the analyst on the other server, which asks too.
    const parked = await waitFor(async () => {
      const run = await json<RunView>(fetch(`${again}/v1/runs/${runId}`));
      const msgs = await json<Messages>(fetch(`${again}/v1/threads/front-1/messages`));
      return run.status === 'waiting' && msgs.messages.some((m) => m.role === 'tool' && JSON.stringify(m).includes('Facts checked and published.'))
        ? run
        : undefined;
    }, 'the orchestrator to wait on the analyst');
    expect(parked.status).toBe('waiting');
    expect(await json(fetch(`${again}/v1/runs/${child.run_id}`))).toMatchObject({ status: 'done', termination: { type: 'natural_end' } });
    // On the remote server the task waits for input, for the principal whose token the front server used.
    const tasks = await json<Tasks>(fetch(`${remote.url}/v1/runs?status=waiting`, { headers: { authorization: `Bearer ${TOKEN}` } }));
    expect(tasks.items).toHaveLength(1);
    expect(tasks.items[0]).toMatchObject({ agent_id: 'analyst', status: 'waiting' });
    expect((await fetch(`${remote.url}/v1/runs`)).status).toBe(401);

    const answered = await post(`${again}/v1/runs/${runId}/decision`, { toolCallId: 'call_analyst', action: 'resume', payload: { approved: true } });
    expect(answered.status).toBe(202);
    const done = await waitFor(async () => {
      const run = await json<RunView>(fetch(`${again}/v1/runs/${runId}`));
      return run.status === 'done' ? run : undefined;
    }, 'the orchestrator to finish');
    expect(done.termination).toEqual({ type: 'natural_end' });
    const thread = await json<Messages>(fetch(`${again}/v1/threads/front-1/messages`));
    const tools = thread.messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content[0]!.text) as Delegated);
    expect(tools).toEqual([
      {
        agent_id: 'researcher',
        status: 'completed',
        response: 'Facts checked and published.',
        steps: expect.any(Number),
        thread_id: child.thread_id,
        run_id: child.run_id,
      },
      expect.objectContaining({ agent_id: 'analyst', status: 'completed', response: 'Report shared.' }),
    ]);
    expect(thread.messages.at(-1)!.content[0]!.text).toBe('Both delegates are done.');
    const task = await json(fetch(`${remote.url}/v1/runs/${tools[1]!.run_id}`, { headers: { authorization: `Bearer ${TOKEN}` } }));
    expect(task).toMatchObject({ status: 'done', agent_id: 'analyst', termination: { type: 'natural_end' } });
    // The token reached no log line.
    expect((front as ServeProcess).log()).not.toContain(TOKEN);
  });

  it('an endpoint reaches the agent it names on a remote with several: by its path without a target, and the root card’s agent with neither', async () => {
    const url = (front as ServeProcess).url;
    const r = await post(`${url}/v1/runs`, { threadId: 'front-2', agentId: 'dispatcher', messages: [{ role: 'user', content: 'dispatch' }] });
    expect(events(await r.text()).at(-1)).toMatchObject({ event_type: 'run_finish', termination: { type: 'natural_end' } });
    const thread = await json<Messages>(fetch(`${url}/v1/threads/front-2/messages`));
    const texts: string[] = thread.messages.filter((m) => m.role === 'tool').map((m) => m.content[0]!.text);
    // A failed delegation is a text for the model, not a result object: shown whole when it happens.
    const results = texts.map((t): Delegated => (t.startsWith('{') ? (JSON.parse(t) as Delegated) : { agent_id: '?', status: 'failed', response: t }));
    expect(results.map((t) => [t.agent_id, t.status, t.response])).toEqual([
      ['writer', 'completed', 'Draft written.'],
      ['books', 'completed', 'Books balanced.'],
    ]);
    // Each ran as a task of the remote agent named, for the front server's principal.
    const tasks = await json<Tasks>(fetch(`${remote.url}/v1/runs?status=done`, { headers: { authorization: `Bearer ${TOKEN}` } }));
    for (const t of results) expect(tasks.items.find((i) => i.run_id === t.run_id)?.agent_id).toBe(t.agent_id === 'writer' ? 'writer' : 'accountant');
  });
});
