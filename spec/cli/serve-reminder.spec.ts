import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * The reminder plugin from `awaken serve --config`, over a real socket: a rule on `output: {status:
 * pending}` fires when `confirm_action` answers that it waits for a person, and its message is in the
 * request of the inference after the decision (read from the run's transcript, which records every
 * request the model was sent); the recorded run replays identical.
 */

const dir = mkdtempSync(join(tmpdir(), 'awaken-reminder-'));
const records = join(dir, 'runs');
let server: ServeProcess;
beforeAll(async () => {
  writeFileSync(
    join(dir, 'script.yaml'),
    ['- tool_calls:', '    - { id: call_confirm, name: confirm_action, arguments: { action: deploy } }', '- text: Deployed.'].join('\n'),
  );
  writeFileSync(
    join(dir, 'awaken.yaml'),
    [
      'server:',
      '  store: memory',
      'providers:',
      `  scripted: { kind: scripted, file: ${join(dir, 'script.yaml')} }`,
      'models:',
      '  scripted: { provider: scripted, model_name: scripted }',
      'agents:',
      '  - id: deployer',
      '    model: scripted',
      '    plugin_ids: [reminder]',
      '    sections:',
      '      reminder:',
      '        rules:',
      '          - { name: asked, tool: confirm_action, output: { status: pending }, message: { target: system, content: "REMIND: the user was asked to confirm" } }',
    ].join('\n'),
  );
  server = await startServe(['--config', join(dir, 'awaken.yaml'), '--record', records]);
});
afterAll(async () => {
  await server.stop();
});

const post = (path: string, body: unknown): Promise<Response> =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('the reminder plugin in awaken serve', () => {
  it('a rule on a pending output fires when the tool waits for a person; the next inference carries its message', async () => {
    const first = await (await post('/v1/runs', { threadId: 'deploys', agentId: 'deployer', messages: [{ role: 'user', content: 'deploy it' }] })).text();
    expect(first).toContain('"outcome":"suspended"');
    const runId = /"event_type":"run_start","thread_id":"deploys","run_id":"([^"]+)"/.exec(first)?.[1] ?? '';
    expect((await post(`/v1/runs/${runId}/decision`, { toolCallId: 'call_confirm', action: 'resume' })).status).toBe(202);
    const deadline = Date.now() + 10_000;
    let file: string | undefined;
    while (file === undefined && Date.now() < deadline) {
      // The server records this one run alone (its file name encodes the thread and run ids).
      file = readdirSync(records).find((f) => f.endsWith('.jsonl') && readFileSync(join(records, f), 'utf8').includes('"type":"end"'));
      if (file === undefined) await new Promise((r) => setTimeout(r, 50));
    }
    const inferences = readFileSync(join(records, file as string), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{"type":"llm"'));
    expect(inferences.map((l) => l.includes('REMIND: the user was asked to confirm'))).toEqual([false, true]);
    const replay = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), 'replay', join(records, file as string)], { cwd: repo, encoding: 'utf8' });
    expect(replay.stdout).toContain('1 identical, 0 differ');
    expect(replay.status).toBe(0);
  });
});
