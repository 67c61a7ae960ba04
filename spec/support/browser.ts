import { createReadStream, existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { extname, join, normalize } from 'node:path';
import Chromium from '@sparticuz/chromium';
import { chromium, type Browser, type Page } from 'playwright-core';
import axe from 'axe-core';
import { startListening, type ServeProcess } from './serve-process.ts';

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

/** `awaken dev --app APP` on a free port (`env` beside the process's: the page's assets, a token); resolves once it listens. */
export async function startDev(app: string, env: NodeJS.ProcessEnv): Promise<ServeProcess> {
  const dev = await startListening('dev', ['--app', app, '--store', 'memory'], env);
  // What it prints is not read: its pipe must not fill.
  dev.child.stdout?.resume();
  return dev;
}

/** axe-core in the page: the violations of impact serious or critical, by rule and the nodes they hit. */
export async function seriousViolations(page: Page): Promise<string[]> {
  // Through the DevTools protocol, not a script tag: the page's content security policy allows no inline script.
  await page.evaluate(axe.source);
  const result = (await page.evaluate(() => (globalThis as unknown as { axe: { run(): Promise<unknown> } }).axe.run())) as {
    violations: { id: string; impact: string; nodes: { target: string[] }[] }[];
  };
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}
