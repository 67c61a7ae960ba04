import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * The `Read` / `Write` workspace of `awaken serve` under API tokens (docs/server.md → Access
 * control): each thread owner has a workspace of its own. Two principals drive a real process whose
 * agents run scripted models: `writer` writes `/notes.txt`, `reader` reads it back.
 */
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789';
const ADMIN = 'admin-token-0123456789';

let serve: ServeProcess;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-workspace-'));
  writeFileSync(
    join(dir, 'writer.yaml'),
    ['- tool_calls:', '    - { id: w1, name: Write, arguments: { file_path: /notes.txt, content: "bob: the vault code is 4711" } }', '- text: saved', ''].join(
      '\n',
    ),
  );
  writeFileSync(
    join(dir, 'reader.yaml'),
    ['- tool_calls:', '    - { id: r1, name: Read, arguments: { file_path: /notes.txt } }', '- text: read', ''].join('\n'),
  );
  writeFileSync(
    join(dir, 'planner.yaml'),
    ['- tool_calls:', '    - { id: d1, name: agent_run_scribe, arguments: { prompt: write the plan } }', '- text: planned', ''].join('\n'),
  );
  writeFileSync(
    join(dir, 'scribe.yaml'),
    ['- tool_calls:', '    - { id: s1, name: Write, arguments: { file_path: /plan.txt, content: "the plan" } }', '- text: written', ''].join('\n'),
  );
  writeFileSync(
    join(dir, 'plan-reader.yaml'),
    ['- tool_calls:', '    - { id: p1, name: Read, arguments: { file_path: /plan.txt } }', '- text: read', ''].join('\n'),
  );
  writeFileSync(
    join(dir, 'awaken.yaml'),
    [
      'server:',
      '  store: memory',
      '  auth:',
      '    tokens:',
      '      - { principal: alice, token_env: ALICE_TOKEN }',
      '      - { principal: bob, token_env: BOB_TOKEN }',
      'providers:',
      '  writer: { kind: scripted, file: writer.yaml }',
      '  reader: { kind: scripted, file: reader.yaml }',
      '  planner: { kind: scripted, file: planner.yaml }',
      '  scribe: { kind: scripted, file: scribe.yaml }',
      '  plan-reader: { kind: scripted, file: plan-reader.yaml }',
      'models:',
      '  writer: { provider: writer, model_name: writer }',
      '  reader: { provider: reader, model_name: reader }',
      '  planner: { provider: planner, model_name: planner }',
      '  scribe: { provider: scribe, model_name: scribe }',
      '  plan-reader: { provider: plan-reader, model_name: plan-reader }',
      'agents:',
      '  - { id: writer, model: writer, system_prompt: "Keep notes.", allowed_tools: [Write] }',
      '  - { id: reader, model: reader, system_prompt: "Read notes.", allowed_tools: [Read] }',
      '  - { id: planner, model: planner, system_prompt: "Plan.", delegates: [scribe], allowed_tools: ["agent_run_*"] }',
      '  - { id: scribe, model: scribe, system_prompt: "Write the plan.", allowed_tools: [Write] }',
      '  - { id: plan-reader, model: plan-reader, system_prompt: "Read the plan.", allowed_tools: [Read] }',
      '',
    ].join('\n'),
  );
  serve = await startServe(['--config', join(dir, 'awaken.yaml')], { ALICE_TOKEN: ALICE, BOB_TOKEN: BOB, AWAKEN_ADMIN_TOKEN: ADMIN });
}, 60_000);

afterAll(async () => {
  await serve.stop();
});

/** Runs an agent on a thread as a token's principal, to its end; returns what its tool answered. */
async function run(token: string, agentId: string, threadId: string): Promise<unknown> {
  const r = await fetch(`${serve.url}/v1/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ agentId, threadId, messages: [{ role: 'user', content: 'go' }] }),
  });
  expect(r.status).toBe(200);
  await r.text();
  const messages = (await (
    await fetch(`${serve.url}/v1/threads/${threadId}/messages?visibility=all`, { headers: { authorization: `Bearer ${token}` } })
  ).json()) as {
    messages: { role: string; content: { text?: string }[] }[];
  };
  const tool = messages.messages.findLast((m) => m.role === 'tool');
  return JSON.parse(tool?.content[0]?.text ?? 'null');
}

describe('the Read / Write workspace of awaken serve, two principals', () => {
  it("a principal's run does not read what another principal's run wrote; the owner's threads do, whoever runs them", async () => {
    expect(await run(BOB, 'writer', 'bob-notes')).toEqual({ file_path: '/notes.txt', bytes: 27 });
    expect(await run(ALICE, 'reader', 'alice-notes')).toEqual({ file_path: '/notes.txt', exists: false, content: '' });
    // Bob's workspace goes on across his threads (delegates and later conversations share it).
    expect(await run(BOB, 'reader', 'bob-later')).toEqual({ file_path: '/notes.txt', exists: true, content: 'bob: the vault code is 4711' });
    // The operator's run on bob's thread works in bob's workspace; on a thread of its own, in its own.
    const created = await fetch(`${serve.url}/v1/threads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${BOB}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'bob-empty' }),
    });
    expect(created.status).toBe(201);
    expect(await run(ADMIN, 'reader', 'bob-empty')).toEqual({ file_path: '/notes.txt', exists: true, content: 'bob: the vault code is 4711' });
    expect(await run(ADMIN, 'reader', 'operators-own')).toEqual({ file_path: '/notes.txt', exists: false, content: '' });
  }, 60_000);

  it("a delegate's thread belongs to its parent thread's owner, whoever runs the parent; so does the workspace it writes", async () => {
    const created = await fetch(`${serve.url}/v1/threads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${BOB}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'bob-plan' }),
    });
    expect(created.status).toBe(201);
    // The operator runs bob's planner; its scribe writes the plan in a child thread.
    const delegated = (await run(ADMIN, 'planner', 'bob-plan')) as { status: string; thread_id: string };
    expect(delegated).toMatchObject({ status: 'completed' });
    const child = await fetch(`${serve.url}/v1/threads/${delegated.thread_id}`, { headers: { authorization: `Bearer ${BOB}` } });
    expect(child.status).toBe(200);
    expect((await fetch(`${serve.url}/v1/threads/${delegated.thread_id}`, { headers: { authorization: `Bearer ${ALICE}` } })).status).toBe(404);
    expect(await run(BOB, 'plan-reader', 'bob-reads-plan')).toEqual({ file_path: '/plan.txt', exists: true, content: 'the plan' });
    expect(await run(ALICE, 'plan-reader', 'alice-reads-plan')).toEqual({ file_path: '/plan.txt', exists: false, content: '' });
  }, 60_000);
});
