import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ATTACK_FILES, ATTACKS, argsOf, LANGUAGES, listenOn, pageTable, shown, skillsFolder, targets } from '../runtime/sandbox/attacks.ts';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * docs/sandbox.md through `awaken serve --app`: its example app served and run as the page shows,
 * every attack of its table made by a served run's calls while a client polls `/health`, and the
 * app refused at start, in one line, by a server that runs as a user other than root.
 */
const page = readFileSync(join(repo, 'docs/sandbox.md'), 'utf8');
const skillsPage = readFileSync(join(repo, 'docs/plugins/skills.md'), 'utf8');
const folders: string[] = [];
const servers: ServeProcess[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  for (const f of folders) rmSync(f, { recursive: true, force: true });
});

/** A code block of the page whose first line is `<comment> name`, as a user copies it (that line too). */
const block = (name: string, text = page): string => {
  const m = new RegExp(`\`\`\`\\w+\\n((?:\\/\\/|#) ${name.replaceAll('.', '\\.')}\\n[\\s\\S]*?)\`\`\``).exec(text);
  if (m === null) throw new Error(`the page has no block for ${name}`);
  return m[1] as string;
};

/** An app folder `nobody` may read (a sandboxed program is read as `nobody`). */
function appFolder(files: Readonly<Record<string, string>>): string {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-sandbox-app-'));
  chmodSync(dir, 0o755);
  folders.push(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true, mode: 0o755 });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

/**
 * `awaken serve ARGV` in `cwd` as a process that is not root: uid 1000 in a user namespace of its
 * own (its files are still read as the spec's user, so a checkout in a private folder works too).
 */
