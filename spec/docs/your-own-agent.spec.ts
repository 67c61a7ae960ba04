import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { besideProject, packedProject, type PackedProject } from '../support/packed-setup.ts';
import { normalise as normaliseSession, repo, sessionsOf, type Command } from './sessions.ts';

/**
 * docs/your-own-agent.md is run here as a user runs it, from the packed package installed in an
 * empty folder (spec/support/packed-setup.ts: `npm init -y`, `npm pkg set type=module`, the tarball,
 * ai and zod): its files are written as the page gives them, its edits made as it shows them (while
 * `awaken dev` serves), its commands run in a shell (`npx awaken …`, `curl`, `node chat.mjs …`), and
 * every output is compared whole with the page.
 *
 * The page, read in order:
 * - a ```ts / ```yaml / ```js block whose first line is a comment naming a file (`// app.ts`) is
 *   that file, written whole;
 * - a ```diff block (`--- a/FILE`, `+++ b/FILE`, then ` ` context, `-` and `+` lines, hunks
 *   parted by `@@`) is an edit, saved in place as an editor saves;
 * - a ```console block is commands and what they print (spec/docs/sessions.ts); a command with
 *   `# keeps running` is a server, started with `--port 0` (its port is written back as 3000);
 * - a ```log block is what the running server printed since the page last showed its terminal; a
 *   `^C` line in it is where it gets Ctrl-C (SIGINT to its process group, as a terminal sends it).
 *
 * What truly varies is normalised, in the page and in the output alike: what `normalise` of
 * sessions.ts replaces (ids, clock times, durations, transcript names and sizes, benchmark figures),
 * the app's versions (`sha256:` and 12 hex digits: the folder's package-lock.json is the install's),
 * numbered in order of appearance within each output, and `awaken dev`'s temporary folder.
 */

const page = readFileSync(join(repo, 'docs/your-own-agent.md'), 'utf8');

type Step =
  | { readonly kind: 'file'; readonly section: string; readonly name: string; readonly body: string }
  | { readonly kind: 'diff'; readonly section: string; readonly file: string; readonly hunks: readonly { readonly before: string; readonly after: string }[] }
  | { readonly kind: 'console'; readonly section: string; readonly commands: readonly Command[] }
  | { readonly kind: 'log'; readonly section: string; readonly expected: string }
  | { readonly kind: 'sh'; readonly section: string; readonly commands: readonly string[] };

