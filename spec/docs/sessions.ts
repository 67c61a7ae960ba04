import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * The copy-paste sessions of a Markdown page, run as a user runs them and compared whole.
 *
 * A session is a ```console block: `$ ` starts a command (a line ending in `\` goes on on the next),
 * every other line is what the command prints, stdout and stderr as a terminal shows them (one pipe,
 * interleaved as written). A command with the comment `# keeps running` is a server: it is started,
 * the next blocks of the same `##` section run while it listens, and at the section's end it gets
 * Ctrl-C (SIGINT) — its block shows everything it printed meanwhile, a `^C` line where the key is
 * pressed, then what it printed while stopping.
 *
 * `write-sessions.ts` writes the current output into a page after a change that alters it.
 *
 * The commands run in one temporary folder per page, where `fixtures/` and `examples/` are the
 * repository's, with `npx awaken` as the sources' `node src/cli/awaken.js` (the specs run on the
 * sources). A server gets `--port 0`; its real port is written into the commands that name
 * `127.0.0.1:3000` and written back as 3000 in everything printed.
 *
 * What truly varies from one run to the next is normalised, in the page and in the output alike
 * (`normalise`): ids (UUIDs, process ids, a transcript's file name: its thread's and run's ids),
 * clock times and durations, a transcript's size in bytes (it holds those ids and times), and the
 * figures of a benchmark (with the order of its hook lines, which follows the figures). Trailing
 * blank lines are not compared. Nothing else.
 */

export const repo = resolve(import.meta.dirname, '../..');
const AWAKEN = `node ${join(repo, 'src/cli/awaken.js')}`;

export interface Command {
  /** The command as the page writes it (continuation lines joined). */
  readonly command: string;
  /** What the page says it prints. */
  readonly expected: string;
  /** A server: started, stopped with Ctrl-C at the end of its section. */
  readonly keepsRunning: boolean;
}

export interface Block {
  readonly section: string;
  readonly commands: readonly Command[];
}

/** The ```console blocks of a page, with the `##` section each is in. */
export function sessionsOf(markdown: string): Block[] {
  const blocks: Block[] = [];
  let section = '';
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.startsWith('## ')) section = line.slice(3).trim();
    if (line !== '```console') continue;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i] as string);
    const commands: Command[] = [];
    for (let j = 0; j < body.length; j++) {
      if (!(body[j] as string).startsWith('$ ')) throw new Error(`${section}: a console block starts with a command: ${body[j]}`);
      let command = (body[j] as string).slice(2);
      while (command.endsWith('\\') && j + 1 < body.length) command = `${command.slice(0, -1)}${(body[++j] as string).trim()}`;
      const out: string[] = [];
      while (j + 1 < body.length && !(body[j + 1] as string).startsWith('$ ')) out.push(body[++j] as string);
      commands.push({ command: command.trim(), expected: out.join('\n'), keepsRunning: /#\s*keeps running/.test(command) });
    }
    blocks.push({ section, commands });
  }
  return blocks;
}

/** The commands of the page's sessions, as a user types them (servers included). */
export const commandsOf = (blocks: readonly Block[]): string[] => blocks.flatMap((b) => b.commands.map((c) => c.command));

const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g;

