import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { transcriptIdsOf } from '../../src/replay/served.ts';
import { app } from '../support/app-module.ts';
import { cli } from '../support/cli.ts';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * `awaken serve --app` and `awaken dev --app` as a user runs them: real processes, an app written
 * in TypeScript in a folder outside this repository (so `awaken-ts` can only be the running CLI's
 * own copy), reached over a socket.
 */
const folders: string[] = [];
const servers: ServeProcess[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  for (const f of folders) rmSync(f, { recursive: true, force: true });
});

/** An app folder (`"type": "module"`) holding `files`. */
function appFolder(files: Readonly<Record<string, string>>, pkg: object = { type: 'module' }): string {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-app-'));
  folders.push(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

/** The events of one run on `url`, as the SSE stream of `POST /v1/runs` gives them. */
async function run(url: string, body: object): Promise<{ event_type: string; [k: string]: unknown }[]> {
  const res = await fetch(`${url}/v1/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  const text = await res.text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)) as { event_type: string });
}

const textOf = (events: readonly { event_type: string; [k: string]: unknown }[]): string =>
  events
    .filter((e) => e.event_type === 'text_delta')
    .map((e) => e['delta'] as string)
    .join('');

/** `awaken ARGV` as a process in `cwd`: its exit code and stderr. */
function awaken(argv: readonly string[], cwd: string): Promise<{ code: number | null; err: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [join(repo, 'src/cli/awaken.js'), ...argv], {
      cwd,
      env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => done({ code, err }));
  });
}

/** `awaken ARGV` as a process in `cwd`: its exit code, stdout and stderr. */
function awakenOut(argv: readonly string[], cwd: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [join(repo, 'src/cli/awaken.js'), ...argv], {
      cwd,
      env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let [out, err] = ['', ''];
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => done({ code, out, err }));
  });
}

describe('awaken serve --app', () => {
  it("serves the app's agent, tool and plugin from a .ts file outside any project that has awaken-ts, and records the plugin's factory and config", async () => {
    const dir = appFolder({ 'app.ts': app('done, said HI') });
    const record = join(dir, 'runs');
    mkdirSync(record);
    const server = await startServe(['--app', 'app.ts', '--store', 'memory', '--record', record], {}, dir);
    servers.push(server);
    expect(server.log()).toMatch(/app: app\.ts \(sha256:[0-9a-f]{12}\): agents helper\n/);
    const events = await run(server.url, { agentId: 'helper', threadId: 't-1', messages: [{ role: 'user', content: 'say hi' }] });
    expect(textOf(events)).toBe('done, said HI');
    expect(events.find((e) => e.event_type === 'tool_call_done')).toMatchObject({ result: { data: 'HI' } });
    // The transcript is written once the run has ended.
    let files: string[] = [];
    for (let i = 0; i < 100 && files.length === 0; i++) {
      files = readdirSync(record).filter((f) => f.endsWith('.jsonl'));
      if (files.length === 0) await new Promise((r) => setTimeout(r, 50));
    }
    const header = JSON.parse(readFileSync(join(record, files[0] as string), 'utf8').split('\n')[0] as string) as {
      plugins: unknown;
      app: { file: string; version: string };
    };
    expect(header.plugins).toEqual([{ id: 'counter', factory: 'counter', config: { step: 1 } }]);
    expect(header.app).toEqual({ file: 'app.ts', version: expect.stringMatching(/^sha256:[0-9a-f]{12}$/) });
    // The timeline names the app and the version that ran the run.
    const inspected = await cli('inspect', join(record, files[0] as string));
    expect(inspected.out.split('\n')[0]).toBe(`run ${events[0]?.['run_id'] as string} · thread t-1 · agent helper · app app.ts (${header.app.version})`);
  });

  it("with --config the YAML names the app's models and plugins; an id both define is refused, naming both", async () => {
    const dir = appFolder({
      'app.ts': app('from the app'),
      'awaken.yaml': ['server: { store: memory }', 'agents:', '  - { id: second, model: default, plugin_ids: [counter] }'].join('\n'),
      'clash.yaml': ['agents:', '  - { id: helper, model: default }'].join('\n'),
    });
    const server = await startServe(['--app', 'app.ts', '--config', 'awaken.yaml'], {}, dir);
    servers.push(server);
    expect(textOf(await run(server.url, { agentId: 'second', messages: [{ role: 'user', content: 'hi' }] }))).toBe('from the app');
    await server.stop();
    expect(await awaken(['serve', '--app', 'app.ts', '--config', 'clash.yaml'], dir)).toEqual({
      code: 65,
      err: "awaken serve: clash.yaml: agents[0].id: 'helper' is also defined in app.ts (agents[0])\n",
    });
  });

  it('an app that cannot be used is one line naming the file and the line or field, exit 65 (66 when missing)', async () => {
    const dir = appFolder({
      'throws.ts': "import { defineApp } from 'awaken-ts';\n\nthrow new Error('no database configured');\nexport default defineApp({});\n",
      'empty.ts': 'export const nothing = 1;\n',
      'twice.ts':
        "import { defineApp, defineTool } from 'awaken-ts';\nimport { z } from 'zod';\nconst t = defineTool({ id: 'x', description: 'x', args: z.object({}), execute: () => ({ tool_name: 'x', status: 'success', data: null }) });\nexport default defineApp({ agents: [{ id: 'a', model: 'm' }], tools: [t, t], models: { m: { provider: 'p', model_name: 'n' } } });\n",
      'model.ts':
        "import { defineApp, scriptedProvider } from 'awaken-ts';\nexport default defineApp({ agents: [{ id: 'a', model: 'gpt' }], models: { m: { provider: 'p', model_name: 'n' } }, providers: { p: scriptedProvider([{ text: 'x' }]) } });\n",
      'unknown.ts': "import { defineApp } from 'awaken-ts';\nexport default defineApp({ agents: [], tool: [] } as never);\n",
    });
    const cases: [string, number, string][] = [
      ['missing.ts', 66, 'cannot read missing.ts: no such file'],
      ['throws.ts', 65, 'throws.ts:3: cannot load: no database configured'],
      ['empty.ts', 65, 'empty.ts: exports no app (export default defineApp({ agents, tools, plugins, models, providers }))'],
      ['twice.ts', 65, "twice.ts: tools[1]: tool 'x' is named twice (tools[0])"],
      ['model.ts', 65, "model.ts: agents[0].model: no model 'gpt' (models: m)"],
      ['unknown.ts', 65, 'unknown.ts: tool: unknown field (an app has agents, tools, plugins, models, providers, stopPolicies)'],
    ];
    for (const [file, code, line] of cases) expect(await awaken(['serve', '--app', file], dir)).toEqual({ code, err: `awaken serve: ${line}\n` });
  });

  it('an app beside an installed copy of another version is refused, naming both; a CommonJS file is refused with the fix', async () => {
    const version = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string }).version;
    const dir = appFolder({
      'app.ts': app('x'),
      'node_modules/awaken-ts/package.json': JSON.stringify({ name: 'awaken-ts', version: '0.0.1', type: 'module', exports: { '.': './index.js' } }),
      'node_modules/awaken-ts/index.js': 'export {};\n',
    });
    const other = await awaken(['serve', '--app', 'app.ts'], dir);
    expect(other).toEqual({
      code: 65,
      err: `awaken serve: app.ts: cannot load: imports awaken-ts 0.0.1 (${join(dir, 'node_modules/awaken-ts')}) but this awaken is ${version} (${repo}): install the same version beside the app, or run the app with its own awaken (npx awaken)\n`,
    });
    const cjs = appFolder({ 'app.ts': app('x') }, {});
    expect(await awaken(['serve', '--app', 'app.ts'], cjs)).toEqual({
      code: 65,
      err: 'awaken serve: app.ts: a CommonJS module: an app is an ES module (add "type": "module" to its package.json, or name it .mts)\n',
    });
  });
});

/** Waits until `server`'s log has a line matching `pattern` after `from` characters. */
async function logged(server: ServeProcess, pattern: RegExp, from: number): Promise<string> {
  for (let i = 0; i < 400; i++) {
    const m = pattern.exec(server.log().slice(from));
    if (m !== null) return m[0];
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no ${pattern} in:\n${server.log().slice(from)}`);
}

/** `awaken dev --app app.ts` as a process in `dir` (in-memory store, a free port). */
function startDev(dir: string, env: NodeJS.ProcessEnv = {}): ServeProcess {
  const child = spawn(process.execPath, [join(repo, 'src/cli/awaken.js'), 'dev', '--app', 'app.ts', '--store', 'memory', '--port', '0'], {
    cwd: dir,
    env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (d: Buffer) => (log += d.toString()));
  const dev: ServeProcess = {
    child,
    url: '',
    log: () => log,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      // The temporary folder dev recorded into outlives it (its transcripts are the user's): a spec removes it.
      const record = /timelines of the runs recorded in ([^\s)]+)/.exec(log)?.[1];
      if (record !== undefined) rmSync(record, { recursive: true, force: true });
    },
  };
  servers.push(dev);
  return dev;
}

describe('awaken dev --app', () => {
  it("needs --app; with --app, --model (the demo agent's) is refused", async () => {
    expect(await cli('dev')).toEqual({
      code: 64,
      out: '',
      err: 'awaken dev: --app FILE is required (the module of your agents: docs/your-own-agent.md); see awaken dev --help\n',
    });
    const dir = appFolder({ 'app.ts': app('x') });
    expect(await awaken(['serve', '--app', 'app.ts', '--model', 'openai:gpt-4o-mini'], dir)).toEqual({
      code: 64,
      err: "awaken serve: --model sets the demo agent's model; with --app the app's models answer; see awaken serve --help\n",
    });
  });

  it('loads an edited app for new runs; a broken edit keeps the last good version serving and says where', async () => {
    const dir = appFolder({ 'app.ts': app('first version') });
    const dev = startDev(dir, { AWAKEN_ADMIN_TOKEN: 'admin-token-0123456789' });
    const url = (await logged(dev, /listening on http:\/\/[^\s"]+/, 0)).slice('listening on '.length);
    expect(textOf(await run(url, { messages: [{ role: 'user', content: 'a' }] }))).toBe('first version');
    // The app is the configuration: a config write would be lost at the next reload, so it is refused.
    const write = await fetch(`${url}/v1/config/models/other`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: 'Bearer admin-token-0123456789' },
      body: JSON.stringify({ provider: 'script', model_name: 'x' }),
    });
    expect([write.status, await write.json()]).toEqual([
      409,
      { error: 'awaken dev serves app.ts: change the app (config writes are for awaken serve)', code: 'config_writes_refused' },
    ]);

    let from = dev.log().length;
    // An editor's atomic save: a new file renamed over the old one (later edits must still be seen).
    writeFileSync(join(dir, '.app.ts.tmp'), app('second version'));
    renameSync(join(dir, '.app.ts.tmp'), join(dir, 'app.ts'));
    const line = await logged(dev, /reloaded app\.ts \(sha256:[0-9a-f]{12} → sha256:[0-9a-f]{12}\): [^\n]*/, from);
    expect(line).toMatch(/: new runs use it; 0 run\(s\) in flight finish on sha256:[0-9a-f]{12}; 0 waiting run\(s\) resume on it when answered$/);
    expect(textOf(await run(url, { messages: [{ role: 'user', content: 'b' }] }))).toBe('second version');

    from = dev.log().length;
    writeFileSync(join(dir, 'app.ts'), `${app('third version')}\nexport const broken = ;\n`);
    const failed = await logged(dev, /reload failed: [^\n]*/, from);
    expect(failed).toMatch(/^reload failed: app\.ts:\d+: cannot load: Unexpected ";"; still serving sha256:[0-9a-f]{12}$/);
    expect(textOf(await run(url, { messages: [{ role: 'user', content: 'c' }] }))).toBe('second version');

    from = dev.log().length;
    writeFileSync(join(dir, 'app.ts'), app('fourth version').replace("model: 'default'", "model: 'nope'"));
    expect(await logged(dev, /reload failed: [^\n]*/, from)).toMatch(
      /^reload failed: app\.ts: agents\[0\]\.model: no model 'nope' \(models: default\); still serving sha256:[0-9a-f]{12}$/,
    );
    expect(textOf(await run(url, { messages: [{ role: 'user', content: 'd' }] }))).toBe('second version');
  });

  it('a run in flight finishes on the code it started with; a waiting run survives the reload and resumes on the new code', async () => {
    const version = (v: string): string => `import { defineApp, scriptedProvider } from 'awaken-ts';
import { tool } from 'ai';
import { z } from 'zod';

export default defineApp({
  agents: [{ id: 'helper', model: 'default' }, { id: 'slow', model: 'slow' }],
  tools: {
    shout: tool({ description: 'Says it louder.', inputSchema: z.object({ text: z.string() }), needsApproval: true, execute: async ({ text }) => '${v}:' + text.toUpperCase() }),
  },
  models: { default: { provider: 'script', model_name: 'scripted' }, slow: { provider: 'slow', model_name: 'scripted' } },
  providers: {
    script: scriptedProvider([{ tool_calls: [{ id: 'c1', name: 'shout', arguments: { text: 'hi' } }] }, { text: '${v} done' }]),
    slow: scriptedProvider([{ text: ['${v} ', 'slow ', 'answer'], delay_ms: 700 }]),
  },
});
`;
    const dir = appFolder({ 'app.ts': version('v1') });
    const dev = startDev(dir);
    const url = (await logged(dev, /listening on http:\/\/[^\s"]+/, 0)).slice('listening on '.length);

    // The waiting run: parked on the approval of shout.
    const waiting = await run(url, { agentId: 'helper', threadId: 't-wait', messages: [{ role: 'user', content: 'shout hi' }] });
    expect(waiting.at(-1)).toMatchObject({ event_type: 'run_finish', termination: { type: 'suspended' } });
    const runId = waiting.at(-1)?.['run_id'] as string;
    // The run in flight: streaming its answer slowly when the app changes.
    const slow = fetch(`${url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ agentId: 'slow', threadId: 't-slow', messages: [{ role: 'user', content: 'go' }] }),
    });
    const body = (await slow).body?.getReader();
    let slowText = '';
    const decoder = new TextDecoder();
    while (!slowText.includes('text_delta')) slowText += decoder.decode((await body?.read())?.value);

    const from = dev.log().length;
    writeFileSync(join(dir, 'app.ts'), version('v2'));
    const reloaded = await logged(dev, /reloaded app\.ts [^\n]*/, from);
    expect(reloaded).toMatch(/: new runs use it; 1 run\(s\) in flight finish on sha256:[0-9a-f]{12}; 1 waiting run\(s\) resume on it when answered$/);
    const [, v1, v2] = /\((sha256:[0-9a-f]{12}) → (sha256:[0-9a-f]{12})\)/.exec(reloaded) as RegExpExecArray;
    for (;;) {
      const chunk = await body?.read();
      if (chunk === undefined || chunk.done) break;
      slowText += decoder.decode(chunk.value);
    }
    const slowEvents = slowText
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)) as { event_type: string });
    expect(textOf(slowEvents)).toBe('v1 slow answer');

    const decided = await fetch(`${url}/v1/runs/${runId}/decision`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ toolCallId: 'c1', action: 'resume' }),
    });
    expect(decided.status).toBe(202);
    let messages: { role: string; content: unknown }[] = [];
    for (let i = 0; i < 200; i++) {
      const r = (await (await fetch(`${url}/v1/runs/${runId}`)).json()) as { status: string };
      if (r.status === 'done') break;
      await new Promise((res) => setTimeout(res, 50));
    }
    messages = ((await (await fetch(`${url}/v1/threads/t-wait/messages`)).json()) as { messages: { role: string; content: unknown }[] }).messages;
    expect(JSON.stringify(messages)).toContain('v2:HI');
    expect(JSON.stringify(messages.at(-1))).toContain('v2 done');
    expect(textOf(await run(url, { agentId: 'slow', threadId: 't-new', messages: [{ role: 'user', content: 'go' }] }))).toBe('v2 slow answer');

    // The timeline: a transcript per segment of the waiting run, each naming the version that ran it.
    const record = /timelines of the runs recorded in ([^\s)]+)/.exec(dev.log())?.[1] as string;
    const segmentsOf = (): string[] =>
      readdirSync(record)
        .filter((f) => transcriptIdsOf(f)?.runId === runId)
        .sort((a, b) => (transcriptIdsOf(a)?.segment ?? 1) - (transcriptIdsOf(b)?.segment ?? 1));
    for (let i = 0; i < 100 && segmentsOf().length < 2; i++) await new Promise((r) => setTimeout(r, 50));
    const segments = segmentsOf().map((f) => join(record, f));
    expect(segments).toHaveLength(2);
    const headers = segments.map((f) => JSON.parse(readFileSync(f, 'utf8').split('\n')[0] as string) as { app: unknown; segment?: number });
    expect(headers.map((h) => [h.app, h.segment])).toEqual([
      [{ file: 'app.ts', version: v1 }, undefined],
      [{ file: 'app.ts', version: v2 }, 2],
    ]);
    expect((await cli('inspect', segments[0] as string)).out.split('\n')[0]).toBe(`run ${runId} · thread t-wait · agent helper · app app.ts (${v1})`);
    expect((await cli('inspect', segments[1] as string)).out.split('\n')[0]).toBe(
      `run ${runId} · thread t-wait · agent helper · app app.ts (${v2}) · segment 2, taken up again from the store`,
    );
    // Each segment replays identical with the app as it is now.
    const replayed = await awakenOut(['replay', '--app', 'app.ts', ...segments], dir);
    expect([replayed.code, replayed.err, replayed.out]).toEqual([
      0,
      `[1/2] identical ${segments[0] as string}\n[2/2] identical ${segments[1] as string}\n`,
      [
        'result     recorded  replayed  termination  file',
        `identical  11        11        suspended    ${segments[0] as string}`,
        `identical  9         9         natural_end  ${segments[1] as string}`,
        '',
        '2 identical, 0 differ',
        '',
      ].join('\n'),
    ]);
  });
});
