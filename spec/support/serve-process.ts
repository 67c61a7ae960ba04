import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const repo = resolve(import.meta.dirname, '../..');

export interface ServeProcess {
  readonly child: ChildProcess;
  /** The server's base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Everything it wrote to stderr so far. */
  log(): string;
  /** Stops it (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. */
  stop(): Promise<void>;
}

/**
 * `awaken serve` as a real child process on a free port (no provider key, so it never reaches a
 * network), run in `cwd` (default: the repository); resolves once it listens. A server that does not start fails with its log.
 */
export function startServe(args: readonly string[], env: NodeJS.ProcessEnv = {}, cwd: string = repo): Promise<ServeProcess> {
  return startListening('serve', args, env, cwd);
}

/** `awaken <command> ARGS --port 0` (`serve` or `dev`) as a child process; resolves once it listens. */
export function startListening(command: 'serve' | 'dev', args: readonly string[], env: NodeJS.ProcessEnv = {}, cwd: string = repo): Promise<ServeProcess> {
  const child = spawn(process.execPath, [join(repo, 'src/cli/awaken.js'), command, ...args, '--port', '0'], {
    cwd,
    env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  return new Promise((resolveStart, reject) => {
    const timer = setTimeout(() => reject(new Error(`awaken ${command} did not start:\n${log}`)), 20_000);
    child.stderr?.on('data', (d: Buffer) => {
      log += d.toString();
      const m = /listening on (http:\/\/[^\s"]+)/.exec(log);
      if (m !== null) {
        clearTimeout(timer);
        resolveStart({ child, url: m[1] as string, log: () => log, stop });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`awaken ${command} exited with ${code}:\n${log}`));
    });
  });
}

/**
 * `awaken serve` with two agents: `demo` on the three-turn conversation script
 * (fixtures/scripts/demo-conversation.yaml), and `slow` (fixtures/scripts/slow-answer.yaml: a run to
 * follow or cancel while it works), both from a config file.
 */
export function startDemoAndSlow(args: readonly string[] = [], env: NodeJS.ProcessEnv = {}): Promise<ServeProcess> {
  const config = join(mkdtempSync(join(tmpdir(), 'awaken-config-')), 'awaken.yaml');
  writeFileSync(
    config,
    [
      'server:',
      '  store: memory',
      `  model: scripted:${join(repo, 'fixtures/scripts/demo-conversation.yaml')}`,
      'providers:',
      `  slow: { kind: scripted, file: ${join(repo, 'fixtures/scripts/slow-answer.yaml')} }`,
      'models:',
      '  slow: { provider: slow, model_name: slow }',
      'agents:',
      '  - { id: slow, model: slow, system_prompt: "A slow agent." }',
    ].join('\n'),
  );
  return startServe(['--config', config, ...args], env);
}

/** kill -9: the process dies at once, nothing of it runs to an end; resolves when it is gone. */
export async function killHard(s: ServeProcess): Promise<void> {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return;
  const exited = new Promise<void>((r) => s.child.once('exit', () => r()));
  s.child.kill('SIGKILL');
  await exited;
}
