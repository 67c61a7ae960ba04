import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * The permission plugin from `awaken serve --config`, over a real socket: a call asked about, approved
 * by a second request and run; a call a rule denies, blocked with the configured reason; the run
 * recorded and replayed identical; a rule that does not parse stops the server from starting.
 */

const configFile = (permission: string[]): string => {
  const file = join(mkdtempSync(join(tmpdir(), 'awaken-permission-')), 'awaken.yaml');
  writeFileSync(
    file,
    [
      'server:',
      '  store: memory',
      'providers:',
      `  guarded: { kind: scripted, file: ${join(repo, 'spec/cli/fixtures/permission-script.yaml')} }`,
      'models:',
      '  guarded: { provider: guarded, model_name: guarded }',
      'agents:',
      '  - id: guarded',
      '    model: guarded',
      '    plugin_ids: [permission]',
      '    sections:',
      '      permission:',
      ...permission.map((l) => `        ${l}`),
    ].join('\n'),
  );
  return file;
};

const dir = mkdtempSync(join(tmpdir(), 'awaken-permission-record-'));
let server: ServeProcess;
beforeAll(async () => {
  server = await startServe([
    '--config',
    configFile([
      'default_behavior: ask',
      'rules:',
      '  - { tool: \'get_weather(city ~ "Mor*")\', behavior: deny }',
      '  - { tool: get_weather, behavior: allow }',
    ]),
    '--record',
    dir,
  ]);
});
afterAll(async () => {
  await server.stop();
});

const post = (path: string, body: unknown): Promise<Response> =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const runIdOf = (sse: string): string => /"event_type":"run_start","thread_id":"[^"]*","run_id":"([^"]+)"/.exec(sse)?.[1] ?? '';

describe('the permission plugin in awaken serve', () => {
  it('lists it in /v1/capabilities', async () => {
    const caps = (await (await fetch(`${server.url}/v1/capabilities`)).json()) as { plugins: string[] };
    expect(caps.plugins).toContain('permission');
  });

  it('asks, runs the approved call, blocks the denied one with the reason; the recorded run replays identical', async () => {
    const first = await (await post('/v1/runs', { threadId: 'perm', agentId: 'guarded', messages: [{ role: 'user', content: 'echo, then Mordor' }] })).text();
    expect(first).toContain('"suspended"');
    expect(first).toContain('"action":"tool:PermissionConfirm"');
    expect(first).toContain(`"message":"Permission required for tool 'echo'"`);
    const runId = runIdOf(first);
    const decided = await post(`/v1/runs/${runId}/decision`, { toolCallId: 'call_echo', action: 'resume' });
    expect(decided.status).toBe(202);
    // The transcript of the run, once it ended.
    const deadline = Date.now() + 10_000;
    let file: string | undefined;
    while (file === undefined && Date.now() < deadline) {
      // Whatever the file is named, its header names the run.
      file = readdirSync(dir).find((f) => f.endsWith('.jsonl') && readFileSync(join(dir, f), 'utf8').includes(`"run_id":"${runId}"`));
      if (file === undefined) await new Promise((r) => setTimeout(r, 50));
    }
    const text = readFileSync(join(dir, file as string), 'utf8');
    expect(text).toContain('"plugins":[{"id":"permission"}]');
    expect(text).toContain('"echoed":"hello"');
    expect(text).toContain(`"type":"blocked","value":"Tool 'get_weather' denied by permission rules"`);
    const replay = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), 'replay', join(dir, file as string)], { cwd: repo, encoding: 'utf8' });
    expect(replay.stdout).toContain('1 identical, 0 differ');
    expect(replay.status).toBe(0);
  });

  it('a rule that does not parse keeps the server from starting: one line naming the file, the agent, the section and the entry, exit 65', () => {
    const bad = configFile(['rules:', '  - { tool: get_weather, behavior: allow }', '  - { tool: "Bash(npm *", behavior: allow }']);
    const r = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), 'serve', '--config', bad, '--port', '0'], {
      cwd: repo,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect({ code: r.status, out: r.stdout, err: r.stderr }).toEqual({
      code: 65,
      out: '',
      err: `awaken serve: ${bad}: agents[0].sections.permission.rules[1].tool: "Bash(npm *": parse error at 10: expected ')', found end of input\n`,
    });
  });
});