/** The page's blocks as steps, in order (see the module's comment). */
function stepsOf(markdown: string): Step[] {
  const steps: Step[] = [];
  const lines = markdown.split('\n');
  let section = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.startsWith('## ')) section = line.slice(3).trim();
    const fence = /^```(\w+)$/.exec(line);
    if (fence === null) continue;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i] as string);
    const lang = fence[1] as string;
    const named = /^(?:\/\/|#) ([\w.-]+\.(?:ts|mjs|js|yaml|json))$/.exec(body[0] ?? '');
    if (lang === 'console') steps.push({ kind: 'console', section, commands: sessionsOf(['```console', ...body, '```'].join('\n'))[0]?.commands ?? [] });
    else if (lang === 'log') steps.push({ kind: 'log', section, expected: body.join('\n') });
    else if (lang === 'sh') steps.push({ kind: 'sh', section, commands: body.map((l) => l.replace(/\s+#\s.*$/, '').trim()).filter((l) => l !== '') });
    else if (lang === 'diff') {
      const file = /^\+\+\+ b\/(\S+)$/.exec(body[1] ?? '')?.[1];
      if (!(body[0] ?? '').startsWith('--- a/') || file === undefined) throw new Error(`${section}: a diff block starts with --- a/FILE and +++ b/FILE`);
      // Hunks, each after an `@@` line (the first needs none).
      const hunks: string[][] = [[]];
      for (const l of body.slice(2)) {
        if (l.startsWith('@@')) hunks.push([]);
        else if (/^[ +-]/.test(l)) (hunks.at(-1) as string[]).push(l);
        else throw new Error(`${section}: a diff line starts with ' ', '-', '+' or '@@': ${l}`);
      }
      const side = (hunk: readonly string[], keep: string): string =>
        hunk
          .filter((l) => l[0] === ' ' || l[0] === keep)
          .map((l) => l.slice(1))
          .join('\n');
      steps.push({ kind: 'diff', section, file, hunks: hunks.filter((h) => h.length > 0).map((h) => ({ before: side(h, '-'), after: side(h, '+') })) });
    } else if (named !== null) steps.push({ kind: 'file', section, name: named[1] as string, body: `${body.join('\n')}\n` });
  }
  return steps;
}

/** What varies, replaced as the module's comment says. */
function normalise(text: string): string {
  const versions: string[] = [];
  return normaliseSession(text)
    .replace(/\S*\/awaken-dev-\w+/g, '<tmp>/awaken-dev-<random>')
    .replace(/sha256:[0-9a-f]{12}/g, (v) => `sha256:<v${(versions.includes(v) ? versions.indexOf(v) : versions.push(v) - 1) + 1}>`);
}

const run = promisify(execFile);

/** The environment of what the page runs: the user's, without the test runner's npm and vitest variables (npx would take the repository for the project). */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { NO_COLOR: '1', OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' };
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(npm_|VITEST|INIT_CWD$|NODE_OPTIONS$|WEATHER_KEY$|AWAKEN_)/.test(k) || k in env) continue;
    env[k] = v;
  }
  return env;
}

interface Server {
  readonly child: ChildProcess;
  readonly command: string;
  readonly port: string;
  /** Everything it printed (stdout and stderr, as a terminal shows them), the port written back as 3000. */
  output(): string;
  /** How much of `output()` the page has shown so far. */
  shown: number;
  readonly exited: Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const lineCount = (text: string): number => (text === '' ? 0 : text.replace(/\n$/, '').split('\n').length);

/** Starts a server command (with --port 0) in its own process group; resolves once it listens. */
function startServer(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<Server> {
  const child = spawn('bash', ['-c', `exec ${command} --port 0 2>&1`], { cwd, env, stdio: ['ignore', 'pipe', 'ignore'], detached: true });
  let out = '';
  let port = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return new Promise((resolveStart, reject) => {
    const timer = setTimeout(() => reject(new Error(`${command} did not start:\n${out}`)), 60_000);
    const check = (): void => {
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m === null) return;
      clearTimeout(timer);
      child.stdout?.off('data', check);
      port = m[1] as string;
      resolveStart({ child, command, port, output: () => out.replaceAll(`127.0.0.1:${port}`, '127.0.0.1:3000'), shown: 0, exited });
    };
    child.stdout?.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${command} exited with ${code}:\n${out}`));
    });
  });
}

/** What the server printed since the page last showed it, once it has printed at least `lines` lines and then nothing for 400 ms (at most 30 s). */
async function printedSince(server: Server, lines: number): Promise<string> {
  const until = Date.now() + 30_000;
  while (lineCount(server.output().slice(server.shown)) < lines && Date.now() < until) await sleep(50);
  for (let before = server.output().length; ; ) {
    await sleep(400);
    const now = server.output().length;
    if (now === before || Date.now() > until) break;
    before = now;
  }
  const text = server.output().slice(server.shown);
  server.shown += text.length;
  return text;
}

/** Ctrl-C in the server's terminal: SIGINT to its process group; resolves with what it printed until it exited (SIGKILL after 15 s). */
async function interrupt(server: Server): Promise<string> {
  if (server.child.exitCode === null && server.child.signalCode === null) {
    process.kill(-(server.child.pid as number), 'SIGINT');
    const timer = setTimeout(() => process.kill(-(server.child.pid as number), 'SIGKILL'), 15_000);
    await server.exited;
    clearTimeout(timer);
  }
  const text = server.output().slice(server.shown);
  server.shown += text.length;
  return text;
}

interface Outcome {
  readonly section: string;
  /** The command, the file edited, or `log` (what the server printed meanwhile). */
  readonly what: string;
  readonly expected: string;
  readonly actual: string;
  /** As printed (the port written back as 3000), before normalising. */
  readonly raw: string;
}

/** A ```log block's expected text split at its `^C` line (before, after), or undefined when it has none. */
function atCtrlC(expected: string): [string, string] | undefined {
  const lines = expected.split('\n');
  const at = lines.indexOf('^C');
  return at < 0 ? undefined : [lines.slice(0, at).join('\n'), lines.slice(at + 1).join('\n')];
}