function serveAsAnotherUser(argv: readonly string[], cwd: string): Promise<{ code: number | null; err: string }> {
  return new Promise((done) => {
    const child = spawn(
      'unshare',
      ['--user', '--map-user=1000', '--map-group=1000', '--', process.execPath, join(repo, 'src/cli/awaken.js'), 'serve', ...argv, '--port', '0'],
      { cwd, env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (c) => done({ code: c, err }));
  });
}

/** docs/plugins/skills.md's scripts example as its files: the config, the model's script, the skill and its script. */
const skillsExample = (): Record<string, string> => ({
  'awaken.yaml': block('awaken.yaml', skillsPage),
  'script.yaml': block('script.yaml', skillsPage),
  'skills/counting/SKILL.md': /```markdown\n(---\nname: counting\n[\s\S]*?)```/.exec(skillsPage)?.[1] ?? '',
  'skills/counting/scripts/word_count.py': block('skills/counting/scripts/word_count.py', skillsPage),
});

type Event = { event_type: string; [k: string]: unknown };
async function run(url: string, body: object): Promise<Event[]> {
  const res = await fetch(`${url}/v1/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  return (await res.text())
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)) as Event);
}

describe('docs/sandbox.md, served', () => {
  it("serves the page's app: its Python script runs in the sandbox and the run gets the result the page shows", async () => {
    const dir = appFolder({ 'app.ts': block('app.ts'), 'word_count.py': block('word_count.py') });
    const server = await startServe(['--app', 'app.ts', '--store', 'memory'], {}, dir);
    servers.push(server);
    const events = await run(server.url, { agentId: 'counter', threadId: 't-1', messages: [{ role: 'user', content: 'count' }] });
    const done = events.find((e) => e.event_type === 'tool_call_done');
    const shownResult = /```json\n(.*)\n```/.exec(page)?.[1];
    expect(JSON.stringify(done?.['result'])).toBe(shownResult);
    expect(events.filter((e) => e.event_type === 'text_delta').map((e) => e['delta'])).toEqual(['Four words.']);
  }, 60_000);

  it("has every attack of the page's table made by a served run's calls, each answered as the table says, /health answering throughout", async () => {
    const t = targets(0);
    const socketServer = await listenOn(t.socket);
    // A Node tool and a shell script are the app's tools; a Python script is a skill's, run by skill_script under the config's skills.scripts.
    const tools = LANGUAGES.flatMap((language) =>
      ATTACKS.map(([attack]) => {
        const id = `${language.split(' ')[0]?.toLowerCase()}_${attack}`;
        const program = language === 'Node tool' ? { node: ATTACK_FILES[language], export: attack } : { command: ['bash', ATTACK_FILES[language]] };
        return { id, language, attack, program };
      }),
    );
    const appTools = tools.filter((x) => x.language !== 'Python skill script');
    const app = `import { defineApp, openSandbox, scriptedProvider } from 'awaken-ts';
import { z } from 'zod';

const sandbox = openSandbox({ limits: { wallMs: 20_000, cpuSeconds: 1 } });
const args = z.object({ attack: z.string(), name: z.string().optional(), path: z.string().optional(), port: z.number().optional(), seconds: z.number().optional(), socket: z.string().optional() });
const tools = ${JSON.stringify(appTools.map(({ id, program }) => ({ id, program })))}.map(({ id, program }) =>
  sandbox.tool({ id, description: id, args, run: program, ...(id.endsWith('_sleepForever') ? { limits: { wallMs: 3_000 } } : {}) }),
);
const calls = JSON.parse(process.env.AWAKEN_SANDBOX_SPEC_CALLS ?? '[]');

export default defineApp({
  agents: [{ id: 'attacker', model: 'default', system_prompt: 'Attack.', plugin_ids: ['skills-discovery'] }],
  tools,
  models: { default: { provider: 'script', model_name: 'scripted' } },
  providers: { script: scriptedProvider([{ tool_calls: calls }, { text: 'done' }]) },
});
`;
    const skills = skillsFolder();
    folders.push(skills);
    // One wall-clock limit holds every script of a server, so it is a long one: a script looping
    // forever must meet its CPU limit first however busy the machine is (the page's 3 s is a tool's own).
    const dir = appFolder({ 'app.ts': app, 'awaken.yaml': `skills:\n  dirs: [ ${skills} ]\n  scripts: { wall_ms: 20000, cpu_seconds: 1 }\n` });
    // The server's own port is known once it listens: the calls are made against a first server's port, then served by a second on that port.
    const probe = await startServe(['--app', 'app.ts', '--config', 'awaken.yaml', '--store', 'memory'], { AWAKEN_SANDBOX_SPEC_CALLS: '[]' }, dir);
    const port = Number(new URL(probe.url).port);
    await probe.stop();
    const aimed = { ...t, port };
    const calls = tools.map(({ id, language, attack }, i) =>
      language === 'Python skill script'
        ? { id: `c${i}`, name: 'skill_script', arguments: { skill: 'attacks', script: 'scripts/attacks.py', input: argsOf(attack, aimed) } }
        : { id: `c${i}`, name: id, arguments: argsOf(attack, aimed) },
    );
    const server = await startServe(
      ['--app', 'app.ts', '--config', 'awaken.yaml', '--store', 'memory', '--port', String(port)],
      { AWAKEN_SANDBOX_SPEC_CALLS: JSON.stringify(calls), AWAKEN_SANDBOX_SPEC_SECRET: t.secret },
      dir,
    );
    servers.push(server);
    const health: number[] = [];
    const polling = setInterval(() => {
      fetch(`${server.url}/health`).then(
        (r) => health.push(r.status),
        () => health.push(0),
      );
    }, 50);
    const events = await run(server.url, { agentId: 'attacker', threadId: 't-1', messages: [{ role: 'user', content: 'go' }] });
    clearInterval(polling);
    socketServer.close();
    const byCall = new Map(
      events
        .filter((e) => e.event_type === 'tool_call_done')
        .map((e) => [e['id'] as string, e['result'] as { status: string; message: string; data: unknown }]),
    );
    const actual: Record<string, Record<string, string>> = {};
    tools.forEach(({ language, attack }, i) => {
      const r = byCall.get(`c${i}`);
      const name = ATTACKS.find(([a]) => a === attack)?.[1] as string;
      actual[name] ??= {};
      (actual[name] as Record<string, string>)[language] =
        r === undefined ? 'no result' : shown(r.status === 'success' ? `success: ${JSON.stringify(r.data)}` : r.message, aimed);
    });
    const table = pageTable(page);
    const waits = table['wait forever'] as Record<string, string>;
    waits['Python skill script'] = waits['Python skill script']?.replace('limit of 3 s', 'limit of 20 s') as string;
    expect(actual).toEqual(table);
    expect(health.length).toBeGreaterThan(20);
    expect(health.filter((s) => s !== 200)).toEqual([]);
  }, 120_000);

  it('refuses the app at start, in one line, when the server runs as a user other than root', async () => {
    const dir = appFolder({ 'app.ts': block('app.ts'), 'word_count.py': block('word_count.py') });
    const shownLine = /```\n(awaken serve: app\.ts:\d+: cannot load: .*)\n```/.exec(page)?.[1];
    expect(await serveAsAnotherUser(['--app', 'app.ts'], dir)).toEqual({ code: 65, err: `${shownLine}\n` });
  }, 60_000);

  it("serves the page's config: a tool registered by the config runs in the sandbox, and the run gets the same result", async () => {
    const dir = appFolder({ 'awaken.yaml': block('awaken.yaml'), 'script.yaml': block('script.yaml'), 'word_count.py': block('word_count.py') });
    const server = await startServe(['--config', 'awaken.yaml', '--store', 'memory'], {}, dir);
    servers.push(server);
    const events = await run(server.url, { agentId: 'counter', threadId: 't-1', messages: [{ role: 'user', content: 'count' }] });
    const shownResult = /```json\n(.*)\n```/.exec(page)?.[1];
    expect(JSON.stringify(events.find((e) => e.event_type === 'tool_call_done')?.['result'])).toBe(shownResult);
  }, 60_000);

  it('refuses the config at start, in one line, when the server runs as a user other than root; a parameters that is no JSON Schema, naming it', async () => {
    const dir = appFolder({ 'awaken.yaml': block('awaken.yaml'), 'script.yaml': block('script.yaml'), 'word_count.py': block('word_count.py') });
    const shownLine = /```\n(awaken serve: awaken\.yaml: tools: .*)\n```/.exec(page)?.[1];
    expect(await serveAsAnotherUser(['--config', 'awaken.yaml', '--store', 'memory'], dir)).toEqual({ code: 69, err: `${shownLine}\n` });
    writeFileSync(join(dir, 'awaken.yaml'), block('awaken.yaml').replace('type: object, properties', 'type: nonsense, properties'));
    const bad = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), 'serve', '--config', 'awaken.yaml', '--store', 'memory', '--port', '0'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect({ code: bad.status, err: bad.stderr }).toEqual({
      code: 65,
      err: 'awaken serve: awaken.yaml: tools[0].parameters: not a JSON Schema this server reads (Unsupported type: nonsense)\n',
    });
  }, 60_000);

  it("serves docs/plugins/skills.md's scripts example: skill_script runs the skill's script in the sandbox", async () => {
    const dir = appFolder(skillsExample());
    const server = await startServe(['--config', 'awaken.yaml', '--store', 'memory'], {}, dir);
    servers.push(server);
    const events = await run(server.url, { agentId: 'counter', threadId: 't-1', messages: [{ role: 'user', content: 'count' }] });
    expect(events.find((e) => e.event_type === 'tool_call_done')?.['result']).toEqual({
      tool_name: 'skill_script',
      status: 'success',
      data: { words: 4 },
      message: null,
    });
    expect(skillsPage).toContain('The run above gets `{"words":4}`');
  }, 60_000);

  it('refuses a config with skills.scripts at start, in one line, when the server runs as a user other than root', async () => {
    const dir = appFolder(skillsExample());
    const shownLine = /```\n(awaken serve: awaken\.yaml: skills\.scripts: .*)\n```/.exec(skillsPage)?.[1];
    expect(await serveAsAnotherUser(['--config', 'awaken.yaml', '--store', 'memory'], dir)).toEqual({ code: 69, err: `${shownLine}\n` });
  }, 60_000);
});
