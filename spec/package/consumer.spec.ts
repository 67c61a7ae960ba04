import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { besideProject, listeningUrl, packedProject, type PackedProject } from '../support/packed-setup.ts';

/**
 * The package as another project gets it: `npm pack`, then the tarball installed into a fresh
 * project under the system's temporary folder (nothing resolves from this repository's
 * node_modules) with only typescript@5.9.3, @types/node@20, ai@6 and zod@4 beside it — the project
 * this test run packs once and shares (spec/support/packed-setup.ts). These specs work in a folder
 * of their own that uses its node_modules.
 */
const repo = resolve(import.meta.dirname, '../..');

let project = '';
let packed: PackedProject;

/** The README's "Running an agent" example, as it stands. */
const readmeAgent = /## Running an agent\n\n```ts\n([\s\S]*?)```/.exec(readFileSync(join(repo, 'README.md'), 'utf8'))?.[1] ?? '';

beforeAll(async () => {
  packed = await packedProject();
  project = besideProject(packed, 'consumer');
}, 900_000);

describe('the package installed by another project', () => {
  it('packs only dist/, README, LICENSE, package.json, the data the CLI reads and the JSON Schemas of the files a user writes', () => {
    const top = [...new Set(packed.files.map((f) => (f.includes('/') ? `${f.split('/')[0] as string}/` : f)))].sort();
    expect(top).toEqual(['LICENSE', 'README.md', 'conformance/', 'dist/', 'fixtures/', 'package.json', 'schemas/']);
    expect(packed.files.filter((f) => f.startsWith('schemas/'))).toEqual(['schemas/replay-expectations.schema.json']);
    // The data: the demo's recorded conversation (awaken serve without a key), the scripts the README
    // names (fixtures/scripts), the conformance streams.
    expect(packed.files.filter((f) => f.startsWith('fixtures/'))).toEqual([
      'fixtures/cassettes/openai-compatible-weather-answer.chunks.jsonl',
      'fixtures/cassettes/openai-compatible-weather-tool.chunks.jsonl',
      ...readdirSync(join(repo, 'fixtures/scripts'))
        .sort()
        .map((f) => `fixtures/scripts/${f}`),
    ]);
    expect(
      packed.files.filter((f) => f.startsWith('conformance/')).every((f) => /^conformance\/(streams\/[\w-]+\.events\.jsonl|expected-failures\.json)$/.test(f)),
    ).toBe(true);
    expect(packed.files.filter((f) => /(^|\/)(spec|bench|src|\.ci)\//.test(f) || (f.endsWith('.ts') && !f.endsWith('.d.ts')))).toEqual([]);
    process.stdout.write(
      `packed: ${packed.files.length} files, ${(packed.size / 1024).toFixed(0)} kB (${(packed.unpackedSize / 1024).toFixed(0)} kB unpacked)\n`,
    );
  });

  it('plain node imports every entry point; the judges entry names the optional package it lacks, the otel entry loads on the @opentelemetry/api that ai brings', () => {
    const out = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `
      for (const entry of ['awaken-ts', 'awaken-ts/testing', 'awaken-ts/server', 'awaken-ts/stores', 'awaken-ts/unstable']) {
        const m = await import(entry);
        console.log(entry, Object.keys(m).length > 0);
      }
      await import('awaken-ts/judges').then(() => console.log('judges loaded'), (e) => console.log('judges:', e.code, e.message.split('\\n')[0]));
      await import('awaken-ts/otel').then(() => console.log('otel loaded'), (e) => console.log('otel:', e.code, e.message.split('\\n')[0]));
    `,
      ],
      { cwd: project, encoding: 'utf8' },
    );
    // ai@6 is installed (the AI SDK judge's library): the next judge's library is what is missing.
    expect(out).toBe(
      "awaken-ts true\nawaken-ts/testing true\nawaken-ts/server true\nawaken-ts/stores true\nawaken-ts/unstable true\njudges: ERR_MODULE_NOT_FOUND Cannot find package '@ag-ui/client' imported from " +
        `${join(packed.dir, 'node_modules/awaken-ts/dist/protocols/ag-ui/judge.js')}\notel loaded\n`,
    );
  });

  it('is packed and installed as the README says: npm pack --pack-destination DIR in the clone, npm install ./awaken-ts-0.1.0.tgz in DIR', () => {
    const block = /pack it in a clone[\s\S]*?```sh\n([\s\S]*?)```/.exec(readFileSync(join(repo, 'README.md'), 'utf8'))?.[1] ?? '';
    const commands = block
      .split('\n')
      .map((l) => l.replace(/\s+#\s.*$/, '').trim())
      .filter((l) => l !== '');
    // What the shared set-up ran: the same two commands (--json to read the file name; the project's own tools beside it).
    expect(commands).toEqual(['npm pack --pack-destination ../my-app', `cd ../my-app && npm install ./${packed.filename}`]);
    expect(packed.commands.at(-1)).toBe(`npm install --no-audit --no-fund ./${packed.filename} typescript@5.9.3 @types/node@20 ai@6.0.326 zod@4.6.7`);
    expect(packed.filename).toBe('awaken-ts-0.1.0.tgz');
  });

  it("runs the README's fixtures/scripts line from the installed package, printing what the clone prints", () => {
    const line =
      /`(npx awaken run --model scripted:node_modules\/awaken-ts\/fixtures\/scripts\/[^`]+)`/.exec(readFileSync(join(repo, 'README.md'), 'utf8'))?.[1] ?? '';
    expect(line).toBe('npx awaken run --model scripted:node_modules/awaken-ts/fixtures/scripts/demo-weather.yaml "weather in Tokyo?"');
    const installed = spawnSync('bash', ['-c', line], { cwd: project, encoding: 'utf8' });
    const clone = spawnSync(
      'bash',
      ['-c', line.replace('npx awaken', `${process.execPath} ${join(repo, 'src/cli/awaken.js')}`).replace('node_modules/awaken-ts/', '')],
      { cwd: repo, encoding: 'utf8' },
    );
    expect({ status: installed.status, stderr: installed.stderr }).toEqual({ status: 0, stderr: '' });
    expect({ status: clone.status, stderr: clone.stderr }).toEqual({ status: 0, stderr: '' });
    expect(installed.stdout).toBe(clone.stdout);
    expect(installed.stdout).toContain('"response":"It is cloudy in Tokyo."');
  });

  it("runs the README's agent example with plain node", () => {
    expect(readmeAgent).toContain('new AgentRuntimeBuilder()');
    writeFileSync(
      join(project, 'agent.mjs'),
      `${readmeAgent}\nconsole.log(JSON.stringify({ ok: result.ok, response: result.ok ? result.value.response : result.error, events: sink.events.length }));\n`,
    );
    const out = JSON.parse(execFileSync(process.execPath, ['agent.mjs'], { cwd: project, encoding: 'utf8' })) as {
      ok: boolean;
      response: string;
      events: number;
    };
    expect(out).toMatchObject({ ok: true, response: 'I said hello.' });
    expect(out.events).toBeGreaterThan(5);
  });

  it('type-checks a file using the public API with tsc (NodeNext, strict, skipLibCheck false, no DOM): 0 errors', () => {
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          lib: ['ES2022'],
          strict: true,
          skipLibCheck: false,
          types: ['node'],
          noEmit: true,
        },
        files: ['consumer.ts'],
      }),
    );
    writeFileSync(
      join(project, 'consumer.ts'),
      `${readmeAgent}
import { createHttpApp, createLogger, listen, RunRegistry, type Logger } from 'awaken-ts/server';
import { MemoryStore, openStore, SqliteStore, type Store } from 'awaken-ts/stores';
import { deterministicEnv, type ScriptStep } from 'awaken-ts/testing';

const steps: ScriptStep[] = [{ text: 'hi' }];
const store: Store = new MemoryStore();
const opened: Store | string = openStore('memory');
const logger: Logger = createLogger({ write: (line: string) => process.stderr.write(line), now: () => deterministicEnv().clock.now() });
export async function serve(): Promise<string> {
  if (!built.ok) return 'not built';
  const registry = new RunRegistry(built.value, store, { logger });
  const server = await listen(createHttpApp({ runtime: built.value, store, registry }, { logger }), { port: 0 });
  await server.close();
  return server.url + String(steps.length) + String(typeof opened) + String(SqliteStore.name);
}
`,
    );
    const r = spawnSync(process.execPath, [join(project, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: project, encoding: 'utf8' });
    expect({ status: r.status, out: r.stdout }).toEqual({ status: 0, out: '' });
  }, 120_000);

  it('the installed awaken command runs compiled JavaScript: help, run, and a provider and a judge that are not installed', () => {
    const bin = join(project, 'node_modules/.bin/awaken');
    // The compiled entry, not the sources (tsx is a dependency: it loads the TypeScript of an app, not awaken's own).
    expect(readlinkSync(join(packed.dir, 'node_modules/.bin/awaken'))).toBe('../awaken-ts/dist/cli/bin.js');
    writeFileSync(join(project, 'hello.yaml'), '- text: [ "Hello ", "from a script." ]\n');
    const run = spawnSync(bin, ['run', '--model', 'scripted:hello.yaml', '--format', 'pretty', 'hi'], { cwd: project, encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('text      "Hello "\ntext      "from a script."\n');
    expect(run.stdout).toContain('finish    natural_end');
    // A serve that found what it needs would listen until killed, and a synchronous spawn blocks the
    // test's own timeout: bounded, it fails (status null) instead of holding the suite.
    const bounded = { timeout: 60_000, killSignal: 'SIGKILL' } as const;
    expect(spawnSync(bin, ['serve', '--help'], { cwd: project, encoding: 'utf8', ...bounded })).toMatchObject({
      status: 0,
      stdout: expect.stringMatching(/^usage: awaken serve/),
    });
    const provider = spawnSync(bin, ['serve', '--store', 'memory', '--model', 'openai:gpt-4o-mini'], {
      cwd: project,
      encoding: 'utf8',
      env: { ...process.env, OPENAI_API_KEY: 'sk-test' },
      ...bounded,
    });
    expect({ status: provider.status, stderr: provider.stderr }).toEqual({
      status: 69,
      stderr: 'awaken serve: openai:gpt-4o-mini needs @ai-sdk/openai@3 (an optional peer dependency of awaken-ts): npm install @ai-sdk/openai@3\n',
    });
    const judge = spawnSync(bin, ['conformance', '--protocol', 'ag-ui'], { cwd: project, encoding: 'utf8' });
    expect({ status: judge.status, stderr: judge.stderr }).toEqual({
      status: 69,
      stderr:
        'awaken conformance: the ag-ui judge needs @ag-ui/client@1, @ag-ui/core@1, rxjs@7 (optional peer dependencies of awaken-ts): npm install @ag-ui/client@1 @ag-ui/core@1 rxjs@7\n',
    });
  });

  it('the installed awaken records a run and replays it identical', () => {
    const bin = join(project, 'node_modules/.bin/awaken');
    writeFileSync(join(project, 'weather.yaml'), readFileSync(join(repo, 'fixtures/scripts/demo-weather.yaml'), 'utf8'));
    const recorded = spawnSync(bin, ['record', '--out', 'run.jsonl', '--', 'run', '--model', 'scripted:weather.yaml', 'weather in Tokyo?'], {
      cwd: project,
      encoding: 'utf8',
    });
    expect({ status: recorded.status, stderr: recorded.stderr }).toEqual({ status: 0, stderr: '' });
    const replayed = spawnSync(bin, ['replay', 'run.jsonl'], { cwd: project, encoding: 'utf8' });
    expect(replayed.status).toBe(0);
    expect(replayed.stdout).toContain('1 identical, 0 differ');
  });

  it('the installed awaken serve --record DIR serves the inspector page it was built with, and a run it records replays identical; --otel names the packages it lacks', async () => {
    const bin = join(project, 'node_modules/.bin/awaken');
    writeFileSync(join(project, 'weather.yaml'), readFileSync(join(repo, 'fixtures/scripts/demo-weather.yaml'), 'utf8'));
    const child = spawn(bin, ['serve', '--store', 'memory', '--model', 'scripted:weather.yaml', '--record', 'runs', '--port', '0'], {
      cwd: project,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    try {
      const url = await listeningUrl(child, 20_000);
      const page = await fetch(`${url}/inspector/`);
      expect(page.status).toBe(200);
      const html = await page.text();
      const script = /src="\.\/(assets\/[^"]+\.js)"/.exec(html)?.[1];
      expect(script).toBeDefined();
      expect((await fetch(`${url}/inspector/${script}`)).headers.get('content-type')).toBe('text/javascript; charset=utf-8');
      const run = await fetch(`${url}/v1/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ threadId: 'installed-1', messages: [{ role: 'user', content: 'weather in Tokyo?' }] }),
      });
      expect(await run.text()).toContain('cloudy in Tokyo');
      await expect
        .poll(async () => ((await (await fetch(`${url}/v1/inspector/transcripts`)).json()) as { items: unknown[] }).items.length, { timeout: 10_000 })
        .toBe(1);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    const recorded = readdirSync(join(project, 'runs'));
    expect(recorded).toHaveLength(1);
    const replayed = spawnSync(bin, ['replay', join('runs', recorded[0] as string)], { cwd: project, encoding: 'utf8' });
    expect(replayed.stdout).toContain('1 identical, 0 differ');
    const otel = spawnSync(bin, ['serve', '--store', 'memory', '--otel', 'http://127.0.0.1:4318/v1/traces'], { cwd: project, encoding: 'utf8' });
    expect({ status: otel.status, stderr: otel.stderr }).toEqual({
      status: 69,
      stderr:
        'awaken serve: OpenTelemetry needs @opentelemetry/api@1, @opentelemetry/sdk-trace-base@2, @opentelemetry/sdk-metrics@2, @opentelemetry/resources@2, @opentelemetry/exporter-trace-otlp-proto@0.223, @opentelemetry/exporter-metrics-otlp-proto@0.223 (optional peer dependencies of awaken-ts): npm install @opentelemetry/api@1 @opentelemetry/sdk-trace-base@2 @opentelemetry/sdk-metrics@2 @opentelemetry/resources@2 @opentelemetry/exporter-trace-otlp-proto@0.223 @opentelemetry/exporter-metrics-otlp-proto@0.223\n',
    });
  });

  it('the installed awaken fuzz runs a plugin that imports awaken-ts, fast-check and zod from the project', () => {
    const bin = join(project, 'node_modules/.bin/awaken');
    writeFileSync(join(project, 'visit-log.mjs'), readFileSync(join(repo, 'examples/fuzz/visit-log.mjs'), 'utf8'));
    const r = spawnSync(bin, ['fuzz', '--plugin', 'visit-log.mjs', '--runs', '10'], { cwd: project, encoding: 'utf8' });
    expect({ status: r.status, stderr: r.stderr, stdout: r.stdout }).toEqual({
      status: 0,
      stderr: '',
      stdout: 'plugin visit_log: passed — hooks in after_tool_execute\nvisit_log.tools: every law holds (commutative, pure, codec, persistence)\n',
    });
  });

  it('the installed awaken bench measures an agent with a plugin beside the floors (and starts itself with the V8 flags it needs)', () => {
    const bin = join(project, 'node_modules/.bin/awaken');
    writeFileSync(join(project, 'loop.yaml'), readFileSync(join(repo, 'examples/bench/weather-loop.yaml'), 'utf8'));
    writeFileSync(join(project, 'visit-log.mjs'), readFileSync(join(repo, 'examples/fuzz/visit-log.mjs'), 'utf8'));
    const r = spawnSync(bin, ['bench', '--model', 'scripted:loop.yaml', '--plugin', 'visit-log.mjs', '--steps', '5', '--rounds', '1', '--json'], {
      cwd: project,
      encoding: 'utf8',
    });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: 'awaken bench: N = 5 done\n' });
    const report = JSON.parse(r.stdout) as { rows: { name: string; bytesPerStep?: number }[]; hooks: { plugin: string }[] };
    expect(report.rows.map((x) => x.name)).toEqual(['floor-bare', 'floor-phased', 'agent']);
    expect(report.rows.every((x) => (x.bytesPerStep ?? 0) > 0)).toBe(true);
    expect(report.hooks.map((h) => h.plugin)).toEqual(['visit_log']);
  });

  it('the installed awaken judge judges a capture with the libraries it has (the MCP SDK, ai) and names the one it lacks', () => {
    const bin = join(project, 'node_modules/.bin/awaken');
    const call = [
      '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}',
      '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}],"isError":false}}',
    ];
    writeFileSync(join(project, 'call.ndjson'), `${call.join('\n')}\n`);
    const ok = spawnSync(bin, ['judge', '--protocol', 'mcp', 'call.ndjson'], { cwd: project, encoding: 'utf8' });
    expect({ status: ok.status, stderr: ok.stderr, first: ok.stdout.split('\n')[0] }).toEqual({ status: 0, stderr: '', first: 'mcp: 1 turn, 2 frames — PASS' });
    writeFileSync(join(project, 'twice.ndjson'), `${[...call, call[1]].join('\n')}\n`);
    const twice = spawnSync(bin, ['judge', '--protocol', 'mcp', 'twice.ndjson'], { cwd: project, encoding: 'utf8' });
    expect(twice.status).toBe(1);
    expect(twice.stdout).toContain('terminal · frame 3: a second response');
    // An AI SDK stream, judged by the ai the project has; an AG-UI one by the library it lacks.
    writeFileSync(join(project, 'chat.sse'), readFileSync(join(repo, 'conformance/golden/ai-sdk-v6/run-plain-answer.sse'), 'utf8'));
    const aiSdk = spawnSync(bin, ['judge', '--protocol', 'ai-sdk-v6', 'chat.sse'], { cwd: project, encoding: 'utf8' });
    expect({ status: aiSdk.status, stderr: aiSdk.stderr, first: aiSdk.stdout.split('\n')[0] }).toEqual({
      status: 0,
      stderr: '',
      first: 'ai-sdk-v6: 1 turn, 13 frames — PASS',
    });
    writeFileSync(join(project, 'agui.sse'), readFileSync(join(repo, 'conformance/golden/ag-ui/run-plain-answer.sse'), 'utf8'));
    const missing = spawnSync(bin, ['judge', '--protocol', 'ag-ui', 'agui.sse'], { cwd: project, encoding: 'utf8' });
    expect({ status: missing.status, stderr: missing.stderr }).toEqual({
      status: 69,
      stderr:
        'awaken judge: the ag-ui judge needs @ag-ui/client@1, @ag-ui/core@1, rxjs@7 (optional peer dependencies of awaken-ts): npm install @ag-ui/client@1 @ag-ui/core@1 rxjs@7\n',
    });
  });
});