/** Runs the page's steps in order in `cwd`; returns each output, expected and actual. */
async function walk(steps: readonly Step[], cwd: string): Promise<Outcome[]> {
  const env = userEnv();
  const outcomes: Outcome[] = [];
  let server: Server | undefined;
  try {
    for (const step of steps) {
      switch (step.kind) {
        case 'sh':
          break;
        case 'file':
          writeFileSync(join(cwd, step.name), step.body);
          break;
        case 'diff': {
          const path = join(cwd, step.file);
          let text = readFileSync(path, 'utf8');
          for (const { before, after } of step.hunks) {
            const at = text.indexOf(before);
            if (at < 0 || text.indexOf(before, at + 1) >= 0)
              throw new Error(`${step.section}: the edit's lines are not in ${step.file} exactly once:\n${before}`);
            text = text.slice(0, at) + after + text.slice(at + before.length);
          }
          // Saved in place, as an editor saves; a server that watches gets the change past its 150 ms debounce.
          writeFileSync(path, text);
          if (server !== undefined) await sleep(1000);
          break;
        }
        case 'console':
          for (const c of step.commands) {
            const typed = c.command.replace(/\s*#\s*keeps running.*$/, '');
            const shell = server !== undefined ? typed.replaceAll('127.0.0.1:3000', `127.0.0.1:${server.port}`) : typed;
            if (c.keepsRunning) {
              if (server !== undefined) throw new Error(`${step.section}: ${c.command}: a server is running already`);
              server = await startServer(shell, cwd, env);
              const raw = await printedSince(server, lineCount(c.expected));
              outcomes.push({ section: step.section, what: c.command, expected: normalise(c.expected), actual: normalise(raw), raw });
              continue;
            }
            const r = await run('bash', ['-c', `{ ${shell}\n} 2>&1`], {
              cwd,
              env: { ...env, ...(server !== undefined ? { AWAKEN_URL: `http://127.0.0.1:${server.port}` } : {}) },
              encoding: 'utf8',
              timeout: 180_000,
              maxBuffer: 16 * 1024 * 1024,
            }).catch((e: { stdout?: string; code?: number; killed?: boolean }) => ({
              stdout: `${e.stdout ?? ''}${e.killed === true ? '\n(did not end)' : ''}\n(exit ${String(e.code)})`,
            }));
            const raw = server !== undefined ? r.stdout.replaceAll(`127.0.0.1:${server.port}`, '127.0.0.1:3000') : r.stdout;
            outcomes.push({ section: step.section, what: c.command, expected: normalise(c.expected), actual: normalise(raw), raw });
          }
          break;
        case 'log': {
          if (server === undefined) throw new Error(`${step.section}: a log block with no server running`);
          const split = atCtrlC(step.expected);
          const before = await printedSince(server, lineCount(split?.[0] ?? step.expected));
          let raw = before;
          if (split !== undefined) {
            raw = `${before}^C\n${await interrupt(server)}`;
            server = undefined;
          }
          outcomes.push({ section: step.section, what: 'log', expected: normalise(step.expected), actual: normalise(raw), raw });
          break;
        }
        default:
          return exhaustive(step);
      }
    }
    if (server !== undefined) {
      const rest = await interrupt(server);
      server = undefined;
      throw new Error(`the page ends with its server running (no log block has its ^C); it printed:\n${rest}`);
    }
  } catch (e) {
    // What ran so far is compared all the same: the failure is the last output.
    outcomes.push({ section: '(walk)', what: 'error', expected: '', actual: e instanceof Error ? e.message : String(e), raw: '' });
  } finally {
    if (server !== undefined) await interrupt(server);
  }
  return outcomes;
}

function exhaustive(step: never): never {
  throw new Error(`unknown step ${JSON.stringify(step)}`);
}

/**
 * The page with what each command and server printed this time in place of what it shows (the
 * prose, files, edits and commands stay): written over the page when the spec runs with
 * AWAKEN_WRITE_PAGE=1, after a change that alters an output. Review the diff.
 */
function written(markdown: string, printed: readonly Outcome[]): string {
  const queue = printed.filter((o) => o.section !== '(walk)').map((o) => o.raw.replace(/\n+$/, ''));
  const next = (): string => {
    const text = queue.shift();
    if (text === undefined) throw new Error('fewer outputs than the page shows');
    return text;
  };
  const lines = markdown.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    out.push(lines[i] as string);
    if (lines[i] === '```log') {
      for (i++; i < lines.length && lines[i] !== '```'; i++);
      const text = next();
      if (text !== '') out.push(text);
      out.push('```');
    }
    if (lines[i] !== '```console') continue;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i] as string);
    for (let j = 0; j < body.length; j++) {
      out.push(body[j] as string);
      while ((body[j] as string).endsWith('\\') && j + 1 < body.length) out.push(body[++j] as string);
      while (j + 1 < body.length && !(body[j + 1] as string).startsWith('$ ')) j++;
      const text = next();
      if (text !== '') out.push(text);
    }
    out.push('```');
  }
  return out.join('\n');
}