/** What varies between two runs of one session, replaced by a placeholder (see the module's comment). */
export function normalise(text: string): string {
  const lines = text
    .replace(/\n+$/, '')
    // A transcript's file name is made of its thread's and run's ids (encoded).
    .replace(/[\w~.:%-]+--[\w~.:%-]+\.jsonl/g, '<thread>--<run>.jsonl')
    .replace(UUID, '<uuid>')
    .replace(/^\d\d:\d\d:\d\d\.\d{3} /gm, '<time> ')
    .replace(/(\bms=|"duration_ms":|"elapsedMs":|"updated_at":|"startedAt":|"created_at":|"modified_at":|"bytes":)\d+/g, '$1<n>')
    .replace(/([+ (])\d+ ms\b/g, '$1<n> ms')
    .replace(/consumer=vm:\d+:[\w-]+/g, 'consumer=vm:<pid>:<instance>')
    // A benchmark's figures: the table's measured cells, a hook's share and time.
    .replace(/^(\| \d+ \| [\w-]+ \|)(.*)$/gm, (_m, head: string, cells: string) => head + cells.replace(/-?\d+(\.\d+)?/g, '<x>'))
    .replace(/^ +\d+(\.\d+)?%( +\S+ · \S+ +\(\d+ calls, )\d+(\.\d+)? µs each\)$/gm, '<x>%$2<x> µs each)')
    .split('\n');
  // Hook lines are ordered by their share, which varies: compared as a set.
  const hooks = lines.map((l, i) => (l.startsWith('<x>%') ? i : -1)).filter((i) => i >= 0);
  const sorted = hooks.map((i) => lines[i] as string).sort();
  hooks.forEach((i, k) => {
    lines[i] = sorted[k] as string;
  });
  return lines.join('\n');
}

export interface Outcome {
  readonly section: string;
  readonly command: string;
  readonly expected: string;
  readonly actual: string;
  /** The output as printed (the port written back as 3000), before `normalise`. */
  readonly raw: string;
}

interface Server {
  readonly child: ChildProcess;
  readonly command: Command;
  readonly port: string;
  output(): string;
}

/** Starts `command` (a server), resolves once it listens. */
function startServer(command: Command, shell: string, cwd: string, env: NodeJS.ProcessEnv): Promise<Server> {
  const child = spawn('bash', ['-c', `exec ${shell} --port 0 2>&1`], { cwd, env, stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolveStart, reject) => {
    const timer = setTimeout(() => reject(new Error(`${command.command} did not start:\n${out}`)), 30_000);
    const check = (): void => {
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m === null) return;
      clearTimeout(timer);
      child.stdout?.off('data', check);
      resolveStart({ child, command, port: m[1] as string, output: () => out });
    };
    child.stdout?.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${command.command} exited with ${code}:\n${out}`));
    });
  });
}

/** Ctrl-C: SIGINT, then the server's whole output once it has exited (SIGKILL after 10 s). */
async function interrupt(server: Server): Promise<string> {
  if (server.child.exitCode === null && server.child.signalCode === null) {
    const exited = new Promise<void>((r) => server.child.once('exit', () => r()));
    server.child.kill('SIGINT');
    const timer = setTimeout(() => server.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
  return server.output();
}

/**
 * Runs every session of a page in order, in one fresh folder; returns each command's expected and
 * actual output, both normalised.
 */
export async function runSessions(markdown: string, options: { readonly env?: NodeJS.ProcessEnv } = {}): Promise<Outcome[]> {
  const cwd = mkdtempSync(join(tmpdir(), 'awaken-session-'));
  for (const dir of ['fixtures', 'examples']) symlinkSync(join(repo, dir), join(cwd, dir));
  const env: NodeJS.ProcessEnv = { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '', NO_COLOR: '1', ...options.env };
  const outcomes: Outcome[] = [];
  const blocks = sessionsOf(markdown);
  const sections = [...new Set(blocks.map((b) => b.section))];
  for (const section of sections) {
    const servers: Server[] = [];
    let port = '3000';
    try {
      for (const block of blocks.filter((b) => b.section === section)) {
        for (const c of block.commands) {
          const shell = c.command.replaceAll('npx awaken ', `${AWAKEN} `).replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`);
          if (c.keepsRunning) {
            const server = await startServer(c, shell.replace(/\s*#\s*keeps running.*$/, ''), cwd, env);
            servers.push(server);
            port = server.port;
            continue;
          }
          const r = spawnSync('bash', ['-c', `{ ${shell}\n} 2>&1`], { cwd, env, encoding: 'utf8', timeout: 120_000, maxBuffer: 16 * 1024 * 1024 });
          const actual = r.error !== undefined ? `${r.stdout}\n(did not end: ${r.error.message})` : r.stdout;
          const raw = actual.replaceAll(`127.0.0.1:${port}`, '127.0.0.1:3000');
          outcomes.push({ section, command: c.command, expected: normalise(c.expected), actual: normalise(raw), raw });
        }
      }
    } finally {
      for (const server of servers) {
        const out = (await interrupt(server)).replaceAll(`127.0.0.1:${server.port}`, '127.0.0.1:3000');
        const [before, after] = ((): [string, string] => {
          const lines = server.command.expected.split('\n');
          const at = lines.indexOf('^C');
          return at < 0 ? [server.command.expected, ''] : [lines.slice(0, at).join('\n'), lines.slice(at + 1).join('\n')];
        })();
        outcomes.push({
          section,
          command: server.command.command,
          expected: normalise([before, after].filter((t) => t !== '').join('\n')),
          actual: normalise(out),
          raw: out,
        });
      }
    }
  }
  return outcomes;
}
