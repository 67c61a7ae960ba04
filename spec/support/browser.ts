import { spawn, type ChildProcess } from 'node:child_process';
import { createReadStream, existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { extname, join, normalize } from 'node:path';
import Chromium from '@sparticuz/chromium';
import { chromium, type Browser } from 'playwright-core';
import { repo } from './serve-process.ts';

/**
 * Headless Chromium as `@sparticuz/chromium` ships it in its npm package (no download step), but with
 * web security on — its default `--disable-web-security` would turn CORS off and a cross-origin test
 * would prove nothing — and as several processes (in one, closing a page closes the browser); no
 * background networking (this machine's network is closed).
 */
export async function launchChromium(): Promise<Browser> {
  const args = Chromium.args.filter((a) => a !== '--disable-web-security' && a !== '--single-process');
  return chromium.launch({
    executablePath: await Chromium.executablePath(),
    args: [...args, '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    headless: true,
  });
}

const TYPES: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.woff2': 'font/woff2' };

/**
 * A built page's files served from their own origin (a server of its own on `host`), so every call
 * the page makes to `awaken serve` is cross-origin; a path outside `root` or missing is a 404.
 */
export function serveStatic(root: string, host = '127.0.0.1'): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    const path = normalize(join(root, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)));
    if (!path.startsWith(root) || !existsSync(path)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'application/octet-stream' });
    createReadStream(path).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, host, () => resolve({ server, origin: `http://${host}:${(server.address() as { port: number }).port}` })));
}

/** An `awaken dev` process: where it listens, what it logged, and how to stop it. */
export interface DevServer {
  readonly child: ChildProcess;
  readonly url: string;
  log(): string;
  stop(): Promise<void>;
}

/** `awaken dev --app APP` on a free port (`env` beside the process's: the page's assets, a token); resolves once it listens. */
export function startDev(app: string, env: NodeJS.ProcessEnv): Promise<DevServer> {
  const child = spawn(process.execPath, [join(repo, 'src/cli/awaken.js'), 'dev', '--app', app, '--store', 'memory', '--port', '0'], {
    cwd: repo,
    env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout?.resume();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`awaken dev did not start:\n${log}`)), 20_000);
    child.stderr?.on('data', (d: Buffer) => {
      log += d.toString();
      const m = /listening on (http:\/\/[^\s"]+)/.exec(log);
      if (m !== null) {
        clearTimeout(timer);
        resolve({ child, url: m[1] as string, log: () => log, stop });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`awaken dev exited with ${code}:\n${log}`));
    });
  });
}