const steps = stepsOf(page);
let packed: PackedProject;
let outcomes: Outcome[] = [];

beforeAll(async () => {
  packed = await packedProject();
  // The folder as the install left it (a kept root has the last run's files).
  for (const name of readdirSync(packed.dir)) {
    if (!['package.json', 'package-lock.json', 'node_modules', packed.filename].includes(name))
      rmSync(join(packed.dir, name), { recursive: true, force: true });
  }
  outcomes = await walk(steps, packed.dir);
  if (process.env['AWAKEN_WRITE_PAGE'] === '1') writeFileSync(join(repo, 'docs/your-own-agent.md'), written(page, outcomes));
}, 900_000);

describe('docs/your-own-agent.md, on the packed package', () => {
  it('installs as the set-up did: npm init -y, npm pkg set type=module, the tarball with ai@6 and zod', () => {
    const shown = steps.filter((s) => s.kind === 'sh').flatMap((s) => s.commands);
    expect(shown).toEqual(['npm init -y', 'npm pkg set type=module', `npm install ./${packed.filename} ai@6 zod`]);
    // The set-up ran the same, with exact versions (ai@6 → 6.0.326, zod → awaken's own 4.6.7) and the specs' compiler beside them.
    expect(packed.commands).toEqual([
      'npm init -y',
      'npm pkg set type=module',
      `npm install --no-audit --no-fund ./${packed.filename} typescript@5.9.3 @types/node@20 ai@6.0.326 zod@4.6.7`,
    ]);
    expect(JSON.parse(readFileSync(join(packed.dir, 'package.json'), 'utf8'))).toMatchObject({ name: 'my-agent', type: 'module' });
  });

  it("the page's app.ts, as its last edit leaves it, type-checks with tsc (strict, as tsc --init sets up a project)", async () => {
    const dir = besideProject(packed, 'typed');
    writeFileSync(join(dir, 'app.ts'), readFileSync(join(packed.dir, 'app.ts'), 'utf8'));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { module: 'NodeNext', target: 'ES2022', strict: true, skipLibCheck: true, noEmit: true }, files: ['app.ts'] }),
    );
    const r = await run(process.execPath, [join(dir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: dir, encoding: 'utf8' }).catch(
      (e: { stdout: string; code: number }) => ({ stdout: `${e.stdout}(exit ${e.code})` }),
    );
    expect(r.stdout).toBe('');
  }, 120_000);

  it("the README's commands under Your own agent are the page's, which run here", () => {
    const block = /## Your own agent\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(readFileSync(join(repo, 'README.md'), 'utf8'))?.[1] ?? '';
    const readme = block.split('\n').filter((l) => l.trim() !== '');
    const commands = steps.flatMap((s) => (s.kind === 'console' ? s.commands.map((c) => c.command) : []));
    expect(readme.length).toBeGreaterThan(0);
    for (const c of readme) expect(commands, c).toContain(c);
  });

  it('every output is what the page shows, whole', () => {
    expect(outcomes.length).toBe(steps.reduce((n, s) => n + (s.kind === 'console' ? s.commands.length : s.kind === 'log' ? 1 : 0), 0));
    const shown = (pick: (o: Outcome) => string) => outcomes.map((o) => `${o.section}: ${o.what}\n${pick(o)}`);
    expect(shown((o) => o.actual)).toEqual(shown((o) => o.expected));
  });
});

/** The page's file `name` as it gives it. */
const fileOf = (name: string): string => {
  const step = steps.find((s) => s.kind === 'file' && s.name === name);
  if (step?.kind !== 'file') throw new Error(`the page has no file ${name}`);
  return step.body;
};

/** The events of a `/v1/runs` stream as they come, and the whole stream once it ends. */
async function* eventsOf(response: Response): AsyncGenerator<{ event_type: string; [k: string]: unknown }> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let at: number;
    while ((at = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      const data = frame.split('\n').find((l) => l.startsWith('data: '));
      if (data !== undefined) yield JSON.parse(data.slice(6)) as { event_type: string };
    }
  }
}

/** `file` as the page has it after its steps before `before` (its edits applied). */
function asEdited(file: string, before: Step): string {
  let text = fileOf(file);
  for (const step of steps.slice(0, steps.indexOf(before))) {
    if (step.kind !== 'diff' || step.file !== file) continue;
    for (const h of step.hunks) text = text.replace(h.before, h.after);
  }
  return text;
}

describe('docs/your-own-agent.md: what awaken dev does with an edit', () => {
  const printed = (what: string): Outcome => {
    const o = outcomes.find((x) => x.what === what);
    if (o === undefined) throw new Error(`nothing ran: ${what}`);
    return o;
  };
  /** The log outcome after the command or edit `what` (the next one in the page's order). */
  const logAfter = (what: string): Outcome => outcomes.slice(outcomes.indexOf(printed(what)) + 1).find((o) => o.what === 'log') as Outcome;

  it('a run waiting for an approval survives the reload and, approved after it, runs the call on the new code', () => {
    const asked = printed('node chat.mjs dinner "book a table for two at Luigi\'s"');
    expect(asked.raw).toBe('tool-book_table {"restaurant":"Luigi\'s","people":2} → approval-requested\n');
    const reload = outcomes[outcomes.indexOf(logAfter(asked.what)) + 1] as Outcome;
    const released =
      /parked run released: .* run=(\S+) thread=dinner\n.* INFO {2}reloaded app\.ts \(sha256:\w+ → sha256:\w+\): new runs use it; 0 run\(s\) in flight finish on sha256:\w+; 1 waiting run\(s\) resume on it when answered\n$/.exec(
        reload.raw,
      );
    expect(released, reload.raw).not.toBeNull();
    const approved = printed('node chat.mjs dinner --approve');
    // The new code's output: the booking has its time.
    expect(approved.raw).toBe(
      'tool-book_table {"restaurant":"Luigi\'s","people":2} → output-available {"booked":true,"restaurant":"Luigi\'s","people":2,"time":"19:30"}\nassistant: Booked a table for 2 at Luigi\'s.\n',
    );
    expect(logAfter(approved.what).raw).toContain(`parked run revived run=${released?.[1] ?? ''} thread=dinner calls=1`);
  });

  it('a version that does not load is one line naming the file and line, and the last good version keeps serving', () => {
    const broken = outcomes.filter((o) => o.what === 'log' && o.raw.includes('reload failed'));
    expect(broken.length).toBe(2);
    const serving = /reloaded app\.ts \(sha256:\w+ → (sha256:\w+)\)/.exec(outcomes.map((o) => o.raw).join(''))?.[1];
    for (const o of broken)
      expect(o.raw).toMatch(
        new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} ERROR reload failed: app\\.ts:\\d+: cannot load: [^\\n]+; still serving ${serving ?? ''}\\n$`),
      );
    // The module that throws: named at the line of the throw, with its message.
    const throwing = steps.find((s) => s.kind === 'diff' && s.hunks.some((h) => h.after.includes('throw new Error'))) as Step;
    const line =
      asEdited('app.ts', steps[steps.indexOf(throwing) + 1] as Step)
        .split('\n')
        .findIndex((l) => l.includes('throw new Error')) + 1;
    expect(broken[1]?.raw).toContain(` ERROR reload failed: app.ts:${line}: cannot load: WEATHER_KEY is not set; still serving `);
    // The syntax error: the line where the parser stops, the edited line or the next.
    const syntax = Number(/app\.ts:(\d+)/.exec(broken[0]?.raw ?? '')?.[1]);
    const edited = steps.find((s) => s.kind === 'diff' && s.hunks.some((h) => h.after.endsWith('temperature_c: 10 },'))) as Step;
    const at =
      asEdited('app.ts', steps[steps.indexOf(edited) + 1] as Step)
        .split('\n')
        .findIndex((l) => l.endsWith('temperature_c: 10 },')) + 1;
    expect([at, at + 1]).toContain(syntax);
    // Served meanwhile by the last good version.
    expect(printed('node chat.mjs lunch "weather in Oslo?"').raw).toBe(
      'tool-get_weather {"city":"Oslo"} → output-available {"city":"Oslo","condition":"sunny","temperature_c":10}\nassistant: It is sunny in Oslo, 10 °C.\n',
    );
  });
});

describe('docs/your-own-agent.md: the replay of a changed plugin', () => {
  it('names the line of the transcript where the run left it, and the first event that differs', () => {
    const replay = outcomes.find((o) => o.what === 'npx awaken replay --app app.ts runs/*.jsonl; echo "exit $?"');
    const at =
      /^(runs\/\S+\.jsonl):(\d+) \(a tool record\):\n {2}event \(after event #6\): the history differs at line (\d+): the transcript has the outcome of tool call get_weather \[call_weather\] there, the replay has event #6 \(tool_call_done\)\n {2}first differing event: #6\n/m.exec(
        replay?.raw ?? '',
      );
    expect(at, replay?.raw).not.toBeNull();
    expect(at?.[3]).toBe(at?.[2]);
    const lines = readFileSync(join(packed.dir, at?.[1] as string), 'utf8').split('\n');
    // That line is the record the report names: get_weather's outcome, which the changed run never reached.
    expect(JSON.parse(lines[Number(at?.[2]) - 1] as string)).toMatchObject({ type: 'tool', name: 'get_weather', call_id: 'call_weather' });
    // Event #6 as recorded: get_weather's call done, which the changed guard now holds for approval.
    const sixth = lines
      .map((l) => (l === '' ? undefined : (JSON.parse(l) as { type: string; seq?: number; event?: { event_type: string; id: string; outcome: string } })))
      .find((r) => r?.type === 'event' && r.seq === 6);
    expect(sixth?.event).toMatchObject({ event_type: 'tool_call_done', id: 'call_weather', outcome: 'succeeded' });
    expect(replay?.raw).toMatch(/\n1 identical, 1 differ\nexit 1\n$/);
  });
});

describe("awaken dev, editing the app under a run (the page's app, on the packed package)", () => {
  // get_weather saying which version ran it; v1's slow enough to save the file and reload while it runs.
  const GET_WEATHER = "  execute: async ({ city }) => ({ city, condition: 'sunny', temperature_c: 10 }),";
  const slow = (version: string, ms: number): string =>
    fileOf('app.ts').replace(
      GET_WEATHER,
      `  execute: async ({ city }) => { await new Promise((r) => setTimeout(r, ${ms})); return { city, condition: 'sunny', temperature_c: 10, version: '${version}' }; },`,
    );

  it('a run in flight when the module is saved finishes on the old code; the next run uses the new code', async () => {
    expect(fileOf('app.ts')).toContain(GET_WEATHER);
    const dir = besideProject(packed, 'in-flight');
    writeFileSync(join(dir, 'app.ts'), slow('v1', 6000));
    writeFileSync(join(dir, 'script.yaml'), fileOf('script.yaml'));
    const server = await startServer('npx awaken dev --app app.ts --store memory', dir, userEnv());
    try {
      const ask = (thread: string) =>
        fetch(`http://127.0.0.1:${server.port}/v1/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ threadId: thread, messages: [{ role: 'user', content: 'weather in Oslo?' }] }),
        });
      const first = eventsOf(await ask('in-flight'));
      // Into the tool call: the run is in flight, in v1's get_weather (read on by hand: a for-await that breaks would close the stream).
      for (let e = await first.next(); !e.done && e.value.event_type !== 'tool_call_ready'; e = await first.next());
      writeFileSync(join(dir, 'app.ts'), slow('v2', 0));
      await expect.poll(() => server.output(), { timeout: 15_000 }).toMatch(/reloaded app\.ts/);
      const reload =
        server
          .output()
          .split('\n')
          .find((l) => l.includes('reloaded app.ts')) ?? '';
      expect(reload).toMatch(
        / INFO {2}reloaded app\.ts \((sha256:[0-9a-f]{12}) → sha256:[0-9a-f]{12}\): new runs use it; 1 run\(s\) in flight finish on \1; 0 waiting run\(s\) resume on it when answered$/,
      );
      const rest: { event_type: string; [k: string]: unknown }[] = [];
      for await (const e of first) rest.push(e);
      const done = (events: typeof rest) => events.find((e) => e.event_type === 'tool_call_done') as { result: { data: { version: string } } } | undefined;
      expect(rest.map((e) => e.event_type).at(-1)).toBe('run_finish');
      expect(done(rest)?.result.data.version).toBe('v1');
      const next: typeof rest = [];
      for await (const e of eventsOf(await ask('after-reload'))) next.push(e);
      expect(done(next)?.result.data.version).toBe('v2');
    } finally {
      await interrupt(server);
    }
  }, 120_000);
});
